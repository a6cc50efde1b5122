"""``GradientTape.batch_jacobian``: TF's per-example Jacobian.

For a target of shape ``(b,) + I`` and a source of shape ``(b,) + J`` the result has
shape ``(b,) + I + J`` and entry ``[n, i, j] = d sum_m target[m, i] / d source[n, j]``
(TF's definition: it is the per-example Jacobian when examples do not interact).

>>> import numpy as np
>>> import symgrad as sg
>>> x = sg.Variable(np.arange(6.0).reshape(2, 3))
>>> with sg.GradientTape() as tape:
...     y = x * x
>>> tape.batch_jacobian(y, x).numpy()[1]
array([[ 6.,  0.,  0.],
       [ 0.,  8.,  0.],
       [ 0.,  0., 10.]])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ShapeError, UnconnectedGradientError
from ..ops import api as F
from ..ops.layout_api import stack
from . import state
from .backward import backward, key_of
from .eager import EagerTensor, as_eager
from .seeds import check_eager, policy


def _check_shapes(y: EagerTensor, source: Any) -> None:
    if len(y.shape) < 1 or len(source.shape) < 1 or y.shape[0] != source.shape[0]:
        raise ShapeError(f"GradientTape.batch_jacobian: Need first dimension of target shape "
                         f"{y.shape} and source shape {tuple(source.shape)} to match (both "
                         "must have a leading batch axis of the same length)")


def _rows(tape: Any, y: EagerTensor, source: Any) -> list:
    """One gradient per inner index i of y: d sum_b y[b, i] / d source."""
    rows = []
    for index in np.ndindex(*y.shape[1:]):
        seed = np.zeros(y.shape, y.dtype)
        seed[(slice(None),) + index] = 1
        final = backward(list(tape._records), [y], [EagerTensor(seed)], {key_of(source)})
        rows.append(final.get(key_of(source)))
    return rows


def batch_jacobian(tape: Any, target: Any, source: Any, unconnected_gradients: Any) -> Any:
    """The body of ``GradientTape.batch_jacobian`` (see the module docstring)."""
    rule = policy(unconnected_gradients)
    check_eager(target, "GradientTape.batch_jacobian: target")
    check_eager(source, "GradientTape.batch_jacobian: source")
    y = as_eager(target)
    _check_shapes(y, source)
    tape._start_call("batch_jacobian")
    try:
        rows = _rows(tape, y, source)
    finally:
        tape._finish_call()
    shape = tuple(y.shape) + tuple(source.shape[1:])
    if all(r is None for r in rows):
        if rule == "zero":
            return EagerTensor(np.zeros(shape, source.dtype))
        if rule == "raise":
            raise UnconnectedGradientError(
                f"GradientTape.batch_jacobian: source '{source.name}' is not connected to "
                "the target; use unconnected_gradients='none' or 'zero'")
        return None
    if not state.recording_tapes():  # nobody differentiates it: stack with numpy
        flat = [np.zeros(source.shape, source.dtype) if r is None else r._value for r in rows]
        return EagerTensor(np.stack(flat, axis=1).reshape(shape))
    full = [F.zeros_like(as_eager(source)) if r is None else r for r in rows]
    return F.reshape(stack(full, axis=1), shape)
