"""Build-time probe of scalar kernels (issue 29, item 1): programs a scientist writes.

* ``pendulum N``: an N-link pendulum on a cart from ``sympy.physics.mechanics``
  (KanesMethod), dynamic symbols replaced by plain symbols, ``sg.from_sympy`` of the mass
  matrix M and forcing F, rhs = [u, solve(M, F)] and ``sg.jacobian`` of it;
* ``massaction N``: mass-action kinetics of N species, 2N random reactions A + B -> C with
  rate constants (a parameter vector), rhs from sympy and ``sg.jacobian`` of it.

Each run prints one JSON line: CPU and wall seconds of graph + ``sg.function`` (rhs and
Jacobian) + first call ("build"), per-call microseconds, and the plan
(``--elements`` raises ``scalar.settings.SCALAR_ELEMENTS``; ``--profile FILE`` writes a
cProfile of the build). Run each case in a fresh process with empty caches::

    SYMGRAD_CACHE_DIR=$(mktemp -d) NUMBA_CACHE_DIR=$(mktemp -d) \\
        python benchmarks/build_probe_scalar.py pendulum 4
"""

from __future__ import annotations

import argparse
import json
import random
import time


def pendulum(n: int):
    """(sympy M, F, state symbols, parameter symbols) of an n-link pendulum on a cart."""
    import sympy as sp
    from sympy.physics import mechanics as me

    q = me.dynamicsymbols(f"q:{n + 1}")
    u = me.dynamicsymbols(f"u:{n + 1}")
    f = me.dynamicsymbols("f")
    m = sp.symbols(f"m:{n + 1}")
    lengths = sp.symbols(f"l:{n}")
    g, t = sp.symbols("g t")
    frame = me.ReferenceFrame("I")
    origin = me.Point("O")
    origin.set_vel(frame, 0)
    cart = me.Point("P0")
    cart.set_pos(origin, q[0] * frame.x)
    cart.set_vel(frame, u[0] * frame.x)
    points, particles = [cart], [me.Particle("Pa0", cart, m[0])]
    forces = [(cart, f * frame.x - m[0] * g * frame.y)]
    kindiffs = [q[0].diff(t) - u[0]]
    for i in range(n):
        body = frame.orientnew(f"B{i}", "Axis", [q[i + 1], frame.z])
        body.set_ang_vel(frame, u[i + 1] * frame.z)
        point = points[-1].locatenew(f"P{i + 1}", lengths[i] * body.x)
        point.v2pt_theory(points[-1], frame, body)
        points.append(point)
        particles.append(me.Particle(f"Pa{i + 1}", point, m[i + 1]))
        forces.append((point, -m[i + 1] * g * frame.y))
        kindiffs.append(q[i + 1].diff(t) - u[i + 1])
    kane = me.KanesMethod(frame, q_ind=q, u_ind=u, kd_eqs=kindiffs)
    kane.kanes_equations(particles, forces)
    qs = sp.symbols(f"qs:{n + 1}")
    us = sp.symbols(f"us:{n + 1}")
    fs = sp.Symbol("fs")
    subs = {**dict(zip(q, qs)), **dict(zip(u, us)), f: fs}
    M = kane.mass_matrix.xreplace(subs)
    F = kane.forcing.xreplace(subs)
    return M, F, list(qs) + list(us), list(m) + list(lengths) + [g, fs]


def build_pendulum(sg, n: int):
    M, F, states, params = pendulum(n)
    x = sg.placeholder("x", shape=(len(states),))
    p = sg.placeholder("p", shape=(len(params),))
    mapping = {s: x[i] for i, s in enumerate(states)}
    mapping.update({s: p[i] for i, s in enumerate(params)})
    Mt = sg.from_sympy(M, mapping)
    Ft = sg.from_sympy(F, mapping)
    acc = sg.reshape(sg.linalg.solve(Mt, Ft), (n + 1,))
    rhs = sg.concat([x[n + 1:], acc], axis=0)
    values = {x: [0.1 * (i % 5) - 0.2 for i in range(len(states))],
              p: [1.0 + 0.1 * i for i in range(len(params))]}
    return [x, p], rhs, values


def massaction(n: int, seed: int = 0):
    """(sympy rhs, species symbols, rate symbols) of 2n random reactions A + B -> C."""
    import sympy as sp

    rng = random.Random(seed)
    c = sp.symbols(f"c:{n}")
    k = sp.symbols(f"k:{2 * n}")
    rhs = [sp.Integer(0)] * n
    for r in range(2 * n):
        a, b, d = rng.sample(range(n), 3)
        rate = k[r] * c[a] * c[b]
        rhs[a] -= rate
        rhs[b] -= rate
        rhs[d] += rate
    return sp.Matrix(rhs), list(c), list(k)


