"""Solvers (issue 31): roots, vectorized maps and ODE solves beside CasADi and JAX.

    python benchmarks/solvers.py [--cases root,vmap,lv,robertson] [--quick] [--timeout 300]
                                 [--json benchmarks/results/solvers.json]
                                 [--chart benchmarks/results/solvers.png]

Every (case, program) runs in a fresh subprocess with empty symgrad and numba caches: the
child measures CPU seconds (``time.process_time``) of the build (graph + gradients +
``sg.function`` / ``casadi.Function`` + first call: the cold build), then the per-call time
(best of repeated calls on slightly different arguments: a loop's result for the same
arguments is reused; BLAS on one thread, as CasADi's), and the peak memory of one call
(``tracemalloc``: numpy's buffers).

Cases (``CASES``: each names its programs, its reference program and its targets):

- ``root``  a Bratu-like system of n = 100 (``--quick``: 20) unknowns with 10 parameters:
  ``F_i(x, th) = (x_{i-1} - 2 x_i + x_{i+1}) / h^2 + th[i // (n/10)] exp(x_i) + 1``,
  ``x_0 = x_{n+1} = 0``; value ``sum(x*^2) / 2`` and its gradient with respect to ``th``.
  Programs: ``sg.root`` (implicit gradient); ``unrolled``: the same Newton written by hand
  with ``sg.while_loop`` (``sg.jacobian``, ``sg.linalg.solve``), differentiated through
  its iterations; ``unrolled kN``: exactly N iterations (memory against iterations);
  CasADi ``rootfinder('newton')`` with its derivative, when casadi imports. Targets:
  ``sg.root`` per call <= 0.5x unrolled, memory independent of the iterations (moonshot:
  <= CasADi), build <= 2 s.
- ``vmap``  one RK4 step of Lotka-Volterra (h = 0.01) over 10^5 (quick: 10^3) states:
  ``sg.vectorized_map`` of the one-state step vs the same written on (N, 2) arrays, value
  ``sum`` of the new states; target <= 1.2x the array program, build <= 2 s.

- ``lv``  Lotka-Volterra by ``sg.odeint`` (dopri5, JAX's default tolerances 1.4e-8), 21
  (quick: 6) output times on [0, 10]: value ``sum(ys^2)`` and its gradient wrt p (4) and
  y0 (2) (the continuous adjoint) vs the value alone; CasADi ``integrator("cvodes")`` with
  ``casadi.gradient`` of the loss (CVODES adjoint sensitivities); JAX ``odeint``. Target:
  per call <= JAX / 5 (``peer_targets``), build <= 2 s.
- ``robertson``  Robertson's kinetics by ``sg.odeint(method="bdf")`` to rtol 1e-6, atol
  1e-10, 14 (quick: 5) output times (0, then log-spaced 1e-4..100): value
  ``sum(ys * (1, 1e4, 1))`` and its gradient wrt the 3 rate constants vs the value alone;
  CasADi CVODES with adjoint sensitivities. Target: per call <= CasADi's, build <= 2 s.

JAX rows run where jax imports (not installed on the machine of the README's figures).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from typing import Callable, Optional

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "benchmarks", "results")


# --- the programs -------------------------------------------------------------------------
def _bratu_sg(sg, n: int):
    h2 = (1.0 / (n + 1)) ** 2
    owner = np.repeat(np.arange(10), n // 10)
    lap = (np.diag(np.ones(n - 1), -1) - 2 * np.eye(n) + np.diag(np.ones(n - 1), 1)) / h2

    def residual(x, th):     # the Laplacian as a constant matrix (a concat of x's
        # neighbours fails in the unrolled program's second-order sweep on main)
        lx = sg.reshape(sg.linalg.matmul(sg.constant(lap), sg.reshape(x, (n, 1))), (n,))
        return lx + sg.gather(th, owner) * sg.exp(x) + 1.0
    return residual


def _x0(n: int) -> np.ndarray:
    return np.zeros(n)


def _theta(k: int) -> np.ndarray:
    return np.linspace(0.5, 1.5, 10) * (1 + 0.01 * k)


def sg_root(sg, n: int, iterations: Optional[int] = None):
    th = sg.placeholder("th", shape=(10,))
    f = _bratu_sg(sg, n)
    x = sg.root(lambda x: f(x, th), _x0(n), tol=1e-10)
    loss = 0.5 * sg.reduce_sum(x * x)
    (g,) = sg.gradients(loss, th)
    return [th], [loss, g]


def sg_unrolled(sg, n: int, iterations: Optional[int] = None):
    """Newton by hand in sg.while_loop (iterations: exactly that many), differentiated
    through its iterations."""
    th = sg.placeholder("th", shape=(10,))
    f = _bratu_sg(sg, n)

    def cond(i, x, norm):
        if iterations is not None:
            return i < iterations
        return sg.logical_and(i < 50, norm > 1e-10)

    def body(i, x, norm):
        r = f(x, th)
        J = sg.jacobian(r, x)
        x = x - sg.reshape(sg.linalg.solve(J, sg.reshape(r, (n, 1))), (n,))
        r = f(x, th)
        return i + 1, x, sg.sqrt(sg.reduce_sum(r * r))
    x0 = sg.constant(_x0(n))
    r0 = f(x0, th)
    _, x, _ = sg.while_loop(cond, body, [sg.constant(np.int64(0)), x0,
                                         sg.sqrt(sg.reduce_sum(r0 * r0))])
    loss = 0.5 * sg.reduce_sum(x * x)
    (g,) = sg.gradients(loss, th)
    return [th], [loss, g]


def casadi_root(n: int):
    import casadi as ca
    h2 = (1.0 / (n + 1)) ** 2
    x = ca.SX.sym("x", n)
    th = ca.SX.sym("th", 10)
    owner = np.repeat(np.arange(10), n // 10)
    padded = ca.vertcat(0, x, 0)
    lap = (padded[:-2] - 2 * x + padded[2:]) / h2
    r = lap + ca.vertcat(*[th[int(k)] for k in owner]) * ca.exp(x) + 1
    G = ca.Function("G", [x, th], [r])
    rf = ca.rootfinder("rf", "newton", G, {"abstol": 1e-10})
    thm = ca.MX.sym("th", 10)
    xs = rf(ca.MX(_x0(n)), thm)
    loss = 0.5 * ca.dot(xs, xs)
    return ca.Function("F", [thm], [loss, ca.gradient(loss, thm)])


def _lv(sg_or_np, u, h=0.01, p=(1.0, 0.5, 1.0, 0.3)):
    """One RK4 step of Lotka-Volterra on u[..., 0:2] (sg or numpy arrays alike)."""
    def f(u):
        x, y = u[..., 0], u[..., 1]
        return sg_or_np.stack([p[0] * x - p[1] * x * y, p[3] * x * y - p[2] * y], axis=-1)
    k1 = f(u)
    k2 = f(u + h / 2 * k1)
    k3 = f(u + h / 2 * k2)
    k4 = f(u + h * k3)
    return u + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def sg_vmap(sg, n: int, iterations=None):
    u = sg.placeholder("u", shape=(n, 2))
    out = sg.vectorized_map(lambda s: _lv(sg, s), u)
    return [u], [out]


def sg_arrays(sg, n: int, iterations=None):
    u = sg.placeholder("u", shape=(n, 2))
    return [u], [_lv(sg, u)]


def _states(n: int, k: int) -> list:
    rng = np.random.default_rng(k)
    return [1.0 + rng.random((n, 2))]


# --- odeint: Lotka-Volterra (dopri5, adjoint) and Robertson (bdf, sensitivities) -------
P_LV = np.array([1.1, 0.4, 0.1, 0.4])
Y_LV = np.array([10.0, 5.0])
LV_TOL = 1.4e-8                       # JAX odeint's default rtol = atol
K_ROB = np.array([0.04, 3.0e7, 1.0e4])
W_ROB = np.array([1.0, 1.0e4, 1.0])   # y2 is ~1e-5: weigh it like the others
ROB_TOL = (1e-6, 1e-10)               # rtol, atol


def _lv_times(n: int) -> np.ndarray:
    return np.linspace(0.0, 10.0, n)


def _rob_times(n: int) -> np.ndarray:
    return np.concatenate([[0.0], np.logspace(-4, 2, n - 1)])


def _lv_args(n: int, k: int) -> list:
    return [P_LV * (1 + 0.01 * k), Y_LV * (1 - 0.01 * k)]


def _rob_args(n: int, k: int) -> list:
    return [K_ROB * (1 + 0.01 * k)]


def sg_lv(sg, n: int, iterations=None, gradient: bool = True):
    """loss = sum(ys^2) over the n output times, its gradient wrt p (4) and y0 (2)."""
    p = sg.placeholder("p", shape=(4,))
    y0 = sg.placeholder("y0", shape=(2,))

    def f(y, t, p):
        return sg.stack([p[0] * y[0] - p[1] * y[0] * y[1], p[2] * y[0] * y[1] - p[3] * y[1]])
    ys = sg.odeint(f, y0, _lv_times(n), p, rtol=LV_TOL, atol=LV_TOL)
    loss = sg.reduce_sum(ys * ys)
    return [p, y0], [loss] + (list(sg.gradients(loss, [p, y0])) if gradient else [])


def sg_lv_value(sg, n: int, iterations=None):
    return sg_lv(sg, n, iterations, gradient=False)


def sg_rob(sg, n: int, iterations=None, gradient: bool = True):
    """loss = sum(ys * W) over the n output times, its gradient wrt the 3 rate constants."""
    k = sg.placeholder("k", shape=(3,))

    def f(y, t, k):
        return sg.stack([-k[0] * y[0] + k[2] * y[1] * y[2],
                         k[0] * y[0] - k[2] * y[1] * y[2] - k[1] * y[1] ** 2,
                         k[1] * y[1] ** 2])
    ys = sg.odeint(f, np.array([1.0, 0.0, 0.0]), _rob_times(n), k, method="bdf",
                   rtol=ROB_TOL[0], atol=ROB_TOL[1])
    loss = sg.reduce_sum(ys * W_ROB)
    return [k], [loss] + (list(sg.gradients(loss, [k])) if gradient else [])


def sg_rob_value(sg, n: int, iterations=None):
    return sg_rob(sg, n, iterations, gradient=False)


def _casadi_integrator(ca, x, p, ode, times, rtol, atol):
    """CasADi's CVODES integrator to the times[1:], its loss differentiated by casadi's
    reverse AD (the integrator's adjoint sensitivities)."""
    return ca.integrator("F", "cvodes", {"x": x, "p": p, "ode": ode}, float(times[0]),
                         [float(v) for v in times[1:]],
                         {"reltol": rtol, "abstol": atol, "max_num_steps": 100000})


def casadi_lv(n: int):
    import casadi as ca
    x, p = ca.SX.sym("x", 2), ca.SX.sym("p", 4)
    ode = ca.vertcat(p[0] * x[0] - p[1] * x[0] * x[1], p[2] * x[0] * x[1] - p[3] * x[1])
    F = _casadi_integrator(ca, x, p, ode, _lv_times(n), LV_TOL, LV_TOL)
    P, X0 = ca.MX.sym("p", 4), ca.MX.sym("y0", 2)
    xf = F(x0=X0, p=P)["xf"]
    loss = ca.sumsqr(xf) + ca.sumsqr(X0)
    fn = ca.Function("lv", [P, X0], [loss, ca.gradient(loss, P), ca.gradient(loss, X0)])
    return lambda p, y0: fn(p, y0)


def casadi_rob(n: int):
    import casadi as ca
    y, k = ca.SX.sym("y", 3), ca.SX.sym("k", 3)
    ode = ca.vertcat(-k[0] * y[0] + k[2] * y[1] * y[2],
                     k[0] * y[0] - k[2] * y[1] * y[2] - k[1] * y[1] ** 2, k[1] * y[1] ** 2)
    F = _casadi_integrator(ca, y, k, ode, _rob_times(n), *ROB_TOL)
    K = ca.MX.sym("k", 3)
    y0 = np.array([1.0, 0.0, 0.0])
    xf = F(x0=ca.DM(y0), p=K)["xf"]                              # 3 x (n - 1)
    loss = ca.sum1(ca.mtimes(ca.DM(W_ROB).T, xf).T) + float(W_ROB @ y0)
    fn = ca.Function("rob", [K], [loss, ca.gradient(loss, K)])
    return lambda k: fn(k)


def numba_lv(n: int):
    """A hand-written continuous adjoint in numba (the moonshot's reference): dopri5 with
    steps landing on the output times, forward for ys, backward for ``[y, a, a_p]`` with
    the restarts at the output times (``odeint_sweep.py``'s scheme), no symgrad."""
    import numba
    from symgrad.solvers.dopri5 import ALPHA, BETA, C_ERR, C_SOL
    beta = np.zeros((6, 6))
    for i, row in enumerate(BETA):
        beta[i, :len(row)] = row
    alpha, c_sol, c_err = np.array(ALPHA), np.array(C_SOL), np.array(C_ERR)

    @numba.njit(cache=False)
    def lv(z, p, out):
        out[0] = p[0] * z[0] - p[1] * z[0] * z[1]
        out[1] = p[2] * z[0] * z[1] - p[3] * z[1]

    @numba.njit(cache=False)
    def adjoint(z, p, out):      # d[y, a, a_p]/ds in s = -t
        y0, y1, a0, a1 = z[0], z[1], z[2], z[3]
        out[0] = -(p[0] * y0 - p[1] * y0 * y1)
        out[1] = -(p[2] * y0 * y1 - p[3] * y1)
        out[2] = a0 * (p[0] - p[1] * y1) + a1 * p[2] * y1
        out[3] = -a0 * p[1] * y0 + a1 * (p[2] * y0 - p[3])
        out[4] = a0 * y0
        out[5] = -a0 * y0 * y1
        out[6] = a1 * y0 * y1
        out[7] = -a1 * y1

    def make(rhs):
        @numba.njit(cache=False)
        def solve(z, grid, p, out, resets, keep):
            nz = z.size
            k = np.empty((7, nz))
            stage, z1 = np.empty(nz), np.empty(nz)
            s, dt, j = grid[0], 1e-4 * (grid[-1] - grid[0]), 1
            out[0, :] = z
            z = keep * z + resets[0]
            rhs(z, p, k[0])
            while j < grid.size:
                target = grid[j]
                clipped = s + dt >= target
                h = target - s if clipped else dt
                for i in range(6):
                    for e in range(nz):
                        acc = 0.0
                        for q in range(i + 1):
                            acc += beta[i, q] * k[q, e]
                        stage[e] = z[e] + h * acc
                    rhs(stage, p, k[i + 1])
                ratio = 0.0
                for e in range(nz):
                    acc, err = 0.0, 0.0
                    for q in range(7):
                        acc += c_sol[q] * k[q, e]
                        err += c_err[q] * k[q, e]
                    z1[e] = z[e] + h * acc
                    sc = LV_TOL + LV_TOL * max(abs(z[e]), abs(z1[e]))
                    ratio += (h * err / sc) ** 2
                ratio = np.sqrt(ratio / nz)
                factor = 10.0 if ratio == 0.0 else min(10.0, max(
                    0.9 * ratio ** -0.2, 1.0 if ratio <= 1.0 else 0.2))
                if ratio <= 1.0:
                    z[:] = z1
                    s = target if clipped else s + h
                    if clipped:
                        out[j, :] = z
                        z = keep * z + resets[j]
                        j += 1
                        dt = max(h * factor, dt)
                        rhs(z, p, k[0])
                    else:
                        dt = h * factor
                        k[0, :] = k[6]
                else:
                    dt = h * factor
            return z
        return solve

    forward, backward = make(lv), make(adjoint)
    times = _lv_times(n)
    grid_b = -times[::-1].copy()
    keep_f, keep_b = np.ones(2), np.concatenate([np.zeros(2), np.ones(6)])

    def call(p, y0):
        ys = np.empty((n, 2))
        forward(y0.copy(), times, p, ys, np.zeros((n, 2)), keep_f)
        g = 2.0 * ys
        resets = np.zeros((n, 8))
        resets[:, :2], resets[:, 2:4] = ys[::-1], g[::-1]
        z = backward(np.zeros(8), grid_b, p, np.empty((n, 8)), resets, keep_b)
        return (ys * ys).sum(), z[4:8].copy(), z[2:4].copy()
    call(P_LV, Y_LV)                      # compile
    return call


def jax_lv(n: int):
    import jax
    import jax.numpy as jnp
    from jax.experimental.ode import odeint as jodeint
    jax.config.update("jax_enable_x64", True)

    def f(y, t, p):
        return jnp.stack([p[0] * y[0] - p[1] * y[0] * y[1], p[2] * y[0] * y[1] - p[3] * y[1]])

    def loss(p, y0):
        ys = jodeint(f, y0, jnp.asarray(_lv_times(n)), p, rtol=LV_TOL, atol=LV_TOL)
        return jnp.sum(ys * ys)
    fn = jax.jit(jax.value_and_grad(loss, argnums=(0, 1)))

    def call(p, y0):
        value, grads = fn(p, y0)
        return jax.block_until_ready((value,) + tuple(grads))
    return call


CASES = {
    "root": {
        "size": (100, 20),
        "programs": {"sg.root": sg_root, "unrolled": sg_unrolled},
        "iterations": (5, 10, 20, 40),           # unrolled kN rows (memory vs iterations)
        "peers": {"casadi rootfinder": ("casadi", casadi_root)},
        "args": lambda n, k: [_theta(k)],
        "reference": "unrolled",
        "target": ("sg.root", 0.5),              # per call <= 0.5x the reference
    },
    "vmap": {
        "size": (100_000, 1000),
        "programs": {"sg.vectorized_map": sg_vmap, "arrays": sg_arrays},
        "iterations": (),
        "peers": {},
        "args": _states,
        "reference": "arrays",
        "target": ("sg.vectorized_map", 1.2),
    },
    "lv": {
        "size": (21, 6),                         # output times
        "programs": {"sg.odeint": sg_lv, "sg.odeint value": sg_lv_value},
        "iterations": (),
        "peers": {"jax odeint": ("jax", jax_lv), "casadi cvodes": ("casadi", casadi_lv),
                  "numba adjoint": ("numba", numba_lv)},
        "args": _lv_args,
        "reference": "sg.odeint value",
        "target": ("sg.odeint", 3.0),            # the gradient <= 3x the value alone
        "peer_targets": [("jax odeint", 0.2, "<= JAX odeint / 5"),
                         ("numba adjoint", 2.0, "<= 2x a hand-written adjoint (moonshot)")],
        "budget_s": 4.0,     # calls past fused_while.PAYBACK_S of Python loop: fused loops
    },
    "robertson": {
        "size": (14, 5),
        "programs": {"sg.odeint bdf": sg_rob, "sg.odeint bdf value": sg_rob_value},
        "iterations": (),
        "peers": {"casadi cvodes": ("casadi", casadi_rob)},
        "args": _rob_args,
        "reference": "sg.odeint bdf value",
        "target": ("sg.odeint bdf", 4.0),        # value + 3 sensitivities <= 4x the value
        "peer_targets": [("casadi cvodes", 1.0, "<= CasADi CVODES with adjoints")],
        "budget_s": 4.0,
    },
}
"""Each case: sizes (default, quick), symgrad programs ``(sg, n, iterations) -> (inputs,
outputs)``, ``iterations`` (extra rows of the reference with that many loop iterations),
peers ``{name: (module, build(n) -> callable)}``, ``args(n, k)`` (the k-th argument set),
the reference program and the target (program, ratio); ``peer_targets`` (optional):
``[(peer, ratio, what)]``, the target program's per call against a peer's; ``budget_s``
(optional, 1 s): CPU seconds of calls timed (a fused loop is compiled once the Python
loop has run ``fused_while.PAYBACK_S``: the steady per call needs calls past it)."""


# --- the child: one (case, program) in a fresh process ------------------------------------
def best_call(call: Callable, arg_sets: list, budget_s: float = 1.0, batch_s: float = 0.02,
              min_batches: int = 5) -> float:
    """Best CPU seconds of one call: batches of calls over ``arg_sets`` in turn (each batch
    at least ``batch_s``: the CPU clock's ticks are coarse; a batch that ran shorter, as
    when a loop has just been fused and runs faster, is not counted and the batches
    double), the best batch's mean."""
    t = time.process_time()
    count = 0
    while time.process_time() - t < batch_s:
        call(*arg_sets[count % len(arg_sets)])
        count += 1
    size = max(count, len(arg_sets))
    best, batches, start = float("inf"), 0, time.process_time()
    while batches < min_batches or time.process_time() - start < budget_s:
        t = time.process_time()
        for k in range(size):
            call(*arg_sets[k % len(arg_sets)])
        elapsed = time.process_time() - t
        if elapsed < batch_s:
            size *= 2
            continue
        best, batches = min(best, elapsed / size), batches + 1
    return best


def child(case: str, program: str, n: int, iterations: Optional[int]) -> dict:
    spec = CASES[case]
    arg_sets = [spec["args"](n, k) for k in range(4)]
    t0 = time.process_time()
    if program in spec["peers"]:
        module, build = spec["peers"][program]
        t = time.process_time()
        fn = build(n)
        call = lambda *a: fn(*a)   # noqa: E731
    else:
        import symgrad as sg
        t = time.process_time()
        inputs, outputs = spec["programs"][program](sg, n, iterations)
        fn = sg.function(inputs, outputs)
        call = fn
    first = call(*arg_sets[0])
    build_s = time.process_time() - t
    values = [np.asarray(v, dtype=float).ravel()[:3].tolist() for v in
              (first if isinstance(first, (list, tuple)) else [first])]
    per_call = best_call(call, arg_sets, budget_s=spec.get("budget_s", 1.0))
    tracemalloc.start()
    call(*arg_sets[1])
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"build_s": build_s, "import_s": t - t0, "per_call_us": per_call * 1e6,
            "peak_bytes": peak, "values": values}


