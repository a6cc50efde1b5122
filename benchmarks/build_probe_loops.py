"""Build time of loops (issue 29): an RK4 Lotka-Volterra ``sg.scan`` of 20,000 steps and a
scan whose body takes 40 Euler sub-steps, value + gradient, each built in a fresh process
with empty symgrad and numba caches (CPU seconds, ``time.process_time``, import excluded),
then called with new arguments (per call: the best of ``--repeats`` calls, CPU
milliseconds).
Also the warm build (a second fresh process on the caches the cold one left).

    python -m benchmarks.build_probe_loops [--repeats 7] [--runs 1] [rk4] [euler40]

Targets (issue 29): RK4 cold <= 2 s (moonshot 0.5 s), per call no slower than before;
40 Euler sub-steps cold <= 3 s.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

H = 0.01
STEPS = 20_000
SUBSTEPS = 40


def _case(kind: str, repeats: int) -> dict:
    """One build in this (fresh) process: CPU seconds to build and first call, per call."""
    t0 = time.process_time()
    import numpy as np
    import symgrad as sg
    imported = time.process_time() - t0

    def f(p, u):
        x, y = u[0], u[1]
        return sg.stack([p[0] * x - p[1] * x * y, p[3] * x * y - p[2] * y])

    def rk4(p, u):
        k1 = f(p, u)
        k2 = f(p, u + H / 2 * k1)
        k3 = f(p, u + H / 2 * k2)
        k4 = f(p, u + H * k3)
        return u + H / 6 * (k1 + 2 * k2 + 2 * k3 + k4)

    def euler(p, u):
        for _ in range(SUBSTEPS):
            u = u + H / SUBSTEPS * f(p, u)
        return u

    step = rk4 if kind == "rk4" else euler
    P = np.array([1.0, 0.5, 1.0, 0.3])
    t0 = time.process_time()
    p = sg.placeholder("p", (4,))
    u, _ = sg.scan(lambda u, _: (step(p, u), None), sg.constant([1.0, 1.0]), length=STEPS)
    loss = sg.reduce_sum(u * u)
    fn = sg.function([p], [loss, sg.gradients(loss, [p])[0]])
    fn(P)
    build = time.process_time() - t0
    times = []
    for r in range(repeats):      # new arguments each call: equal ones reuse the loop's result
        q = P * (1.0 + 1e-9 * (r + 1))
        t = time.process_time()       # CPU time: the machine is shared
        fn(q)
        times.append(time.process_time() - t)
    fused = fn.explain().count("one njit loop")
    return {"kind": kind, "import_s": imported, "build_s": build,
            "per_call_ms": min(times) * 1e3, "fused_scans": fused}


def _fresh(kind: str, repeats: int, caches: str) -> dict:
    env = dict(os.environ, SYMGRAD_CACHE_DIR=os.path.join(caches, "sg"),
               NUMBA_CACHE_DIR=os.path.join(caches, "nb"))
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", kind,
                          str(repeats)], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["--one"]:
        print(json.dumps(_case(args[1], int(args[2]))))
        return
    repeats = int(args[args.index("--repeats") + 1]) if "--repeats" in args else 7
    runs = int(args[args.index("--runs") + 1]) if "--runs" in args else 1
    kinds = [a for a in args if a in ("rk4", "euler40")] or ["rk4", "euler40"]
    print(f"{'case':10}{'cold s':>9}{'warm s':>9}{'per call ms':>13}{'fused':>7}")
    for kind in kinds:
        cold, warm = [], []
        for _ in range(runs):
            with tempfile.TemporaryDirectory() as caches:
                cold.append(_fresh(kind, repeats, caches))
                warm.append(_fresh(kind, repeats, caches))
        best = min(cold, key=lambda r: r["build_s"])
        per_call = min(r["per_call_ms"] for r in cold + warm)
        print(f"{kind:10}{best['build_s']:>9.2f}{min(r['build_s'] for r in warm):>9.2f}"
              f"{per_call:>13.3f}{best['fused_scans']:>7}")


if __name__ == "__main__":
    main()
