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
        if array.dtype != dtype and array.dtype.newbyteorder("=") == dtype:
            array = array.astype(dtype)          # the same type in the other byte order
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


def bind_keywords(placeholders: list, args: tuple, kwargs: dict) -> tuple:
    """Positional arguments of a compiled ``f(*args, **kwargs)``: keywords name placeholders.

    >>> import symgrad as sg
    >>> x, y = sg.placeholder("x"), sg.placeholder("y")
    >>> bind_keywords([x, y], (1.0,), {"y": 2.0})
    (1.0, 2.0)
    """
    names = [p.name for p in placeholders]
    signature = f"f({', '.join(names)})"
    bound = list(args) + [_MISSING] * (len(names) - len(args))
    if len(args) > len(names):
        raise TypeError(f"{signature}: takes {len(names)} arguments, got {len(args)} "
                        f"positional")
    for key, value in kwargs.items():
        if key not in names or names.count(key) > 1:
            raise TypeError(f"{signature}: no parameter named {key!r} (the parameters are the "
                            f"input placeholders' names: {', '.join(names) or 'none'})")
        k = names.index(key)
        if bound[k] is not _MISSING:
            raise TypeError(f"{signature}: got two values for {key!r}")
        bound[k] = value
    missing = [n for n, v in zip(names, bound) if v is _MISSING]
    if missing:
        raise TypeError(f"{signature}: missing argument(s) {', '.join(missing)}")
    return tuple(bound)


_MISSING = object()