def run_child(case: str, program: str, n: int, iterations, timeout: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="sgsolv_") as cache:
        env = dict(os.environ, SYMGRAD_CACHE_DIR=os.path.join(cache, "sg"),
                   OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
                   NUMBA_CACHE_DIR=os.path.join(cache, "nb"),
                   PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        code = ("import json, sys; from benchmarks import solvers as s; "
                f"print('RESULT' + json.dumps(s.child({case!r}, {program!r}, {n}, "
                f"{iterations!r})))")
        limit = max(1, int(timeout))

        def cap():
            resource.setrlimit(resource.RLIMIT_CPU, (limit, limit + 5))
        try:
            done = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT,
                                  capture_output=True, text=True, timeout=20 * limit,
                                  preexec_fn=cap)
        except subprocess.TimeoutExpired:
            return {"timeout_s": limit}
    for line in done.stdout.splitlines():
        if line.startswith("RESULT"):
            return json.loads(line[len("RESULT"):])
    if done.returncode < 0 or done.returncode == 128 + 24:
        return {"timeout_s": limit}
    return {"error": (done.stderr.strip().splitlines() or ["?"])[-1][:300]}


# --- table, chart, main -------------------------------------------------------------------
def _fmt(v, unit: str) -> str:
    if v is None:
        return "-"
    if unit == "us":
        return f"{v / 1000:.3g} ms" if v >= 1000 else f"{v:.3g} us"
    if unit == "B":
        return f"{v / 2 ** 20:.2f} MiB" if v >= 2 ** 20 else f"{v / 1024:.1f} KiB"
    return f"{v:.2f} s"


