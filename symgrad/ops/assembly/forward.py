"""The forwards of the assembly ops, written once against the array API that numpy and CuPy
share (``xp``): the records call them with numpy, the cuda steps with CuPy (or numpy under
the CUDA simulator). Every index is checked before anything is written
(``checks.py``); the scatter itself is one pass (``scatter.py``: a numba loop on the host,
``ufunc.at`` on the device).

>>> import numpy as np
>>> segment_reduce(np, np.array([1.0, 2.0, 4.0]), np.array([1, 1, -1]), 3, "sum")
array([0., 3., 0.])
>>> segment_reduce(np, np.array([1, 5]), np.array([0, 0]), 2, "max")
array([                   5, -9223372036854775808])
"""

from __future__ import annotations

import numpy as np

from ...dtypes import is_floating

__all__ = ["segment_reduce", "segment_gather", "identity_of", "mean_dtype", "flat_index",
           "gather_nd", "scatter_nd_add", "scatter_nd_update"]

UFUNCS = {"sum": "add", "prod": "multiply", "max": "maximum", "min": "minimum",
          "mean": "add"}


def identity_of(kind: str, dtype) -> object:
    """The value of an empty segment (TF): 0 for sum and mean, 1 for prod, the dtype's lowest
    value for max and its highest for min (``numeric_limits<T>::lowest()``/``max()``)."""
    dtype = np.dtype(dtype)
    if kind in ("sum", "mean"):
        return 0
    if kind == "prod":
        return 1
    info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
    return info.min if kind == "max" else info.max


def mean_dtype(dtype) -> np.dtype:
    """unsorted_segment_mean's result dtype: TF divides with truediv, so integer data
    gives float64 (float32 for int8/int16/uint8/uint16)."""
    dtype = np.dtype(dtype)
    if is_floating(dtype):
        return dtype
    return np.dtype(np.float32) if dtype.itemsize <= 2 else np.dtype(np.float64)


def _flat(xp, data, ids):
    """``(ids as int64 of shape (m,), data as (m, inner...))`` with negative ids dropped."""
    flat_ids = xp.reshape(ids, (-1,)).astype(xp.int64)
    rows = xp.reshape(data, (flat_ids.shape[0],) + tuple(data.shape[ids.ndim:]))
    return flat_ids, rows


def segment_reduce(xp, data, ids, n: int, kind: str, scatter=None):
    """TF's unsorted segment reduction ``kind`` of ``data`` into ``n`` segments. ``ids`` have
    the leading shape of ``data`` and are already checked to be ``< n``; negative ids are
    dropped (TF). ``scatter(out, ids, rows, ufunc_name)`` does the one-pass write (default:
    ``ufunc.at``)."""
    flat_ids, rows = _flat(xp, data, ids)
    inner = tuple(data.shape[ids.ndim:])
    out_dtype = mean_dtype(data.dtype) if kind == "mean" else np.dtype(data.dtype)
    out = xp.full((n,) + inner, identity_of(kind, out_dtype), dtype=out_dtype)
    dropped = xp is not np or (flat_ids.size and flat_ids.min() < 0)  # the device never
    keep = flat_ids >= 0 if dropped or kind == "mean" else None       # reads values back
    if dropped:
        flat_ids = xp.where(keep, flat_ids, 0)
        rows = _neutral_where_dropped(xp, rows, keep, kind)
    (scatter or _ufunc_at)(xp, out, flat_ids, rows.astype(out_dtype, copy=False), UFUNCS[kind])
    if kind == "mean":
        count = xp.zeros((n,), dtype=out_dtype)
        _ufunc_at(xp, count, flat_ids, keep.astype(out_dtype), "add")
        out = out / xp.reshape(xp.maximum(count, 1), (n,) + (1,) * len(inner))
    return out


def _neutral_where_dropped(xp, rows, keep, kind: str):
    """Rows of dropped (negative) ids replaced by the reduction's identity, so they can be
    written into segment 0 without changing it (one branch-free pass, device-friendly)."""
    mask = xp.reshape(keep, (keep.shape[0],) + (1,) * (rows.ndim - 1))
    fill = identity_of(kind, rows.dtype)
    return xp.where(mask, rows, xp.asarray(fill, dtype=rows.dtype))


