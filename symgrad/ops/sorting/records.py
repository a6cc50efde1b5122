"""Sorting op records (TF semantics): sort, argsort (also TopKV2's indices, ``k``), the
take/put along an axis that sort's and top_k's gradients use, and searchsorted.

Every order is stable: among equal entries the one with the lower index comes first in
both directions (a valid choice for TF's ``stable=False``, and TopKV2's own rule). The
descending order is the ascending one of the reversed axis, reversed, so it needs no
negation (unsigned and minimum integers sort right).

``sort``'s gradient scatters the cotangent back through the permutation that sorted
(``put_along_axis`` at ``argsort``'s indices); ``take_along_axis`` (top_k's values) and
``put_along_axis`` are each other's gradient, so every order of derivative works.
``argsort`` and ``searchsorted`` give integers: never differentiated (TF).

>>> import numpy as np
>>> import symgrad as sg
>>> x = sg.placeholder("x", shape=(4,))
>>> (g,) = sg.gradients(sg.reduce_sum(sg.sort(x) * [1.0, 2.0, 3.0, 4.0]), [x])
>>> sg.evaluate(g, {x: [3.0, 1.0, 4.0, 2.0]})
array([3., 1., 4., 2.])
"""

from __future__ import annotations

import numpy as np

from ...dtypes import as_dtype
from ...errors import DTypeError, ShapeError
from ...shapes import format_shape
from ..functions import F
from ..opdef import Example, structural
from ..registry import apply


def argsort_numpy(x, axis: int, descending: bool, k=None, xp=np):
    """Stable argsort along ``axis`` (ties: lower index first), the first ``k`` entries
    (None: all), as int32; ``xp`` is numpy or CuPy."""
    n = x.shape[axis]
    kind = "stable" if xp is np else None       # CuPy's sorts are stable and take no kind
    if k is not None and k > n:
        raise ShapeError(f"sg.math.top_k: input must have at least k={k} entries along its "
                         f"last axis, got {n} (shape {format_shape(x.shape)})")
    if descending:
        idx = xp.argsort(xp.flip(x, axis), axis=axis, kind=kind)
        idx = (n - 1) - xp.flip(idx, axis)
    else:
        idx = xp.argsort(x, axis=axis, kind=kind)
    if k is not None:
        idx = xp.moveaxis(xp.moveaxis(idx, axis, 0)[:k], 0, axis)
    return xp.ascontiguousarray(idx).astype(xp.int32)


def sort_numpy(x, axis: int, descending: bool, xp=np):
    out = xp.sort(x, axis=axis)
    return xp.ascontiguousarray(xp.flip(out, axis)) if descending else out


def along(xp, idx, axis: int) -> tuple:
    """The full index of ``out[..., idx, ...]`` along ``axis`` (numpy's take_along_axis)."""
    index = []
    for d in range(idx.ndim):
        if d == axis:
            index.append(idx.astype(xp.int64))
        else:
            shape = [1] * idx.ndim
            shape[d] = idx.shape[d]
            index.append(xp.arange(idx.shape[d]).reshape(shape))
    return tuple(index)


def put_numpy(g, idx, like, axis: int, xp=np, scatter_add=None):
    out = xp.zeros(like.shape, dtype=g.dtype)
    index = along(xp, idx, axis)
    if scatter_add is None:
        np.add.at(out, index, g)
    else:
        scatter_add(out, index, g)
    return out


def _ranked(op: str, x, what: str = "input") -> None:
    if x.ndim == 0:
        raise ShapeError(f"sg.{op}: {what} '{x.name}' must have at least one dimension, got a "
                         "scalar")


def _argsort_infer(x, axis, descending, k):
    _ranked("argsort" if k is None else "math.top_k", x)
    if k is None:
        return x.shape, np.dtype(np.int32)
    n = x.shape[axis]
    if n is not None and k > n:
        raise ShapeError(f"sg.math.top_k: input '{x.name}' must have at least k={k} entries "
                         f"along its last axis, got {n} (shape {format_shape(x.shape)})")
    return x.shape[:axis] + (k,) + x.shape[axis + 1:], np.dtype(np.int32)


