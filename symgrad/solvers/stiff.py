"""Rodas4: an L-stable, stiffly accurate Rosenbrock method of order 4(3) for stiff ODEs.

``rodas4(fun, y0, t, rtol, atol, max_steps)`` has ``dopri5``'s contract (``dopri5.py``).
A Rosenbrock step needs no Newton iteration: with the exact (symbolic) Jacobian
``J = df/dy`` and ``f_t = df/dt`` at the step's start and ``W = I / (h gamma) - J``, each
of the six stages is one linear solve ``W k_i = f(t + c_i h, y + sum a_ij k_j)
+ sum (C_ij / h) k_j + h d_i f_t`` (Hairer and Wanner, *Solving ODEs II*, IV.7; the
coefficients of Hairer's ``rodas.f``); the last stage's ``k_6`` is the error estimate.
J is one batched reverse sweep over the traced ``f`` (``sg.jacobian``'s) and ``f_t`` one
forward sweep, so they are exact; the linear solves are ``sg.linalg.solve``.

The solve is one ``sg.while_loop`` of steps; a step that would pass the next output
time is shortened to land on it, and an accepted step that lands writes y into that
time's row of the output (a masked write), so the outputs are the method's own values
(no interpolation).

>>> import numpy as np, symgrad as sg
>>> from symgrad.solvers.stiff import rodas4
>>> ys, steps, reached = rodas4(lambda y, t: -1e4 * (y - sg.cos(t)), sg.constant([0.0]),
...                             sg.constant([0.0, 1.0]), 1e-6, 1e-6, 1000)
>>> out, n = sg.evaluate([ys, steps], {})
>>> bool(abs(out[1, 0] - np.cos(1.0)) < 1e-4), int(n) < 100
(True, True)
"""

from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from ..control.api import while_loop
from ..differentiate import gradients
from ..forward import jvp
from ..graph.tensor import Tensor
from ..ops.functions import F
from ..ops.linalg.api import solve as linear_solve
from ..ops.sources import constant
from .dopri5 import time_at, error_ratio, initial_step, next_step

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
    """``dfy/dy`` as an (len(fy), n) matrix (fy, y flat): one batched reverse sweep."""
    rows = int(fy.shape[0])
    seeds = constant(np.eye(rows, dtype=fy.dtype))
    (jac,) = gradients(fy, [y], grad_ys=seeds, batched=True, stop_gradients=[y],
                       unconnected_gradients="zero")
    return F.reshape(jac, (rows, n))


def _dense_solver(flat: Callable, y: Tensor, tc: Tensor, f0: Tensor, n: int) -> Callable:
    """``h -> (r -> (I / (h gamma) - J)^-1 r)`` with the dense Jacobian J at (tc, y)."""
    J = _jacobian(f0, y, n)
    eye = constant(np.eye(n, dtype=y.dtype))

    def for_step(h):
        W = eye / (h * GAMMA) - J
        return lambda r: F.reshape(linear_solve(W, F.reshape(r, (n, 1))), (n,))
    return for_step


def _blocked_solver(blocks: tuple) -> Callable:
    """The solver of a sensitivity system ``z = [y (n), S (m, n)]`` whose Jacobian is
    ``[[J, 0], [H, I (x) J]]`` (``H = d(dS/dt)/dy``): two n x n solves with ``W = I / (h
    gamma) - J``, the second with m right-hand sides and ``H k_y`` one forward sweep, in
    place of one solve of n (1 + m) unknowns with its dense Jacobian."""
    n, m = blocks

    def make(flat: Callable, z: Tensor, tc: Tensor, f0: Tensor, size: int) -> Callable:
        fy = F.getitem(f0, (slice(0, n),))
        dS = F.getitem(f0, (slice(n, None),))
        J = _jacobian(fy, z, size)
        J = F.getitem(J, (slice(None), slice(0, n)))
        eye = constant(np.eye(n, dtype=z.dtype))
        pad = constant(np.zeros((size - n,), dtype=z.dtype))

        def for_step(h):
            W = eye / (h * GAMMA) - J

            def apply(r):
                k_y = linear_solve(W, F.reshape(F.getitem(r, (slice(0, n),)), (n, 1)))
                k_y = F.reshape(k_y, (n,))
                (Hk,) = jvp([dS], [z], [F.concat([k_y, pad], 0)], name=None)
                rhs = F.reshape(F.getitem(r, (slice(n, None),)) + Hk, (m, n))
                k_S = linear_solve(W, F.transpose(rhs))
                return F.concat([k_y, F.reshape(F.transpose(k_S), (m * n,))], 0)
            return apply
        return for_step
    return make


