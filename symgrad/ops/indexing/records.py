"""Index op records: getitem (basic indexing) and its scatter gradient, gather (and
integer-array indexing), its scatter-add gradient, argmax/argmin and one_hot.

``gather`` follows TF: an index outside ``[0, n)`` (negative included) is a
``GatherIndexError`` (a ValueError) naming the index. Integer-array indexing ``x[idx]``
is the same record with ``wrap=True``: numpy's rules, negative indices wrap and an index
out of range is an ``IndexRangeError`` (an IndexError). Both are checked whenever the op
runs (``sg.evaluate``, compiled functions, eager), since the indices may be fed.

The gradient of gather is ``gather_grad``, a scatter-add (duplicate indices accumulate,
TF's dense-converted IndexedSlices); the gradient of that is a gather again, so second and
higher orders work in both engines. Integer inputs are never differentiated.

>>> import numpy as np
>>> import symgrad as sg
>>> x = sg.placeholder("x", shape=(None, 2))
>>> y = sg.gather(x, [0, 0, 2])
>>> y.shape
(3, 2)
>>> (g,) = sg.gradients(sg.reduce_sum(y), [x])
>>> sg.evaluate(g, {x: np.ones((3, 2))})
array([[2., 2.],
       [0., 0.],
       [1., 1.]])
"""


from __future__ import annotations

import numpy as np

from ...dtypes import as_dtype
from ...errors import DTypeError, GatherIndexError, IndexRangeError, ShapeError
from ...shapes import format_shape
from ..functions import F
from ..opdef import structural
from ..registry import apply


# --- slicing ------------------------------------------------------------------------------------
def getitem_shape(shape, key):
    """Static shape of ``x[key]`` for basic indexing with None dims."""
    out, dim = [], 0
    n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
    for k in key:
        if k is None:
            out.append(1)
        elif k is Ellipsis:
            fill = len(shape) - n_real
            out.extend(shape[dim:dim + fill])
            dim += fill
        elif isinstance(k, slice):
            d = shape[dim]
            out.append(None if d is None else len(range(*k.indices(d))))
            dim += 1
        else:
            d = shape[dim]
            if d is not None and not -d <= k < d:
                raise ShapeError(f"getitem: index {k} is out of bounds for axis {dim} "
                                 f"with size {d}")
            dim += 1
    out.extend(shape[dim:])
    return tuple(out)


def _getitem_infer(x, key):
    n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
    if n_real > x.ndim:
        raise ShapeError(f"getitem: too many indices ({n_real}) for '{x.name}' of shape "
                         f"{format_shape(x.shape)}")
    return getitem_shape(x.shape, key), x.dtype


def _scatter_numpy(g, like, key):
    out = np.zeros(np.shape(like), dtype=g.dtype)
    out[key] = g
    return out


getitem = structural(
    "getitem", lambda x, key: np.array(x[key]), _getitem_infer,
    vjp=lambda g, out, x, key: (F.getitem_grad(g, x, key),),
    passes_mask=True)
getitem_grad = structural(
    "getitem_grad", _scatter_numpy, lambda g, like, key: (like.shape, g.dtype),
    vjp=lambda gg, out, g, like, key: (F.getitem(gg, key), None), public=False,
    passes_mask=True, symbolic_dims=True)


def check_index_dtype(op: str, indices) -> None:
    """Indices must be integers (TF: TypeError for float indices in graph mode)."""
    dtype = np.dtype(indices.dtype)
    if dtype.kind not in "iu":
        raise DTypeError(f"{op}: indices '{indices.name}' must have an integer dtype "
                         f"(int32 or int64), got {dtype.name}; cast them with "
                         f"sg.cast(indices, 'int64')")


def checked_indices(indices, n: int, wrap: bool, op: str = "gather", axis: int = 0):
    """``indices`` as int64, checked against an axis of length ``n``; ``wrap``: numpy's
    rule (negative entries count from the end), else TF's ``[0, n)``."""
    idx = np.asarray(indices).astype(np.int64, copy=False)
    low = -n if wrap else 0
    bad = (idx < low) | (idx >= n)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        where_text = ", ".join(map(str, where))
        value = int(idx[where])
        if wrap:
            raise IndexRangeError(f"{op}: index {value} (at indices[{where_text}]) is out of "
                                  f"bounds for axis {axis} with size {n}")
        raise GatherIndexError(f"{op}: indices[{where_text}] = {value} is not in [0, {n}) "
                               f"(axis {axis} of params); gather does not wrap negative "
                               "indices (TF)")
    return np.where(idx < 0, idx + n, idx) if wrap else idx


# --- gather ---------------------------------------------------------------------------------
def _gather_numpy(params, indices, axis, wrap):
    idx = checked_indices(indices, params.shape[axis], wrap, "gather" if not wrap else
                          "getitem", axis)
    return np.take(params, idx, axis=axis)