# TF's argsort (all entries) and TopKV2's indices (the first k of the descending order).
argsort = structural("argsort", lambda x, axis, descending, k: argsort_numpy(
    x, axis, descending, k), _argsort_infer, differentiable=False)


def _sort_infer(x, axis, descending):
    _ranked("sort", x)
    return x.shape, x.dtype


def _sort_vjp(g, out, x, axis, descending):
    idx = apply(argsort, (x,), {"axis": axis, "descending": descending, "k": None})
    return (F.put_along_axis(g, idx, x, axis),)


sort = structural(
    "sort", sort_numpy, _sort_infer, vjp=_sort_vjp,
    examples=(Example(((3, 5),), {"axis": -1}, lambda a: np.sort(a, -1)),
              Example(((4, 3),), {"axis": 0, "direction": "DESCENDING"},
                      lambda a: np.flip(np.sort(a, 0), 0))))


def _take_infer(x, idx, axis):
    if idx.ndim != x.ndim:
        raise ShapeError(f"take_along_axis: indices '{idx.name}' of shape "
                         f"{format_shape(idx.shape)} must have the rank of '{x.name}' "
                         f"{format_shape(x.shape)}")
    return idx.shape, x.dtype


# ``x`` at ``idx`` along ``axis`` (numpy's take_along_axis; idx from argsort: in range).
take_along_axis = structural(
    "take_along_axis", lambda x, idx, axis: np.take_along_axis(x, idx.astype(np.int64), axis),
    _take_infer, vjp=lambda g, out, x, idx, axis: (F.put_along_axis(g, idx, x, axis), None),
    public=False)
# zeros like ``like`` with ``g`` added at ``idx`` along ``axis`` (repeats accumulate).
put_along_axis = structural(
    "put_along_axis", put_numpy, lambda g, idx, like, axis: (like.shape, g.dtype),
    vjp=lambda gg, out, g, idx, like, axis: (F.take_along_axis(gg, idx, axis), None, None),
    public=False)


# --- searchsorted ------------------------------------------------------------------------
def searchsorted_numpy(seq, values, side: str, out_type, xp=np):
    """TF's searchsorted on the last axis; a 1-D ``seq`` serves values of any shape."""
    if seq.ndim == 1:
        out = xp.searchsorted(seq, values.reshape(-1), side=side).reshape(values.shape)
        return out.astype(out_type)
    lead = seq.shape[:-1]
    if values.shape[:-1] != lead:
        raise ShapeError(f"sg.searchsorted: sorted_sequence has leading dims {lead} and values "
                         f"{values.shape[:-1]}; they must be equal (TF)")
    rows_s = seq.reshape(-1, seq.shape[-1])
    rows_v = values.reshape(-1, values.shape[-1])
    out = xp.zeros(rows_v.shape, dtype=out_type)
    for r in range(rows_s.shape[0]):      # one search per row
        out[r] = xp.searchsorted(rows_s[r], rows_v[r], side=side)
    return out.reshape(values.shape)


def _searchsorted_infer(seq, values, side, out_type):
    _ranked("searchsorted", seq, "sorted_sequence")
    for t, what in ((seq, "sorted_sequence"), (values, "values")):
        if np.dtype(t.dtype).kind not in "iuf":
            raise DTypeError(f"sg.searchsorted: {what} '{t.name}' must be numeric, got "
                             f"{np.dtype(t.dtype).name}")
    if seq.ndim > 1:
        _ranked("searchsorted", values, "values")
        if values.ndim != seq.ndim or any(
                a is not None and b is not None and a != b
                for a, b in zip(seq.shape[:-1], values.shape[:-1])):
            raise ShapeError(
                f"sg.searchsorted: values '{values.name}' {format_shape(values.shape)} must "
                f"have the leading dims of sorted_sequence '{seq.name}' "
                f"{format_shape(seq.shape)} (all but the last; TF), or sorted_sequence must "
                "be 1-D")
    return values.shape, as_dtype(out_type, "searchsorted")


searchsorted = structural(
    "searchsorted", lambda seq, values, side, out_type: searchsorted_numpy(
        seq, values, side, out_type), _searchsorted_infer, differentiable=False)
