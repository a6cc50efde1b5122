"""Argument rules shared by ``sg.gradients``, ``GradientTape.gradient`` and ``sg.jvp``:
the unconnected-gradients policy, the conversion and checks of grad_ys /
output_gradients / tangents.

>>> unconnected_policy("zero", "sg.gradients")
<UnconnectedGradients.ZERO: 'zero'>
>>> array_of([1, 2], np.float32, "sg.gradients", "grad_ys[0]").dtype
dtype('float32')
"""

from __future__ import annotations

import enum
from typing import Any

import numpy as np

from .errors import DTypeError, ShapeError
from .shapes import format_shape, shapes_compatible


class UnconnectedGradients(enum.Enum):
    """What an x that no y depends on gets: None (TF's default), zeros, or an error."""

    NONE = "none"
    ZERO = "zero"
    RAISE = "raise"


def unconnected_policy(value: Any, api: str) -> UnconnectedGradients:
    """The policy from a member or its exact lower-case string ('ZERO' is an error, as TF)."""
    if isinstance(value, UnconnectedGradients):
        return value
    for member in UnconnectedGradients:
        if value == member.value:
            return member
    raise ValueError(f"{api}: Unknown value for unconnected_gradients: {value!r}; "
                     "use 'none', 'zero', 'raise' or sg.UnconnectedGradients")


def array_of(value: Any, dtype: Any, api: str, what: str) -> np.ndarray:
    """``value`` (a number, a list) as an array of ``dtype``, or a TypeError naming
    ``api`` and ``what`` (``"grad_ys[0]"``)."""
    try:
        return np.asarray(value, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{api}: {what} cannot be converted to {np.dtype(dtype).name}: "
                        f"{exc}") from exc


def check_seed(api: str, seed: str, target: str, seed_dtype: np.dtype, seed_shape: tuple,
               target_dtype: np.dtype, target_shape: tuple) -> None:
    """A seed gradient must have exactly its target's dtype (TypeError) and shape
    (ValueError; unknown dims match anything)."""
    if seed_dtype != target_dtype:
        raise DTypeError(f"{api}: {seed} has dtype {seed_dtype.name} but {target} has dtype "
                         f"{target_dtype.name}; pass an array of {target_dtype.name}")
    if not shapes_compatible(tuple(seed_shape), tuple(target_shape)):
        raise ShapeError(f"{api}: {seed} has shape {format_shape(seed_shape)} but {target} "
                         f"has shape {format_shape(target_shape)}; pass an array of shape "
                         f"{format_shape(target_shape)} or None")
