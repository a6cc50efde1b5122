"""The public assembly functions (TF semantics; records in ``records.py``, docs/assembly.md).

>>> import numpy as np
>>> import symgrad as sg
>>> sg.unsorted_segment_sum(np.array([1.0, 2.0, 4.0]), [1, 0, 1], 3).numpy()
array([2., 5., 0.])
>>> sg.scatter_nd([[1], [3], [1]], np.array([1.0, 2.0, 5.0]), (4,)).numpy()
array([0., 6., 0., 2.])
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ..checks import int_indices
from ..functions import export
from ..registry import apply
from . import records as A

__all__ = ["unsorted_segment_sum", "unsorted_segment_max", "unsorted_segment_min",
           "unsorted_segment_prod", "unsorted_segment_mean", "segment_sum", "scatter_nd",
           "tensor_scatter_nd_add", "tensor_scatter_nd_update", "gather_nd"]


def _num_segments(op: str, num_segments) -> int:
    if isinstance(num_segments, np.ndarray) and num_segments.ndim == 0:
        num_segments = num_segments.item()
    if not isinstance(num_segments, (int, np.integer)) or isinstance(num_segments, bool) \
            or num_segments < 0:
        raise ValueError(f"sg.{op}: num_segments must be a non-negative Python int (the "
                         f"output's static length), got {num_segments!r}")
    return int(num_segments)


def _shape(op: str, shape) -> tuple:
    try:
        dims = tuple(int(d) for d in np.asarray(shape).reshape(-1))
    except (TypeError, ValueError):
        raise ValueError(f"sg.{op}: shape must be a tuple of non-negative ints, got "
                         f"{shape!r}") from None
    if any(d < 0 for d in dims):
        raise ValueError(f"sg.{op}: shape must be non-negative, got {dims}")
    return dims


def _reduction(kind: str, doc: str):
    op = A.SEGMENT_REDUCTIONS[kind]

    def fn(data, segment_ids, num_segments, name: Optional[str] = None):
        n = _num_segments(op.name, num_segments)
        return apply(op, (data, int_indices(segment_ids)), {"num_segments": n}, name)
    fn.__name__ = fn.__qualname__ = op.name
    fn.__doc__ = doc
    return fn


_COMMON = """

    ``segment_ids`` (integers) have a prefix of ``data``'s shape; the result has shape
    ``(num_segments,) + data.shape[segment_ids.ndim:]``. A negative id drops its entry
    (TF); an id ``>= num_segments`` raises ``sg.SegmentIdError`` before anything is
    written, on every engine. ``num_segments`` is a Python int (a static length)."""

unsorted_segment_sum = _reduction("sum", """TF's unsorted_segment_sum: ``out[s] = sum of
    data[i] with segment_ids[i] == s`` (0 for an empty segment). The gradient is a gather.""" +
                                  _COMMON + """

    >>> import symgrad as sg
    >>> sg.unsorted_segment_sum(np.array([[1.0, 2.0], [3.0, 4.0]]), [1, 1], 2).numpy()
    array([[0., 0.],
           [4., 6.]])
    """)
unsorted_segment_max = _reduction("max", """TF's unsorted_segment_max; an empty segment is the
    dtype's lowest value. The gradient is split evenly among ties (TF).""" + _COMMON)
unsorted_segment_min = _reduction("min", """TF's unsorted_segment_min; an empty segment is the
    dtype's highest value. The gradient is split evenly among ties (TF).""" + _COMMON)
unsorted_segment_prod = _reduction("prod", """TF's unsorted_segment_prod; an empty segment is
    1. The gradient is the product of the others (zeros included, TF's rule).""" + _COMMON)
unsorted_segment_mean = _reduction("mean", """TF's unsorted_segment_mean: the sum divided by
    the count (0 for an empty segment); integer data gives a float result (truediv).""" +
                                   _COMMON)


def segment_sum(data, segment_ids, name: Optional[str] = None):
    """TF's segment_sum: ``segment_ids`` is a sorted vector of length ``data.shape[0]``;
    the result has ``segment_ids[-1] + 1`` rows (empty segments in between are 0). The
    number of rows is static when the ids are a constant, else None (known when the op
    runs). Negative or decreasing ids raise ``sg.SegmentIdError`` (TF's errors).

    >>> import symgrad as sg
    >>> sg.segment_sum(np.array([1.0, 2.0, 3.0]), [0, 0, 2]).numpy()
    array([3., 0., 3.])
    """
    return apply(A.segment_sum, (data, int_indices(segment_ids)), {}, name)


def scatter_nd(indices, updates, shape, name: Optional[str] = None):
    """TF's scatter_nd: zeros of ``shape`` with ``updates`` added at ``indices`` (shape
    ``(..., K)``; each row indexes the first K dims); repeated indices accumulate.
    ``updates.shape == indices.shape[:-1] + shape[K:]``. An index outside ``shape``
    (negative included) raises ``sg.SegmentIdError`` before anything is written."""
    dims = _shape("scatter_nd", shape)
    return apply(A.scatter_nd, (int_indices(indices), updates), {"shape": dims}, name)


def tensor_scatter_nd_add(tensor, indices, updates, name: Optional[str] = None):
    """TF's tensor_scatter_nd_add: ``tensor`` with ``updates`` added at ``indices``
    (duplicates accumulate); the same index rules as ``scatter_nd``.

    >>> import symgrad as sg
    >>> sg.tensor_scatter_nd_add(np.ones(3), [[0], [0]], np.array([1.0, 2.0])).numpy()
    array([4., 1., 1.])
    """
    return apply(A.tensor_scatter_nd_add, (tensor, int_indices(indices), updates), {}, name)


def tensor_scatter_nd_update(tensor, indices, updates, name: Optional[str] = None):
    """TF's tensor_scatter_nd_update: ``tensor`` with the entries at ``indices`` replaced by
    ``updates`` (a repeated index: the last update wins). The gradient with respect to
    ``tensor`` is zero at the updated entries (TF)."""
    return apply(A.tensor_scatter_nd_update, (tensor, int_indices(indices), updates), {},
                 name)


def gather_nd(params, indices, name: Optional[str] = None):
    """TF's gather_nd: ``params[tuple(indices[..., k] for k < K)]``, shape
    ``indices.shape[:-1] + params.shape[K:]`` (the gradient of the scatters); an index
    outside ``params`` raises ``sg.SegmentIdError``."""
    return apply(A.gather_nd, (params, int_indices(indices)), {}, name)


export(globals())
