"""Assembly op records (TF semantics): the unsorted segment reductions (sum, max, min, prod,
mean), the sorted ``segment_sum``, ``scatter_nd``, ``tensor_scatter_nd_add`` and
``tensor_scatter_nd_update``, and the two internal gathers their gradients are made of
(``segment_gather``: TF's _GatherDropNegatives; ``gather_nd``).

Each numpy forward checks every id before anything is written (``checks.py``) and then
writes in one pass (``forward.py``; the host loop is ``compile/kernel_lib/scatter.py``).
The gradients are TF's (``math_grad.py``, ``array_grad.py``), written with symgrad ops:
a scatter's gradient is a gather and the other way round, so every order works.

>>> import numpy as np
>>> import symgrad as sg
>>> x = sg.placeholder("x", shape=(4,))
>>> y = sg.unsorted_segment_max(x, [0, 0, 2, 0], num_segments=3)
>>> (g,) = sg.gradients(sg.reduce_sum(y), [x])
>>> value, grad = sg.evaluate([y, g], {x: np.array([1.0, 3.0, 2.0, 3.0])})
>>> value[1] == np.finfo(np.float64).min, grad   # an empty segment: the lowest value (TF)
(np.True_, array([0. , 0.5, 1. , 0.5]))
"""

from __future__ import annotations

import importlib

import numpy as np

from ...errors import DTypeError, ShapeError
from ...shapes import format_shape
from ..functions import F
from ..indexing.records import check_index_dtype
from ..opdef import Example, structural
from ..registry import apply
from . import checks
from . import forward as fw

__all__ = ["SEGMENT_REDUCTIONS", "segment_gather", "segment_sum", "gather_nd", "scatter_nd",
           "tensor_scatter_nd_add", "tensor_scatter_nd_update"]


def host_scatter(xp, out, ids, rows, name: str) -> None:
    """The compiled one-pass loop (loaded when first used: numba compiles it once)."""
    importlib.import_module("symgrad.compile.kernel_lib.scatter").scatter(
        xp, out, ids, rows, name)


# --- shape rules ---------------------------------------------------------------------------
def _compatible(a, b) -> bool:
    return a is None or b is None or a == b


def _prefix_rule(op: str, data, ids) -> tuple:
    """``segment_ids``' shape must be a prefix of ``data``'s (TF); returns the inner dims."""
    check_index_dtype(op, ids)
    k = ids.ndim
    if k > data.ndim or not all(_compatible(a, b) for a, b in zip(ids.shape, data.shape)):
        raise ShapeError(f"{op}: segment_ids '{ids.name}' of shape {format_shape(ids.shape)} "
                         f"must be a prefix of data '{data.name}''s shape "
                         f"{format_shape(data.shape)}")
    return tuple(data.shape[k:])


def _check_prefix(op: str, data: np.ndarray, ids: np.ndarray) -> None:
    if ids.ndim > data.ndim or data.shape[:ids.ndim] != ids.shape:
        raise ShapeError(f"{op}: segment_ids of shape {ids.shape} must be a prefix of data's "
                         f"shape {data.shape}")


# --- unsorted segment reductions -----------------------------------------------------------
def _segment_numpy(name: str, kind: str):
    def run(data, ids, num_segments):
        data, ids = np.asarray(data), np.asarray(ids)
        _check_prefix(name, data, ids)
        ids = checks.check_segment_ids(name, ids, num_segments)
        return fw.segment_reduce(np, data, ids, num_segments, kind, scatter=host_scatter)
    return run


def _segment_infer(name: str, kind: str):
    def infer(data, ids, num_segments):
        inner = _prefix_rule(name, data, ids)
        dtype = fw.mean_dtype(data.dtype) if kind == "mean" else data.dtype
        if data.dtype.kind == "b":
            raise DTypeError(f"{name}: data '{data.name}' must be numeric, got bool")
        return (num_segments,) + inner, dtype
    return infer


def _expand_to(mask, rank: int):
    """``mask`` (ids' shape) with trailing axes of length 1 up to ``rank``."""
    for _ in range(rank - mask.ndim):
        mask = F.expand_dims(mask, -1)
    return mask


def _gather_ids(g, ids, n):
    return apply(segment_gather, (g, ids), {"num_segments": n})


def _segment(op, data, ids, n):
    return apply(op, (data, ids), {"num_segments": n})


def _sum_vjp(g, out, data, ids, num_segments):
    return _gather_ids(g, ids, num_segments), None


def _mean_vjp(g, out, data, ids, num_segments):
    ones = F.cast(F.ones_like(ids), g.dtype)
    count = F.maximum(_segment(unsorted_segment_sum, ones, ids, num_segments), 1.0)
    count = _expand_to(count, g.ndim)
    return F.cast(_gather_ids(g / count, ids, num_segments), data.dtype), None


