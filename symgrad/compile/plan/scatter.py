"""Fused scatter-adds: ``getitem_grad(g, like, key)`` of a region value, accumulated by
the region's own loop into a zero-initialised buffer shaped like ``like``.

The gradient of a slice ``x[key]`` is ``getitem_grad(g, x, key)``: zeros with ``g``
added at ``key``. Run as a numpy step it allocates a full-size array per slice, and the
gradient graph then sums those arrays (``dx = G1 + G2 + ...``). Fused, the kernel that
computes ``g`` adds each ``g[i]`` straight into ``buf[map(i)]`` where ``map`` is the basic
index (slices, ints, None, ...) written out per axis; a pure sum ``S = G1 + G2 + ...`` of
such nodes of one kernel shares one buffer, which then *is* the value of ``S``.

Race freedom: a basic index maps distinct iterations to distinct elements, so one
scatter per buffer is safe under ``prange``. Two scatters into one buffer (``x[1:]`` and
``x[:-1]``) can hit the same element from different chunks: such kernels run serially.

>>> import symgrad as sg
>>> from symgrad.compile.plan.fold import fold_graph
>>> from symgrad.compile.plan.regions import build_plan
>>> x = sg.placeholder("x", shape=(5,))
>>> f = sg.reduce_sum(x[1:] * x[:-1])
>>> plan = build_plan(fold_graph([sg.gradients(f, x)[0]], [x]))
>>> [type(u).__name__ for u in plan.units]
['Step', 'Step', 'Kernel']
>>> [scatter_index(o, "r") for o in plan.kernels[0].outputs]
[['i0'], ['i0 + 1']]
"""

from __future__ import annotations

from typing import Optional

import sympy as sp

from ...ops.symbols import dtype_kind, input_symbol
from .oprules import PLACEHOLDER


def basic_key(key: tuple, like_rank: int) -> Optional[list]:
    """``key`` with the Ellipsis expanded and trailing full slices added (one entry per
    axis of ``like`` plus one per None), or None if it is not a basic index."""
    real = sum(1 for k in key if k is not None and k is not Ellipsis)
    if real > like_rank:
        return None
    out = []
    for k in key:
        if k is Ellipsis:
            out.extend([slice(None)] * (like_rank - real))
        elif k is None or isinstance(k, (int, slice)) and not isinstance(k, bool):
            out.append(k)
        else:
            return None
    if Ellipsis not in key:
        out.extend([slice(None)] * (like_rank - real))
    return out


def fusable_scatter(node, region_dims: tuple) -> bool:
    """Whether ``node`` (a getitem_grad) can accumulate inside the loop over ``region_dims``
    that computes its ``g``: ``like`` is known before any kernel runs (a placeholder or
    constant), the key is basic and ``g`` has the key's result rank."""
    g, like = node.inputs
    if node.dtype.kind != "f" or g.dtype != node.dtype:
        return False
    if like.op is not PLACEHOLDER and not like.is_const:
        return False
    key = basic_key(node.attrs["key"], len(like.shape))
    if key is None:
        return False
    rank = sum(1 for k in key if not isinstance(k, int))
    return rank == len(region_dims) == len(g.dims)


def pure_sum(node) -> bool:
    """Whether an elementwise node is ``a0 + a1 + ...`` of distinct inputs."""
    if node.kind != "elementwise" or node.is_const or len(node.inputs) < 2:
        return False
    if len({id(i) for i in node.inputs}) != len(node.inputs):
        return False
    if any(i.dtype != node.dtype for i in node.inputs):
        return False
    positional = tuple(input_symbol(k, dtype_kind(i.dtype)) for k, i in enumerate(node.inputs))
    try:
        formula = sp.sympify(node.op.formula(positional, node.attrs))
    except Exception:  # noqa: BLE001 - an op without a formula is simply not a sum
        return False
    return formula == sp.Add(*positional)


def _start(s: slice, n: str) -> str:
    """``s.indices(n)[0]`` as text, for a length ``n`` (a number or an expression); only
    exact where the slice selects at least one element, the only case a loop reaches."""
    step = 1 if s.step is None else s.step
    if step > 0:
        if s.start is None:
            return "0"
        return str(s.start) if s.start >= 0 else f"max({n} + ({s.start}), 0)"
    if s.start is None:
        return f"({n} - 1)"
    return f"min({s.start}, {n} - 1)" if s.start >= 0 else f"({n} + ({s.start}))"


def scatter_index(out, buffer: str) -> list:
    """Per axis of the buffer, the index that iteration ``i0, i1, ..`` adds into
    (``buffer``: the array's name in the loop, for lengths known only at run time)."""
    like = out.like
    key = basic_key(out.key, len(like.shape))
    idx, j, axis = [], 0, 0
    for k in key:
        if k is None:
            j += 1
            continue
        d = like.dims[axis]
        n = str(d) if isinstance(d, int) else f"{buffer}.shape[{axis}]"
        if isinstance(k, int):
            idx.append(str(k) if k >= 0 else f"({n} + ({k}))")
        else:
            start = str(k.indices(d)[0]) if isinstance(d, int) else _start(k, n)
            step = 1 if k.step is None else k.step
            term = f"i{j}" if step == 1 else f"i{j} * ({step})"
            idx.append(term if start == "0" else f"{term} + {start}")
            j += 1
        axis += 1
    return idx
