"""Symgrad against the hand loops of one workload case, timed in turn (round-robin), so
that a loaded machine's drift hits every system alike.

    python benchmarks/interleaved.py W2 [--quick] [--rounds 15] [--systems a,b,..]

Prints median and min per system and each median over the fastest hand loop's median.
"""

import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from benchmarks import harness  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workload")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--case", type=int, default=-1, help="index into the workload's cases")
    ap.add_argument("--systems", default="symgrad cpu,symgrad parallel")
    args = ap.parse_args(argv)
    mod = harness.load_workload(args.workload.upper())
    case = mod.cases(args.quick)[args.case]
    data = mod.make_data(case)
    wanted = [s.strip() for s in args.systems.split(",")]
    calls = {name: f(data) for name, f in mod.systems().items()
             if name in wanted or name.startswith("numba by hand")}
    times = {name: [] for name in calls}
    for call in calls.values():
        call()
    for _ in range(args.rounds):
        for name, call in calls.items():
            t = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - t)
    med = {n: float(np.median(t)) for n, t in times.items()}
    best = min((n for n in med if n.startswith("numba by hand")), key=med.get)
    print(f"{args.workload} {case['label']}: {args.rounds} rounds, load {os.getloadavg()}")
    for n in calls:
        print(f"  {n:28s} median {med[n] * 1e3:9.3f} ms  min {min(times[n]) * 1e3:9.3f} ms"
              f"  x best hand ({best}) {med[n] / med[best]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
