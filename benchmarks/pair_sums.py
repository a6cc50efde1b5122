"""Time every W3 formulation (``workloads/w3_pair_sums.py``) against its hand loop.

    python benchmarks/pair_sums.py [--n 3000] [--repeats 5] [--rounds 3] [--target cpu]
                                   [--only name ..] [--json benchmarks/results/pair_sums.json]

The hand loops (``HAND``) are the best plain numba loops for each sum: one visit per
unordered pair ``i < j``, the row's gradient in locals and the column's into ``G[j]``, and,
for the cutoff forms, nothing but ``r2`` and a comparison for the pairs outside the cutoff.
With ``--target parallel`` the hand loop's ``prange`` twin (rows dealt round-robin to ``nc``
chunks, each with its own gradient array, summed at the end) is timed as well, and the
reference is the faster of the two (on a loaded 2-core machine the serial loop often wins).

Every function is compiled first; then ``rounds`` rounds each time every formulation's
symgrad call and hand loop in turn ``repeats`` times (the machine's load drifts, so the
calls of one formulation are interleaved and spread over the whole run). Per formulation:
median (and min) of all calls, their ratio, the peak of numpy allocations during one symgrad
call (tracemalloc), whether the plan has a loop nest, and ``nest_rejections`` (the rule that
kept a kernel flat). The load average is printed before and after.
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
    """Seconds of each call, timed in turn ``repeats`` times (the machine's load drifts)."""
    out = [[] for _ in calls]
    for _ in range(repeats):
        for k, call in enumerate(calls):
            t = time.perf_counter()
            call()
            out[k].append(time.perf_counter() - t)
    return out


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


def _rows(P, c):
    """N: the placeholder's rows, or the data's where the placeholder is ``(None, 3)``."""
    return P.shape[0] if P.shape[0] is not None else c["q"].shape[0]


def lj_eye_constant(P, c):
    """The diagonal guarded before ``sqrt`` by ``sg.constant(np.eye(n, dtype=bool))``."""
    eye = _eye(_rows(P, c))
    r = sg.sqrt(sg.where(eye, 1.0, w._r2(P)))
    return 0.5 * sg.reduce_sum(sg.where(eye, 0.0, 4.0 * (r**-12 - r**-6)))


def lj_triu_constant(P, c):
    """``i < j`` kept by ``sg.constant(np.triu(np.ones((n, n), bool), 1))`` before ``sqrt``."""
    triu = _triu(_rows(P, c))
    r = sg.sqrt(sg.where(triu, w._r2(P), 1.0))
    return sg.reduce_sum(sg.where(triu, 4.0 * (r**-12 - r**-6), 0.0))


def morse_components(P, c):
    """Morse potential by components, an ``i < j`` constant mask and a cutoff."""
    triu = _triu(_rows(P, c))
    x, y, z = P[:, 0], P[:, 1], P[:, 2]
    dx, dy, dz = (x[:, None] - x[None, :], y[:, None] - y[None, :], z[:, None] - z[None, :])
    r = sg.sqrt(sg.where(triu, dx * dx + dy * dy + dz * dz, 1.0))
    m = 1.0 - sg.exp(-A_MORSE * (r - RE_MORSE))
    return sg.reduce_sum(sg.where(sg.logical_and(triu, r < RC_MORSE), m * m - 1.0, 0.0))


@numba.njit(fastmath=FASTMATH, inline="always")
def _morse(r2, qi, qj):
    r = np.sqrt(r2)
    ex = np.exp(-A_MORSE * (r - RE_MORSE))
    m = 1.0 - ex
    return m * m - 1.0, 2.0 * m * A_MORSE * ex / r


@numba.njit(fastmath=FASTMATH, inline="always")
def _coulomb(r2, qi, qj):
    rinv = 1.0 / np.sqrt(r2)
    e = qi * qj * rinv
    return e, -e * rinv * rinv


def hand_loop(pair, diagonal=0.0, rc=None, parallel=False):
    """The best plain numba loop ``(P, q, G) -> E`` of the pair sum whose pair function is
    ``pair(r2, qi, qj) -> (e, dE/dr / r)``: unordered pairs ``i < j`` only, the row's
    gradient in locals, the column's into ``G[j]``; with a cutoff ``rc`` the pairs outside
    cost ``r2`` and one comparison. ``parallel``: rows dealt round-robin to ``nc`` threads,
    one gradient array each (``prange``), summed at the end."""
    rc2 = np.inf if rc is None else rc * rc

    @numba.njit(fastmath=FASTMATH, inline="always")
    def row(P, q, G, i, n):
        xi, yi, zi = P[i, 0], P[i, 1], P[i, 2]
        e_row = gx = gy = gz = 0.0
        for j in range(i + 1, n):
            dx = xi - P[j, 0]
            dy = yi - P[j, 1]
            dz = zi - P[j, 2]
            r2 = dx * dx + dy * dy + dz * dz
            if r2 < rc2:
                e, c = pair(r2, q[i], q[j])
                e_row += e
                gx += c * dx
                gy += c * dy
                gz += c * dz
                G[j, 0] -= c * dx
                G[j, 1] -= c * dy
                G[j, 2] -= c * dz
        G[i, 0] += gx
        G[i, 1] += gy
        G[i, 2] += gz
        return e_row

    if not parallel:
        @numba.njit(fastmath=FASTMATH)
        def loop(P, q, G):
            n = P.shape[0]
            G[:, :] = 0.0
            E = diagonal * n
            for i in range(n):
                E += row(P, q, G, i, n)
            return E
        return loop

    @numba.njit(fastmath=FASTMATH, parallel=True)
    def loop_parallel(P, q, G):
        n = P.shape[0]
        nc = min(numba.get_num_threads(), n)
        Gc = np.zeros((nc, n, 3))
        Ec = np.zeros(nc)
        for c in numba.prange(nc):
            e_c = 0.0
            for i in range(c, n, nc):
                xi, yi, zi = P[i, 0], P[i, 1], P[i, 2]
                gx = gy = gz = 0.0
                for j in range(i + 1, n):
                    dx = xi - P[j, 0]
                    dy = yi - P[j, 1]
                    dz = zi - P[j, 2]
                    r2 = dx * dx + dy * dy + dz * dz
                    if r2 < rc2:
                        e, f = pair(r2, q[i], q[j])
                        e_c += e
                        gx += f * dx
                        gy += f * dy
                        gz += f * dz
                        Gc[c, j, 0] -= f * dx
                        Gc[c, j, 1] -= f * dy
                        Gc[c, j, 2] -= f * dz
                Gc[c, i, 0] += gx
                Gc[c, i, 1] += gy
                Gc[c, i, 2] += gz
            Ec[c] = e_c
        G[:, :] = Gc.sum(axis=0)
        return diagonal * n + Ec.sum()
    return loop_parallel


LJ = (w._lj, 0.0, None)
HAND = {   # formulation: (pair function, value of each diagonal pair, cutoff)
    "lj: 0.5*sum ~eye, r2**-6 - r2**-3": LJ,
    "lj: mask before sqrt, r**-12 - r**-6": LJ,
    "lj: mask after sqrt, r**-12 - r**-6": LJ,
    "lj: (r2**-3)**2 - r2**-3": LJ,
    "lj: triangular i<j mask": LJ,
    "lj: explicit components": LJ,
    "lj: cutoff where(r < rc)": (w._lj, 0.0, w.RC_LJ),
    "gaussian kernel sum": (w._gauss, 1.0, None),
    "coulomb, cutoff": (_coulomb, 0.0, w.RC_COULOMB),
    "lj: eye constant guards sqrt": LJ,
    "lj: triu constant before sqrt": LJ,
    "morse: components, triu constant, cutoff": (_morse, 0.0, RC_MORSE),
}
_MASK_LOSSES = {   # the masks-as-constants forms of issue 19
    "lj: eye constant guards sqrt": lj_eye_constant,
    "lj: triu constant before sqrt": lj_triu_constant,
    "morse: components, triu constant, cutoff": morse_components,
}
_LOSSES = {**{name: loss for name, (loss, _) in w.FORMULATIONS.items()}, **_MASK_LOSSES}
FORMULATIONS = {name: (loss, hand_loop(*HAND[name])) for name, loss in _LOSSES.items()}
"""name: (symgrad loss, the serial hand loop)"""
MASK_FORMS = {name: FORMULATIONS[name] for name in _MASK_LOSSES}
_PARALLEL: dict = {}


def hand_for(name: str, target: str):
    """The hand loop of formulation ``name`` for ``target`` (the prange twin: parallel)."""
    if target != "parallel":
        return FORMULATIONS[name][1]
    if name not in _PARALLEL:
        _PARALLEL[name] = hand_loop(*HAND[name], parallel=True)
    return _PARALLEL[name]


def prepare(name, data, target):
    """(symgrad call, hand call, row of accuracy and memory figures) of one formulation."""
    loss = FORMULATIONS[name][0]
    hand = hand_for(name, target)
    P = sg.placeholder("P", shape=data["P"].shape)
    E = loss(P, w.constants(data))
    fn = sg.function([P], [E] + sg.gradients(E, P), target=target)
    got = fn(data["P"])
    G = np.empty_like(data["P"])
    want = [hand(data["P"], data["q"], G), G]
    err = max(float(np.max(np.abs(np.asarray(g) - h) / (np.abs(h) + 1e-3)))
              for g, h in zip(got, want))
    n = data["P"].shape[0]
    row = {"formulation": name, "peak_mb": _peak_mb(lambda: fn(data["P"])),
           "nxn_mb": n * n * 8 / 2**20,
           "nested": any(isinstance(u, Nest) for u in fn.plan.units),
           "rejections": nest_rejections(fn.plan), "max_rel_err": err}
    calls = [lambda: fn(data["P"]), lambda: hand(data["P"], data["q"], G)]
    if target == "parallel":   # the serial loop too: the hand reference is the faster one
        serial = FORMULATIONS[name][1]
        calls.append(lambda: serial(data["P"], data["q"], G))
        calls[-1]()   # compiled before timing
    return calls, row


def measure(name, data, target, repeats, rounds=1):
    """The figures of one formulation (``main`` interleaves all of them instead)."""
    return run_all([name], data, target, repeats, rounds)[0]


def run_all(names, data, target, repeats, rounds):
    prepared = [prepare(name, data, target) for name in names]
    times = [[[] for _ in calls] for calls, _ in prepared]
    for _ in range(rounds):
        for (calls, _), ts in zip(prepared, times):
            for t, new in zip(ts, _times(calls, repeats)):
                t += new
    rows = []
    for (_, row), ts in zip(prepared, times):
        meds = [float(np.median(t)) for t in ts]
        h = min(range(1, len(ts)), key=lambda k: meds[k])   # the faster hand loop
        row.update({"symgrad_ms": meds[0] * 1e3, "symgrad_min_ms": min(ts[0]) * 1e3,
                    "hand_ms": meds[h] * 1e3, "hand_min_ms": min(ts[h]) * 1e3,
                    "hand_loop": "prange" if h == 1 and len(ts) == 3 else "serial",
                    "hand_ms_each": [m * 1e3 for m in meds[1:]],
                    "ratio": meds[0] / meds[h], "ratio_min": min(ts[0]) / min(ts[h])})
        rows.append(row)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--target", default="cpu")
    ap.add_argument("--only", nargs="*", help="formulations whose name contains one of these")
    ap.add_argument("--json", default=os.path.join(ROOT, "benchmarks", "results",
                                                   "pair_sums.json"))
    args = ap.parse_args(argv)
    data = w.make_data(args.n)
    load0 = os.getloadavg()
    names = [n for n in FORMULATIONS if not args.only or any(o in n for o in args.only)]
    rows = run_all(names, data, args.target, args.repeats, args.rounds)
    load1 = os.getloadavg()
    print(f"| formulation (N={args.n}, {args.target}) | symgrad ms | hand ms | ratio "
          f"| ratio of mins | peak MB (N*N*8 = {args.n**2 * 8 / 2**20:.0f}) | nest | hand |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['formulation']} | {r['symgrad_ms']:.1f} | {r['hand_ms']:.1f} "
              f"| {r['ratio']:.2f} | {r['ratio_min']:.2f} | {r['peak_mb']:.1f} "
              f"| {'yes' if r['nested'] else 'no'} | {r['hand_loop']} |")
        for why in r["rejections"]:
            print(f"|   ^ {why} | | | | | | | |")
    print(f"load average (1, 5, 15 min): before {load0[0]:.1f} {load0[1]:.1f} {load0[2]:.1f}, "
          f"after {load1[0]:.1f} {load1[1]:.1f} {load1[2]:.1f}; {os.cpu_count()} cores")
    with open(args.json, "w") as fh:
        json.dump({"n": args.n, "target": args.target, "repeats": args.repeats,
                   "rounds": args.rounds, "load": [load0, load1], "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
