"""Build time (issue 29): how long a scientist waits for symgrad, beside SymEngine, CasADi, JAX.

    python benchmarks/build_time.py [--cases a,b,c,d,e,f,g,h] [--quick] [--timeout 120]
                                    [--warm] [--no-peers] [--links 10] [--species 100]
                                    [--json benchmarks/results/build_time.json]
                                    [--chart benchmarks/results/build_time.png]

Every (case, tool) runs in a fresh subprocess with empty symgrad and numba caches (temp dirs
through ``SYMGRAD_CACHE_DIR`` / ``NUMBA_CACHE_DIR``). The child measures CPU seconds
(``time.process_time``): ``import`` (the tool's import, excluded from the build), ``model``
(building the sympy model, e.g. ``KanesMethod``; excluded: every tool starts from it), and
the build = ``graph`` (graph + gradients / symbolic derivatives) + ``function``
(``sg.function`` / ``Lambdify`` / ``casadi.Function``) + ``first call``. ``per call`` is the
best of repeated calls on slightly different arguments (a loop's result for the same
arguments may be reused). ``--warm`` runs a second process on the same caches (symgrad's
warm build). A process that runs past ``--timeout`` CPU seconds (``RLIMIT_CPU``, whole
seconds, imports included; a wall-clock backstop of 20 times that) is ended and reported
as ``> T s CPU``.

Cases (sizes in brackets: default / ``--quick``):

- ``a``  pendulum: ``sympy.physics.mechanics`` n-link pendulum on a cart (KanesMethod,
  n = 10 / 2); rhs = [u, solve(M, F)] through ``sg.from_sympy`` (dynamicsymbols replaced by
  plain Symbols) and its dense Jacobian ``sg.jacobian(rhs, x)``; one function returns both.
  SymEngine / sympy: ``Lambdify`` of M, F and d(F - M a)/dx (a symbols for the
  accelerations), numpy ``solve`` for rhs and Jacobian. CasADi: SX from the sympy tree,
  ``solve`` and ``jacobian`` in SX.
- ``b``  mass action: N species (100 / 6), 2N random bimolecular reactions A + B -> C + D
  (seed 0); the rhs built in sympy, ``sg.from_sympy`` + ``sg.jacobian``; the peers
  differentiate symbolically.
- ``c``  RK4 Lotka-Volterra ``sg.scan``, 20,000 / 50 steps, value + gradient
  (benchmarks/programs.py); CasADi ``mapaccum``.
- ``d``  the same unrolled by a Python ``for``, 500 / 5 steps; CasADi SX.
- ``e_jac``, ``e_hess``  dense Jacobian / Hessian, n = 128 / 8 (benchmarks/jacobians.py).
- ``f25``, ``f200``  25 and 200 (quick: 2) layers of ``roll(tanh(h @ W), 1, axis=1)`` on
  8 x 8, value + gradients with respect to x and W.
- ``g``  a ``sg.scan`` (1,000 / 10 steps) whose body takes 40 / 3 Euler sub-steps of
  Lotka-Volterra, value + gradient.
- ``a_inv``, ``a_chol``  case a's rhs written ``inv(M) @ F`` and
  ``cholesky_solve(cholesky(M), F)`` (M is symmetric positive definite).
- ``b_idx``, ``b_mat``  case b's reactions as constant index arrays A, B, C, D and rate
  constants k: rates ``k * x[A] * x[B]``; the rhs by ``unsorted_segment_sum`` of the signed
  rates over the concatenated ids (b_idx), or by a constant numpy stoichiometry matrix
  ``S @ rates`` (b_mat).
- ``h``  ``import symgrad`` (and ``import casadi`` / ``import symengine``) in a fresh
  process.

Peers run when importable (SymEngine and sympy for a/b, CasADi for a-e, JAX: not written
yet, reported as absent); ``--no-peers`` skips them. Writes JSON (rows + targets) and, when
matplotlib imports, a chart.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import math
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from typing import Callable, Optional

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "benchmarks", "results")

# case -> (label, default size, quick size, peers, cold target s, moonshot text)
CASES = {
    "a": ("n-link pendulum on a cart, rhs + Jacobian", 10, 2,
          ("symengine", "sympy", "casadi"), 2.0, "≤ SymEngine LLVM's build"),
    "b": ("mass-action kinetics, rhs + Jacobian", 100, 6,
          ("symengine", "sympy", "casadi"), 2.0, "≤ SymEngine's build"),
    "c": ("RK4 LV sg.scan, value + grad", 20000, 50, ("casadi",), 2.0, "≤ 0.5 s"),
    "d": ("RK4 LV unrolled Python for, value + grad", 500, 5, ("casadi",), 10.0, "≤ 2 s"),
    "e_jac": ("dense Jacobian", 128, 8, ("casadi",), 0.5, "≤ 0.2 s"),
    "e_hess": ("dense Hessian", 128, 8, ("casadi",), 0.5, "≤ 0.2 s"),
    "f25": ("8x8 matmul + tanh + roll layers, value + grads", 25, 2, (), 3.0, ""),
    "f200": ("8x8 matmul + tanh + roll layers, value + grads", 200, 2, (), 15.0, ""),
    "g": ("scan body of 40 Euler sub-steps, value + grad", 40, 3, (), 3.0, ""),
    "h": ("import", 0, 0, ("casadi", "symengine"), 1.0, "≤ 0.3 s"),
    # the same programs written other natural ways (no peers: theirs are a's and b's)
    "a_inv": ("pendulum written inv(M) @ F", 10, 2, (), 2.0, "as a"),
    "a_chol": ("pendulum written cholesky_solve(cholesky(M), F)", 10, 2, (), 2.0, "as a"),
    "b_idx": ("mass action written x[A] * x[B] + unsorted_segment_sum", 100, 6, (), 2.0,
              "as b"),
    "b_mat": ("mass action written S @ (k * x[A] * x[B]), S a numpy matrix", 100, 6, (), 2.0,
              "as b"),
}
H = 0.01                                  # benchmarks/programs.py's RK4 LV workload
P = np.array([1.0, 0.5, 1.0, 0.3])
PEER_MODULES = {"symengine": "symengine", "sympy": "sympy", "casadi": "casadi", "jax": "jax"}


# --- sympy models (a, b) -------------------------------------------------------------------
def pendulum_model(n: int):
    """(states, M, F) of an n-link pendulum on a cart: plain sympy Symbols ``q0..qn,
    u0..un`` (dynamicsymbols replaced), unit masses and lengths, g = 9.81, no cart force."""
    import sympy as sp
    from sympy.physics import mechanics as me
    q = me.dynamicsymbols(f"q:{n + 1}")
    u = me.dynamicsymbols(f"u:{n + 1}")
    t = me.dynamicsymbols._t
    g = 9.81
    frame = me.ReferenceFrame("I")
    origin = me.Point("O")
    origin.set_vel(frame, 0)
    cart = me.Point("P0")
    cart.set_pos(origin, q[0] * frame.x)
    cart.set_vel(frame, u[0] * frame.x)
    points, particles = [cart], [me.Particle("Pa0", cart, 1.0)]
    forces, kindiffs = [(cart, -1.0 * g * frame.y)], [q[0].diff(t) - u[0]]
    for i in range(n):
        link = frame.orientnew(f"B{i}", "Axis", [q[i + 1], frame.z])
        link.set_ang_vel(frame, u[i + 1] * frame.z)
        p = points[-1].locatenew(f"P{i + 1}", 1.0 * link.x)
        p.v2pt_theory(points[-1], frame, link)
        points.append(p)
        particles.append(me.Particle(f"Pa{i + 1}", p, 1.0))
        forces.append((p, -1.0 * g * frame.y))
        kindiffs.append(q[i + 1].diff(t) - u[i + 1])
    kane = me.KanesMethod(frame, q_ind=q, u_ind=u, kd_eqs=kindiffs)
    kane.kanes_equations(particles, forces)
    plain = {s: sp.Symbol(f"q{i}") for i, s in enumerate(q)}
    plain.update({s: sp.Symbol(f"u{i}") for i, s in enumerate(u)})
    states = list(plain.values())
    M = kane.mass_matrix.xreplace(plain)
    F = kane.forcing.xreplace(plain)
    return states, M, F


def pendulum_x0(n: int) -> np.ndarray:
    return np.concatenate([np.linspace(0.1, 0.5, n + 1), np.linspace(-0.2, 0.2, n + 1)])


def kinetics_model(n: int, seed: int = 0):
    """(states, rhs): n species, 2n random bimolecular reactions A + B -> C + D."""
    import sympy as sp
    rng = np.random.default_rng(seed)
    x = list(sp.symbols(f"x0:{n}"))
    rhs = [sp.Integer(0)] * n
    for _ in range(2 * n):
        a, b, c, d = (int(i) for i in rng.integers(0, n, 4))
        rate = sp.Float(round(float(rng.uniform(0.1, 2.0)), 3)) * x[a] * x[b]
        for s, sign in ((a, -1), (b, -1), (c, 1), (d, 1)):
            rhs[s] = rhs[s] + sign * rate
    return x, sp.Matrix(rhs)


def kinetics_arrays(n: int, seed: int = 0) -> tuple:
    """The reactions of ``kinetics_model`` (the same draws) as index arrays A, B, C, D and
    rate constants k."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(2 * n):
        a, b, c, d = (int(i) for i in rng.integers(0, n, 4))
        rows.append((a, b, c, d, round(float(rng.uniform(0.1, 2.0)), 3)))
    cols = list(zip(*rows))
    return tuple(np.array(c, dtype=np.int64) for c in cols[:4]) + (np.array(cols[4]),)


