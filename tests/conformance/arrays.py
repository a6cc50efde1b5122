"""Decoding the array objects of conformance cases, and comparing results with them.

An array object is ``{"dtype": D, "shape": [...], "data": nested lists}`` with the
non-finite floats written as the strings ``"nan"``, ``"inf"`` and ``"-inf"``
(see ``tests/conformance/README.md``, sections *Arrays* and *Comparison rules*).

>>> decode_array({"dtype": "float64", "shape": [2], "data": [1.0, "-inf"]})
array([  1., -inf])
>>> compare({"dtype": "float64", "shape": [], "data": "nan"}, np.float64("nan")) is None
True
>>> compare(None, np.zeros(2))
'expected None, got an array float64 (2,)'
>>> inf = {"dtype": "float32", "shape": [2], "data": ["inf", 1.0]}
>>> compare(inf, np.array([np.inf, 1.0], dtype=np.float32)) is None
True
>>> compare(inf, np.array([-np.inf, 1.0]))
'1 of 2 values differ (rtol=1e-06, atol=1e-09); first at (0,): expected inf, got -inf'
>>> compare(inf, np.ones(1))
'shape (1,) != expected (2,)'
>>> compare({"dtype": "int32", "shape": [], "data": 0}, np.float64(0.0))
'dtype float64 is not of the kind of expected int32'
"""

from __future__ import annotations

from typing import Any

import numpy as np

DEFAULT_RTOL = 1e-6
DEFAULT_ATOL = 1e-9

_NON_FINITE = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}


def _replace_non_finite(data: Any) -> Any:
    """Return ``data`` with the strings "nan", "inf", "-inf" replaced by floats."""
    if isinstance(data, list):
        return [_replace_non_finite(item) for item in data]
    if isinstance(data, str):
        return _NON_FINITE[data]
    return data


def decode_array(obj: dict) -> np.ndarray:
    """Decode one array object into a numpy array of its dtype and exact shape."""
    data = _replace_non_finite(obj["data"])
    return np.array(data, dtype=obj["dtype"]).reshape(tuple(obj["shape"]))


def is_array_object(obj: Any) -> bool:
    """True when ``obj`` is an encoded array (as opposed to a reference or literal)."""
    return isinstance(obj, dict) and "dtype" in obj and "data" in obj


def dtype_kind(dtype: np.dtype) -> str:
    """Coarse dtype kind used by the comparison rules: 'float', 'int', 'bool' or other."""
    kind = np.dtype(dtype).kind
    return {"f": "float", "i": "int", "u": "int", "b": "bool"}.get(kind, kind)


def describe(value: Any, limit: int = 6) -> str:
    """Short human-readable form of an expected or actual value for failure messages."""
    if value is None:
        return "None"
    if is_array_object(value):
        value = decode_array(value)
    if not isinstance(value, (np.ndarray, np.generic)):
        return f"{type(value).__name__} {value!r}"[:200]
    arr = np.asarray(value)
    if arr.ndim == 0:
        return f"{arr.dtype} () {arr.item()!r}"
    flat = arr.ravel()
    shown = np.array2string(flat[:limit], precision=8, separator=", ")
    more = f" ... ({flat.size} values)" if flat.size > limit else ""
    return f"{arr.dtype} {arr.shape} {shown}{more}"


def compare(
    expected_entry: dict | None,
    actual: Any,
    rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL,
) -> str | None:
    """Compare one result with one encoded expected entry.

    Returns ``None`` when they agree under the README's rules, otherwise a short
    description of the first difference found. ``None`` must be ``None``; an
    array must have exactly the expected shape and a dtype of the same kind
    (float / int / bool); integers and bools must be equal; floats agree within
    ``rtol``/``atol`` with nan == nan and infinities of the same sign.
    """
    if expected_entry is None:
        if actual is None:
            return None
        return f"expected None, got {_kind_of(actual)}"
    if actual is None:
        return "expected an array, got None (unconnected)"
    if not isinstance(actual, (np.ndarray, np.generic)):
        return f"expected a numpy array, got {type(actual).__name__}: {actual!r}"[:300]
    expected = decode_array(expected_entry)
    actual = np.asarray(actual)
    if actual.shape != expected.shape:
        return f"shape {actual.shape} != expected {expected.shape}"
    if dtype_kind(actual.dtype) != dtype_kind(expected.dtype):
        return f"dtype {actual.dtype} is not of the kind of expected {expected.dtype}"
    if dtype_kind(expected.dtype) != "float":
        if not np.array_equal(actual, expected):
            return f"values differ at {_first_bad_index(actual != expected)}"
        return None
    return _compare_floats(expected, actual, rtol, atol)


def _compare_floats(
    expected: np.ndarray, actual: np.ndarray, rtol: float, atol: float
) -> str | None:
    """Float comparison: nan == nan, infinities must match with their sign."""
    actual64 = actual.astype(np.float64)
    expected64 = expected.astype(np.float64)
    close = np.isclose(actual64, expected64, rtol=rtol, atol=atol, equal_nan=True)
    if close.all():
        return None
    bad = _first_bad_index(~close)
    finite = np.isfinite(actual64) & np.isfinite(expected64) & ~close
    err = np.abs(actual64[finite] - expected64[finite])
    worst = f", max abs err {err.max():.3g}" if err.size else ""
    return (
        f"{int((~close).sum())} of {close.size} values differ (rtol={rtol:g}, "
        f"atol={atol:g}{worst}); first at {bad}: expected {float(expected64[bad])!r}, "
        f"got {float(actual64[bad])!r}"
    )


def _first_bad_index(mask: np.ndarray) -> tuple:
    """Index of the first True entry of ``mask`` (``()`` for a 0-d mask)."""
    if mask.ndim == 0:
        return ()
    return tuple(int(i) for i in np.argwhere(mask)[0])


def _kind_of(value: Any) -> str:
    """What a non-None actual value is, for the 'expected None' message."""
    if isinstance(value, (np.ndarray, np.generic)):
        arr = np.asarray(value)
        return f"an array {arr.dtype} {arr.shape}"
    return type(value).__name__
