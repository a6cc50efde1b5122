"""Compressed sparse Jacobians and Hessians: colour, seed, one batched sweep, scatter.

Reverse mode: the rows of the pattern are coloured so that rows of one colour share no
column; the seed matrix S (colours × y.size) holds each colour's indicator. C = S J (one
vector–Jacobian product per colour, all in one batched reverse sweep) holds every
nonzero: J[i, j] = C[colour(i), j]. Forward mode: the columns are coloured, C = S Jᵀ is
one Jacobian–vector product per colour (one batched forward sweep, ``sg.jvp(...,
batched=True)``) and J[i, j] = C[colour(j), i]. ``sparse_jacobian`` takes whichever needs
fewer colours (a tie goes to forward mode). Either way the CSR data array is
``gather(reshape(C, (-1,)), index_map)`` with the index map computed once.

>>> import numpy as np, symgrad as sg
>>> x = sg.placeholder("x", shape=(5,))
>>> y = x[1:] ** 2 - x[:-1]
>>> J = sparse_jacobian(y, x)
>>> J.nnz, J.info["colours"], J.info["mode"]
(8, 2, 'forward, distance-2 column colouring')
>>> dense = sg.evaluate(J, {x: np.arange(5.0)}).toarray()
>>> bool((dense == np.eye(4, 5, 1) * 2 * np.arange(1.0, 5.0)[:, None] - np.eye(4, 5)).all())
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..graph.tensor import Tensor
from .colouring import column_colouring, recovery_map, row_colouring, star_colouring
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


def _compressed_jvps(y: Tensor, x: Tensor, seeds: np.ndarray) -> Tensor:
    """The k Jacobian–vector products ``dy/dx · seeds[c]``, shape (k,) + y.shape: one
    batched forward sweep, whatever k."""
    from ..forward import jvp
    from ..ops.sources import constant
    k = seeds.shape[0]
    batch = constant(seeds.reshape((k,) + tuple(x.shape)).astype(x.dtype))
    return jvp([y], [x], [batch], unconnected_gradients="zero", batched=True, name=None)[0]


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


MODES = ("auto", "forward", "reverse")


def _forward_plan(pattern, order: str) -> tuple:
    """(colours, index map) of a column colouring: J[i, j] = C[colour(j), i]."""
    colours = column_colouring(pattern, order)
    rows = np.repeat(np.arange(pattern.shape[0]), np.diff(pattern.indptr))
    return colours, colours[pattern.indices] * pattern.shape[0] + rows


def _choose(pattern, order: str, mode: str, kind: str) -> tuple:
    """(mode, colours, index map, colouring name) for ``mode``; 'auto' takes the mode
    with fewer colours, forward on a tie (no reverse sweep's tape of values to keep)."""
    if mode not in MODES:
        raise ValueError(f"sg.sparse.sparse_{kind}: mode must be one of {MODES}, got "
                         f"{mode!r}")
    if mode == "forward":
        return ("forward",) + _forward_plan(pattern, order) + ("distance-2 column colouring",)
    reverse = ("reverse",) + _colour(pattern, order, symmetric=kind == "hessian")
    if mode == "reverse":
        return reverse
    forward = _forward_plan(pattern, order)
    if _count(forward[0]) <= _count(reverse[1]):
        return ("forward",) + forward + ("distance-2 column colouring",)
    return reverse


def _count(colours: np.ndarray) -> int:
    return int(colours.max()) + 1 if colours.size else 0


def _compress(y: Tensor, x: Tensor, pattern, order: str, name: str, kind: str,
              mode: str = "reverse") -> SparseTensor:
    from ..ops.indexing.api import gather
    from ..ops.layout.api import reshape
    from ..ops.sources import constant
    mode, colours, index_map, how = _choose(pattern, order, mode, kind)
    seeds = _seeds(colours, y.dtype)
    info = {"colours": len(seeds), "mode": f"{mode}, {how}", "order": order,
            "seed_size": pattern.shape[1 if mode == "forward" else 0], "kind": kind}
    if pattern.nnz == 0:
        values = constant(np.zeros(0, dtype=y.dtype))
    else:
        sweep = _compressed_jvps if mode == "forward" else _compressed_vjps
        compressed = sweep(y, x, seeds)
        values = gather(reshape(fold_constants(compressed), (-1,)),
                        constant(index_map.astype(np.int64)))
    return SparseTensor(values, pattern.indices, pattern.indptr, pattern.shape, name, info)


def sparse_jacobian(y: Tensor, x: Any, order: str = "largest_first",
                    mode: str = "auto") -> Any:
    """dy/dx as a ``sg.SparseTensor`` of shape (y.size, x.size) in the exact pattern
    ``sg.sparsity(y, x)`` (a list of them when x is a list, as ``sg.jacobian``).

    ``mode='forward'``: one Jacobian–vector product per column colour; ``'reverse'``: one
    vector–Jacobian product per row colour; ``'auto'`` (default): whichever needs fewer
    colours, forward on a tie. Either is one batched sweep; ``info['mode']`` (shown by
    ``f.explain()``) records the choice."""
    if isinstance(x, (list, tuple)):
        return [sparse_jacobian(y, xi, order, mode) for xi in x]
    return _compress(y, x, sparsity(y, x), order, f"jacobian_{y.name}", "jacobian", mode)


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
