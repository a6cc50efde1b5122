"""Eager values: ``sg.Variable``, the eager tensors ops return, and the eager apply.

Any public op applied to Variables, eager tensors or numpy arrays (and no symbolic
Tensor) computes at once with the op record's numpy forward, exactly as ``sg.evaluate``
runs a node (same dtype rule, numpy warnings silenced), and is offered to the recording
tapes.

>>> import numpy as np
>>> import symgrad as sg
>>> v = sg.Variable([1.0, 2.0, 3.0], name="v")
>>> y = sg.reduce_sum(v * v) + 1.0
>>> y
<sg.EagerTensor shape=() dtype=float64 numpy=15.0>
>>> (v[1:] @ np.array([1.0, 2.0])).numpy()
np.float64(8.0)
>>> sg.sin(np.zeros(2)).shape
(2,)
"""

from __future__ import annotations

import itertools
from typing import Any, Optional

import numpy as np

from ..dtypes import as_dtype, is_bool, is_floating, literal_dtype
from ..errors import EagerMixError, ShapeError, SymgradError
from ..graph.tensor import Tensor, TensorOperators
from ..ops.registry import OpDef, infer, is_scalar_literal
from . import state

_ids = itertools.count(1)


def _frozen(array: np.ndarray) -> np.ndarray:
    if array.flags.writeable:
        array.flags.writeable = False
    return array


def to_array(value: Any, dtype: Any = None) -> np.ndarray:
    """A private read-only numpy copy of ``value`` (``sg.constant``'s dtype rules)."""
    if isinstance(value, Tensor):
        raise EagerMixError(f"expected an eager value or array, got the symbolic Tensor "
                            f"'{value.name}'; evaluate it with sg.evaluate first")
    if isinstance(value, (EagerTensor, Variable)):
        value = value._value
    array = np.array(value, dtype=None if dtype is None else np.dtype(dtype), copy=True)
    if dtype is None and array.dtype.kind == "i" and array.dtype.itemsize > 4:
        array = array.astype(np.int64)
    as_dtype(array.dtype, "sg.Variable" if dtype is None else "dtype")
    return _frozen(array)


class EagerTensor(TensorOperators):
    """An immutable computed value: ``.numpy() .shape .dtype .ndim``, Python operators.

    Made by ops applied to eager values; never built by hand. Hashes by identity.
    """

    __slots__ = ("_value", "_id", "_variable", "name")

    def __init__(self, value: np.ndarray, name: Optional[str] = None,
                 variable: Optional["Variable"] = None):
        self._value = _frozen(value)
        self._id = next(_ids)
        self._variable = variable  # set on a read of a Variable
        self.name = name or f"eager_{self._id}"

    @property
    def shape(self) -> tuple:
        return self._value.shape

    @property
    def dtype(self) -> np.dtype:
        return self._value.dtype

    def numpy(self) -> Any:
        """The value as a numpy array (a copy; a 0-d result is a numpy scalar)."""
        return self._value[()] if self._value.ndim == 0 else self._value.copy()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.array(self._value, dtype=dtype, copy=True)

    def __repr__(self) -> str:
        text = _text(self._value)
        return f"<sg.EagerTensor shape={self.shape} dtype={self.dtype.name} numpy={text}>"

    def __bool__(self) -> bool:
        return bool(self._value)

    def __float__(self) -> float:
        return float(self._value)

    def __int__(self) -> int:
        return int(self._value)

    def __index__(self) -> int:
        return self._value.__index__()

    def __len__(self) -> int:
        if self._value.ndim == 0:
            raise TypeError("len() of a 0-d eager tensor")
        return len(self._value)

    def __iter__(self):
        for k in range(len(self)):
            yield self[k]

    def __reduce__(self):
        return (_rebuild, (np.array(self._value),))


def _text(value: np.ndarray) -> str:
    if value.ndim == 0:
        return repr(value.item())
    return np.array2string(value, threshold=20, separator=", ")


def _rebuild(value: np.ndarray) -> EagerTensor:
    return EagerTensor(_frozen(value))


