"""W5 per-call latency by argument kind: Python floats, numpy float64 scalars, 0-d arrays.

    python benchmarks/scalar_calls.py [--calls 20000] [--rounds 15] [--json path]

``a*sin(b) + exp(c*a)`` and its three partials (W5), compiled for target="cpu", against the
hand numba function returning four floats (``workloads/w5_latency.py``). Each round times
every call ``calls`` times in turn (best of 3 batches); the table shows the minimum and the
median over rounds in µs and the ratio of medians to the hand call with Python floats.
``SYMGRAD_ROOT=/path/to/checkout`` times another checkout's symgrad (before/after).
"""

import argparse
import json
import os
import sys
import timeit

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.environ.get("SYMGRAD_ROOT", ROOT))
if ROOT not in sys.path:
    sys.path.insert(1, ROOT)

import symgrad as sg  # noqa: E402
from benchmarks.workloads import w5_latency as w5  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--json", default=os.path.join(ROOT, "benchmarks", "results",
                                                   "scalar_calls.json"))
    args = ap.parse_args(argv)
    a, b, c = (sg.placeholder(n, shape=()) for n in "abc")
    y = a * sg.sin(b) + sg.exp(c * a)
    f = sg.function([a, b, c], [y] + sg.gradients(y, [a, b, c]))
    values = (0.7, 1.3, -0.4)
    kinds = {"floats": values, "numpy float64": tuple(np.float64(v) for v in values),
             "0-d arrays": tuple(np.array(v) for v in values)}
    hand = w5._serial
    calls = {"hand numba (floats)": lambda: hand(*values)}
    calls.update({f"symgrad ({k})": (lambda v=v: f(*v)) for k, v in kinds.items()})
    for call in calls.values():
        call()
    times: dict = {k: [] for k in calls}
    for _ in range(args.rounds):
        for k, call in calls.items():
            best = min(timeit.repeat(call, number=args.calls, repeat=3))
            times[k].append(best / args.calls * 1e6)
    med = {k: float(np.median(t)) for k, t in times.items()}
    ref = med["hand numba (floats)"]
    print(f"symgrad from {os.path.dirname(sg.__file__)}; load {os.getloadavg()[0]:.1f}")
    print("| call | min µs | median µs | ratio to hand |")
    print("|---|---|---|---|")
    for k in calls:
        print(f"| {k} | {min(times[k]):.3f} | {med[k]:.3f} | {med[k] / ref:.2f} |")
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as fh:
        json.dump({"symgrad": sg.__file__, "calls": args.calls, "rounds": args.rounds,
                   "times_us": times, "median_us": med}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