def _extremum_vjp(g, out, data, ids, num_segments):
    """TF's _UnsortedSegmentMinOrMaxGrad: the gradient of a segment is split evenly among
    the entries equal to its extremum (dropped ids get none)."""
    kept = _expand_to(ids >= 0, data.ndim)
    chosen = F.cast(F.logical_and(F.equal(data, _gather_ids(out, ids, num_segments)), kept),
                    g.dtype)
    count = F.maximum(_segment(unsorted_segment_sum, chosen, ids, num_segments), 1.0)
    return chosen * _gather_ids(g / count, ids, num_segments), None


def _prod_vjp(g, out, data, ids, num_segments):
    """TF's _UnsortedSegmentProdGrad: the product of the others, also where an entry is 0
    (the product of the segment's non-zero entries; 0 when the segment has two zeros)."""
    is_zero = F.equal(data, F.zeros_like(data))
    zeros = _segment(unsorted_segment_sum, F.cast(is_zero, g.dtype), ids, num_segments)
    g = F.where(zeros > 1.0, F.zeros_like(g), g)
    non_zero = F.where(is_zero, F.ones_like(data), data)
    non_zero_prod = _segment(unsorted_segment_prod, non_zero, ids, num_segments)
    others = F.where(is_zero, _gather_ids(non_zero_prod, ids, num_segments),
                     _gather_ids(out, ids, num_segments) / data)
    return _gather_ids(g, ids, num_segments) * others, None


def _segment_examples(name: str, kind: str) -> tuple:
    ids = (0, 2, 1, 0)   # no empty segment: an empty max is -1.8e308, beyond finite differences

    def reference(x):
        return fw.segment_reduce(np, x, np.array(ids), 3, kind)
    return (Example(((4, 2),), {"segment_ids": ids, "num_segments": 3}, reference, unknown=()),)


def _segment_record(kind: str, vjp):
    name = f"unsorted_segment_{kind}"
    return structural(name, _segment_numpy(name, kind), _segment_infer(name, kind), vjp=vjp,
                      examples=_segment_examples(name, kind))


unsorted_segment_sum = _segment_record("sum", _sum_vjp)
unsorted_segment_max = _segment_record("max", _extremum_vjp)
unsorted_segment_min = _segment_record("min", _extremum_vjp)
unsorted_segment_prod = _segment_record("prod", _prod_vjp)
unsorted_segment_mean = _segment_record("mean", _mean_vjp)
SEGMENT_REDUCTIONS = {"sum": unsorted_segment_sum, "max": unsorted_segment_max,
                      "min": unsorted_segment_min, "prod": unsorted_segment_prod,
                      "mean": unsorted_segment_mean}


# --- segment_gather: g[ids], zero rows for negative ids (the reductions' gradient) ---------
def _segment_gather_numpy(g, ids, num_segments):
    ids = checks.check_segment_ids("unsorted segment gradient", ids, num_segments)
    return fw.segment_gather(np, np.asarray(g), ids)


def _segment_gather_infer(g, ids, num_segments):
    return tuple(ids.shape) + tuple(g.shape[1:]), g.dtype


segment_gather = structural(
    "segment_gather", _segment_gather_numpy, _segment_gather_infer, public=False,
    vjp=lambda gg, out, g, ids, num_segments: (
        _segment(unsorted_segment_sum, gg, ids, num_segments), None))


# --- segment_sum: sorted ids, num_segments = last id + 1 when it runs ----------------------
def _segment_sum_numpy(data, ids):
    data = np.asarray(data)
    ids = checks.check_sorted_ids("segment_sum", ids)
    _check_prefix("segment_sum", data, ids)
    n = int(ids[-1]) + 1 if ids.size else 0
    return fw.segment_reduce(np, data, ids, n, "sum", scatter=host_scatter)


def static_segments(ids) -> object:
    """``segment_sum``'s static number of segments: last id + 1 when the ids are a constant,
    else None (the length is known when the op runs)."""
    from ..sources import CONSTANT
    if getattr(ids, "op", None) is CONSTANT:
        value = np.asarray(ids.attrs["value"])
        checks.check_sorted_ids("segment_sum", value)
        return int(value[-1]) + 1 if value.size else 0
    return None


def _segment_sum_infer(data, ids):
    if ids.ndim != 1:
        raise ShapeError(f"segment_sum: segment_ids '{ids.name}' must be a vector (TF), got "
                         f"shape {format_shape(ids.shape)}")
    inner = _prefix_rule("segment_sum", data, ids)
    return (static_segments(ids),) + inner, data.dtype