def build_massaction(sg, n: int):
    rhs, species, rates = massaction(n)
    x = sg.placeholder("c", shape=(n,))
    p = sg.placeholder("k", shape=(len(rates),))
    mapping = {s: x[i] for i, s in enumerate(species)}
    mapping.update({s: p[i] for i, s in enumerate(rates)})
    f = sg.reshape(sg.from_sympy(rhs, mapping), (n,))
    values = {x: [0.5 + 0.01 * i for i in range(n)], p: [0.1 + 0.001 * i for i in range(2 * n)]}
    return [x, p], f, values


def build_lv(sg, n: int):
    """The 2-state Lotka-Volterra right-hand side (``n`` unused)."""
    u = sg.placeholder("u", shape=(2,))
    p = sg.placeholder("p", shape=(4,))
    rhs = sg.stack([p[0] * u[0] - p[1] * u[0] * u[1], p[2] * u[0] * u[1] - p[3] * u[1]])
    return [u, p], rhs, {u: [1.0, 0.5], p: [1.5, 1.0, 3.0, 1.0]}


def interleaved(sg, builder, n: int, rounds: int = 7, calls: int = 20000) -> dict:
    """Per-call microseconds of the rhs and its Jacobian with the IR path and with numba's
    function (``source.NATIVE = False``), compiled in this process and timed in turns."""
    import numpy as np
    from symgrad.compile.scalar import source

    made = {}
    for native in (True, False):
        source.NATIVE = native
        inputs, rhs, values = builder(sg, n)
        args = [np.asarray(values[i], np.float64) for i in inputs]
        jac = sg.jacobian(rhs, inputs[0])
        made[native] = (sg.function(inputs, [rhs]), sg.function(inputs, [jac]), args)
    source.NATIVE = True
    best = {}
    for _ in range(rounds):
        for native, (f_rhs, f_jac, args) in made.items():
            for label, f, k in (("rhs", f_rhs, calls), ("jac", f_jac, calls // 4)):
                t = time.process_time()   # CPU time: the shared machine preempts
                for _ in range(k):
                    f(*args)
                us = (time.process_time() - t) / k * 1e6
                key = f"{label}_us_{'ir' if native else 'numba'}"
                best[key] = round(min(best.get(key, us), us), 3)
    return best


def per_call(f, args, repeats: int = 2000) -> float:
    """Best microseconds per call over five rounds."""
    best = float("inf")
    for _ in range(5):
        t = time.process_time()   # CPU time: the shared machine preempts
        for _ in range(repeats):
            f(*args)
        best = min(best, (time.process_time() - t) / repeats)
    return best * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("case", choices=["pendulum", "massaction", "lv"])
    parser.add_argument("--interleaved", action="store_true",
                        help="per-call us, IR path vs numba's function, in one process")
    parser.add_argument("n", type=int)
    parser.add_argument("--elements", type=int, default=None)
    parser.add_argument("--profile", default=None)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--explain", action="store_true")
    a = parser.parse_args()
    import numpy as np
    import symgrad as sg
    try:
        from symgrad.compile.cpu.native_kernels import STATS
    except ImportError:          # a checkout without the IR path (before/after figures)
        STATS = {}
    from symgrad.compile.scalar import settings

    if a.elements:
        settings.SCALAR_ELEMENTS = a.elements
    builder = {"pendulum": build_pendulum, "massaction": build_massaction,
               "lv": build_lv}[a.case]
    if a.interleaved:
        print(json.dumps({"case": a.case, "n": a.n, **interleaved(sg, builder, a.n)}))
        return
    t_sym = time.process_time()
    inputs, rhs, values = builder(sg, a.n)
    sympy_s = time.process_time() - t_sym
    profile = None
    if a.profile:
        import cProfile
        profile = cProfile.Profile()
        profile.enable()
    cpu, wall = time.process_time(), time.perf_counter()
    jac = sg.jacobian(rhs, inputs[0])
    f_rhs = sg.function(inputs, [rhs])
    f_jac = sg.function(inputs, [jac])
    args = [np.asarray(values[i], np.float64) for i in inputs]
    r, j = f_rhs(*args)[0], f_jac(*args)[0]
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    if profile is not None:
        profile.disable()
        profile.dump_stats(a.profile)
    ref_r = sg.evaluate(rhs, dict(zip(inputs, args)))
    out = {"case": a.case, "n": a.n, "build_cpu_s": round(cpu, 3),
           "build_wall_s": round(wall, 3), "sympy_s": round(sympy_s, 3),
           "rhs_us": round(per_call(f_rhs, args, a.calls), 2),
           "jac_us": round(per_call(f_jac, args, max(a.calls // 10, 10)), 2),
           "rhs_err": float(np.max(np.abs(r - ref_r))), "jac_finite": bool(np.isfinite(j).all()),
           "plan_rhs": f_rhs.explain().split("\n")[0].split(": ", 1)[1].split(", inputs")[0],
           "native_kernels": dict(STATS),
           "plan_jac": f_jac.explain().split("\n")[0].split(": ", 1)[1].split(", inputs")[0]}
    print(json.dumps(out))
    if a.explain:
        print(f_jac.explain())


if __name__ == "__main__":
    main()
