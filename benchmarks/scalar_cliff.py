"""No size cliff: per-call time and cold build of graphs built entry by entry, across N.

    python benchmarks/scalar_cliff.py [--sizes 16,32,60,64,70,100,128,200,400]
                                      [--forms getitem,unstack,vector] [--repeat 200]
                                      [--json benchmarks/results/scalar_cliff.json]
                                      [--root /path/to/another/checkout]

Forms, for x a float64 (N,) placeholder:
  getitem:  sg.stack([x[i] * x[(i+1) % N] for i in range(N)])
  unstack:  e = sg.unstack(x); sg.stack([e[i] * e[(i+1) % N] for i in range(N)])
  vector:   x * sg.roll(x, -1, 0)                      (whole-array ops)
Each case runs in a fresh subprocess with empty symgrad and numba caches: "build" is the
CPU seconds of sg.function and its first call, "call" the best per-call microseconds
(best of 5 batches of --repeat calls), and the plan (scalar kernels, loop kernels,
steps). Before issue 29 the choice was a fixed threshold (64 elements): the entry forms
ran at ~1 us up to N = 64 and ~80 us (getitem) / ~520 us (unstack) at N = 70.
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
import symgrad as sg
from symgrad.compile.scalar import SCALAR_KERNEL
n, form, repeat = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
x = sg.placeholder("x", shape=(n,))
if form == "vector":
    y = x * sg.roll(x, -1, 0)
else:
    e = [x[i] for i in range(n)] if form == "getitem" else sg.unstack(x)
    y = sg.stack([e[i] * e[(i + 1) % n] for i in range(n)])
v = np.random.default_rng(0).normal(size=n)
t = time.process_time()
f = sg.function([x], y)
f(v)
build = time.process_time() - t
best = float("inf")
for _ in range(5):
    t0 = time.perf_counter()
    for _ in range(repeat):
        f(v)
    best = min(best, (time.perf_counter() - t0) / repeat)
np.testing.assert_allclose(f(v), v * np.roll(v, -1), rtol=1e-15)
units = f.plan.units
scalar = sum(getattr(u, "node", None) is not None and u.node.op is SCALAR_KERNEL for u in units)
kernels = len(f.plan.kernels)
print(json.dumps({"n": n, "form": form, "build_s": build, "call_us": best * 1e6,
                  "scalar_kernels": scalar, "kernels": kernels,
                  "steps": len(units) - kernels - 2 * scalar}))
"""


def run_case(n: int, form: str, repeat: int, root: str = ROOT) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, PYTHONPATH=root, SYMGRAD_CACHE_DIR=os.path.join(tmp, "sg"),
                   NUMBA_CACHE_DIR=os.path.join(tmp, "nb"))
        out = subprocess.run([sys.executable, "-c", CHILD, str(n), form, str(repeat)],
                             env=env, cwd=root, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="16,32,60,64,70,100,128,200,400")
    ap.add_argument("--forms", default="getitem,unstack,vector")
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--root", default=ROOT, help="the symgrad checkout to time (e.g. main)")
    ap.add_argument("--json", default=os.path.join(ROOT, "benchmarks", "results",
                                                   "scalar_cliff.json"))
    args = ap.parse_args()
    rows = []
    print(f"{'N':>5} {'form':>8} {'call us':>9} {'build s':>8}  plan")
    for n in map(int, args.sizes.split(",")):
        for form in args.forms.split(","):
            r = run_case(n, form, args.repeat, args.root)
            rows.append(r)
            print(f"{n:>5} {form:>8} {r['call_us']:>9.2f} {r['build_s']:>8.2f}  "
                  f"{r['scalar_kernels']} scalar, {r['kernels']} kernels, {r['steps']} steps",
                  flush=True)
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as fh:
        json.dump({"date": datetime.datetime.now().isoformat(timespec="seconds"),
                   "machine": os.uname().nodename, "cpus": os.cpu_count(), "rows": rows},
                  fh, indent=1)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
