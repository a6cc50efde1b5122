"""Loops that stay loops: RK4 Lotka-Volterra with sg.fori_loop and sg.scan (value +
gradient of the final state's squared norm), compile + first call and per call, at 2,000
and 20,000 steps; the same written as an unrolled Python for loop of 50 steps (compile
time); ``hand``: the same value and gradient written by hand in numba (rk4_hand.py). The
loops' bodies are one scalar kernel each, so they run as fused njit loops
(compile/loops/fused.py); ``--python-loop`` times the Python loop over the compiled body
instead. JAX side by side when importable.

    python -m benchmarks.programs [--small] [--python-loop] [kind:steps ...]
    (writes results/programs.json)
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

import symgrad as sg

H = 0.01
P = np.array([1.0, 0.5, 1.0, 0.3])


def _f(p, u):
    x, y = u[0], u[1]
    return sg.stack([p[0] * x - p[1] * x * y, p[3] * x * y - p[2] * y])


def _rk4(p, u):
    k1 = _f(p, u)
    k2 = _f(p, u + H / 2 * k1)
    k3 = _f(p, u + H / 2 * k2)
    k4 = _f(p, u + H * k3)
    return u + H / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def build(kind: str, steps: int):
    p = sg.placeholder("p", (4,))
    u0 = sg.constant([1.0, 1.0])
    if kind == "fori_loop":
        u = sg.fori_loop(0, steps, lambda i, u: _rk4(p, u), u0)
    elif kind == "scan":
        u, _ = sg.scan(lambda u, _: (_rk4(p, u), None), u0, length=steps)
    else:                                   # unrolled Python loop
        u = u0
        for _ in range(steps):
            u = _rk4(p, u)
    loss = sg.reduce_sum(u * u)
    return p, [loss, sg.gradients(loss, [p])[0]]


def measure_hand(steps: int, repeats: int = 3) -> dict:
    from .rk4_hand import value_and_grad
    t = time.perf_counter()
    value_and_grad(P, np.ones(2), H, steps)
    first = time.perf_counter() - t
    times = []
    for r in range(repeats):
        t = time.perf_counter()
        value_and_grad(P * (1.0 + 1e-9 * (r + 1)), np.ones(2), H, steps)
        times.append(time.perf_counter() - t)
    return {"kind": "hand", "steps": steps, "compile_and_first_s": first,
            "per_call_s": min(times), "loop": "numba by hand"}


def measure(kind: str, steps: int, repeats: int = 3) -> dict:
    if kind == "hand":
        return measure_hand(steps, repeats)
    from symgrad.compile.loops import fused
    p, outs = build(kind, steps)
    t = time.perf_counter()
    f = sg.function([p], outs)
    f(P)
    first = time.perf_counter() - t
    times = []
    for r in range(repeats):        # new values each call: a loop's result for the same
        q = P * (1.0 + 1e-9 * (r + 1))  # arguments is reused, which would time nothing
        t = time.perf_counter()
        f(q)
        times.append(time.perf_counter() - t)
    loop = "unrolled" if kind == "python_for" else "fused" if fused.ENABLED else "python"
    return {"kind": kind, "steps": steps, "compile_and_first_s": first,
            "per_call_s": min(times), "loop": loop}


def main() -> None:
    small = "--small" in sys.argv
    if "--python-loop" in sys.argv:
        from symgrad.compile.loops import fused
        fused.ENABLED = False
    only = [a for a in sys.argv[1:] if not a.startswith("--")]
    cases = [("fori_loop", 200), ("scan", 200), ("hand", 200), ("python_for", 20)] if small \
        else [("fori_loop", 2000), ("scan", 2000), ("hand", 2000), ("fori_loop", 20000),
              ("scan", 20000), ("hand", 20000), ("python_for", 50)]
    try:
        import jax  # noqa: F401
        print("jax importable: side-by-side JAX rows not written yet")
    except ImportError:
        print("jax not installed: JAX rows skipped")
    if only:                                   # e.g. scan:2000 fori_loop:200
        cases = [(a.split(":")[0], int(a.split(":")[1])) for a in only]
    rows = [measure(k, n) for k, n in cases]
    print(f"{'kind':12}{'steps':>8}{'loop':>15}{'compile+1st s':>15}{'per call ms':>13}")
    for r in rows:
        print(f"{r['kind']:12}{r['steps']:>8}{r['loop']:>15}{r['compile_and_first_s']:>15.3f}"
              f"{r['per_call_s'] * 1e3:>13.3f}")
    path = os.path.join(os.path.dirname(__file__), "results", "programs.json")
    with open(path, "w") as fh:
        json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