def format_table(rows: list) -> str:
    lines = ["| case | n | program | build (CPU s, cold) | per call | peak memory of a call "
             "| vs reference |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r or "timeout_s" in r:
            why = r.get("error") or f"> {r['timeout_s']} s CPU"
            lines.append(f"| {r['case']} | {r['n']} | {r['program']} | {why} | | | |")
            continue
        ratio = "" if r.get("ratio") is None else f"{r['ratio']:.2f}x"
        lines.append(f"| {r['case']} | {r['n']} | {r['program']} | {_fmt(r['build_s'], 's')} "
                     f"| {_fmt(r['per_call_us'], 'us')} | {_fmt(r['peak_bytes'], 'B')} "
                     f"| {ratio} |")
    return "\n".join(lines)


def targets(rows: list) -> list:
    """[(what, measured, met)] for every case's targets."""
    out = []
    for case, spec in CASES.items():
        got = {r["program"]: r for r in rows if r["case"] == case and "per_call_us" in r}
        program, limit = spec["target"]
        if program in got and spec["reference"] in got:
            ratio = got[program]["per_call_us"] / got[spec["reference"]]["per_call_us"]
            out.append((f"{case}: {program} per call <= {limit}x {spec['reference']}",
                        f"{ratio:.2f}x", ratio <= limit))
        for name, r in got.items():
            if not name.startswith(("sg.", "unrolled", "arrays")) or " k" in name:
                continue
            out.append((f"{case}: {name} build <= 2 s cold", f"{r['build_s']:.2f} s",
                        r["build_s"] <= 2.0))
        for peer, limit, what in spec.get("peer_targets", ()):
            if program not in got:
                continue
            if peer not in got:
                out.append((f"{case}: {program} per call {what}", f"{peer} not run", None))
                continue
            ratio = got[program]["per_call_us"] / got[peer]["per_call_us"]
            out.append((f"{case}: {program} per call {what}", f"{ratio:.2f}x {peer}",
                        ratio <= limit))
        peers = [got[p] for p in spec["peers"] if p in got]
        if program in got and peers and "peer_targets" not in spec:
            ratio = got[program]["per_call_us"] / peers[0]["per_call_us"]
            out.append((f"{case}: {program} per call <= {list(spec['peers'])[0]} (moonshot)",
                        f"{ratio:.2f}x", ratio <= 1.0))
    return out


def chart(rows: list, path: str) -> Optional[str]:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    ok = [r for r in rows if "per_call_us" in r]
    if not ok:
        return None
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    labels = [f"{r['case']}\n{r['program']}" for r in ok]
    ax[0].barh(labels, [r["per_call_us"] for r in ok])
    ax[0].set_xscale("log")
    ax[0].set_xlabel("per call (CPU us, best)")
    ax[1].barh(labels, [r["peak_bytes"] / 1024 for r in ok])
    ax[1].set_xscale("log")
    ax[1].set_xlabel("peak memory of a call (KiB)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: Optional[list] = None) -> list:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    parser.add_argument("--timeout", type=float, default=300.0, help="CPU s per process")
    parser.add_argument("--no-peers", action="store_true")
    parser.add_argument("--no-iterations", action="store_true",
                        help="skip the rows of fixed iteration counts")
    parser.add_argument("--json", default=os.path.join(RESULTS, "solvers.json"))
    parser.add_argument("--chart", default=os.path.join(RESULTS, "solvers.png"))
    opts = parser.parse_args(argv)
    rows = []
    for case in opts.cases.split(","):
        spec = CASES[case]
        n = spec["size"][1 if opts.quick else 0]
        jobs = [(p, None) for p in spec["programs"]]
        if not opts.no_iterations:
            jobs += [(spec["reference"], k) for k in spec["iterations"]]
        if not opts.no_peers:
            jobs += [(p, None) for p, (module, _) in spec["peers"].items()
                     if importlib.util.find_spec(module) is not None]
        for program, k in jobs:
            row = {"case": case, "n": n, "program": program + (f" k{k}" if k else "")}
            row.update(run_child(case, program, n, k, opts.timeout))
            rows.append(row)
            print(format_table([row]).splitlines()[-1], flush=True)
        ref = next((r for r in rows if r["case"] == case and r["program"] == spec["reference"]
                    and "per_call_us" in r), None)
        for r in rows:
            if r["case"] == case and ref and "per_call_us" in r:
                r["ratio"] = r["per_call_us"] / ref["per_call_us"]
    print(format_table(rows))
    met = targets(rows)
    for what, value, ok in met:
        print(f"- {what}: {value} ({'not measured' if ok is None else 'met' if ok else 'not met'})")
    if opts.json:
        os.makedirs(os.path.dirname(opts.json) or ".", exist_ok=True)
        with open(opts.json, "w") as fh:
            json.dump({"date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                       "machine": platform.processor() or platform.machine(),
                       "quick": opts.quick, "rows": rows,
                       "targets": [{"what": w, "value": v, "met": ok} for w, v, ok in met]},
                      fh, indent=1)
    if opts.chart:
        chart(rows, opts.chart)
    return rows


if __name__ == "__main__":
    main()
