"""The ``custom_gradient`` op record: the node that ``@sg.custom_gradient`` wraps y in.

One node per output ``y_k`` with inputs ``(y_k, *x)``; all the nodes of one call share a
``_Group`` (``grad_fn``, the outputs, the nodes). Both engines call ``group_vjp`` once per
group with the upstream gradient of every output, as TF calls ``grad_fn(*upstream)``:
the symbolic sweep processes the members of a group together, after all their consumers,
and so does the tape (they are recorded one after the other).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from .graph.tensor import Tensor
from .ops.functions import F
from .ops.registry import structural
from .ops.sources import constant


class _Group:
    """What the nodes of one call share: ``grad_fn`` and all the outputs ``y``.

    Its repr is constant: the forward of a custom node does not depend on ``grad_fn``,
    so compiled modules are shared between calls."""

    def __init__(self, grad_fn: Callable, outputs: list, name: str):
        self.grad_fn = grad_fn
        self.outputs = outputs
        self.name = name
        self.members: list = []  # the custom nodes (graph) or eager outputs (tape), by k

    def __repr__(self) -> str:
        return "custom_gradient"


def _forward(y, *xs, group, index):
    return np.array(y, copy=True)


def _infer(y, *xs, group, index):
    return y.shape, y.dtype


def _as_gradient(value: Any, x: Any, symbolic: bool) -> Any:
    """A gradient returned by grad_fn as a Tensor (graph) or eager value (tape)."""
    if value is None or isinstance(value, Tensor):
        return value
    if symbolic:
        return constant(np.asarray(value, dtype=x.dtype))
    from .tape.eager import EAGER_TYPES, EagerTensor  # only reached on the tape

    if isinstance(value, EAGER_TYPES):
        return value
    return EagerTensor(np.asarray(value, dtype=x.dtype))


def group_of(node: Any) -> Optional["_Group"]:
    """The group of a custom node (graph node or tape record), else None."""
    return node.attrs["group"] if node.op is CUSTOM_GRADIENT else None


def group_vjp(group: "_Group", upstream: list, xs: tuple) -> tuple:
    """``grad_fn(*upstream)`` once (None upstream: zeros), one gradient per x, checked."""
    upstream = [F.zeros_like(o) if g is None else g for g, o in zip(upstream, group.outputs)]
    grads = group.grad_fn(*upstream)
    grads = list(grads) if isinstance(grads, (list, tuple)) else [grads]
    if len(grads) != len(xs):
        raise ValueError(f"sg.custom_gradient: the grad_fn of '{group.name}' returned "
                         f"{len(grads)} gradient(s) but the function has {len(xs)} "
                         "input(s); return one gradient (or None) per input")
    symbolic = any(isinstance(g, Tensor) for g in upstream)
    return tuple(_as_gradient(d, x, symbolic) for d, x in zip(grads, xs))


def _vjp(g, out, y, *xs, group, index):
    """One output alone (the engines use ``group_vjp`` for the whole group)."""
    upstream = [g if k == index else None for k in range(len(group.outputs))]
    return (None,) + group_vjp(group, upstream, xs)


CUSTOM_GRADIENT = structural(
    "custom_gradient", _forward, _infer, vjp=_vjp, public=False,
    doc="y of a @sg.custom_gradient function; its inputs are (y, *x), its vjp is grad_fn")


