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

import contextlib
import functools
from typing import Any, Callable

from .custom_op import CUSTOM_GRADIENT, _Group
from .graph.tensor import Tensor
from .ops.registry import apply
from .tape import state
from .tape.structure import flatten, unflatten


def _split(result: Any, name: str) -> tuple:
    if not (isinstance(result, (tuple, list)) and len(result) == 2 and callable(result[1])):
        raise TypeError(f"sg.custom_gradient: '{name}' must return (y, grad_fn) with grad_fn "
                        f"callable, got {type(result).__name__}")
    return result[0], result[1]


def custom_gradient(f: Callable) -> Callable:
    """Decorate ``f(*x) -> (y, grad_fn)`` so gradients of y use ``grad_fn`` (TF's contract).

    y may be a Tensor or a list/tuple of them; ``grad_fn`` is then called once with one
    upstream per output (zeros for the outputs a gradient does not come through).
    Keyword arguments are passed to ``f`` and never differentiated. As in TF, a method of
    a class may be decorated: ``self`` is bound, never an input. Eagerly, tapes that were
    recording when ``f`` is called do not record ``f``'s own ops (only the custom node), but
    a tape started inside ``f`` does, so ``grad_fn`` may call ``tape.gradient`` on it (and,
    in graphs, ``sg.gradients`` on ``f``'s ops).

    >>> import symgrad as sg
    >>> class Model:
    ...     @sg.custom_gradient
    ...     def multiply(self, x1, x2):
    ...         return x1 * x2, lambda dy: (dy * x1, dy * x2)   # switched, as TF's test
    >>> a, b = sg.constant(3.0), sg.constant(5.0)
    >>> [float(sg.evaluate(g)) for g in sg.gradients(Model().multiply(a, b), [a, b])]
    [3.0, 5.0]
    """
    return _CustomGradient(f)


class _CustomGradient:
    """``@sg.custom_gradient(f)``: callable like ``f``; bound like a method in a class (TF's
    ``Bind``: ``instance.method`` decorates the bound method)."""

    def __init__(self, f: Callable):
        self._f = f
        self._name = getattr(f, "__name__", "custom_gradient")
        functools.update_wrapper(self, f)

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        if instance is None:
            return self
        return _CustomGradient(self._f.__get__(instance, owner))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if any(isinstance(a, Tensor) for a in args):
            y, grad_fn = _split(self._f(*args, **kwargs), self._name)
        else:  # eager: f's own ops are not recorded by the tapes recording now
            with contextlib.ExitStack() as stack:
                for tape in state.recording_tapes():
                    stack.enter_context(tape.stop_recording())
                y, grad_fn = _split(self._f(*args, **kwargs), self._name)
        outputs = flatten(y)
        group = _Group(grad_fn, outputs, self._name)
        group.members = [apply(CUSTOM_GRADIENT, (o,) + args, {"group": group, "index": k})
                         for k, o in enumerate(outputs)]
        return unflatten(y, list(group.members))

    def __repr__(self) -> str:
        return f"<sg.custom_gradient {self._name}>"
