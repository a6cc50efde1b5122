"""``@sg.custom_gradient``: TensorFlow's decorator, for graphs and for the tape.

``f(*x)`` returns ``(y, grad_fn)``; ``grad_fn(*upstream)`` returns one gradient per input
(None for none). The result is ``y`` wrapped in one ``custom_gradient`` node per output,
whose inputs are ``(y, *x)``: its forward is ``y`` and its reverse rule calls ``grad_fn``,
so nothing flows through the ops inside ``f``. ``grad_fn`` written with symgrad ops builds
graph nodes (``sg.gradients``) or recorded eager ops (nested tapes), so the result can be
differentiated again.

>>> import symgrad as sg
>>> @sg.custom_gradient
... def log1pexp(x):
...     e = sg.exp(x)
...     def grad(upstream):
...         return upstream * (1.0 - 1.0 / (1.0 + e))
...     return sg.log(1.0 + e), grad
>>> x = sg.placeholder("x", shape=())
>>> (g,) = sg.gradients(log1pexp(x), x)
>>> float(sg.evaluate(g, {x: 100.0}))
1.0
>>> v = sg.Variable(100.0)
>>> with sg.GradientTape() as tape:
...     y = log1pexp(v)
>>> float(tape.gradient(y, v))
1.0
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from .graph.tensor import Tensor
from .ops import api as F
from .ops.registry import apply, structural
from .ops.sources import constant
from .tape import state
from .tape.eager import EAGER_TYPES, EagerTensor
from .tape.structure import flatten, unflatten


class _Group:
    """What the nodes of one call share: ``grad_fn`` and all the outputs ``y``.

    Its repr is constant: the forward of a custom node does not depend on ``grad_fn``,
    so compiled modules are shared between calls."""

    def __init__(self, grad_fn: Callable, outputs: list, name: str):
        self.grad_fn = grad_fn
        self.outputs = outputs
        self.name = name

    def __repr__(self) -> str:
        return "custom_gradient"


def _forward(y, *xs, group, index):
    return np.array(y, copy=True)


def _infer(y, *xs, group, index):
    return y.shape, y.dtype


def _as_gradient(value: Any, x: Any, symbolic: bool) -> Any:
    """A gradient returned by grad_fn as a Tensor (graph) or eager value (tape)."""
    if value is None or isinstance(value, (Tensor,) + EAGER_TYPES):
        return value
    array = np.asarray(value, dtype=x.dtype)
    return constant(array) if symbolic else EagerTensor(array)


def _vjp(g, out, y, *xs, group, index):
    upstream = [g if k == index else F.zeros_like(o) for k, o in enumerate(group.outputs)]
    grads = group.grad_fn(*upstream)
    grads = list(grads) if isinstance(grads, (list, tuple)) else [grads]
    if len(grads) != len(xs):
        raise ValueError(f"sg.custom_gradient: the grad_fn of '{group.name}' returned "
                         f"{len(grads)} gradient(s) but the function has {len(xs)} "
                         "input(s); return one gradient (or None) per input")
    symbolic = isinstance(g, Tensor)
    return (None,) + tuple(_as_gradient(d, x, symbolic) for d, x in zip(grads, xs))


CUSTOM_GRADIENT = structural(
    "custom_gradient", _forward, _infer, vjp=_vjp, public=False,
    doc="y of a @sg.custom_gradient function; its inputs are (y, *x), its vjp is grad_fn")


def _split(result: Any, name: str) -> tuple:
    if not (isinstance(result, (tuple, list)) and len(result) == 2 and callable(result[1])):
        raise TypeError(f"sg.custom_gradient: '{name}' must return (y, grad_fn) with grad_fn "
                        f"callable, got {type(result).__name__}")
    return result[0], result[1]


def custom_gradient(f: Callable) -> Callable:
    """Decorate ``f(*x) -> (y, grad_fn)`` so gradients of y use ``grad_fn`` (TF's contract).

    y may be a Tensor or a list/tuple of them; ``grad_fn`` then takes one upstream per
    output (zeros for the outputs a gradient does not come through). Keyword arguments
    are passed to ``f`` and never differentiated.
    """
    name = getattr(f, "__name__", "custom_gradient")

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if any(isinstance(a, Tensor) for a in args):
            y, grad_fn = _split(f(*args, **kwargs), name)
        else:  # eager: f's own ops are not recorded; the custom node is
            with state.pause_recording():
                y, grad_fn = _split(f(*args, **kwargs), name)
        outputs = flatten(y)
        group = _Group(grad_fn, outputs, name)
        wrapped = [apply(CUSTOM_GRADIENT, (o,) + args, {"group": group, "index": k})
                   for k, o in enumerate(outputs)]
        return unflatten(y, wrapped)

    return wrapper
