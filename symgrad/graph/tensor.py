"""The symbolic Tensor node and the operators shared with eager values.

A Tensor is an immutable node: the op record that made it, its input Tensors, the op's
attributes, and a static shape (ints and None) and dtype. Nothing is computed.

>>> import symgrad as sg
>>> x = sg.placeholder("x", shape=(None, 3))
>>> y = sg.sin(x) * 2.0
>>> y.shape, y.dtype.name, y.op.name
((None, 3), 'float64', 'multiply')
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ..shapes import Shape, format_shape

_ids = itertools.count()


class TensorOperators:
    """What symbolic and eager tensors share. Their Python operators (``+``, ``@``, ``[]``,
    ``%``, ``.T``, ``.reshape`` ...) are set on this class by ``symgrad.ops.operators`` when
    the ops are imported, so that this package never imports the ops."""

    __array_priority__ = 1000  # numpy defers to our reflected operators

    def __pos__(self):
        return self

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __len__(self) -> int:
        """The static leading length (TypeError for a scalar or an unknown length)."""
        shape = tuple(self.shape)
        if not shape or shape[0] is None:
            raise TypeError(f"len() of tensor {self.name!r} with unknown or no leading "
                            f"dimension (shape {format_shape(shape)})")
        return int(shape[0])

    def __bool__(self):
        raise TypeError(f"the truth value of tensor {self.name!r} is not defined; "
                        "use sg.where(cond, a, b) for a choice made per element")

    def __iter__(self):
        raise TypeError(f"tensor {self.name!r} is not iterable; index it with t[i]")

    __hash__ = object.__hash__


class Tensor(TensorOperators):
    """A node of a static graph: ``.name .shape .dtype .op .inputs .attrs``.

    Modules built on this one add to the class when imported: the Python operators
    (``symgrad.ops.operators``), numpy's ``__array_ufunc__``/``__array_function__``
    (``symgrad.numpy_interop``) and the notebook display ``_repr_latex_``
    (``symgrad.symbolic``), so that the graph package imports none of them.

    ``op`` is the op record (``t.op.name`` is the op's name, e.g. ``'sin'``).
    Tensors hash and compare by identity, so they can key a ``feed_dict``.
    """

    __slots__ = ("op", "inputs", "attrs", "shape", "dtype", "name", "id")

    def __init__(self, op: Any, inputs: tuple, attrs: dict, shape: Shape, dtype: np.dtype,
                 name: str):
        self.op = op
        self.inputs = tuple(inputs)
        self.attrs = dict(attrs)
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.name = name
        self.id = next(_ids)

    def __repr__(self) -> str:
        return (f"<sg.Tensor '{self.name}' op={self.op.name} shape={format_shape(self.shape)} "
                f"dtype={self.dtype.name}>")

    def __eq__(self, other):
        return self is other

    __hash__ = object.__hash__

    def __reduce__(self):
        raise TypeError("symgrad Tensors cannot be pickled; rebuild the graph instead")


def is_tensor(value: Any) -> bool:
    return isinstance(value, Tensor)


def describe(t: Tensor) -> str:
    """'name' (op) shape dtype — the way error messages name a tensor."""
    return f"'{t.name}' ({t.op.name}, shape {format_shape(t.shape)}, {t.dtype.name})"

