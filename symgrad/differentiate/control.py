"""``sg.prevent_gradient`` and ``sg.AggregationMethod``: TF's switches around gradients.

``prevent_gradient(x, message)`` is the identity forward; any gradient through it raises
LookupError with TF's wording. In ``sg.gradients`` the check is made on the whole path
from xs to ys before the sweep, so a ``prevent_gradient`` behind an ``sg.stop_gradient``
still raises (TF's graph behaviour); the tape only meets it when a gradient reaches it.

>>> import symgrad as sg
>>> x = sg.placeholder("x", shape=(2,))
>>> y = sg.prevent_gradient(sg.sin(x), message="no", name="p")
>>> sg.evaluate(y, {x: [0.0, 0.0]})
array([0., 0.])
>>> sg.gradients(sg.reduce_sum(y, name="loss"), x)
Traceback (most recent call last):
...
symgrad.errors.NoGradientError: sg.gradients: Gradient explicitly disabled. Reason: no (prevent_gradient at tensor 'p', on the path from xs[0] 'x' to ys[0] 'loss')
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..errors import NoGradientError
from ..graph.traversal import topological_order
from ..ops.registry import apply, elementwise


class AggregationMethod:
    """TF's names for how gradient contributions are summed. Accepted by ``sg.gradients``
    and ``sg.hessians``; they have no effect: symgrad always sums exactly, in one order."""

    ADD_N = 0
    DEFAULT = ADD_N
    EXPERIMENTAL_TREE = 1
    EXPERIMENTAL_ACCUMULATE_N = 2


def disabled_message(message: str) -> str:
    return f"Gradient explicitly disabled. Reason: {message}"


def _refuse(g, out, x, message: str) -> tuple:
    raise NoGradientError(f"GradientTape.gradient: {disabled_message(message)} "
                          f"(prevent_gradient at eager tensor '{out.name}')")


PREVENT_GRADIENT = elementwise(
    "prevent_gradient", lambda x, message="": np.array(x, copy=True), lambda x, message="": x,
    vjp=_refuse, public=False,
    doc="identity forward; differentiating through it raises LookupError (TF)")


def prevent_gradient(x: Any, message: str = "", name: Optional[str] = None) -> Any:
    """``x`` unchanged; a gradient through it raises LookupError naming ``message``.

    >>> import symgrad as sg
    >>> v = sg.Variable([1.0, 2.0])
    >>> with sg.GradientTape() as tape:
    ...     y = sg.reduce_sum(sg.prevent_gradient(v * v, "frozen"))
    >>> float(y)
    5.0
    """
    if not isinstance(message, str):
        raise TypeError(f"sg.prevent_gradient: message must be a str, got "
                        f"{type(message).__name__}")
    return apply(PREVENT_GRADIENT, (x,), {"message": message}, name)


def check_no_prevented(ys: list, xs: list, stop_ids: set, order: Optional[list] = None) -> None:
    """LookupError if a ``prevent_gradient`` node would be asked for its gradient.

    That is TF's graph rule: the node depends on an x, and a gradient reaches it from a y
    through tensors not listed in ``stop_gradients`` (whose ops pass nothing back).
    ``sg.stop_gradient`` does not shield it: TF looks up the gradient function of every op
    between xs and ys. ``order``: ``topological_order(ys)`` where the caller has it.
    """
    if order is None:
        order = topological_order(ys)
    if not any(node.op is PREVENT_GRADIENT for node in order):
        return                      # nothing to find (the walks below cost a graph each)
    origin = {id(x): k for k, x in enumerate(xs)}
    for node in order:
        if id(node) not in origin:
            sources = [origin[id(i)] for i in node.inputs if id(i) in origin]
            if sources:
                origin[id(node)] = sources[0]
    receives = {id(y): k for k, y in enumerate(ys)}
    for node in reversed(order):
        if id(node) not in receives:
            continue
        if node.op is PREVENT_GRADIENT and id(node) in origin and id(node) not in stop_ids:
            k = origin[id(node)]
            raise NoGradientError(
                f"sg.gradients: {disabled_message(node.attrs['message'])} (prevent_gradient "
                f"at tensor '{node.name}', on the path from xs[{k}] '{xs[k].name}' to ys"
                f"[{receives[id(node)]}] '{ys[receives[id(node)]].name}')")
        if id(node) not in stop_ids:
            for i in node.inputs:
                receives.setdefault(id(i), receives[id(node)])
