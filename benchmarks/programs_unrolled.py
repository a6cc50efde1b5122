"""Unrolled small-state programs: RK4 Lotka-Volterra written as a Python ``for`` loop.

    python benchmarks/programs_unrolled.py [--steps 2,10,50] [--off]
                                           [--json benchmarks/results/programs_unrolled.json]

The program (issue 25): 2 states, 4 parameters, one RK4 step written the usual way
(``sg.stack([p[0]*u[0] - p[1]*u[0]*u[1], p[2]*u[0]*u[1] - p[3]*u[1]])``), ``steps``
steps unrolled by a Python loop, the loss ``sum(u*u)``, its value, the final state and
the gradients with respect to ``u0`` and ``p``, compiled with ``sg.function``.

Each size runs in a fresh subprocess with empty symgrad and numba caches. Reported:
graph nodes (outputs and gradients), "compile" = ``sg.function`` + first call (wall and
process CPU seconds), the numba phase, the plan (kernels, scalar kernels, steps), and
"per call" the best of 200 calls (microseconds). ``--off`` runs with the scalar pass off
(``symgrad.compile.scalar.settings.ENABLED = False``: the loop plan, as before issue 25).
Results are checked against ``sg.evaluate``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import json, sys, time
import numpy as np
sys.path.insert(0, ROOT)
import symgrad as sg
from symgrad.compile.scalar import SCALAR_KERNEL, settings
settings.ENABLED = not OFF

def rhs(p, u):
    return sg.stack([p[0] * u[0] - p[1] * u[0] * u[1], p[2] * u[0] * u[1] - p[3] * u[1]])

t0 = time.perf_counter()
u0 = sg.placeholder("u0", shape=(2,))
p = sg.placeholder("p", shape=(4,))
u, dt = u0, 0.01
for _ in range(STEPS):
    k1 = rhs(p, u)
    k2 = rhs(p, u + dt / 2 * k1)
    k3 = rhs(p, u + dt / 2 * k2)
    k4 = rhs(p, u + dt * k3)
    u = u + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
loss = sg.reduce_sum(u * u)
outputs = [loss, u] + sg.gradients(loss, [u0, p])
build = time.perf_counter() - t0
from symgrad.graph.traversal import topological_order
nodes = len(topological_order([o for o in outputs if o is not None]))
U0, P = np.array([1.0, 0.5]), np.array([1.5, 1.0, 3.0, 1.0])
w0, c0 = time.perf_counter(), time.process_time()
f = sg.function([u0, p], outputs)
got = f(U0, P)
wall, cpu = time.perf_counter() - w0, time.process_time() - c0
ref = sg.evaluate(outputs, {u0: U0, p: P})
ok = all(np.allclose(a, b, rtol=1e-10, atol=1e-12) for a, b in zip(got, ref))
best = float("inf")
for _ in range(200):
    t = time.perf_counter()
    f(U0, P)
    best = min(best, time.perf_counter() - t)
decided = {r.name: r.decided for r in f.passes}
secs = {r.name: r.seconds for r in f.passes}
scalars = sum(getattr(x, "node", None) is not None and x.node.op is SCALAR_KERNEL
              for x in f.plan.units)
print(json.dumps({"steps": STEPS, "nodes": nodes, "build_s": build, "compile_wall_s": wall,
                  "compile_cpu_s": cpu, "numba_s": secs.get("numba compile"),
                  "module_s": secs.get("module"), "plan": decided.get("plan"),
                  "scalar": decided.get("scalar"), "scalar_kernels": scalars,
                  "per_call_us": best * 1e6, "matches_evaluate": ok}))
"""


def run_case(steps: int, off: bool) -> dict:
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, SYMGRAD_CACHE_DIR=cache,
                   NUMBA_CACHE_DIR=os.path.join(cache, "numba"))
        code = CHILD.replace("ROOT", repr(ROOT)).replace("STEPS", str(steps)) \
            .replace("OFF", str(off))
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=False)
    if out.returncode:
        raise RuntimeError(f"steps={steps}: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", default="2,10,50")
    parser.add_argument("--off", action="store_true", help="scalar pass off (loop plan)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    rows = [run_case(int(s), args.off) for s in args.steps.split(",")]
    print(f"{'steps':>5} {'nodes':>6} {'compile wall':>12} {'compile cpu':>11} "
          f"{'numba':>6} {'per call':>9}  plan")
    for r in rows:
        print(f"{r['steps']:>5} {r['nodes']:>6} {r['compile_wall_s']:>10.2f} s "
              f"{r['compile_cpu_s']:>9.2f} s {r['numba_s']:>6.2f} {r['per_call_us']:>6.1f} us  "
              f"{r['plan']}; scalar kernels {r['scalar_kernels']}"
              + ("" if r["matches_evaluate"] else "  MISMATCH"))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"date": datetime.datetime.now().isoformat(timespec="seconds"),
                       "scalar_pass": not args.off, "load": os.getloadavg(), "rows": rows},
                      fh, indent=1)


if __name__ == "__main__":
    main()
