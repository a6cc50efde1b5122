"""The continuous adjoint of a dopri5 solve as ONE loop over every output interval.

``odeint_grad._adjoint`` integrates the augmented state ``z = [y, a, a_p]`` backward over
each interval ``[t[i-1], t[i]]`` as its own ``odeint`` node, in a ``sg.scan`` over the
intervals: a compiled call runs that scan as a Python loop (one compiled body a
interval). ``sweep`` runs the same backward integration as one ``sg.while_loop`` (one
fused loop when compiled): in ``s = -t`` the steps land on every output time, where the
state jumps as the per-interval solves restart: ``y <- ys[i-1]`` and ``a <- a + g[i-1]``
(``a_p`` continues). It returns the final ``[a, a_p]`` through ONE ``odeint_sweep`` node,
which checks the solve and whose derivatives are those of the per-interval formulation
(built only when differentiated), so second derivatives are the adjoint of the adjoint.

>>> import numpy as np, symgrad as sg
>>> k = sg.placeholder("k")
>>> ys = sg.odeint(lambda y, t, k: -k * y, 1.0, np.array([0.0, 1.0, 2.0]), k)
>>> (g,) = sg.gradients(sg.reduce_sum(ys), k)      # d/dk (1 + e^-k + e^-2k)
>>> bool(np.isclose(sg.evaluate(g, {k: 0.5}), -np.exp(-0.5) - 2 * np.exp(-1.0)))
True
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..control.api import while_loop
from ..errors import ConvergenceError
from ..graph.tensor import Tensor
from ..ops.functions import F
from ..ops.jvp import JVP_RULES
from ..ops.opdef import OpDef
from ..ops.registry import apply
from ..ops.sources import constant
from .dopri5 import _step, error_ratio, initial_step, next_step, time_at

__all__ = ["sweep", "SWEEP"]

API = "sg.odeint"


def _rows(x: Tensor, j: Tensor, n_t: int) -> Tensor:
    """Column ``j`` of the 2-D ``x`` (a masked sum over the last axis: a fused loop's
    driver runs it, where a sum over the first allocates what numba's loop cannot)."""
    rows = constant(np.arange(n_t, dtype=np.int64).reshape((1, n_t)))
    return F.reduce_sum(F.where(F.equal(rows, j), x, F.zeros_like(x)), 1)


def backward(aug: Callable, z0: Tensor, s: Tensor, resets: Tensor, keep: Tensor,
             rtol: float, atol: float, max_steps: int) -> tuple:
    """Integrate ``dz/ds = aug(z, s)`` from ``s[0]`` over the increasing times ``s``,
    landing on each; on landing at ``s[j]``: ``z <- keep * z + resets[j]``. Returns (z at
    ``s[-1]``, the steps tried, the time reached)."""
    n_s = int(s.shape[0])
    s0 = F.getitem(s, (0,))
    f0 = aug(z0, s0)
    dt0 = F.maximum(initial_step(aug, s0, z0, f0, 4.0, rtol, atol), constant(0.0))
    # the times and resets are carried (unchanged), not captured: built inside a gradient
    # they read the forward solve, which a capture would trace into the body
    init = [z0, s0, dt0, constant(np.int64(0)), constant(np.int64(1)), s,
            F.transpose(resets)]

    def more(z, sc, dt, k, j, s, resets):
        within = F.logical_and(k < max_steps, dt > 0.0)
        target = time_at(s, F.minimum(j, constant(np.int64(n_s - 1))))
        return F.logical_and(j < n_s, F.logical_or(within, target <= sc))

    def body(z, sc, dt, k, j, s, resets):
        target = time_at(s, j)
        emit = target <= sc                          # a repeated time: jump at once
        clipped = sc + dt >= target
        h = F.where(F.logical_and(clipped, F.logical_not(emit)), target - sc, dt)
        z1, _, err, _ = _step(aug, z, aug(z, sc), sc, h)
        ratio = error_ratio(err, z, z1, rtol, atol)
        ok = F.logical_and(ratio <= 1.0, F.logical_not(emit))
        landed = F.logical_or(F.logical_and(ok, clipped), emit)
        proposal = next_step(h, ratio, 5.0)
        proposal = F.where(F.logical_and(ok, clipped), F.maximum(proposal, dt), proposal)
        z_new = F.where(ok, z1, z)
        z_new = F.where(landed, keep * z_new + _rows(resets, j, n_s), z_new)
        s_new = F.where(ok, F.where(clipped, target, sc + h), sc)
        return [z_new, s_new, F.where(emit, dt, proposal), F.where(emit, k, k + 1),
                F.where(landed, j + 1, j), s, resets]

    z, reached, _, steps, _, _, _ = while_loop(more, body, init)
    return z, steps, reached


# --- the node ---------------------------------------------------------------------------
def _forward(z, steps, reached, end, *inputs, spec, skip):
    if not float(reached) >= float(end):
        raise ConvergenceError(
            f"{API}: the adjoint (backward dopri5) solve stopped at t={-float(reached):.6g} "
            f"before t[0]={-float(end):.6g} after {int(steps)} step(s) (max_steps="
            f"{spec.max_steps}); raise max_steps or loosen rtol/atol")
    return np.array(z, copy=True)


def _infer(z, steps, reached, end, *inputs, spec, skip):
    return z.shape, z.dtype


_PER_INTERVAL: dict = {}
"""What the derivatives take from ``odeint_grad`` (which imports this module, so this one
does not import it): the per-interval adjoint, ``_cat`` and ``held_jvp``, registered by
``odeint_grad`` when it loads (``per_interval``)."""


def per_interval(adjoint: Callable, cat: Callable, held_jvp: Callable) -> None:
    _PER_INTERVAL.update(adjoint=adjoint, cat=cat, held_jvp=held_jvp)


def _slow(spec, inputs: list) -> Tensor:
    """``[a, a_p]`` by the per-interval formulation (``odeint_grad._adjoint``)."""
    _adjoint, _cat = _PER_INTERVAL["adjoint"], _PER_INTERVAL["cat"]
    g, ys, y0, t, *params = inputs
    a, _, p_bars = _adjoint(spec, g, ys, y0, t, params, one_loop=False)
    return _cat([a] + list(p_bars)) if params else a


def _vjp(up, out, z, steps, reached, end, *inputs, spec, skip):
    from ..differentiate import gradients
    xs = list(inputs)
    up = F.getitem(up, (slice(skip, None),))         # the backward y: not an output
    grads = gradients(_slow(spec, xs), xs, grad_ys=up, stop_gradients=xs,
                      unconnected_gradients="zero", name=None)
    return (None, None, None, None) + tuple(grads)


def _jvp(tangents, out, z, steps, reached, end, *inputs, spec, skip):
    held_jvp = _PER_INTERVAL["held_jvp"]
    dots = tangents[4:]
    if all(d is None for d in dots):
        return None
    xs = list(inputs)
    dot = held_jvp(_slow(spec, xs), xs,
                   [F.zeros_like(x) if d is None else d for x, d in zip(xs, dots)])
    return F.concat([constant(np.zeros((skip,), dtype=dot.dtype)), dot], 0)


SWEEP = OpDef("odeint_sweep", "structural", numpy=_forward, infer=_infer, vjp=_vjp,
              public=False, doc="the continuous adjoint of sg.odeint's dopri5 solve in one "
              "backward loop (checked); its derivatives are the per-interval adjoint's")
JVP_RULES[SWEEP] = _jvp


def sweep(spec, aug: Callable, g: Tensor, ys: Tensor, y0: Tensor, t: Tensor,
          params: list, size: Callable) -> Tensor:
    """The final ``[a, a_p]`` (flat) of the backward adjoint over every interval."""
    n_t, n = int(t.shape[0]), size(y0)
    n_p = sum(size(p) for p in params)
    y_rows = F.reshape(ys, (n_t, n))
    g_rows = F.reshape(g, (n_t, n))
    pad = constant(np.zeros((n_t, n_p), dtype=y0.dtype))
    resets = F.concat([y_rows, g_rows] + ([pad] if n_p else []), 1)
    resets = F.getitem(resets, (slice(None, None, -1),))          # in s = -t: last first
    keep = constant(np.concatenate([np.zeros(n), np.ones(n + n_p)]).astype(y0.dtype))
    s = -F.getitem(t, (slice(None, None, -1),))
    z0 = F.getitem(resets, (0,))
    z, steps, reached = backward(aug, z0, s, resets, keep, spec.rtol, spec.atol,
                                 spec.max_steps)
    out = apply(SWEEP, (z, steps, reached, F.getitem(s, (n_t - 1,)), g, ys, y0, t) +
                tuple(params), {"spec": spec, "skip": n})
    return F.getitem(out, (slice(n, None),))
