"""Dormand–Prince 5(4) with adaptive steps and 4th-order dense output (JAX's ``odeint``).

``dopri5(fun, y0, t, rtol, atol, max_steps)`` integrates ``dy/dt = fun(y, t)`` and returns
``(ys, steps, t_reached)``: y at every time of ``t`` (stacked on axis 0), the number of
steps tried (accepted and rejected) and the time the solve reached. The solve is one
``sg.while_loop`` over steps and output times (``dopri5``); its body is elementwise in y
(seven stages, FSAL, the error estimate, the dense-output fit, the masked write of an
output row) plus one mean over y for the error norm, and accepts or rejects with
``sg.where``. Output
times are reached by the 4th-order interpolant of the last step, as in JAX and scipy
(``fit_4th_order_polynomial``), so output times do not shorten the steps.

Step control is JAX's (Hairer's): the error ratio is the RMS of
``err / (atol + rtol * max(|y0|, |y1|))``; the next step is
``dt * clip(0.9 * ratio^(-1/5), 0.2, 10)`` (never shrinking after an accepted step), and
the first step is Hairer's estimate from ``f(t0, y0)`` and one Euler probe.

>>> import numpy as np, symgrad as sg
>>> from symgrad.solvers.dopri5 import dopri5
>>> k = sg.placeholder("k")
>>> ys, steps, reached = dopri5(lambda y, t: -k * y, sg.constant(1.0),
...                             sg.constant([0.0, 1.0, 2.0]), 1e-8, 1e-8, 1000)
>>> np.allclose(sg.evaluate(ys, {k: 0.5}), np.exp(-0.5 * np.arange(3.0)), rtol=1e-7)
True
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..control.api import while_loop
from ..graph.tensor import Tensor
from ..ops.functions import F
from ..ops.sources import constant

__all__ = ["dopri5", "error_ratio", "next_step", "initial_step", "time_at"]

ALPHA = (1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0)
BETA = (
    (1 / 5,),
    (3 / 40, 9 / 40),
    (44 / 45, -56 / 15, 32 / 9),
    (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
    (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656),
    (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84),
)
C_SOL = (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0.0)
C_ERR = (35 / 384 - 1951 / 21600, 0.0, 500 / 1113 - 22642 / 50085, 125 / 192 - 451 / 720,
         -2187 / 6784 + 12231 / 42400, 11 / 84 - 649 / 6300, -1 / 60)
C_MID = (6025192743 / 30085553152 / 2, 0.0, 51252292925 / 65400821598 / 2,
         -2691868925 / 45128329728 / 2, 187940372067 / 1594534317056 / 2,
         -1776094331 / 19743644256 / 2, 11237099 / 235043384 / 2)


def _combo(coefficients: tuple, ks: list) -> Tensor:
    """``sum_j c_j k_j`` over the nonzero coefficients (elementwise)."""
    total = None
    for c, k in zip(coefficients, ks):
        if c != 0.0:
            term = float(c) * k
            total = term if total is None else total + term
    return total


def error_ratio(err: Tensor, y0: Tensor, y1: Tensor, rtol: float, atol: float) -> Tensor:
    """The RMS over y of ``err / (atol + rtol * max(|y0|, |y1|))`` (a scalar)."""
    scale = atol + rtol * F.maximum(F.abs(y0), F.abs(y1))
    ratio = err / scale
    return F.sqrt(F.reduce_mean(ratio * ratio))


def next_step(dt: Tensor, ratio: Tensor, order: float) -> Tensor:
    """The next step from the error ratio (JAX's ``optimal_step_size``)."""
    accepted = ratio < 1.0
    floor = F.where(accepted, constant(1.0), constant(0.2))
    zero = F.equal(ratio, 0.0)
    safe = F.where(zero, constant(1.0), ratio)          # a NaN ratio stays NaN: the solve stops
    factor = F.minimum(constant(10.0), F.maximum(0.9 * F.pow(safe, -1.0 / order), floor))
    return F.where(zero, dt * 10.0, dt * factor)


def _norm(x: Tensor) -> Tensor:
    return F.sqrt(F.reduce_sum(x * x))


def initial_step(fun: Callable, t0: Tensor, y0: Tensor, f0: Tensor, order: float,
                 rtol: float, atol: float) -> Tensor:
    """Hairer's first step (JAX's ``initial_step_size``)."""
    scale = atol + F.abs(y0) * rtol
    d0, d1 = _norm(y0 / scale), _norm(f0 / scale)
    small = F.logical_or(d0 < 1e-5, d1 < 1e-5)
    h0 = F.where(small, constant(1e-6), 0.01 * d0 / F.where(small, constant(1.0), d1))
    f1 = fun(y0 + h0 * f0, t0 + h0)
    d2 = _norm((f1 - f0) / scale) / h0
    flat = F.logical_and(d1 <= 1e-15, d2 <= 1e-15)
    big = F.maximum(d1, d2)
    h1 = F.where(flat, F.maximum(constant(1e-6), h0 * 1e-3),
                 F.pow(0.01 / F.where(flat, constant(1.0), big), 1.0 / (order + 1.0)))
    return F.minimum(100.0 * h0, h1)


def _step(fun: Callable, y: Tensor, f: Tensor, t: Tensor, dt: Tensor) -> tuple:
    """One Dormand–Prince step: (y1, f1, error estimate, the 5 interpolation coefficients)."""
    ks = [f]
    for alpha, beta in zip(ALPHA, BETA):
        ks.append(fun(y + dt * _combo(beta, ks), t + alpha * dt))
    y1 = y + dt * _combo(C_SOL, ks)
    err = dt * _combo(C_ERR, ks)
    y_mid = y + dt * _combo(C_MID, ks)
    dy0, dy1 = dt * ks[0], dt * ks[-1]
    a = -2.0 * dy0 + 2.0 * dy1 - 8.0 * y - 8.0 * y1 + 16.0 * y_mid
    b = 5.0 * dy0 - 3.0 * dy1 + 18.0 * y + 14.0 * y1 - 32.0 * y_mid
    c = -4.0 * dy0 + dy1 - 11.0 * y - 5.0 * y1 + 16.0 * y_mid
    return y1, ks[-1], err, (a, b, c, dy0, y)


def time_at(t: Tensor, i: Tensor) -> Tensor:
    """``t[i]`` for a 1-D ``t`` and a scalar int ``i`` in range, elementwise (a masked sum:
    a fused loop's driver runs it; a dynamic gather it does not)."""
    rows = constant(np.arange(int(t.shape[0]), dtype=np.int64))
    return F.reduce_sum(F.where(F.equal(rows, i), t, F.zeros_like(t)))


def dopri5(fun: Callable, y0: Tensor, t: Tensor, rtol: float, atol: float,
           max_steps: int) -> tuple:
    """y at the times ``t`` (stacked on axis 0), the steps tried, the time reached.

    One ``sg.while_loop``: an iteration whose last accepted step covers the next output
    time ``t[i]`` writes y there (the step's interpolant) into row i of the output and moves
    to ``i + 1``; any other iteration tries one step. Its body is elementwise in y and the
    output rows (a masked write), so it compiles as one fused loop (``f.explain()``)."""
    n_t = int(t.shape[0])
    t0 = F.getitem(t, (0,))
    f0 = fun(y0, t0)
    dt0 = F.maximum(initial_step(fun, t0, y0, f0, 4.0, rtol, atol), constant(0.0))
    zero = F.zeros_like(y0)
    rows = constant(np.arange(n_t, dtype=np.int64).reshape((n_t,) + (1,) * y0.ndim))
    out0 = F.where(F.equal(rows, 0), F.expand_dims(y0, 0),
                   F.zeros_like(F.broadcast_to(F.expand_dims(y0, 0), (n_t,) + tuple(y0.shape))))
    one = constant(np.int64(1))
    init = [y0, f0, t0, dt0, t0, zero, zero, zero, zero, y0, constant(np.int64(0)), one, out0]

    def more(y, f, tc, dt, last, a, b, c, d, e, n, i, out):
        within = F.logical_and(n < max_steps, dt > 0.0)
        target = time_at(t, F.minimum(i, constant(np.int64(n_t - 1))))
        return F.logical_and(i < n_t, F.logical_or(within, target <= tc))

    def body(y, f, tc, dt, last, a, b, c, d, e, n, i, out):
        target = time_at(t, i)
        emit = target <= tc
        span = tc - last
        s = (target - last) / F.where(span > 0.0, span, constant(1.0))
        value = (((a * s + b) * s + c) * s + d) * s + e
        write = F.logical_and(emit, F.equal(rows, i))
        out = F.where(write, F.reshape(value, (1,) + tuple(y0.shape)), out)   # numba: no
        # expand_dims with a tuple axis
        y1, f1, err, coeffs = _step(fun, y, f, tc, dt)
        ratio = error_ratio(err, y, y1, rtol, atol)
        ok = F.logical_and(ratio <= 1.0, F.logical_not(emit))
        new = [y1, f1, tc + dt, tc] + list(coeffs)
        old = [y, f, tc, last, a, b, c, d, e]
        kept = [F.where(ok, u, v) for u, v in zip(new, old)]
        dt = F.where(emit, dt, next_step(dt, ratio, 5.0))
        n = F.where(emit, n, n + 1)
        i = F.where(emit, i + 1, i)
        return kept[:3] + [dt] + kept[3:] + [n, i, out]

    final = while_loop(more, body, init)
    return final[-1], final[-3], final[2]