segment_sum = structural(
    "segment_sum", _segment_sum_numpy, _segment_sum_infer,
    vjp=lambda g, out, data, ids: (F.gather(g, ids), None),
    examples=(Example(((5, 2),), {"segment_ids": (0, 0, 1, 3, 3)},
                      lambda x: np.stack([x[:2].sum(0), x[2], 0 * x[0], x[3:].sum(0)]),
                      unknown=()),))


# --- gather_nd, scatter_nd, tensor_scatter_nd_add/update ----------------------------------
def _nd_rule(op: str, indices, updates, shape: tuple) -> None:
    """TF: ``updates.shape == indices.shape[:-1] + shape[K:]``."""
    check_index_dtype(op, indices)
    k = indices.shape[-1] if indices.ndim else None
    if k is None or k > len(shape):
        raise ShapeError(f"{op}: indices '{indices.name}' of shape "
                         f"{format_shape(indices.shape)} must have a known last dim K <= "
                         f"rank of the output {format_shape(shape)}")
    want = tuple(indices.shape[:-1]) + tuple(shape[k:])
    if len(want) != updates.ndim or not all(_compatible(a, b)
                                            for a, b in zip(want, updates.shape)):
        raise ShapeError(f"{op}: updates '{updates.name}' has shape "
                         f"{format_shape(updates.shape)} but indices of shape "
                         f"{format_shape(indices.shape)} into {format_shape(shape)} need "
                         f"{format_shape(want)}")


def _gather_nd_numpy(params, indices):
    params = np.asarray(params)
    indices = checks.check_nd_indices("gather_nd", indices, params.shape)
    return fw.gather_nd(np, params, indices)


def _gather_nd_infer(params, indices):
    check_index_dtype("gather_nd", indices)
    k = indices.shape[-1] if indices.ndim else None
    if k is None or k > params.ndim:
        raise ShapeError(f"gather_nd: indices '{indices.name}' of shape "
                         f"{format_shape(indices.shape)} need a known last dim <= rank of "
                         f"'{params.name}' {format_shape(params.shape)}")
    return tuple(indices.shape[:-1]) + tuple(params.shape[k:]), params.dtype


gather_nd = structural(
    "gather_nd", _gather_nd_numpy, _gather_nd_infer,
    vjp=lambda g, out, params, indices: (
        apply(tensor_scatter_nd_add, (F.zeros_like(params), indices, g)), None))


def _scatter_nd_numpy(indices, updates, shape):
    updates = np.asarray(updates)
    indices = checks.check_nd_indices("scatter_nd", indices, shape)
    zeros = np.zeros(shape, dtype=updates.dtype)
    return fw.scatter_nd_add(np, zeros, indices, updates, scatter=host_scatter)


def _scatter_nd_infer(indices, updates, shape):
    _nd_rule("scatter_nd", indices, updates, shape)
    return tuple(shape), updates.dtype


scatter_nd = structural(
    "scatter_nd", _scatter_nd_numpy, _scatter_nd_infer,
    vjp=lambda g, out, indices, updates, shape: (None, apply(gather_nd, (g, indices))))


def _tensor_infer(op: str):
    def infer(tensor, indices, updates):
        _nd_rule(op, indices, updates, tuple(tensor.shape))
        if np.dtype(updates.dtype) != np.dtype(tensor.dtype):
            raise DTypeError(f"{op}: updates '{updates.name}' has dtype {updates.dtype} but "
                             f"tensor '{tensor.name}' has {tensor.dtype}; cast one of them")
        return tuple(tensor.shape), tensor.dtype
    return infer


def _tensor_add_numpy(tensor, indices, updates):
    tensor = np.asarray(tensor)
    indices = checks.check_nd_indices("tensor_scatter_nd_add", indices, tensor.shape)
    return fw.scatter_nd_add(np, tensor, indices, np.asarray(updates), scatter=host_scatter)


def _tensor_update_numpy(tensor, indices, updates):
    tensor = np.asarray(tensor)
    indices = checks.check_nd_indices("tensor_scatter_nd_update", indices, tensor.shape)
    return fw.scatter_nd_update(np, tensor, indices, np.asarray(updates))


def _update_vjp(g, out, tensor, indices, updates):
    """TF's _TensorScatterUpdateGrad: the tensor's gradient with the updated entries zeroed;
    each update gets the gradient at its index."""
    cleared = apply(tensor_scatter_nd_update, (g, indices, F.zeros_like(updates)))
    return cleared, None, apply(gather_nd, (g, indices))


tensor_scatter_nd_add = structural(
    "tensor_scatter_nd_add", _tensor_add_numpy, _tensor_infer("tensor_scatter_nd_add"),
    vjp=lambda g, out, tensor, indices, updates: (g, None, apply(gather_nd, (g, indices))))
tensor_scatter_nd_update = structural(
    "tensor_scatter_nd_update", _tensor_update_numpy, _tensor_infer("tensor_scatter_nd_update"),
    vjp=_update_vjp)
