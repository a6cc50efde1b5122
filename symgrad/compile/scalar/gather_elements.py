"""Element rules of the index ops with constant indices (issue 29): ``gather`` (and integer
array indexing ``x[idx]``), its scatter-add gradient ``gather_grad``, the segment sums
``unsorted_segment_sum`` and ``segment_sum`` and their gradient ``segment_gather``, so a
program written with index arrays (``k * x[A] * x[B]`` summed into species by their ids)
is one scalar kernel, as the same program written element by element.

Each op is a record here (``GATHER_RULES``): its element rule, its statement count for the
cost model (``statements``; None declines the node: indices that are not a constant, or
out of range, which the numpy step reports when it runs) and its element classes for the
structure pass (``classes``: which elements are exact zeros, numbers or equal, as
``structure.py`` counts). A gather moves elements (no statement). A scatter-add adds the
terms landing on each element one at a time in the numpy forward's order (``np.add.at``:
flat order of the indices), each partial sum bound: the same additions, so bit-equal;
exact zero terms are dropped, as everywhere in the scalar pass (``x + 0.0`` is ``x``).

>>> import numpy as np, sympy as sp
>>> from symgrad.compile.scalar.elements import ElementCode
>>> code = ElementCode()
>>> g = np.array(sp.symbols("g0:3", real=True), dtype=object)
>>> out = scatter_add(code, g, np.array([1, 0, 1]), (2,), np.dtype("float64"))
>>> out[0], out[1], [s.template.expr for s in code.statements]
(g1, t0, [Q0_ + Q1_])
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import sympy as sp

from ...ops.assembly import records as A
from ...ops.indexing import records as I
from ..printing.printer import ZERO

__all__ = ["GATHER_RULES", "scatter_add", "constant_indices"]


def constant_indices(node, k: int = 1) -> Optional[np.ndarray]:
    """The indices (input ``k``) of ``node`` as int64 when they are a constant, else None."""
    source = node.inputs[k]
    if not source.is_const:
        return None
    value = np.asarray(source.value)
    return value.astype(np.int64) if value.dtype.kind in "iu" else None


def _gather_index(node) -> Optional[np.ndarray]:
    """gather's indices checked and wrapped (``x[idx]``), or None (not constant, or out of
    range: the step raises when it runs)."""
    idx = constant_indices(node)
    if idx is None:
        return None
    axis, wrap = node.attrs["axis"], node.attrs["wrap"]
    like = node.inputs[2] if node.op is I.gather_grad else node.inputs[0]
    try:
        return I.checked_indices(idx, like.shape[axis], wrap)
    except (IndexError, ValueError):
        return None


def _segment_ids(node) -> Optional[np.ndarray]:
    """Segment ids (negative: dropped) within the output's segments, or None."""
    ids = constant_indices(node)
    if ids is None:
        return None
    n = node.attrs.get("num_segments") if node.op is not A.segment_sum else node.shape[0]
    if ids.size and ids.max() >= n:
        return None
    if node.op is A.segment_sum and (ids.min(initial=0) < 0 or np.any(np.diff(ids) < 0)):
        return None
    return ids


# --- the two forms: a move (gather) and a scatter-add ---------------------------------------
def _take(values: np.ndarray, idx: np.ndarray, axis: int, fill) -> np.ndarray:
    """``values`` at ``idx`` along ``axis`` (``np.take``), ``fill`` where an index is
    negative (a dropped segment id)."""
    out = np.take(values, np.maximum(idx, 0), axis=axis)
    if idx.size and idx.min() < 0:
        mask = (idx < 0).reshape((1,) * axis + idx.shape + (1,) * (values.ndim - axis - 1))
        out = np.where(np.broadcast_to(mask, out.shape), fill, out)
    return out


def _flat_terms(g: np.ndarray, idx: np.ndarray, axis: int) -> tuple:
    """(the flat index of each term, g's terms moved to ``(idx.size, before, after)``)."""
    rank = idx.ndim
    moved = np.moveaxis(g, tuple(range(axis, axis + rank)), tuple(range(rank)))
    return idx.reshape(-1), moved.reshape((idx.size,) + moved.shape[rank:])


def scatter_add(code, g: np.ndarray, idx: np.ndarray, shape: tuple, dtype) -> np.ndarray:
    """Zeros of ``shape`` plus ``g`` added at ``idx`` along axis 0 (negative ids dropped),
    the terms of each element added in ``np.add.at``'s order, each partial sum bound."""
    flat, terms = _flat_terms(g, idx, 0)
    rest = terms.shape[1:]
    out = np.full((shape[0],) + rest, None, dtype=object)
    for k, i in enumerate(flat.tolist()):
        if i < 0:
            continue
        for pos in np.ndindex(*rest):
            term = terms[(k,) + pos]
            if term is ZERO:
                continue
            acc = out[(i,) + pos]
            out[(i,) + pos] = term if acc is None else code.bind(acc + term, dtype)
    cells = out.reshape(-1)
    for k, v in enumerate(cells.tolist()):
        if v is None:
            cells[k] = ZERO
    return out


def _gather_rule(node, args, code):
    return _take(args[0], _gather_index(node), node.attrs["axis"], ZERO)


