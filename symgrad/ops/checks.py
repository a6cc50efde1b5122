"""Argument helpers shared by the public op functions of every family."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..shapes import normalize_axes

__all__: list = []


def rank_of(x: Any) -> int:
    """The rank of a tensor, array or Python value."""
    shape = getattr(x, "shape", None)
    return len(shape) if shape is not None else np.ndim(x)


def dtype_of(x: Any) -> np.dtype:
    """The dtype of a tensor, array or Python value."""
    dt = getattr(x, "dtype", None)
    return np.dtype(dt) if dt is not None else np.asarray(x).dtype


def single_axis(axis, rank: int, op: str) -> int:
    """One int ``axis`` in ``[-rank, rank)``, made non-negative (errors name ``op``)."""
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"{op}: axis must be an int, got {type(axis).__name__}")
    return normalize_axes(int(axis), rank, op)[0]


def int_indices(indices):
    """Python ints and lists stay integers (a bare literal would take its partner's dtype)."""
    if isinstance(indices, (list, tuple, int, np.integer)) and not isinstance(indices, bool):
        array = np.asarray(indices)
        return array.astype(np.int64) if array.size == 0 else array
    return indices
