"""Compressed sparse Jacobians and Hessians: colour, seed, one vjp per colour, scatter.

The rows of the pattern are coloured so that rows of one colour share no column; the
seed matrix S (colours × y.size) holds each colour's indicator. C = S J (one vector–
Jacobian product per colour) holds every nonzero: J[i, j] = C[colour(i), j]. The CSR data
array is ``gather(reshape(C, (-1,)), index_map)`` with the index map computed once.

>>> import numpy as np, symgrad as sg
>>> x = sg.placeholder("x", shape=(5,))
>>> y = x[1:] ** 2 - x[:-1]
>>> J = sparse_jacobian(y, x)
>>> J.nnz, J.info["colours"]
(8, 2)
>>> dense = sg.evaluate(J, {x: np.arange(5.0)}).toarray()
>>> bool((dense == np.eye(4, 5, 1) * 2 * np.arange(1.0, 5.0)[:, None] - np.eye(4, 5)).all())
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..graph.tensor import Tensor
from .colouring import recovery_map, row_colouring, star_colouring
from .fold import fold_constants
from .pattern import hessian_sparsity, sparsity
from .tensor import SparseTensor


def _compressed_vjps(y: Tensor, x: Tensor, seeds: np.ndarray) -> Tensor:
    """The k vector–Jacobian products ``seeds[c] · dy/dx``, shape (k,) + x.shape: one
    batched sweep (``sg.gradients(..., batched=True)``), whatever k."""
    from ..differentiate.gradients import gradients
    from ..ops.sources import constant
    k = seeds.shape[0]
    batch = constant(seeds.reshape((k,) + tuple(y.shape)).astype(y.dtype))
    return gradients(y, x, grad_ys=batch, unconnected_gradients="zero", batched=True)[0]


def _seeds(colours: np.ndarray, dtype) -> np.ndarray:
    k = int(colours.max()) + 1 if colours.size else 0
    seeds = np.zeros((k, colours.size), dtype=dtype)
    seeds[colours, np.arange(colours.size)] = 1
    return seeds


def _colour(pattern, order: str, symmetric: bool) -> tuple:
    """(colours, index map, colouring name): a star colouring for symmetric patterns when
    every entry recovers from it, else the distance-2 row colouring."""
    if symmetric:
        colours = star_colouring(pattern, order)
        index_map = recovery_map(pattern, colours, symmetric=True)
        if index_map is not None:
            return colours, index_map, "star colouring"
    colours = row_colouring(pattern, order)
    return colours, recovery_map(pattern, colours), "distance-2 row colouring"


def _compress(y: Tensor, x: Tensor, pattern, order: str, name: str, kind: str) -> SparseTensor:
    from ..ops.indexing.api import gather
    from ..ops.layout.api import reshape
    from ..ops.sources import constant
    colours, index_map, how = _colour(pattern, order, symmetric=kind == "hessian")
    seeds = _seeds(colours, y.dtype)
    info = {"colours": len(seeds), "mode": f"reverse, {how}", "order": order,
            "seed_size": pattern.shape[0], "kind": kind}
    if pattern.nnz == 0:
        values = constant(np.zeros(0, dtype=y.dtype))
    else:
        compressed = _compressed_vjps(y, x, seeds)
        values = gather(reshape(fold_constants(compressed), (-1,)),
                        constant(index_map.astype(np.int64)))
    return SparseTensor(values, pattern.indices, pattern.indptr, pattern.shape, name, info)


def sparse_jacobian(y: Tensor, x: Any, order: str = "largest_first") -> Any:
    """dy/dx as a ``sg.SparseTensor`` of shape (y.size, x.size) in the exact pattern
    ``sg.sparsity(y, x)``, one vector–Jacobian product per row colour (a list of them
    when x is a list, as ``sg.jacobian``)."""
    if isinstance(x, (list, tuple)):
        return [sparse_jacobian(y, xi, order) for xi in x]
    return _compress(y, x, sparsity(y, x), order, f"jacobian_{y.name}", "jacobian")


def sparse_hessian(ys: Any, xs: Any, order: str = "largest_first") -> Any:
    """The Hessian of ``reduce_sum(ys)`` (of the sum over ys when a list) with respect to
    x, a ``sg.SparseTensor`` of shape (x.size, x.size); a list with one per x when xs is
    a list (the diagonal blocks, as ``sg.hessians``). S H is the batch of vjps of the
    gradient g seeded with the colour indicators; with a star colouring each entry comes
    from its row or its mirror."""
    from ..differentiate.gradients import gradients
    from ..ops.reductions.api import reduce_sum
    if isinstance(xs, (list, tuple)):
        return [sparse_hessian(ys, x, order) for x in xs]
    if isinstance(ys, (list, tuple)):
        total = reduce_sum(ys[0])
        for y in ys[1:]:
            total = total + reduce_sum(y)
        ys = total
    (g,) = gradients(reduce_sum(ys), [xs], unconnected_gradients="zero")
    return _compress(g, xs, hessian_sparsity(ys, xs), order, f"hessian_{ys.name}", "hessian")
