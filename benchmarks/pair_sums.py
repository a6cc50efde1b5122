"""Time every W3 formulation (``workloads/w3_pair_sums.py``) against its hand loop.

    python benchmarks/pair_sums.py [--n 3000] [--repeats 5] [--target cpu]
                                   [--json benchmarks/results/pair_sums.json]

Per formulation: median (and min) of ``repeats`` calls for symgrad and for the hand loop,
their ratio, the peak of numpy allocations during one symgrad call (tracemalloc), whether
the plan has a loop nest, and ``nest_rejections`` (the rule that kept a kernel flat).
"""

import argparse
import json
import os
import sys
import time
import tracemalloc

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import symgrad as sg  # noqa: E402
from benchmarks.workloads import w3_pair_sums as w  # noqa: E402
from symgrad.compile.nest import Nest, nest_rejections  # noqa: E402


def _times(calls, repeats):
    """(median, min) seconds of each call, timed in turn (the machine's load drifts)."""
    for call in calls:
        call()
    out = [[] for _ in calls]
    for _ in range(repeats):
        for k, call in enumerate(calls):
            t = time.perf_counter()
            call()
            out[k].append(time.perf_counter() - t)
    return [(float(np.median(o)), float(min(o))) for o in out]


def _peak_mb(call):
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        call()
        return (tracemalloc.get_traced_memory()[1] - base) / 2**20
    finally:
        tracemalloc.stop()


def measure(name, data, target, repeats):
    loss, hand = w.FORMULATIONS[name]
    P = sg.placeholder("P", shape=data["P"].shape)
    E = loss(P, w.constants(data))
    fn = sg.function([P], [E] + sg.gradients(E, P), target=target)
    got = fn(data["P"])
    G = np.empty_like(data["P"])
    want = [hand(data["P"], data["q"], G), G]
    err = max(float(np.max(np.abs(np.asarray(g) - h) / (np.abs(h) + 1e-3)))
              for g, h in zip(got, want))
    (sg_med, sg_min), (hd_med, hd_min) = _times(
        [lambda: fn(data["P"]), lambda: hand(data["P"], data["q"], G)], repeats)
    n = data["P"].shape[0]
    return {"formulation": name, "symgrad_ms": sg_med * 1e3, "symgrad_min_ms": sg_min * 1e3,
            "hand_ms": hd_med * 1e3, "hand_min_ms": hd_min * 1e3,
            "ratio": sg_med / hd_med, "ratio_min": sg_min / hd_min,
            "peak_mb": _peak_mb(lambda: fn(data["P"])), "nxn_mb": n * n * 8 / 2**20,
            "nested": any(isinstance(u, Nest) for u in fn.plan.units),
            "rejections": nest_rejections(fn.plan), "max_rel_err": err}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--target", default="cpu")
    ap.add_argument("--json", default=os.path.join(ROOT, "benchmarks", "results",
                                                   "pair_sums.json"))
    args = ap.parse_args(argv)
    data = w.make_data(args.n)
    rows = []
    print(f"| formulation (N={args.n}, {args.target}) | symgrad ms | hand ms | ratio "
          f"| peak MB (N*N*8 = {args.n**2 * 8 / 2**20:.0f}) | nest |")
    print("|---|---|---|---|---|---|")
    for name in w.FORMULATIONS:
        r = measure(name, data, args.target, args.repeats)
        rows.append(r)
        print(f"| {name} | {r['symgrad_ms']:.1f} | {r['hand_ms']:.1f} | {r['ratio']:.2f} "
              f"| {r['peak_mb']:.1f} | {'yes' if r['nested'] else 'no'} |", flush=True)
        for why in r["rejections"]:
            print(f"|   ^ {why} | | | | | |")
    with open(args.json, "w") as fh:
        json.dump({"n": args.n, "target": args.target, "repeats": args.repeats,
                   "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
