"""Time every W3 formulation (``workloads/w3_pair_sums.py``) against its hand loop.

    python benchmarks/pair_sums.py [--n 3000] [--repeats 5] [--target cpu] [--only name ..]
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

import numba
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import symgrad as sg  # noqa: E402
from benchmarks.frameworks import FASTMATH  # noqa: E402
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


RC_MORSE = 2.5
A_MORSE, RE_MORSE = 1.5, 1.1


def _eye(n):
    return sg.constant(np.eye(n, dtype=bool))


def _triu(n):
    return sg.constant(np.triu(np.ones((n, n), bool), 1))


def lj_eye_constant(P, c):
    """The diagonal guarded before ``sqrt`` by ``sg.constant(np.eye(n, dtype=bool))``."""
    n = P.shape[0]
    eye = _eye(n)
    r = sg.sqrt(sg.where(eye, 1.0, w._r2(P)))
    return 0.5 * sg.reduce_sum(sg.where(eye, 0.0, 4.0 * (r**-12 - r**-6)))


def lj_triu_constant(P, c):
    """``i < j`` kept by ``sg.constant(np.triu(np.ones((n, n), bool), 1))`` before ``sqrt``."""
    triu = _triu(P.shape[0])
    r = sg.sqrt(sg.where(triu, w._r2(P), 1.0))
    return sg.reduce_sum(sg.where(triu, 4.0 * (r**-12 - r**-6), 0.0))


def morse_components(P, c):
    """Morse potential by components, an ``i < j`` constant mask and a cutoff."""
    triu = _triu(P.shape[0])
    x, y, z = P[:, 0], P[:, 1], P[:, 2]
    dx, dy, dz = (x[:, None] - x[None, :], y[:, None] - y[None, :], z[:, None] - z[None, :])
    r = sg.sqrt(sg.where(triu, dx * dx + dy * dy + dz * dz, 1.0))
    m = 1.0 - sg.exp(-A_MORSE * (r - RE_MORSE))
    return sg.reduce_sum(sg.where(sg.logical_and(triu, r < RC_MORSE), m * m - 1.0, 0.0))


@numba.njit(fastmath=FASTMATH, inline="always")
def _morse_cut(r2, qi, qj):
    if r2 >= RC_MORSE * RC_MORSE:
        return 0.0, 0.0
    r = np.sqrt(r2)
    ex = np.exp(-A_MORSE * (r - RE_MORSE))
    m = 1.0 - ex
    return m * m - 1.0, 2.0 * m * A_MORSE * ex / r


MASK_FORMS = {   # the masks-as-constants forms of issue 19
    "lj: eye constant guards sqrt": (lj_eye_constant, w._HAND_LJ),
    "lj: triu constant before sqrt": (lj_triu_constant, w._HAND_LJ),
    "morse: components, triu constant, cutoff": (morse_components, w._hand(_morse_cut, 0.0)),
}
FORMULATIONS = {**w.FORMULATIONS, **MASK_FORMS}


def measure(name, data, target, repeats):
    loss, hand = FORMULATIONS[name]
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
    ap.add_argument("--only", nargs="*", help="formulations whose name contains one of these")
    ap.add_argument("--json", default=os.path.join(ROOT, "benchmarks", "results",
                                                   "pair_sums.json"))
    args = ap.parse_args(argv)
    data = w.make_data(args.n)
    rows = []
    print(f"| formulation (N={args.n}, {args.target}) | symgrad ms | hand ms | ratio "
          f"| peak MB (N*N*8 = {args.n**2 * 8 / 2**20:.0f}) | nest |")
    print("|---|---|---|---|---|---|")
    names = [n for n in FORMULATIONS if not args.only or any(o in n for o in args.only)]
    for name in names:
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
