"""``sg.get_gradient``: FastEstimator's helper, for symbolic graphs and for tapes.

>>> import symgrad as sg
>>> x = sg.Variable([1.0, 2.0, 3.0])
>>> with sg.GradientTape(persistent=True) as tape:
...     y = x * x
...     g = sg.get_gradient(sg.reduce_sum(y), x, tape=tape, higher_order=True)
...     g_flat = sg.get_gradient(sg.reduce_sum(y), x, tape=tape)
...     s, s_flat = sg.reduce_sum(g), sg.reduce_sum(g_flat)
>>> g.numpy(), sg.get_gradient(s, x, tape=tape).numpy()
(array([2., 4., 6.]), array([2., 2., 2.]))
>>> print(sg.get_gradient(s_flat, x, tape=tape))
None
"""

from __future__ import annotations

from typing import Any, Optional

from ..graph.tensor import Tensor
from . import state
from .structure import flatten, unflatten


def get_gradient(target: Any, sources: Any, higher_order: bool = False,
                 tape: Optional[Any] = None) -> Any:
    """Gradients of ``target`` w.r.t. ``sources`` (same structure as ``sources``).

    Symbolic tensors (``tape=None``): ``sg.gradients``; unless ``higher_order`` each result
    is wrapped in ``sg.stop_gradient`` so a further gradient through it is None.
    With a tape: ``tape.gradient``; unless ``higher_order`` no tape records the
    computation, so the result is a constant to every tape.

    >>> import symgrad as sg
    >>> x = sg.placeholder("x", shape=(3,))
    >>> y = x * x
    >>> g = get_gradient(sg.reduce_sum(y), x, higher_order=True)
    >>> sg.evaluate(get_gradient(sg.reduce_sum(g), x), {x: [1.0, 2.0, 3.0]})
    array([2., 2., 2.])
    >>> get_gradient(sg.reduce_sum(get_gradient(sg.reduce_sum(y), x)), x) is None
    True
    """
    if tape is None:
        return _symbolic(target, sources, higher_order)
    if higher_order:
        return tape.gradient(target, sources)
    with state.pause_recording():
        return tape.gradient(target, sources)


def _symbolic(target: Any, sources: Any, higher_order: bool) -> Any:
    from ..differentiate import gradients  # the symbolic engine, only for graphs
    from ..ops.functions import F

    flat = flatten(sources)
    if not all(isinstance(s, Tensor) for s in flat + flatten(target)):
        raise TypeError("sg.get_gradient: without a tape, target and sources must be "
                        "symbolic Tensors; pass tape=... for eager values")
    grads = gradients(flatten(target), flat)
    if not higher_order:
        grads = [None if g is None else F.stop_gradient(g) for g in grads]
    return unflatten(sources, grads)
