"""Python operators of tensors (``x + y``, ``x @ y``, ``x[1:]``, ``x % y``, ``x.T``,
``x.reshape(...)``), installed on ``symgrad.graph.TensorOperators`` when the ops are
imported: the ops build on the graph, and the graph never imports the ops.

>>> import symgrad as sg
>>> x = sg.placeholder("x", shape=(2, 3))
>>> [t.op.name for t in (x + 1.0, 2.0 ** x, x[0], x.T, x % 2.0, x.reshape(3, 2))]
['add', 'pow', 'getitem', 'transpose', 'floormod', 'reshape']
"""

from __future__ import annotations

import numpy as np

from ..graph.tensor import TensorOperators
from .contraction.api import matmul
from .elementwise.api import (abs, add, divide, floordiv, floormod, greater, greater_equal,
                              less, less_equal, multiply, negative, pow, subtract)
from .indexing.api import getitem
from .layout.api import reshape, transpose

__all__: list = []


def _reshape(self, *shape):
    """``x.reshape(3, -1)`` or ``x.reshape((3, -1))``, as numpy."""
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
        shape = tuple(shape[0])
    return reshape(self, shape)


OPERATORS: dict = {
    "__add__": lambda self, other: add(self, other),
    "__radd__": lambda self, other: add(other, self),
    "__sub__": lambda self, other: subtract(self, other),
    "__rsub__": lambda self, other: subtract(other, self),
    "__mul__": lambda self, other: multiply(self, other),
    "__rmul__": lambda self, other: multiply(other, self),
    "__truediv__": lambda self, other: divide(self, other),
    "__rtruediv__": lambda self, other: divide(other, self),
    "__pow__": lambda self, other: pow(self, other),
    "__rpow__": lambda self, other: pow(other, self),
    "__neg__": lambda self: negative(self),
    "__abs__": lambda self: abs(self),
    "__matmul__": lambda self, other: matmul(self, other),
    "__rmatmul__": lambda self, other: matmul(other, self),
    "__lt__": lambda self, other: less(self, other),
    "__le__": lambda self, other: less_equal(self, other),
    "__gt__": lambda self, other: greater(self, other),
    "__ge__": lambda self, other: greater_equal(self, other),
    "__getitem__": lambda self, key: getitem(self, key),
    # Python's % and // are TF's floormod and floordiv
    "__mod__": lambda self, other: floormod(self, other),
    "__rmod__": lambda self, other: floormod(other, self),
    "__floordiv__": lambda self, other: floordiv(self, other),
    "__rfloordiv__": lambda self, other: floordiv(other, self),
    "T": property(lambda self: transpose(self), doc="The transpose (axes reversed)."),
    "reshape": _reshape,
}
"""Attribute of ``TensorOperators`` -> its implementation with the op functions."""


def install(cls: type = TensorOperators) -> None:
    """Set the operators on ``cls`` (the base class of symbolic and eager tensors)."""
    for name, value in OPERATORS.items():
        setattr(cls, name, value)


install()