def _step(flat: Callable, y: Tensor, tc: Tensor, dt: Tensor, n: int,
          solver: Callable) -> tuple:
    """One Rodas4 step from (tc, y) of length dt: (y1, error estimate)."""
    f0 = flat(y, tc)
    solve_w = solver(flat, y, tc, f0, n)(dt)
    (ft,) = jvp([f0], [tc], [constant(np.ones((), y.dtype))], name=None)
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
        ks.append(solve_w(rhs))
    return stage + ks[-1], ks[-1]


def rodas4(fun: Callable, y0: Tensor, t: Tensor, rtol: float, atol: float,
           max_steps: int, blocks: Optional[tuple] = None) -> tuple:
    """y at the times ``t`` (stacked on axis 0), the steps tried, the time reached.
    ``blocks=(n, m)``: y is a sensitivity system ``[y (n), S (m, n)]`` (``odeint_grad``),
    solved by blocks (``_blocked_solver``)."""
    solver = _dense_solver if blocks is None else _blocked_solver(blocks)
    shape = tuple(y0.shape)
    n = int(np.prod(shape, dtype=int))

    def flat(y, tt):
        return F.reshape(fun(F.reshape(y, shape), tt), (n,))

    n_t = int(t.shape[0])
    t0 = F.getitem(t, (0,))
    y0f = F.reshape(y0, (n,))
    f0 = flat(y0f, t0)
    dt0 = F.maximum(initial_step(flat, t0, y0f, f0, 3.0, rtol, atol), constant(0.0))
    rows = constant(np.arange(n_t, dtype=np.int64).reshape((n_t, 1)))
    out0 = F.where(F.equal(rows, 0), F.expand_dims(y0f, 0),
                   constant(np.zeros((n_t, n), dtype=y0f.dtype)))
    init = [y0f, t0, dt0, constant(np.int64(0)), constant(np.int64(1)), out0]

    def more(y, tc, dt, k, i, out):
        within = F.logical_and(k < max_steps, dt > 0.0)
        target = time_at(t, F.minimum(i, constant(np.int64(n_t - 1))))
        return F.logical_and(i < n_t, F.logical_or(within, target <= tc))

    def body(y, tc, dt, k, i, out):
        target = time_at(t, i)
        emit = target <= tc                       # a repeated time: y as it is
        clipped = tc + dt >= target
        h = F.where(F.logical_and(clipped, F.logical_not(emit)), target - tc, dt)
        y1, err = _step(flat, y, tc, h, n, solver)
        ratio = error_ratio(err, y, y1, rtol, atol)
        ok = F.logical_and(ratio <= 1.0, F.logical_not(emit))
        proposal = next_step(h, ratio, 4.0)
        proposal = F.where(F.logical_and(ok, clipped), F.maximum(proposal, dt), proposal)
        landed = F.logical_and(ok, clipped)
        y_new = F.where(ok, y1, y)
        t1 = F.where(clipped, target, tc + h)
        write = F.logical_and(F.logical_or(landed, emit), F.equal(rows, i))
        out = F.where(write, F.reshape(y_new, (1, n)), out)     # a reshape: numba runs it
        return [y_new, F.where(ok, t1, tc), F.where(emit, dt, proposal),
                F.where(emit, k, k + 1), F.where(F.logical_or(landed, emit), i + 1, i), out]

    final = while_loop(more, body, init)
    return F.reshape(final[-1], (-1,) + shape), final[3], final[1]
