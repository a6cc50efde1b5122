"""``sg.gradients``: tf.gradients' signature and semantics.

>>> import symgrad as sg
>>> a = sg.constant(0.0)
>>> b = 2.0 * a
>>> sg.evaluate(sg.gradients(a + b, [a, b]), {})
[array(3.), array(1.)]
>>> sg.evaluate(sg.gradients(a + b, [a, b], stop_gradients=[a, b]), {})
[array(1.), array(1.)]
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..arguments import UnconnectedGradients, array_of, check_seed, unconnected_policy
from ..collector import paused_gc
from ..errors import UnconnectedGradientError
from ..graph.naming import name_scope
from ..graph.tensor import Tensor, describe
from ..graph.traversal import placeholders_of, topological_order
from ..ops.functions import F
from ..ops.sources import constant
from .control import check_no_prevented
from .sweep import reverse_sweep


AGGREGATION_METHODS = (None, 0, 1, 2, "add_n", "default", "experimental_tree",
                       "experimental_accumulate_n")


def _as_list(value: Any) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _check_tensors(values: list, what: str) -> None:
    for k, v in enumerate(values):
        if not isinstance(v, Tensor):
            raise TypeError(f"sg.gradients: {what}[{k}] must be a symgrad Tensor, got "
                            f"{type(v).__name__} {v!r}")


def _seed(y: Tensor, k: int, grad_y: Any) -> Tensor:
    """The gradient fed into ys[k]: ones for None, else checked for shape and dtype."""
    if grad_y is None:
        return F.ones_like(y)
    if isinstance(grad_y, Tensor):
        seed = grad_y
    elif isinstance(grad_y, np.ndarray) or isinstance(grad_y, np.generic):
        seed = constant(grad_y)
    else:
        seed = constant(array_of(grad_y, y.dtype, "sg.gradients", f"grad_ys[{k}]"))
    check_seed("sg.gradients", f"grad_ys[{k}]", f"ys[{k}] {describe(y)}", seed.dtype,
               seed.shape, y.dtype, y.shape)
    return seed


def gradients(ys: Any, xs: Any, grad_ys: Any = None, name: Optional[str] = "gradients",
              gate_gradients: bool = False, aggregation_method: Any = None,
              stop_gradients: Any = None,
              unconnected_gradients: Any = UnconnectedGradients.NONE,
              batched: bool = False) -> list:
    """Symbolic gradients with ``tf.gradients`` semantics.

    Returns a list of len(xs): for each x, the sum over ys of sum(grad_y * dy/dx), shaped
    like x, as a graph Tensor (so it can be differentiated again) or None where no y
    depends on x. ``stop_gradients`` are held constant (partial derivatives), like
    ``sg.stop_gradient`` nodes; integer and bool tensors are never differentiated.
    ``gate_gradients`` and ``aggregation_method`` (an ``sg.AggregationMethod`` member) are
    accepted for compatibility and have no effect on results: a symbolic graph has no race
    to gate, and contributions are always summed exactly. A ``sg.prevent_gradient`` between
    xs and ys raises LookupError, even behind an ``sg.stop_gradient`` (TF's graph rule).
    ``batched=True``: every grad_ys entry has one extra leading axis of length k and each
    result has shape ``(k,) + x.shape``: k vector-Jacobian products in one sweep
    (``symgrad/batching.py``).
    """
    ys, xs = _as_list(ys), _as_list(xs)
    if batched:
        from ..batching import batched_gradients

        _check_tensors(ys, "ys")
        _check_tensors(xs, "xs")
        return batched_gradients(gradients, ys, xs, grad_ys, name=name,
                                 stop_gradients=stop_gradients,
                                 unconnected_gradients=unconnected_gradients,
                                 gate_gradients=gate_gradients,
                                 aggregation_method=aggregation_method)
    _check_tensors(ys, "ys")
    _check_tensors(xs, "xs")
    policy = unconnected_policy(unconnected_gradients, "sg.gradients")
    if aggregation_method not in AGGREGATION_METHODS:
        raise ValueError(f"sg.gradients: invalid aggregation_method {aggregation_method!r}")
    grad_list = [None] * len(ys) if grad_ys is None else _as_list(grad_ys)
    if len(grad_list) != len(ys):
        raise ValueError(f"sg.gradients: grad_ys has {len(grad_list)} entries but ys has "
                         f"{len(ys)}; pass one entry (or None) per y")
    stops = [] if stop_gradients is None else _as_list(stop_gradients)
    _check_tensors(stops, "stop_gradients")
    order = topological_order(ys)   # one walk for the checks and the sweep (seeds add none)
    # the order of ys + xs (raises on two placeholders with one name)
    placeholders_of(order + topological_order(xs, stop=order))
    stop_ids = {id(s) for s in stops}
    check_no_prevented(ys, xs, stop_ids, order)
    with name_scope(name), paused_gc():
        seeds = [_seed(y, k, g) for k, (y, g) in enumerate(zip(ys, grad_list))]
        results = reverse_sweep(ys, seeds, xs, stop_ids, order)
        return [_finish(x, k, r, ys, policy) for k, (x, r) in enumerate(zip(xs, results))]


def _finish(x: Tensor, k: int, grad: Optional[Tensor], ys: list, policy) -> Optional[Tensor]:
    if grad is not None:
        return grad
    if policy is UnconnectedGradients.ZERO:
        return F.zeros_like(x)
    if policy is UnconnectedGradients.RAISE:
        raise UnconnectedGradientError(
            f"sg.gradients: xs[{k}] {describe(x)} is not connected to any of ys "
            f"({', '.join(repr(y.name) for y in ys) or 'empty'}); use "
            "unconnected_gradients='none' or 'zero' to allow this")
    return None
