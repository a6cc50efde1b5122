"""Checking values fed to placeholders (shared by sg.evaluate and compiled functions)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import FeedError
from .graph.tensor import Tensor
from .shapes import format_shape


def check_feed(placeholder: Tensor, value: Any, context: str) -> np.ndarray:
    """The fed value as an array of the placeholder's dtype, or a FeedError naming it.

    numpy arrays must have the placeholder's dtype exactly; Python scalars and lists are
    converted when that loses nothing (an int to a float placeholder, not 1.5 to int32).
    """
    name, dtype = placeholder.name, placeholder.dtype
    if isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)
        if array.dtype != dtype:
            raise FeedError(f"{context}: placeholder '{name}' has dtype {dtype.name} but was fed "
                            f"{array.dtype.name}; convert with .astype('{dtype.name}')")
    else:
        try:
            raw = np.asarray(value)
        except (TypeError, ValueError) as exc:
            raise FeedError(f"{context}: placeholder '{name}' was fed an unusable value "
                            f"{type(value).__name__}: {exc}") from exc
        if raw.dtype.kind not in "biuf" or not np.can_cast(raw.dtype, dtype, "same_kind") and not (
                raw.dtype.kind in "iub" and dtype.kind == "f"):
            raise FeedError(f"{context}: placeholder '{name}' has dtype {dtype.name} but was fed "
                            f"a value of dtype {raw.dtype.name}")
        array = raw.astype(dtype)
    expected = placeholder.shape
    if array.ndim != len(expected) or any(
            d is not None and d != a for d, a in zip(expected, array.shape)):
        raise FeedError(f"{context}: placeholder '{name}' has shape {format_shape(expected)} but "
                        f"was fed shape {format_shape(array.shape)}")
    return array
