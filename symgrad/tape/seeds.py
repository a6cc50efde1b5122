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

from typing import Any

import numpy as np

from ..arguments import array_of, check_seed, unconnected_policy
from ..errors import EagerMixError
from ..graph.tensor import Tensor
from .eager import EagerTensor, Variable, as_eager

def policy(value: Any) -> str:
    """'none', 'zero' or 'raise' from a string or ``sg.UnconnectedGradients`` member."""
    return unconnected_policy(value, "GradientTape").value


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
        seed = EagerTensor(array_of(grad, target.dtype, "GradientTape.gradient",
                                    f"output_gradients[{k}]"))
    check_seed("GradientTape.gradient", f"output_gradients[{k}]", f"target[{k}]", seed.dtype,
               seed.shape, target.dtype, target.shape)
    return seed
