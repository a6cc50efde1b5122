"""Pair sums over a placeholder of unknown length ``(None, 3)`` against the same program
over ``(N, 3)`` and the hand numba loop (``benchmarks/pair_sums.py``'s forms).

    python benchmarks/unknown_lengths.py [--n 3000] [--repeats 5] [--target cpu]
                                         [--only name ..] [--json path]

Per formulation: the (None, 3) function (which specialises at its first call,
``compile/runtime/specialise.py``), its own flat plan run directly (``f.module.run``: what
a call cost before specialising), the (N, 3) function and the faster hand loop; medians of
calls timed in turn, their ratios to the hand loop, and the numpy peak of one call.
"""

import argparse
import json
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import symgrad as sg  # noqa: E402
from benchmarks import pair_sums as ps  # noqa: E402
from benchmarks.workloads import w3_pair_sums as w  # noqa: E402

FORMS = ["lj: 0.5*sum ~eye, r2**-6 - r2**-3", "lj: eye constant guards sqrt",
         "lj: triu constant before sqrt", "morse: components, triu constant, cutoff"]


def measure(name: str, data: dict, target: str, repeats: int) -> dict:
    loss = ps.FORMULATIONS[name][0]
    x, n = data["P"], data["P"].shape[0]
    fns = {}
    for shape in ((None, 3), (n, 3)):
        P = sg.placeholder("P", shape=shape)
        E = loss(P, w.constants(data))
        fns[shape] = sg.function([P], [E] + sg.gradients(E, P), target=target)
    unknown, static = fns[(None, 3)], fns[(n, 3)]
    G = np.empty_like(x)
    hands = [ps.hand_for(name, target)] + ([ps.FORMULATIONS[name][1]]
                                           if target == "parallel" else [])
    calls = [lambda: unknown(x), lambda: unknown.module.run(x), lambda: static(x)] + \
        [lambda h=h: h(x, data["q"], G) for h in hands]
    for call in calls:
        call()                       # compiled (and specialised) before timing
    got, want = unknown(x), static(x)
    err = max(float(np.max(np.abs(np.asarray(g) - h) / (np.abs(h) + 1e-3)))
              for g, h in zip(got, want))
    times = ps._times(calls, repeats)
    med = [float(np.median(t)) * 1e3 for t in times]
    hand = min(med[3:])
    return {"formulation": name, "none_ms": med[0], "flat_ms": med[1], "static_ms": med[2],
            "hand_ms": hand, "none_ratio": med[0] / hand, "flat_ratio": med[1] / hand,
            "static_ratio": med[2] / hand, "none_peak_mb": ps._peak_mb(lambda: unknown(x)),
            "flat_peak_mb": ps._peak_mb(lambda: unknown.module.run(x)),
            "specialised": [list(k) for k in unknown.specialised], "max_rel_err": err}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--target", default="cpu")
    ap.add_argument("--only", nargs="*", help="formulations whose name contains one of these")
    ap.add_argument("--json", default=os.path.join(ROOT, "benchmarks", "results",
                                                   "unknown_lengths.json"))
    args = ap.parse_args(argv)
    data = w.make_data(args.n)
    names = [f for f in FORMS if not args.only or any(o in f for o in args.only)]
    load0 = os.getloadavg()
    rows = [measure(name, data, args.target, args.repeats) for name in names]
    load1 = os.getloadavg()
    print(f"| formulation (N={args.n}, {args.target}) | (None,3) ms | ratio | flat plan ms "
          "| ratio | (N,3) ms | ratio | hand ms | peak MB (None,3) / flat |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['formulation']} | {r['none_ms']:.1f} | {r['none_ratio']:.2f} "
              f"| {r['flat_ms']:.1f} | {r['flat_ratio']:.2f} | {r['static_ms']:.1f} "
              f"| {r['static_ratio']:.2f} | {r['hand_ms']:.1f} "
              f"| {r['none_peak_mb']:.1f} / {r['flat_peak_mb']:.1f} |")
    print(f"load average before {load0[0]:.1f}, after {load1[0]:.1f}; {os.cpu_count()} cores")
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as fh:
        json.dump({"n": args.n, "target": args.target, "repeats": args.repeats,
                   "load": [load0, load1], "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