def _ufunc_at(xp, out, ids, rows, name: str) -> None:
    ufunc = getattr(xp, name)
    at = getattr(ufunc, "at", None)
    if at is None:  # CuPy without ufunc.at for this ufunc
        raise NotImplementedError(f"segment reduction '{name}' has no scatter on this device "
                                  "library (needs ufunc.at)")
    at(out, ids, rows)


def segment_gather(xp, g, ids):
    """``g[ids]`` with rows of negative ids set to zero (TF's _GatherDropNegatives)."""
    if xp is np and (ids.size == 0 or ids.min() >= 0):   # nothing dropped: one take
        return np.take(g, ids, axis=0) if g.shape[0] or not ids.size else np.zeros(
            tuple(ids.shape) + tuple(g.shape[1:]), dtype=g.dtype)
    safe = xp.where(ids < 0, 0, ids).astype(xp.int64)
    taken = xp.take(g, safe, axis=0) if g.shape[0] else xp.zeros(
        tuple(ids.shape) + tuple(g.shape[1:]), dtype=g.dtype)
    mask = xp.reshape(ids >= 0, tuple(ids.shape) + (1,) * (g.ndim - 1))
    return xp.where(mask, taken, xp.zeros((), dtype=g.dtype))


def flat_index(xp, indices, shape: tuple):
    """Row-major positions of ``indices[..., :K]`` in the first K dims of ``shape``
    (already checked to be in range), as int64 of shape ``indices.shape[:-1]``."""
    k = indices.shape[-1]
    idx = indices.astype(xp.int64)
    flat = xp.zeros(tuple(indices.shape[:-1]), dtype=xp.int64)
    for axis in range(k):
        flat = flat * int(shape[axis]) + idx[..., axis]
    return flat


def _rows(xp, x, k: int):
    """``x`` viewed as ``(prod(shape[:k]), shape[k:]...)``."""
    lead = int(np.prod(x.shape[:k], dtype=np.int64))
    return xp.reshape(x, (lead,) + tuple(x.shape[k:]))


def gather_nd(xp, params, indices):
    """TF's gather_nd: ``params[tuple(indices[..., i])]``, shape
    ``indices.shape[:-1] + params.shape[K:]``."""
    k = indices.shape[-1]
    flat = flat_index(xp, indices, params.shape)
    rows = _rows(xp, params, k)
    taken = xp.take(rows, xp.reshape(flat, (-1,)), axis=0) if rows.shape[0] else xp.zeros(
        (flat.size,) + tuple(rows.shape[1:]), dtype=params.dtype)
    return xp.reshape(taken, tuple(indices.shape[:-1]) + tuple(params.shape[k:]))


def scatter_nd_add(xp, tensor, indices, updates, scatter=None):
    """``tensor`` (copied) plus ``updates`` added at ``indices`` (duplicates accumulate)."""
    k = indices.shape[-1]
    out = xp.array(tensor, copy=True)
    rows = _rows(xp, out, k)       # a view of out
    flat = xp.reshape(flat_index(xp, indices, tensor.shape), (-1,))
    upd = xp.reshape(updates, (flat.shape[0],) + tuple(tensor.shape[k:])).astype(out.dtype)
    (scatter or _ufunc_at)(xp, rows, flat, upd, "add")
    return out


def scatter_nd_update(xp, tensor, indices, updates):
    """``tensor`` (copied) with ``updates`` written at ``indices`` (a repeated index: the
    last update wins, numpy's assignment order)."""
    k = indices.shape[-1]
    out = xp.array(tensor, copy=True)
    rows = _rows(xp, out, k)
    flat = xp.reshape(flat_index(xp, indices, tensor.shape), (-1,))
    rows[flat] = xp.reshape(updates, (flat.shape[0],) + tuple(tensor.shape[k:]))
    return out
