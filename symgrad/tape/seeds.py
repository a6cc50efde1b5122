"""Argument checks of the tape: eager values, the unconnected policy, output gradients.

``output_gradients`` follow ``sg.gradients``' grad_ys rules: None means ones; exactly
the target's shape (ValueError) and the target's floating dtype (TypeError); a Python
list takes the target's dtype.

>>> import numpy as np
>>> import symgrad as sg
>>> y = sg.Variable([1.0, 2.0]) * 2.0
>>> seed_for(y, 0, [3, 4]).numpy()
array([3., 4.])
>>> seed_for(y, 0, np.ones(3))
Traceback (most recent call last):
...
symgrad.errors.ShapeError: GradientTape.gradient: output_gradients[0] has shape (3,) but target[0] has shape (2,); pass an array of shape (2,) or None
>>> policy("zero")
'zero'
"""

from __future__ import annotations

import enum
from typing import Any

import numpy as np

from ..errors import DTypeError, EagerMixError, ShapeError
from ..graph.tensor import Tensor
from ..shapes import format_shape
from .eager import EagerTensor, Variable, as_eager

POLICIES = ("none", "zero", "raise")


def policy(value: Any) -> str:
    """'none', 'zero' or 'raise' from a string or ``sg.UnconnectedGradients`` member."""
    raw = value.value if isinstance(value, enum.Enum) else value
    if raw in POLICIES:
        return raw
    raise ValueError(f"GradientTape: unknown value for unconnected_gradients: {value!r}; "
                     "use 'none', 'zero', 'raise' or sg.UnconnectedGradients")


def check_eager(value: Any, what: str) -> None:
    """TypeError unless ``value`` is a Variable or an eager tensor."""
    if isinstance(value, (EagerTensor, Variable)):
        return
    if isinstance(value, Tensor):
        raise EagerMixError(f"{what} is the symbolic Tensor '{value.name}'; a GradientTape "
                            "differentiates eager values (sg.Variable and the results of "
                            "ops on them); use sg.gradients for graphs")
    raise TypeError(f"{what} must be an sg.Variable or an eager tensor, got "
                    f"{type(value).__name__} {value!r}")


def seed_for(target: EagerTensor, k: int, grad: Any) -> EagerTensor:
    """The gradient fed into ``target``: ones for None, else checked like grad_ys."""
    if grad is None:
        return EagerTensor(np.ones(target.shape, target.dtype))
    if isinstance(grad, (EagerTensor, Variable)):
        seed = as_eager(grad)
    elif isinstance(grad, Tensor):
        check_eager(grad, f"GradientTape.gradient: output_gradients[{k}]")
    elif isinstance(grad, (np.ndarray, np.generic)):
        seed = EagerTensor(np.array(grad))
    else:
        try:
            seed = EagerTensor(np.asarray(grad, dtype=target.dtype))
        except (TypeError, ValueError) as exc:
            raise TypeError(f"GradientTape.gradient: output_gradients[{k}] cannot be "
                            f"converted to {target.dtype.name}: {exc}") from exc
    if seed.dtype != target.dtype:
        raise DTypeError(f"GradientTape.gradient: output_gradients[{k}] has dtype "
                         f"{seed.dtype.name} but target[{k}] has dtype {target.dtype.name}; "
                         f"pass an array of {target.dtype.name}")
    if seed.shape != target.shape:
        raise ShapeError(f"GradientTape.gradient: output_gradients[{k}] has shape "
                         f"{format_shape(seed.shape)} but target[{k}] has shape "
                         f"{format_shape(target.shape)}; pass an array of shape "
                         f"{format_shape(target.shape)} or None")
    return seed
