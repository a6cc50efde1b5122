"""``sg.sparsity`` and ``sg.hessian_sparsity``: structural derivative patterns from the graph.

Each tensor gets a boolean dependency matrix (tensor.size × x.size), propagated in
topological order by the per-op rules of ``rules.py``; no numbers are sampled.

>>> import numpy as np, symgrad as sg
>>> x = sg.placeholder("x", shape=(4,))
>>> y = x[1:] * x[:-1]
>>> sg.sparsity(y, x).toarray().astype(int)
array([[1, 1, 0, 0],
       [0, 1, 1, 0],
       [0, 0, 1, 1]])
>>> sg.hessian_sparsity(sg.reduce_sum(x[1:] * x[:-1]), x).nnz
6
"""

from __future__ import annotations

from ..dtypes import is_floating
from ..errors import ShapeError
from ..graph.tensor import Tensor, describe
from ..graph.traversal import topological_order
from . import rules


def _check(t, api: str, what: str) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"{api}: {what} must be a symgrad Tensor, got {type(t).__name__}")
    if any(d is None for d in t.shape):
        raise ShapeError(f"{api}: {what} {describe(t)} has an unknown dimension; sparsity "
                         "patterns need static shapes (give the placeholder a full shape)")


def dependency_patterns(y: Tensor, x: Tensor, api: str = "sg.sparsity"):
    """The pattern of ``y`` (y.size × x.size, boolean csr_array) or None if y does not
    depend on x."""
    n = rules.size_of(x.shape)
    pats: dict = {}
    for node in topological_order([y]):
        if node is x:
            pats[id(node)] = rules._sp().identity(n, dtype=bool, format="csr")
            continue
        inputs = [pats.get(id(i)) for i in node.inputs]
        if all(p is None for p in inputs):
            continue
        _check(node, api, "tensor")
        pats[id(node)] = _node_pattern(node, inputs, n)
    return pats.get(id(y))


def _node_pattern(node: Tensor, inputs: list, n: int):
    op = node.op
    if not op.differentiable or not is_floating(node.dtype):
        return None
    if op.kind == "elementwise":
        return rules.elementwise_rule(node, inputs, n)
    rule = rules.RULES.get(op, rules.conservative)
    return rule(node, inputs, n)


def sparsity(y: Tensor, x: Tensor):
    """The structural pattern of dy/dx: a boolean ``scipy.sparse.csr_array`` of shape
    ``(y.size, x.size)`` (row-major entries of y and x)."""
    _check(y, "sg.sparsity", "y")
    _check(x, "sg.sparsity", "x")
    pattern = dependency_patterns(y, x)
    rows = rules.size_of(y.shape)
    if pattern is None:
        return rules.empty(rows, rules.size_of(x.shape))
    pattern = rules._sp().csr_array(pattern, dtype=bool)
    pattern.sort_indices()
    return pattern


def hessian_sparsity(y: Tensor, x: Tensor):
    """The structural pattern of the Hessian of ``reduce_sum(y)`` with respect to x:
    a symmetric boolean ``csr_array`` of shape ``(x.size, x.size)``, read from the
    gradient graph (which carries the second-order structure)."""
    from ..differentiate.gradients import gradients
    from ..ops.reductions.api import reduce_sum
    _check(y, "sg.hessian_sparsity", "y")
    _check(x, "sg.hessian_sparsity", "x")
    (g,) = gradients(reduce_sum(y), [x], unconnected_gradients="zero")
    pattern = sparsity(g, x)
    sym = rules._sp().csr_array((pattern + pattern.T).astype(bool))
    sym.sort_indices()
    return sym
