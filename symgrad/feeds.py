"""Checking values fed to placeholders (shared by sg.evaluate and compiled functions)."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .errors import ArgumentError, FeedError
from .graph.tensor import Tensor
from .shapes import format_shape


_PYTHON_NUMBERS = (bool, int, float)


def _kind_ok(source: np.dtype, target: np.dtype, weak: bool) -> bool:
    """Whether values of ``source`` dtype may be fed to a ``target`` placeholder (the
    policy of docs/inputs.md): exact conversions always; a float of another width only
    from weakly typed Python numbers."""
    if target.kind == "b":
        return source.kind == "b"
    if target.kind in "iu":
        return source.kind in "biu"
    if target.kind == "f":
        return source.kind in "biu" or source.kind == "f" and (weak or source == target)
    return source == target


def _is_weak(value: Any) -> bool:
    """Python numbers and (nested) lists/tuples of them: no precision of their own."""
    if isinstance(value, _PYTHON_NUMBERS):
        return True
    if isinstance(value, (list, tuple)):
        return all(_is_weak(v) for v in value)
    return False


def describe_value(value: Any) -> str:
    """How messages name a fed value: its type, and dtype and shape for arrays."""
    kind = type(value)
    name = kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"
    if isinstance(value, (np.ndarray, np.generic)):
        return f"{name} of dtype {value.dtype.name} and shape {format_shape(np.shape(value))}"
    return name


def _fits(array: np.ndarray, dtype: np.dtype) -> bool:
    """Integer values representable in the integer ``dtype``."""
    if array.dtype.kind == "b" or not array.size or np.can_cast(array.dtype, dtype):
        return True
    info = np.iinfo(dtype)
    return bool(array.min() >= info.min and array.max() <= info.max)


def check_feed(placeholder: Tensor, value: Any, context: str, argument: bool = False) -> np.ndarray:
    """The fed value as an array of the placeholder's dtype, or an error naming both.

    The policy (docs/inputs.md), the same for ``sg.evaluate`` and compiled functions, and
    the same for lists and arrays: bool and integer values convert to float placeholders
    (exact below 2**53), integer values to integer placeholders when they fit; a float
    array must have the placeholder's float dtype (no silent change of precision), while
    Python floats, which have none, convert to float32 as numpy's weak scalars do. A value
    that is not numeric data (None, a dict, a string) is an ``ArgumentError`` (TypeError);
    a wrong dtype or shape a ``FeedError`` (ValueError). ``argument``: name the value as a
    compiled function's argument.

    >>> import numpy as np, symgrad as sg
    >>> x = sg.placeholder("x", shape=(None,))
    >>> check_feed(x, np.arange(3), "f(x)")
    array([0., 1., 2.])
    >>> check_feed(x, np.ones(2, np.float32), "f(x)")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    symgrad.errors.FeedError: f(x): placeholder 'x' has dtype float64 but was fed float32 ...
    """
    name, dtype = placeholder.name, placeholder.dtype
    array = _as_array(value)
    if array is None or array.dtype.kind not in "biufc":
        raise ArgumentError(f"{context}: {_who(name, argument)} expects a {dtype.name} array "
                            f"of shape {format_shape(placeholder.shape)}, got "
                            f"{describe_value(value)}")
    if array.dtype != dtype and array.dtype.newbyteorder("=") == dtype:
        array = array.astype(dtype)          # the same type in the other byte order
    if array.dtype != dtype:
        if not _kind_ok(array.dtype, dtype, _is_weak(value)) or \
                dtype.kind in "iu" and not _fits(array, dtype):
            fix = f"; convert with .astype('{dtype.name}')" if dtype.kind in "f" else ""
            raise FeedError(f"{context}: {_who(name, argument)} has dtype {dtype.name} but was "
                            f"fed {array.dtype.name} ({describe_value(value)}){fix}")
        array = array.astype(dtype)
    shape = placeholder.shape
    if array.ndim != len(shape) or any(
            d is not None and d != a for d, a in zip(shape, array.shape)):
        raise FeedError(f"{context}: {_who(name, argument)} has shape {format_shape(shape)} "
                        f"but was fed shape {format_shape(array.shape)}")
    return array


def _who(name: str, argument: bool) -> str:
    return f"argument '{name}' (placeholder '{name}')" if argument else f"placeholder '{name}'"


def _as_array(value: Any):
    """``value`` as an ndarray, or None when it is not array data (None, a dict, a set)."""
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, np.generic):
        return np.asarray(value)
    if value is None or isinstance(value, (dict, set, frozenset, str, bytes)):
        return None
    try:
        return np.asarray(value)
    except (TypeError, ValueError):
        return None


def bind_keywords(placeholders: list, args: tuple, kwargs: dict,
                  context: Optional[str] = None) -> tuple:
    """Positional arguments of a compiled ``f(*args, **kwargs)``: keywords name placeholders;
    a wrong count or keyword is an ``ArgumentError`` (a TypeError) naming ``context``.

    >>> import symgrad as sg
    >>> x, y = sg.placeholder("x"), sg.placeholder("y")
    >>> bind_keywords([x, y], (1.0,), {"y": 2.0})
    (1.0, 2.0)
    """
    names = [p.name for p in placeholders]
    signature = context or f"f({', '.join(names)})"
    bound = list(args) + [_MISSING] * (len(names) - len(args))
    if len(args) > len(names):
        raise ArgumentError(f"{signature}: takes {len(names)} arguments "
                            f"({', '.join(names) or 'none'}), got {len(args)} positional")
    for key, value in kwargs.items():
        if key not in names or names.count(key) > 1:
            raise ArgumentError(f"{signature}: no parameter named {key!r} (the parameters are "
                                f"the input placeholders' names: {', '.join(names) or 'none'})")
        k = names.index(key)
        if bound[k] is not _MISSING:
            raise ArgumentError(f"{signature}: got two values for {key!r}")
        bound[k] = value
    missing = [n for n, v in zip(names, bound) if v is _MISSING]
    if missing:
        raise ArgumentError(f"{signature}: missing argument(s) {', '.join(missing)}")
    return tuple(bound)


def function_label(inputs: list, outputs: list) -> str:
    """How messages name a compiled function: ``f(x, y) -> 'loss'`` (its outputs' names).

    >>> import symgrad as sg
    >>> x = sg.placeholder("x")
    >>> function_label([x], [sg.sin(x, name="s"), None])
    "f(x) -> ['s', None]"
    """
    names = [None if o is None else o.name for o in outputs]
    shown = ", ".join("None" if n is None else repr(n) for n in names[:3])
    if len(names) > 3:
        shown += f", ... ({len(names)} outputs)"
    return (f"f({', '.join(p.name for p in inputs)}) -> "
            + (shown if len(names) == 1 else f"[{shown}]"))


_MISSING = object()
