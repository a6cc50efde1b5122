"""The single place where an op is applied to its inputs (``apply``), with the shape and
dtype inference of a node; the op record itself (``OpDef``, ``REGISTRY``, the record
factories ``elementwise``/``structural``) is in ``opdef.py`` and re-exported here.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Optional

import numpy as np

from ..dtypes import as_dtype, is_bool, literal_dtype
from ..errors import DTypeError, EagerMixError, ShapeError
from ..graph.naming import unique_name
from ..graph.tensor import Tensor
from ..shapes import broadcast_shapes
from .opdef import REGISTRY, Example, OpDef, elementwise, register, structural
from .sources import constant

__all__ = ["REGISTRY", "Example", "OpDef", "elementwise", "register", "structural", "apply",
           "as_tensors", "infer", "probe_dtype", "is_scalar_literal", "set_eager_backend"]

# ---------------------------------------------------------------------------------------
# Applying an op: symbolic inputs build a node; eager inputs compute at once.

_eager_apply: Optional[Callable] = None
_eager_types: tuple = ()


def set_eager_backend(apply_fn: Callable, eager_types: tuple) -> None:
    """Installed by the tape package: how ops run on eager values."""
    global _eager_apply, _eager_types
    _eager_apply, _eager_types = apply_fn, eager_types


def is_scalar_literal(value: Any) -> bool:
    scalar_types = (bool, int, float, np.number, np.bool_)
    return isinstance(value, scalar_types) and not isinstance(value, Tensor)


def _check_plain_value(op: OpDef, k: int, value: Any) -> None:
    """A string, dict or other non-numeric value given to an op: a TypeError naming it."""
    if isinstance(value, Tensor) or is_scalar_literal(value) or \
            bool(_eager_types) and isinstance(value, _eager_types):
        return
    try:
        kind = np.asarray(value).dtype.kind
    except (TypeError, ValueError):
        return                                  # ragged or odd: the op's own check says so
    if kind in "USV" or kind == "O" and not isinstance(value, (list, tuple)):
        raise DTypeError(f"sg.{op.name}: argument {k} is {type(value).__name__} "
                         f"{value!r:.40}; expected a Tensor, an eager value (sg.Variable), or "
                         "a numpy array or number of a numeric or bool dtype")


def apply(op: OpDef, inputs: tuple, attrs: Optional[dict] = None, name: Optional[str] = None):
    """Apply ``op``: a new graph node when any input is symbolic, else an eager value."""
    attrs = attrs or {}
    if inputs and all(isinstance(i, Tensor) for i in inputs) and \
            not (_eager_types and any(isinstance(i, _eager_types) for i in inputs)):
        tensors = tuple(inputs)    # a graph node of graph nodes (what the checks below pass)
        shape, dtype = infer(op, tensors, attrs)
        return Tensor(op, tensors, attrs, shape, dtype, unique_name(op.name, name))
    for k, value in enumerate(inputs):
        if value is None:
            raise TypeError(f"sg.{op.name}: argument {k} is None; expected a Tensor, an eager "
                            "value (sg.Variable), a numpy array or a number")
        _check_plain_value(op, k, value)
    symbolic = any(isinstance(i, Tensor) for i in inputs)
    eager = bool(_eager_types) and any(isinstance(i, _eager_types) for i in inputs)
    if symbolic and eager:
        raise EagerMixError(
            f"{op.name}: cannot mix symbolic Tensors (placeholders, constants, graph nodes) "
            "with eager values (sg.Variable, eager tensors); build the whole computation "
            "either as a graph or eagerly")
    if not symbolic:
        if _eager_apply is None:
            raise TypeError(f"{op.name}: expected a symgrad Tensor, got "
                            f"{', '.join(type(i).__name__ for i in inputs)}")
        return _eager_apply(op, inputs, attrs)
    tensors = as_tensors(op, inputs)
    shape, dtype = infer(op, tensors, attrs)
    return Tensor(op, tensors, attrs, shape, dtype, unique_name(op.name, name))


def as_tensors(op: OpDef, inputs: tuple) -> tuple:
    """Turn Python/numpy values mixed into an op into constants (literals take the
    dtype of the tensor they meet, as numpy's weak scalars do)."""
    partner = next((i.dtype for i in inputs if isinstance(i, Tensor) and not is_bool(i.dtype)),
                   None)
    out = []
    for value in inputs:
        if isinstance(value, Tensor):
            out.append(value)
        elif is_scalar_literal(value) and not isinstance(value, (np.number, np.bool_)):
            out.append(constant(value, dtype=literal_dtype(value, partner)))
        else:
            out.append(constant(value))
    return tuple(out)


def infer(op: OpDef, tensors: tuple, attrs: dict) -> tuple:
    """Static shape and dtype of ``op`` applied to ``tensors``."""
    if op.kind == "structural":
        shape, dtype = op.infer(*tensors, **attrs)
        return tuple(shape), as_dtype(dtype)
    shapes = [t.shape for t in tensors]
    try:
        shape = broadcast_shapes(shapes, op=op.name)
    except ShapeError:          # again, naming the tensors
        shape = broadcast_shapes(shapes, op=op.name, names=[f"'{t.name}'" for t in tensors])
    if op.dtype_rule is not None:
        return shape, as_dtype(op.dtype_rule(*[t.dtype for t in tensors], **attrs))
    return shape, probe_dtype(op, tuple(t.dtype for t in tensors))


@lru_cache(maxsize=None)
def probe_dtype(op: OpDef, dtypes: tuple) -> np.dtype:
    """numpy's own answer for the result dtype: run the op on ones of those dtypes."""
    with np.errstate(all="ignore"):
        result = op.numpy(*[np.ones((), d) for d in dtypes])
    return as_dtype(np.asarray(result).dtype, op.name)
