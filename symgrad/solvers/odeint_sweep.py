"""The continuous adjoint of a dopri5 solve as ONE loop over every output interval.

``odeint_grad._adjoint`` integrates the augmented state ``z = [y, a, a_p]`` backward over
each interval ``[t[i-1], t[i]]`` as its own ``odeint`` node, in a ``sg.scan`` over the
intervals: a compiled call runs that scan as a Python loop (one compiled body a
interval). ``sweep`` runs the same backward integration as one ``sg.while_loop`` (one
fused loop when compiled): in ``s = -t`` the steps land on every output time, where the
state jumps as the per-interval solves restart: ``y <- ys[i-1]`` and ``a <- a + g[i-1]``
(``a_p`` continues). It returns the final ``z``, the steps tried, the time reached and
the time to reach; ``odeint_grad`` passes them through ONE ``odeint_sweep`` node, which
checks the solve (``check``) and whose derivatives are those of the per-interval
formulation (defined there, beside it: they build ``odeint`` nodes), so second
derivatives are the adjoint of the adjoint. This module imports neither.

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
from ..ops.sources import constant
from .dopri5 import _step, error_ratio, initial_step, next_step, time_at
from .flat import size

__all__ = ["sweep", "check", "backward"]

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


# --- the check --------------------------------------------------------------------------
def check(z, steps, reached, end, *inputs, spec, skip):
    """``z`` when the backward solve reached ``end`` (the numpy forward of the
    ``odeint_sweep`` node), else ``sg.ConvergenceError``."""
    if not float(reached) >= float(end):
        raise ConvergenceError(
            f"{API}: the adjoint (backward dopri5) solve stopped at t={-float(reached):.6g} "
            f"before t[0]={-float(end):.6g} after {int(steps)} step(s) (max_steps="
            f"{spec.max_steps}); raise max_steps or loosen rtol/atol")
    return np.array(z, copy=True)


def sweep(spec, aug: Callable, g: Tensor, ys: Tensor, y0: Tensor, t: Tensor,
          params: list) -> tuple:
    """(the final flat ``[y, a, a_p]`` of the backward adjoint over every interval, the
    steps tried, the time reached, the time to reach: ``-t[0]``)."""
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
    return z, steps, reached, F.getitem(s, (n_t - 1,))