def _gather_grad_rule(node, args, code):
    g, axis = args[0], node.attrs["axis"]
    g = np.moveaxis(g, tuple(range(axis)), tuple(range(g.ndim - axis, g.ndim))) if axis \
        else g   # the axes before ``axis`` go last: ``scatter_add`` works along axis 0
    out = scatter_add(code, g, _gather_index(node), _rolled(node.shape, axis), node.dtype)
    return np.moveaxis(out, tuple(range(out.ndim - axis, out.ndim)), tuple(range(axis))) \
        if axis else out


def _rolled(shape: tuple, axis: int) -> tuple:
    return tuple(shape[axis:]) + tuple(shape[:axis])


def _segment_sum_rule(node, args, code):
    return scatter_add(code, args[0], _segment_ids(node), tuple(node.shape), node.dtype)


def _segment_gather_rule(node, args, code):
    return _take(args[0], _segment_ids(node), 0, ZERO)


# --- statements and classes -----------------------------------------------------------------
def _size(shape) -> int:
    return int(np.prod(shape, dtype=np.int64))


def _move_statements(node) -> Optional[int]:
    index = _segment_ids(node) if node.op is A.segment_gather else _gather_index(node)
    return None if index is None else 0


def _sum_statements(node) -> Optional[int]:
    index = _segment_ids(node) if node.op is not I.gather_grad else _gather_index(node)
    return None if index is None else _size(node.inputs[0].shape)


def _move_classes(node, arrays: list, fresh) -> Optional[tuple]:
    """(classes, number mask, 0): the input's classes moved (a dropped id: an exact 0)."""
    index = _segment_ids(node) if node.op is A.segment_gather else _gather_index(node)
    if index is None:
        return None
    cls, num = arrays[0]
    axis = node.attrs.get("axis", 0)
    return _take(cls, index, axis, 0), _take(num, index, axis, True), 0


def _sum_classes(node, arrays: list, fresh) -> Optional[tuple]:
    """(classes, number mask, statements) of a scatter-add as its rule binds it: each
    element's non-zero terms added one at a time, each partial sum a class made once per
    distinct (partial sum, term) pair (hash-consed, as ``ElementCode.bind``); a pair of
    numbers is a number, not a statement."""
    if node.op is I.gather_grad:
        index, axis = _gather_index(node), node.attrs["axis"]
    else:
        index, axis = _segment_ids(node), 0
    if index is None:
        return None
    cls, num = arrays[0]
    flat, terms = _flat_terms(cls, index, axis)
    _, nums = _flat_terms(num, index, axis)
    rest = terms.shape[1:]
    width = _size(rest)
    terms, nums = terms.reshape(len(flat), width), nums.reshape(len(flat), width)
    n = _rolled(node.shape, axis)[0]
    out = [0] * (n * width)
    is_num = [True] * (n * width)
    pairs: dict = {}
    made = 0
    for k, i in enumerate(flat.tolist()):
        if i < 0:
            continue
        base = i * width
        for r, (t, t_num) in enumerate(zip(terms[k].tolist(), nums[k].tolist())):
            if t == 0:
                continue
            at = base + r
            acc = out[at]
            if acc == 0:
                out[at], is_num[at] = t, t_num
                continue
            key = (min(acc, t), max(acc, t))
            found = pairs.get(key)
            if found is None:
                both = is_num[at] and t_num
                found = pairs[key] = (int(fresh(())), both)
                made += not both
            out[at], is_num[at] = found
    shape = (n,) + rest
    out_cls = np.array(out, np.int64).reshape(shape)
    out_num = np.array(is_num, bool).reshape(shape)
    before = len(node.shape[:axis])
    if before:       # (segment, before..., after...) -> node's order
        out_cls, out_num = (np.moveaxis(a, 0, before) for a in (out_cls, out_num))
    return out_cls, out_num, made


def _moved(node) -> tuple:
    """(elements, False): a gather moves its output's elements (fancy indexing)."""
    return _size(node.shape), False


def _summed(node) -> tuple:
    """(elements, scatters): a segment sum adds its data's elements in one compiled pass;
    a gather_grad scatters its gradient's with ``np.add.at`` (``step_cost.py``)."""
    return _size(node.inputs[0].shape), node.op is I.gather_grad


def _record(rule, statements, classes, step_elements):
    rule.binds = True            # node_elements passes the ElementCode (elements.py)
    rule.statements = statements
    rule.classes = classes
    rule.step_elements = step_elements      # the numpy step's work (step_cost.py)
    return rule


GATHER_RULES: dict = {
    I.gather: _record(_gather_rule, _move_statements, _move_classes, _moved),
    I.gather_grad: _record(_gather_grad_rule, _sum_statements, _sum_classes, _summed),
    A.unsorted_segment_sum: _record(_segment_sum_rule, _sum_statements, _sum_classes,
                                    _summed),
    A.segment_sum: _record(_segment_sum_rule, _sum_statements, _sum_classes, _summed),
    A.segment_gather: _record(_segment_gather_rule, _move_statements, _move_classes,
                              _moved),
}
"""{record: rule(node, input object arrays, ElementCode) -> object array}, merged into
``elements.ELEMENT_RULES``; each rule's ``statements(node)`` (None: declined) and
``classes(node, [(classes, numbers) of each input], fresh)`` (the structure pass) and
``step_elements(node) -> (elements, scatters)`` (its numpy step's work, ``step_cost.py``)."""
