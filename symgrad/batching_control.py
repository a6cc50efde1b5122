"""Batching rules for loops and custom gradients: ``sg.root`` inside ``sg.vectorized_map``.

Without them a map whose ``fn`` runs a ``sg.while_loop`` (a Newton solve: ``sg.root``)
falls back to a scan of k loops. With them:

* ``while_loop``: ONE loop over the batched carries (JAX's ``vmap`` of ``while``). Its
  body and predicate are the traced ones, batched (``batch_graph`` with the values they
  read from the outer graph already batched); the loop runs while any instance's
  predicate holds, and an instance whose predicate is false keeps its carries
  (``where``), so each instance stops where it would alone (its own iteration count).
* ``converged`` (a solve's last step): the largest residual norm of the batch is checked.
* ``custom_gradient`` (one output): the batched forward, with a gradient function that
  traces the per-instance ``grad_fn`` on a stand-in upstream and batches that graph; an
  unbatched input's gradient sums over the batch. ``sg.root``'s implicit derivative
  stays implicit: one batched linear solve (k blocks, not a (k n, k n) system).

So ``sg.root`` in a map is one batched Newton iteration over the stacked problem with a
per-instance solve. The rules are ``CONTROL_RULES``; ``sg.vectorized_map`` batches with
them (``batching.extra_rules``), ``sg.jacobian``'s sweeps do not.

>>> import numpy as np
>>> import symgrad as sg
>>> a = sg.placeholder("a", shape=(3,))
>>> x = sg.vectorized_map(lambda ai: sg.root(lambda x: x * x * x - ai, 1.0), a)
>>> (g,) = sg.gradients(sg.reduce_sum(x), [a])
>>> [v.round(6).tolist() for v in sg.evaluate([x, g], {a: [8.0, 27.0, 1.0]})]
[[2.0, 3.0, 1.0], [0.083333, 0.037037, 0.333333]]
"""

from __future__ import annotations

import threading

from .batching import (batch_graph, batched_so_far, broadcast_batch, expand_to,
                       extra_rules, fallback_rule)
from .control.api import while_loop
from .control.body import stand_in
from .control.records import WHILE
from .custom_gradient import custom_gradient
from .custom_op import CUSTOM_GRADIENT
from .graph.tensor import Tensor
from .ops.functions import F
from .ops.registry import apply
from .solvers.check import CONVERGED

__all__ = ["CONTROL_RULES", "clear_loops"]

_LOCAL = threading.local()


def _loops() -> dict:
    """This thread's batched loops (every output of one loop shares it), until cleared."""
    memo = getattr(_LOCAL, "loops", None)
    if memo is None:
        memo = _LOCAL.loops = {}
    return memo


def clear_loops() -> None:
    """Forget the batched loops (after each batched graph is built)."""
    _loops().clear()


def _batched(t: Tensor, was_batched: bool, k: int) -> Tensor:
    return t if was_batched else broadcast_batch(t, k)


def _while(node, args, batched, k):
    attrs = node.attrs
    n_vars = attrs["n_vars"]
    if attrs["index"] >= n_vars:            # the carry history (a reverse sweep's): not here
        return fallback_rule(node, args, batched, k)
    key = (id(attrs["body"]), tuple(id(a) for a in args), k)
    if key not in _loops():
        _loops()[key] = (attrs["body"], list(args), _batched_loop(node, args, batched, k))
    return _loops()[key][2][attrs["index"]]


def _batched_loop(node, args, batched, k) -> list:
    attrs = node.attrs
    n_vars, cond, body = attrs["n_vars"], attrs["cond"], attrs["body"]
    outer = batched_so_far()
    for original, arg, was_batched in zip(node.inputs[n_vars:], args[n_vars:], batched[n_vars:]):
        if was_batched:
            outer[id(original)] = (original, arg)

    def traced(values: tuple) -> tuple:
        replace = dict(outer)
        replace.update({id(s): (s, v) for s, v in zip(body.inputs, values)})
        replace.update({id(s): (s, v) for s, v in zip(cond.inputs, values)})
        outs = batch_graph(list(body.outputs) + list(cond.outputs), replace, k)
        return outs[:n_vars], outs[n_vars]

    def cond_fn(*values):
        replace = dict(outer)
        replace.update({id(s): (s, v) for s, v in zip(cond.inputs, values)})
        ((pred, was_batched),) = batch_graph(list(cond.outputs), replace, k)
        return F.reduce_any(pred) if was_batched else pred

    def body_fn(*values):
        outs, (pred, was_batched) = traced(values)
        new = [_batched(t, b, k) for t, b in outs]
        if not was_batched:
            return new
        return [F.where(expand_to(pred, v.ndim - 1), t, v) for t, v in zip(new, values)]

    init = [_batched(a, b, k) for a, b in zip(args[:n_vars], batched[:n_vars])]
    return list(while_loop(cond_fn, body_fn, init,
                           maximum_iterations=attrs["maximum_iterations"]))


def _converged(node, args, batched, k):
    x, norm, iterations = args
    x = _batched(x, batched[0], k)
    norm = F.reduce_max(norm) if batched[1] else norm
    iterations = F.reduce_max(iterations) if batched[2] else iterations
    return apply(CONVERGED, (x, norm, iterations), dict(node.attrs))


def _custom(node, args, batched, k):
    group = node.attrs["group"]
    if len(group.outputs) != 1:
        return fallback_rule(node, args, batched, k)
    y, xs, flags = _batched(args[0], batched[0], k), list(args[1:]), batched[1:]
    outer = batched_so_far()
    made: list = []

    def forward(*inputs):
        def grad_fn(upstream):
            u = stand_in(node, "upstream")
            per_instance = group.grad_fn(u)
            if isinstance(per_instance, Tensor) or per_instance is None:
                per_instance = [per_instance]
            replace = dict(outer)
            replace[id(u)] = (u, upstream)
            replace[id(node)] = (node, made[0])
            for original, x, was_batched in zip(node.inputs[1:], xs, flags):
                if was_batched:
                    replace[id(original)] = (original, x)
            grads = list(per_instance)
            try:
                with extra_rules(CONTROL_RULES):    # called by sg.gradients, after the map
                    done = batch_graph([g for g in grads if g is not None], replace, k)
            finally:
                clear_loops()
            it = iter(done)
            out = []
            for g, was_batched in zip(grads, flags):
                if g is None:
                    out.append(None)
                    continue
                t, b = next(it)
                out.append(_batched(t, b, k) if was_batched else
                           (F.reduce_sum(t, 0) if b else t))
            return out
        return y, grad_fn

    made.append(custom_gradient(forward)(*xs))
    return made[0]


CONTROL_RULES: dict = {WHILE: _while, CONVERGED: _converged, CUSTOM_GRADIENT: _custom}
