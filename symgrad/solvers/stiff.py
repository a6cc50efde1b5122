"""Rodas4: an L-stable, stiffly accurate Rosenbrock method of order 4(3) for stiff ODEs.

``rodas4(fun, y0, t, rtol, atol, max_steps)`` has ``dopri5``'s contract (``dopri5.py``).
A Rosenbrock step needs no Newton iteration: with the exact (symbolic) Jacobian
``J = df/dy`` and ``f_t = df/dt`` at the step's start and ``W = I / (h gamma) - J``, each
of the six stages is one linear solve ``W k_i = f(t + c_i h, y + sum a_ij k_j)
+ sum (C_ij / h) k_j + h d_i f_t`` (Hairer and Wanner, *Solving ODEs II*, IV.7; the
coefficients of Hairer's ``rodas.f``); the last stage's ``k_6`` is the error estimate.
J is one batched reverse sweep over the traced ``f`` (``sg.jacobian``'s) and ``f_t`` one
forward sweep, so they are exact; the linear solves are ``sg.linalg.solve``.

The solve is one ``sg.scan`` over the output times of ``sg.while_loop``s of steps; a
step that would pass the next output time is shortened to land on it, so the outputs
are the method's own values (no interpolation).

>>> import numpy as np, symgrad as sg
>>> from symgrad.solvers.stiff import rodas4
>>> ys, steps, reached = rodas4(lambda y, t: -1e4 * (y - sg.cos(t)), sg.constant([0.0]),
...                             sg.constant([0.0, 1.0]), 1e-6, 1e-6, 1000)
>>> out, n = sg.evaluate([ys, steps], {})
>>> bool(abs(out[1, 0] - np.cos(1.0)) < 1e-4), int(n) < 100
(True, True)
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..control.api import scan, while_loop
from ..differentiate import gradients
from ..forward import jvp
from ..graph.tensor import Tensor
from ..ops.functions import F
from ..ops.linalg.api import solve as linear_solve
from ..ops.sources import constant
from .dopri5 import error_ratio, initial_step, next_step

__all__ = ["rodas4"]

GAMMA = 0.25
A = (
    (),
    (1.544,),
    (0.9466785280815826, 0.2557011698983284),
    (3.314825187068521, 2.896124015972201, 0.9986419139977817),
    (1.221224509226641, 6.019134481288629, 12.53708332932087, -0.687886036105895),
    (1.221224509226641, 6.019134481288629, 12.53708332932087, -0.687886036105895, 1.0),
)
C = (
    (),
    (-5.6688,),
    (-2.430093356833875, -0.2063599157091915),
    (-0.1073529058151375, -9.594562251023355, -20.47028614809616),
    (7.496443313967647, -10.24680431464352, -33.99990352819905, 11.7089089320616),
    (8.083246795921522, -7.981132988064893, -31.52159432874371, 16.31930543123136,
     -6.058818238834054),
)
C_NODES = (0.0, 0.386, 0.21, 0.63, 1.0, 1.0)
D = (0.25, -0.1043, 0.1035, -0.0362, 0.0, 0.0)


def _jacobian(fy: Tensor, y: Tensor, n: int) -> Tensor:
    """``dfy/dy`` as an (n, n) matrix (y flat): one batched reverse sweep."""
    seeds = constant(np.eye(n, dtype=fy.dtype))
    (rows,) = gradients(fy, [y], grad_ys=seeds, batched=True, stop_gradients=[y],
                        unconnected_gradients="zero")
    return F.reshape(rows, (n, n))


def _step(flat: Callable, y: Tensor, tc: Tensor, dt: Tensor, n: int) -> tuple:
    """One Rodas4 step from (tc, y) of length dt: (y1, error estimate)."""
    f0 = flat(y, tc)
    J = _jacobian(f0, y, n)
    (ft,) = jvp([f0], [tc], [constant(np.ones((), y.dtype))], name=None)
    W = constant(np.eye(n, dtype=y.dtype)) / (dt * GAMMA) - J
    ks: list = []
    for i in range(6):
        if i == 0:
            stage, f_i = y, f0
        else:
            stage = y + sum((a * k for a, k in zip(A[i], ks)), F.zeros_like(y))
            f_i = flat(stage, tc + C_NODES[i] * dt)
        rhs = f_i + sum((c / dt * k for c, k in zip(C[i], ks)), F.zeros_like(y))
        if D[i] != 0.0:
            rhs = rhs + (D[i] * dt) * ft
        ks.append(F.reshape(linear_solve(W, F.reshape(rhs, (n, 1))), (n,)))
    return stage + ks[-1], ks[-1]


def rodas4(fun: Callable, y0: Tensor, t: Tensor, rtol: float, atol: float,
           max_steps: int) -> tuple:
    """y at the times ``t`` (stacked on axis 0), the steps tried, the time reached."""
    shape = tuple(y0.shape)
    n = int(np.prod(shape, dtype=int))

    def flat(y, tt):
        return F.reshape(fun(F.reshape(y, shape), tt), (n,))

    t0 = F.getitem(t, (0,))
    y0f = F.reshape(y0, (n,))
    f0 = flat(y0f, t0)
    dt0 = F.maximum(initial_step(flat, t0, y0f, f0, 3.0, rtol, atol), constant(0.0))
    init = [y0f, t0, dt0, constant(np.int64(0))]

    def interval(carry, target):
        def more(y, tc, dt, k):
            return F.logical_and(F.logical_and(tc < target, k < max_steps), dt > 0.0)

        def body(y, tc, dt, k):
            clipped = tc + dt >= target
            h = F.where(clipped, target - tc, dt)
            y1, err = _step(flat, y, tc, h, n)
            ratio = error_ratio(err, y, y1, rtol, atol)
            ok = ratio <= 1.0
            proposal = next_step(h, ratio, 4.0)
            proposal = F.where(F.logical_and(ok, clipped), F.maximum(proposal, dt), proposal)
            t1 = F.where(clipped, target, tc + h)
            return [F.where(ok, y1, y), F.where(ok, t1, tc), proposal, k + 1]

        out = while_loop(more, body, list(carry))
        return out, out[0]

    carry, ys = scan(interval, init, F.getitem(t, (slice(1, None),)))
    ys = F.concat([F.expand_dims(y0f, 0), ys], 0)
    return F.reshape(ys, (-1,) + shape), carry[-1], carry[1]
