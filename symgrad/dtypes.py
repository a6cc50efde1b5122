"""The dtypes symgrad supports and numpy's promotion between them.

Promotion is numpy's (NEP 50): Python scalars are "weak" and take the dtype of the
tensor they meet when they fit (``float32_tensor * 2.0`` stays float32, ``int32 * 2.0``
is float64).

>>> promote("float32", 2.0)
dtype('float32')
>>> promote("int32", 2.0)
dtype('float64')
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import DTypeError

SUPPORTED = tuple(np.dtype(d) for d in ("float32", "float64", "int32", "int64", "bool"))
FLOAT_DTYPES = (np.dtype("float32"), np.dtype("float64"))


def as_dtype(dtype: Any, context: str = "dtype") -> np.dtype:
    """Normalise a dtype spec (string, numpy type, dtype) and check that it is supported."""
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise DTypeError(f"{context}: {dtype!r} is not a dtype") from exc
    if dt not in SUPPORTED:
        names = ", ".join(d.name for d in SUPPORTED)
        raise DTypeError(f"{context}: dtype {dt.name} is not supported; use one of {names}")
    return dt


def is_floating(dtype: Any) -> bool:
    """True for float32 and float64."""
    return np.dtype(dtype).kind == "f"


def is_integer(dtype: Any) -> bool:
    return np.dtype(dtype).kind in "iu"


def is_bool(dtype: Any) -> bool:
    return np.dtype(dtype).kind == "b"


def promote(*dtypes_or_scalars: Any) -> np.dtype:
    """numpy's result dtype, with Python scalars weak; the result is always supported."""
    args = [d if isinstance(d, (bool, int, float)) else np.dtype(d) for d in dtypes_or_scalars]
    return as_dtype(np.result_type(*args), "promotion")


def literal_dtype(value: Any, partner: Any = None) -> np.dtype:
    """The dtype a Python scalar takes when it meets a tensor of dtype ``partner``."""
    if partner is None:
        if isinstance(value, bool):
            return np.dtype("bool")
        if isinstance(value, int):
            return np.dtype("int64")
        return np.dtype("float64")
    return promote(partner, value)
