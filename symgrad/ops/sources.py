"""Graph sources: placeholders (fed at call time) and constants."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..dtypes import as_dtype
from ..errors import DTypeError, GraphError
from ..graph.naming import unique_name
from ..graph.tensor import Tensor
from ..shapes import as_shape
from .opdef import OpDef, register

PLACEHOLDER = register(OpDef("placeholder", "source", differentiable=True))
CONSTANT = register(OpDef("constant", "source", differentiable=True))


def placeholder(name: str, shape=(), dtype: Any = "float64") -> Tensor:
    """An input fed at call time; ``None`` dims match any length.

    >>> x = placeholder("x", shape=(None, 3), dtype="float32")
    >>> x.name, x.shape, x.dtype.name
    ('x', (None, 3), 'float32')
    """
    if not isinstance(name, str) or not name:
        raise GraphError(f"sg.placeholder: name must be a non-empty string, got {name!r}")
    dt = as_dtype(dtype, f"sg.placeholder('{name}')")
    return Tensor(PLACEHOLDER, (), {}, as_shape(shape, f"sg.placeholder('{name}')"), dt,
                  unique_name("placeholder", name))


def constant(value: Any, dtype: Any = None, name: Optional[str] = None) -> Tensor:
    """A constant node holding a private read-only copy of ``value``.

    >>> c = constant([1.0, 2.0])
    >>> c.shape, c.dtype.name
    ((2,), 'float64')
    """
    if isinstance(value, Tensor):
        raise TypeError(f"sg.constant: value is already a Tensor ('{value.name}')")
    try:
        array = np.array(value, dtype=None if dtype is None else np.dtype(dtype), copy=True)
    except (TypeError, ValueError) as exc:
        raise DTypeError(f"sg.constant: cannot convert {type(value).__name__} to an array: "
                         f"{exc}") from exc
    if dtype is None and array.dtype.kind == "i":
        array = array.astype(np.int64) if array.dtype.itemsize > 4 else array
    if dtype is None and array.dtype.kind not in "fib":
        raise DTypeError(f"sg.constant: values of dtype {array.dtype} are not supported")
    dt = as_dtype(array.dtype, "sg.constant")
    array.setflags(write=False)
    return Tensor(CONSTANT, (), {"value": array}, array.shape, dt, unique_name("Const", name))