class Variable(TensorOperators):
    """A mutable eager value that tapes watch automatically when it is read.

    >>> import symgrad as sg
    >>> w = sg.Variable([[1.0, 2.0]], name="w")
    >>> w.assign_sub([[0.5, 0.5]]).numpy()
    array([[0.5, 1.5]])
    """

    def __init__(self, value: Any, name: Optional[str] = None, trainable: bool = True,
                 dtype: Any = None):
        self._value = to_array(value, dtype)
        self._id = next(_ids)
        self.name = name or f"Variable_{self._id}"
        self.trainable = bool(trainable)

    shape = property(lambda self: self._value.shape, doc="the current shape")
    dtype = property(lambda self: self._value.dtype, doc="the dtype (fixed)")

    def numpy(self) -> Any:
        return self._value[()] if self._value.ndim == 0 else self._value.copy()

    def read_value(self) -> EagerTensor:
        """The current value as an eager tensor linked to this Variable (one 'read').

        Every recording tape that watches accessed variables watches this one (TF's).
        """
        for tape in state.recording_tapes():
            tape._read(self)
        return EagerTensor(self._value, variable=self)

    value = read_value

    def assign(self, value: Any) -> "Variable":
        """Replace the value (same shape and dtype); tapes keep the values they read."""
        new = to_array(value, self.dtype)
        if new.shape != self.shape:
            raise ShapeError(f"Variable.assign: '{self.name}' has shape {self.shape}, "
                             f"got a value of shape {new.shape}")
        self._value = new
        return self

    def assign_add(self, delta: Any) -> "Variable":
        return self.assign(self._value + to_array(delta, self.dtype))

    def assign_sub(self, delta: Any) -> "Variable":
        return self.assign(self._value - to_array(delta, self.dtype))

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.array(self._value, dtype=dtype, copy=True)

    def __repr__(self) -> str:
        text = _text(self._value)
        return (f"<sg.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name} "
                f"numpy={text}>")

    __hash__ = object.__hash__


EAGER_TYPES = (EagerTensor, Variable)


def as_eager(value: Any) -> EagerTensor:
    """An eager tensor for ``value`` (a Variable gives a fresh read of it)."""
    if isinstance(value, EagerTensor):
        return value
    if isinstance(value, Variable):
        return value.read_value()
    return EagerTensor(to_array(value))


def _eager_inputs(op: OpDef, inputs: tuple) -> tuple:
    """Inputs as eager tensors; Python scalars take the dtype of the array they meet."""
    partner = None
    for value in inputs:
        if not is_scalar_literal(value) or isinstance(value, (np.number, np.bool_)):
            dtype = getattr(value, "dtype", None)
            dtype = np.asarray(value).dtype if dtype is None else np.dtype(dtype)
            if not is_bool(dtype):
                partner = dtype
                break
    out = []
    for value in inputs:
        if is_scalar_literal(value) and not isinstance(value, (np.number, np.bool_)):
            out.append(EagerTensor(to_array(value, literal_dtype(value, partner))))
        else:
            out.append(as_eager(value))
    return tuple(out)


def eager_apply(op: OpDef, inputs: tuple, attrs: dict) -> EagerTensor:
    """Compute ``op`` now (installed in the op registry as the eager backend)."""
    tensors = _eager_inputs(op, inputs)
    _, dtype = infer(op, tensors, attrs)  # symgrad's shape checks and dtype rule
    try:
        with np.errstate(all="ignore"):
            value = op.numpy(*[t._value for t in tensors], **attrs)
    except SymgradError:
        raise
    except (ValueError, IndexError) as exc:
        shapes = ", ".join(str(t.shape) for t in tensors)
        raise ShapeError(f"{op.name}: failed on eager inputs of shapes {shapes}: {exc}") from exc
    out = EagerTensor(np.asarray(value, dtype=dtype))
    if op.differentiable and is_floating(dtype):
        for tape in state.recording_tapes():
            tape._record(op, tensors, attrs, out)
        for accumulator in state.recording_accumulators():  # sg.ForwardAccumulator
            accumulator._accumulate(op, tensors, attrs, out)
    return out