def kinetics_x0(n: int) -> np.ndarray:
    return np.linspace(0.5, 1.5, n)


def _model(case: str, size: int):
    if case.startswith("a"):
        states, M, F = pendulum_model(size)
        return {"states": states, "M": M, "F": F, "x0": pendulum_x0(size)}
    states, rhs = kinetics_model(size)
    return {"states": states, "rhs": rhs, "x0": kinetics_x0(size)}


# --- symgrad builders: (case, size, model) -> (inputs, outputs, args) ----------------------
def _sg_a(sg, size, m):
    k = len(m["states"])
    x = sg.placeholder("x", (k,))
    mapping = {s: x[i] for i, s in enumerate(m["states"])}
    M = sg.from_sympy(m["M"], mapping)
    F = sg.from_sympy(m["F"], mapping)
    qdd = sg.linalg.solve(M, F)[:, 0]
    rhs = sg.concat([x[k // 2:], qdd], 0)
    return [x], [rhs, sg.jacobian(rhs, x)], [m["x0"]]


def _sg_b(sg, size, m):
    x = sg.placeholder("x", (size,))
    mapping = {s: x[i] for i, s in enumerate(m["states"])}
    rhs = sg.reshape(sg.from_sympy(m["rhs"], mapping), (size,))
    return [x], [rhs, sg.jacobian(rhs, x)], [m["x0"]]


def _sg_a_variant(sg, size, m, how: str):
    """Case a's program with ``solve(M, F)`` written ``inv(M) @ F`` or by Cholesky."""
    k = len(m["states"])
    x = sg.placeholder("x", (k,))
    mapping = {s: x[i] for i, s in enumerate(m["states"])}
    M = sg.from_sympy(m["M"], mapping)
    F = sg.from_sympy(m["F"], mapping)
    if how == "inv":
        qdd = sg.matmul(sg.linalg.inv(M), F)[:, 0]
    else:
        qdd = sg.linalg.cholesky_solve(sg.linalg.cholesky(M), F)[:, 0]
    rhs = sg.concat([x[k // 2:], qdd], 0)
    return [x], [rhs, sg.jacobian(rhs, x)], [m["x0"]]


def _sg_b_variant(sg, size, m, how: str):
    """Case b's program with index arrays (``kinetics_arrays``)."""
    a, b, c, d, k = kinetics_arrays(size)
    x = sg.placeholder("x", (size,))
    rates = k * x[a] * x[b]
    if how == "idx":
        signed = sg.concat([-rates, -rates, rates, rates], 0)
        rhs = sg.unsorted_segment_sum(signed, np.concatenate([a, b, c, d]), size)
    else:
        S = np.zeros((size, len(k)))
        for ids, sign in ((a, -1.0), (b, -1.0), (c, 1.0), (d, 1.0)):
            np.add.at(S, (ids, np.arange(len(k))), sign)
        rhs = sg.matmul(S, rates[:, None])[:, 0]
    return [x], [rhs, sg.jacobian(rhs, x)], [m["x0"]]


def _sg_loop(sg, kind, steps):
    from benchmarks import programs
    assert programs.H == H and np.array_equal(programs.P, P)
    p, outs = programs.build(kind, steps)
    return [p], outs, [P]


def _sg_e(sg, size, hessian):
    from benchmarks import jacobians
    build = jacobians.build_hessian if hessian else jacobians.build_jacobian
    return build(sg, size)


def _sg_f(sg, layers):
    x = sg.placeholder("x", (8, 8))
    w = sg.placeholder("w", (8, 8))
    h = x
    for _ in range(layers):
        h = sg.roll(sg.tanh(sg.matmul(h, w)), 1, 1)
    loss = sg.reduce_sum(h * h)
    rng = np.random.default_rng(0)
    return [x, w], [loss] + sg.gradients(loss, [x, w]), [rng.normal(size=(8, 8)),
                                                         rng.normal(size=(8, 8)) / 3]


def _lv(p, u):
    import symgrad as sg
    return sg.stack([p[0] * u[0] - p[1] * u[0] * u[1], p[3] * u[0] * u[1] - p[2] * u[1]])


def _sg_g(sg, substeps, steps):
    p = sg.placeholder("p", (4,))
    h = 0.01 / substeps

    def body(u, _):
        for _ in range(substeps):
            u = u + h * _lv(p, u)
        return u, None

    u, _ = sg.scan(body, sg.constant([1.0, 1.0]), length=steps)
    loss = sg.reduce_sum(u * u)
    return [p], [loss, sg.gradients(loss, [p])[0]], [P]


def sg_build(sg, case: str, size: int, model, quick: bool):
    if case == "a":
        return _sg_a(sg, size, model)
    if case == "b":
        return _sg_b(sg, size, model)
    if case in ("a_inv", "a_chol"):
        return _sg_a_variant(sg, size, model, case[2:])
    if case in ("b_idx", "b_mat"):
        return _sg_b_variant(sg, size, model, case[2:])
    if case == "c":
        return _sg_loop(sg, "scan", size)
    if case == "d":
        return _sg_loop(sg, "python_for", size)
    if case in ("e_jac", "e_hess"):
        return _sg_e(sg, size, case == "e_hess")
    if case in ("f25", "f200"):
        return _sg_f(sg, size)
    if case == "g":
        return _sg_g(sg, size, 10 if quick else 1000)
    raise ValueError(f"build_time: unknown case {case!r}")


# --- peers ---------------------------------------------------------------------------------
def _pendulum_peer_exprs(m, matrix, diff_jacobian):
    """[M, F] and d(F - M a)/dx in the peer's matrix type (a: accelerations)."""
    import sympy as sp
    k = len(m["states"])
    acc = list(sp.symbols(f"a0:{k // 2}"))
    M, F = matrix(m["M"]), matrix(m["F"])
    G = F - M * matrix(sp.Matrix(acc))
    return acc, M, F, diff_jacobian(G, m["states"])


def _solve_rhs_jac(mf, dg, x):
    """rhs and Jacobian from numeric M, F and d(F - M a)/dx (the peers' per call)."""
    M, F = mf
    qdd = np.linalg.solve(M, F.reshape(-1))
    k = x.size
    dG = dg(np.concatenate([x, qdd]))
    jac = np.zeros((k, k))
    jac[: k // 2, k // 2:] = np.eye(k // 2)
    jac[k // 2:] = np.linalg.solve(M, np.asarray(dG).reshape(k // 2, k))
    return np.concatenate([x[k // 2:], qdd]), jac


def lambdify_build(tool: str, case: str, model):
    """SymEngine ``Lambdify(backend='llvm')`` or ``sympy.lambdify``: -> (call, args)."""
    import sympy as sp
    if tool == "symengine":
        import symengine as se

        def matrix(e):
            return se.Matrix(e)

        def jac(e, xs):
            return se.Matrix(e).jacobian(se.Matrix(xs))

        def lam(args, exprs):
            return se.Lambdify(args, *exprs, backend="llvm", cse=True)
    else:
        def matrix(e):
            return sp.Matrix(e)

        def jac(e, xs):
            return sp.Matrix(e).jacobian(xs)

        def lam(args, exprs):
            return sp.lambdify([args], exprs, "numpy")
    x0 = model["x0"]
    if case == "a":
        acc, M, F, dG = _pendulum_peer_exprs(model, matrix, jac)
        states = model["states"]
        f_mf = lam(states, [M, F])
        f_dg = lam(states + acc, [dG])
        if tool == "symengine":
            def mf(x):
                out = f_mf(x)
                return [np.asarray(o) for o in out]
        else:
            def mf(x):
                return [np.asarray(o, dtype=float) for o in f_mf(x)]
        return (lambda x: _solve_rhs_jac(mf(x), f_dg, x)), [x0]
    rhs = matrix(model["rhs"])
    f = lam(model["states"], [rhs, jac(rhs, model["states"])])
    return f, [x0]


def _sympy_to_casadi(expr, table, ca):
    """A sympy expression tree as CasADi SX (memoised on sub-expressions)."""
    import sympy as sp
    memo = dict(table)
    funcs = {sp.sin: ca.sin, sp.cos: ca.cos, sp.exp: ca.exp, sp.log: ca.log,
             sp.tan: ca.tan, sp.sqrt: ca.sqrt}

    def walk(e):
        if e in memo:
            return memo[e]
        if e.is_Number:
            out = float(e)
        elif e.is_Add:
            out = walk(e.args[0])
            for a in e.args[1:]:
                out = out + walk(a)
        elif e.is_Mul:
            out = walk(e.args[0])
            for a in e.args[1:]:
                out = out * walk(a)
        elif e.is_Pow:
            base, ex = walk(e.args[0]), e.args[1]
            out = base ** int(ex) if ex.is_Integer else base ** walk(ex)
        elif e.func in funcs:
            out = funcs[e.func](walk(e.args[0]))
        else:
            raise NotImplementedError(f"build_time: no CasADi form for {e.func}")
        memo[e] = out
        return out
    return walk(expr)


def casadi_build(case: str, size: int, model, quick: bool):
    """CasADi: -> (call, args)."""
    import casadi as ca
    if case in ("a", "b"):
        k = len(model["states"])
        x = ca.SX.sym("x", k)
        table = {s: x[i] for i, s in enumerate(model["states"])}
        if case == "a":
            M, F = model["M"], model["F"]
            Mx = ca.SX(M.rows, M.cols)
            for i in range(M.rows):
                for j in range(M.cols):
                    Mx[i, j] = _sympy_to_casadi(M[i, j], table, ca)
            Fx = ca.vertcat(*[_sympy_to_casadi(F[i], table, ca) for i in range(F.rows)])
            rhs = ca.vertcat(x[k // 2:], ca.solve(Mx, Fx))
        else:
            rhs = ca.vertcat(*[_sympy_to_casadi(model["rhs"][i], table, ca)
                               for i in range(k)])
        f = ca.Function("f", [x], [rhs, ca.jacobian(rhs, x)])
        return f, [model["x0"]]
    if case in ("c", "d"):
        def lv(p, u):
            return ca.vertcat(p[0] * u[0] - p[1] * u[0] * u[1], p[3] * u[0] * u[1] - p[2] * u[1])

        def rk4(p, u):
            k1 = lv(p, u)
            k2 = lv(p, u + H / 2 * k1)
            k3 = lv(p, u + H / 2 * k2)
            k4 = lv(p, u + H * k3)
            return u + H / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        p = ca.SX.sym("p", 4)
        u0 = ca.DM([1.0, 1.0])
        if case == "c":
            us, ps = ca.SX.sym("u", 2), ca.SX.sym("q", 4)
            step = ca.Function("step", [us, ps], [rk4(ps, us)])
            acc = step.mapaccum("acc", size)
            pm = ca.MX.sym("p", 4)
            traj = acc(u0, pm)                 # p broadcast over the steps
            u = traj[:, -1]
            loss = ca.sumsqr(u)
            f = ca.Function("f", [pm], [loss, ca.gradient(loss, pm)])
        else:
            u = u0
            for _ in range(size):
                u = rk4(p, u)
            loss = ca.sumsqr(u)
            f = ca.Function("f", [p], [loss, ca.gradient(loss, p)])
        return f, [P]
    if case in ("e_jac", "e_hess"):
        from benchmarks import jacobians
        x = ca.SX.sym("x", size)
        y = ca.sin(x[1:]) * x[:-1] ** 2 + ca.exp(-x[1:])
        out = ca.hessian(ca.sum1(y), x)[0] if case == "e_hess" else ca.jacobian(y, x)
        return ca.Function("f", [x], [out]), [jacobians.x0(size)]
    raise ValueError(f"build_time: no CasADi form of case {case!r}")


# --- the child ------------------------------------------------------------------------------
def best_call(call: Callable, arg_sets: list, budget_s: float = 0.5,
              max_runs: int = 2000) -> float:
    """The best time of repeated calls (seconds), cycling through ``arg_sets``."""
    times = []
    start = time.perf_counter()
    while len(times) < max_runs and (len(times) < 3 or time.perf_counter() - start < budget_s):
        args = arg_sets[len(times) % len(arg_sets)]
        t = time.perf_counter()
        call(*args)
        times.append(time.perf_counter() - t)
    return min(times)


def _perturbed(args: list, k: int = 8) -> list:
    return [[np.asarray(a) * (1.0 + 1e-9 * (i + 1)) for a in args] for i in range(k)]


def child(tool: str, case: str, size: int, quick: bool) -> dict:
    """Runs in the fresh subprocess: one (tool, case)."""
    clock = time.process_time
    row: dict = {}
    if case == "h":
        c0 = clock()
        importlib.import_module(PEER_MODULES.get(tool, tool))
        row["import_s"] = clock() - c0
        row["build_s"] = row["import_s"]
        return row
    c0 = clock()
    if tool == "symgrad":
        import symgrad as sg
    else:
        importlib.import_module(PEER_MODULES[tool])
    import sympy  # noqa: F401  (the models' language: not part of any build)
    row["import_s"] = clock() - c0
    model = None
    if case[0] in "ab":
        c0 = clock()
        model = _model(case, size)
        row["model_s"] = clock() - c0
    c0 = clock()
    if tool == "symgrad":
        inputs, outputs, args = sg_build(sg, case, size, model, quick)
        c1 = clock()
        call = sg.function(inputs, outputs)
        c2 = clock()
    else:
        call, args = (casadi_build(case, size, model, quick) if tool == "casadi"
                      else lambdify_build(tool, case, model))
        c1 = c2 = clock()
    call(*args)
    c3 = clock()
    row.update(graph_s=c1 - c0, function_s=c2 - c1, first_call_s=c3 - c2, build_s=c3 - c0)
    row["per_call_us"] = best_call(call, _perturbed(args)) * 1e6
    return row


# --- the parent -----------------------------------------------------------------------------
def _run_child(tool: str, case: str, size: int, quick: bool, cache: str,
               timeout: float) -> dict:
    env = dict(os.environ, SYMGRAD_CACHE_DIR=os.path.join(cache, "sg"),
               NUMBA_CACHE_DIR=os.path.join(cache, "nb"),
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, os.path.abspath(__file__), "--child", tool, case, str(size)]
    if quick:
        cmd.append("--quick")
    limit = max(1, math.ceil(timeout))

    def cpu_limit() -> None:              # SIGXCPU ends the child past `limit` CPU seconds
        resource.setrlimit(resource.RLIMIT_CPU, (limit, limit + 5))

    wall = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=cpu_limit)
    try:
        stdout, stderr = proc.communicate(timeout=20 * limit + 60)
    except subprocess.TimeoutExpired:        # a wall-clock backstop (a stalled process)
        proc.kill()
        usage = os.wait4(proc.pid, 0)[2]
        proc.returncode = -signal.SIGKILL
        proc.stdout.close()
        proc.stderr.close()
        return {"timeout_s": timeout, "cpu_at_timeout_s": usage.ru_utime + usage.ru_stime,
                "wall_backstop": True}
    if proc.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        return {"timeout_s": timeout, "cpu_at_timeout_s": float(limit)}
    if proc.returncode != 0:
        return {"error": (stderr.strip().splitlines() or ["failed"])[-1][:300]}
    out = json.loads(stdout.strip().splitlines()[-1])
    out["process_wall_s"] = time.perf_counter() - wall
    return out


def run_case(tool: str, case: str, size: int, quick: bool, timeout: float,
             warm: bool) -> dict:
    row = {"case": case, "tool": tool, "size": size}
    with tempfile.TemporaryDirectory(prefix="build_time_") as cache:
        row.update(_run_child(tool, case, size, quick, cache, timeout))
        if warm and tool == "symgrad" and case != "h" and "build_s" in row:
            second = _run_child(tool, case, size, quick, cache, timeout)
            row["warm"] = second
            row["warm_build_s"] = second.get("build_s")
    target = CASES[case][4]
    row["target_s"] = target
    row["met"] = (bool(row["build_s"] <= target) if tool == "symgrad" and "build_s" in row
                  else None)
    return row


def fmt_s(row: dict, key: str = "build_s") -> str:
    if "timeout_s" in row and key == "build_s":
        if row.get("wall_backstop"):
            return f"> {20 * row['timeout_s'] + 60:g} s wall ({row['cpu_at_timeout_s']:.0f} s CPU)"
        return f"> {row['timeout_s']:g} s CPU"
    if "error" in row and key == "build_s":
        return "error"
    v = row.get(key)
    return "-" if v is None else f"{v:.2f} s"


def fmt_us(v) -> str:
    return "-" if v is None else f"{v:,.1f} µs" if v < 1e4 else f"{v / 1e3:,.1f} ms"


def format_table(rows: list) -> str:
    lines = ["| case | size | tool | import | model | graph | function | first call | "
             "build (CPU) | warm build | per call | target |", "|" + "---|" * 12]
    for r in rows:
        met = {True: "met", False: "NOT met", None: ""}[r.get("met")]
        target = f"≤ {r['target_s']:g} s {met}" if r["tool"] == "symgrad" else ""
        err = f" ({r['error']})" if "error" in r else ""
        lines.append(
            f"| {r['case']}{err} | {r['size']} | {r['tool']} | {fmt_s(r, 'import_s')} | "
            f"{fmt_s(r, 'model_s')} | {fmt_s(r, 'graph_s')} | {fmt_s(r, 'function_s')} | "
            f"{fmt_s(r, 'first_call_s')} | {fmt_s(r)} | "
            f"{fmt_s(r.get('warm', {}), 'build_s') if 'warm' in r else '-'} | "
            f"{fmt_us(r.get('per_call_us'))} | {target} |")
    return "\n".join(lines)


def chart(rows: list, path: str) -> Optional[str]:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    cases = list(dict.fromkeys(r["case"] for r in rows))
    tools = list(dict.fromkeys(r["tool"] for r in rows))
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / max(len(tools), 1)
    for k, tool in enumerate(tools):
        xs, ys = [], []
        for i, case in enumerate(cases):
            for r in rows:
                if r["case"] == case and r["tool"] == tool:
                    v = r.get("build_s", r.get("timeout_s"))
                    if v:
                        xs.append(i + k * width)
                        ys.append(v)
        ax.bar(xs, ys, width, label=tool)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(cases))], cases)
    ax.set_yscale("log")
    ax.set_ylabel("build: graph + function + first call (CPU s)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def available(tool: str) -> bool:
    return importlib.util.find_spec(PEER_MODULES.get(tool, tool)) is not None


def main(argv: Optional[list] = None) -> list:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="CPU seconds per process (whole seconds)")
    parser.add_argument("--warm", action="store_true", help="also a second, warm process")
    parser.add_argument("--no-peers", action="store_true")
    parser.add_argument("--links", type=int, default=None, help="case a's n")
    parser.add_argument("--species", type=int, default=None, help="case b's N")
    parser.add_argument("--json", default=os.path.join(RESULTS, "build_time.json"))
    parser.add_argument("--chart", default=os.path.join(RESULTS, "build_time.png"))
    parser.add_argument("--child", nargs=3, metavar=("TOOL", "CASE", "SIZE"))
    args = parser.parse_args(argv)
    if args.child:
        tool, case, size = args.child
        print(json.dumps(child(tool, case, int(size), args.quick)))
        return []
    rows = []
    for case in args.cases.split(","):
        if case not in CASES:
            parser.error(f"unknown case {case!r}: expected one of {', '.join(CASES)}")
        size = CASES[case][2] if args.quick else CASES[case][1]
        if case.startswith("a") and args.links:
            size = args.links
        if case.startswith("b") and args.species:
            size = args.species
        tools = ["symgrad"] + ([] if args.no_peers else list(CASES[case][3]) + ["jax"])
        for tool in tools:
            if tool == "jax":
                if available("jax"):
                    print("  (jax is importable but not written for this case yet)")
                continue
            if not available(tool):
                print(f"  ({tool} is not importable: skipped)")
                continue
            rows.append(run_case(tool, case, size, args.quick, args.timeout, args.warm))
            r = rows[-1]
            print(f"  {case} {tool} size={size}: build {fmt_s(r)}, per call "
                  f"{fmt_us(r.get('per_call_us'))}"
                  + (f", warm {fmt_s(r['warm'])}" if "warm" in r else ""), flush=True)
    print(format_table(rows))
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as fh:
            json.dump({"date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                       "cpus": os.cpu_count(), "quick": args.quick, "timeout_s": args.timeout,
                       "cases": {k: {"label": v[0], "target_s": v[4], "moonshot": v[5]}
                                 for k, v in CASES.items()},
                       "rows": rows}, fh, indent=1)
    if args.chart and chart(rows, args.chart):
        print(f"chart: {args.chart}")
    return rows


if __name__ == "__main__":
    main()