def _gather_infer(params, indices, axis, wrap):
    check_index_dtype("gather" if not wrap else "getitem", indices)
    if params.ndim == 0:
        raise ShapeError(f"gather: params '{params.name}' must have at least one dimension, "
                         "got a scalar")
    shape = params.shape[:axis] + indices.shape + params.shape[axis + 1:]
    return shape, params.dtype


def _gather_vjp(g, out, params, indices, axis, wrap):
    return F.gather_grad(g, indices, params, axis, wrap), None


gather = structural("gather", _gather_numpy, _gather_infer, vjp=_gather_vjp)


def _gather_grad_numpy(g, indices, like, axis, wrap):
    n = np.shape(like)[axis]
    idx = checked_indices(indices, n, wrap, "gather gradient", axis)
    out = np.zeros(np.shape(like), dtype=g.dtype)
    moved = np.moveaxis(out, axis, 0)  # a view: scatter into it
    rank = idx.ndim
    gm = np.moveaxis(g, tuple(range(axis, axis + rank)), tuple(range(rank)))
    np.add.at(moved, idx, gm)
    return out


def _gather_grad_vjp(gg, out, g, indices, like, axis, wrap):
    return apply(gather, (gg, indices), {"axis": axis, "wrap": wrap}), None, None


# The scatter-add that is gather's gradient: zeros shaped like ``like`` plus ``g`` added at
# ``indices`` along ``axis`` (duplicates accumulate). Linear in g; its vjp is a gather.
gather_grad = structural(
    "gather_grad", _gather_grad_numpy, lambda g, indices, like, axis, wrap: (like.shape,
                                                                              g.dtype),
    vjp=_gather_grad_vjp, public=False)


# --- integer-array keys of getitem ----------------------------------------------------------
def is_index_array(item) -> bool:
    """An integer array, list or tensor used as an index (numpy's advanced indexing)."""
    if isinstance(item, (list, np.ndarray)):
        return True
    dtype = getattr(item, "dtype", None)
    return dtype is not None and hasattr(item, "shape") and not isinstance(item, np.generic)


def split_array_key(items: tuple, rank: int):
    """``(basic_key, position, index)`` for a key with one integer array, else None.

    The array's axis is replaced by a full slice in ``basic_key``; ``position`` is where
    that axis lands after basic indexing (where the index's dims go, as numpy places them).
    """
    arrays = [k for k, item in enumerate(items) if is_index_array(item)]
    if not arrays:
        return None
    if len(arrays) > 1:
        raise TypeError("getitem: only one integer-array index per key is supported "
                        "(numpy would broadcast several); index twice or use sg.gather")
    if any(isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in items):
        raise TypeError("getitem: an integer index combined with an integer array is not "
                        "supported (numpy treats both as advanced indices); apply the "
                        "integer index first, e.g. x[0][:, idx]")
    k = arrays[0]
    index = items[k]
    if isinstance(index, (list, np.ndarray)):
        index = np.asarray(index)
        if index.dtype.kind == "b":
            raise TypeError("getitem: boolean mask indexing is not supported (its result "
                            "shape depends on the values); use sg.where")
        if index.dtype.kind not in "iu":
            if index.size:
                raise TypeError(f"getitem: array index must contain integers, got "
                                f"{index.dtype.name}")
            index = index.astype(np.int64)
    before = items[:k]
    n_real = sum(1 for i in items if i is not None and i is not Ellipsis)
    position = 0
    for item in before:
        if item is Ellipsis:
            position += rank - n_real
        else:
            position += 1  # a slice or a new axis: one output dim each
    basic = items[:k] + (slice(None),) + items[k + 1:]
    return basic, position, index


def check_constant_index(index, n, axis: int) -> None:
    """A literal index array against a known length: numpy's IndexError at build time."""
    if n is not None and isinstance(index, np.ndarray):
        checked_indices(index, n, True, "getitem", axis)


# --- argmax, argmin, one_hot ----------------------------------------------------------------
def _arg_infer(x, axis):
    if x.ndim == 0:
        raise ShapeError(f"argmax/argmin: '{x.name}' must have at least one dimension")
    return x.shape[:axis] + x.shape[axis + 1:], np.dtype(np.int64)


def _arg_numpy(fn):
    def run(x, axis):
        if x.shape[axis] == 0:
            raise ShapeError(f"{fn.__name__}: axis {axis} has length 0")
        return fn(x, axis=axis).astype(np.int64)
    return run


argmax = structural("argmax", _arg_numpy(np.argmax), _arg_infer, differentiable=False)
argmin = structural("argmin", _arg_numpy(np.argmin), _arg_infer, differentiable=False)


def _one_hot_numpy(indices, depth, dtype):
    hot = np.asarray(indices)[..., None] == np.arange(depth)  # out of range: all zeros (TF)
    return hot.astype(dtype)


def _one_hot_infer(indices, depth, dtype):
    check_index_dtype("one_hot", indices)
    return indices.shape + (depth,), as_dtype(dtype, "one_hot")


one_hot = structural("one_hot", _one_hot_numpy, _one_hot_infer, differentiable=False)
