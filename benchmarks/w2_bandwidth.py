"""Is W2 (Rosenbrock value and gradient, N = 1e6) memory-bound? Bytes moved per call over
time, against STREAM-like loops measured in the same process, all timed round-robin.

    OPENBLAS_NUM_THREADS=1 python benchmarks/w2_bandwidth.py [--rounds 41]

W2 reads x and writes g: 16 MB a call (8 N bytes each, write-allocate not counted, as in
STREAM's copy). The STREAM-like rows: numpy's copy, and numba copy / triad / read loops,
serial and ``prange``; "fresh out" allocates its output each call, as W2's call does.
GB/s are given at the median and at the best round (the machine is shared: the best round
is the one the other processes left alone).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numba
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from benchmarks import harness  # noqa: E402
from benchmarks.frameworks import FASTMATH  # noqa: E402


def _copy(a, b):
    for i in numba.prange(a.shape[0]):
        b[i] = a[i]


def _triad(a, b, c, s):
    for i in numba.prange(a.shape[0]):
        a[i] = b[i] + s * c[i]


def _read(a):
    acc = 0.0
    for i in numba.prange(a.shape[0]):
        acc += a[i]
    return acc


def _both(fn):
    return (numba.njit(fastmath=FASTMATH)(fn),
            numba.njit(fastmath=FASTMATH, parallel=True)(fn))


def streams(n: int) -> dict:
    """{name: (call, bytes moved)} of the STREAM-like loops over arrays of n float64."""
    a, b, c = (np.random.default_rng(k).random(n) for k in range(3))
    copy1, copyp = _both(_copy)
    triad1, triadp = _both(_triad)
    read1, readp = _both(_read)
    nb = 8 * n
    return {
        "numpy copy": (lambda: np.copyto(b, a), 2 * nb),
        "copy serial": (lambda: copy1(a, b), 2 * nb),
        "copy prange": (lambda: copyp(a, b), 2 * nb),
        "copy prange, fresh out": (lambda: copyp(a, np.empty_like(a)), 2 * nb),
        "triad serial": (lambda: triad1(a, b, c, 3.0), 3 * nb),
        "triad prange": (lambda: triadp(a, b, c, 3.0), 3 * nb),
        "read serial": (lambda: read1(a), nb),
        "read prange": (lambda: readp(a), nb),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=41)
    args = ap.parse_args(argv)
    mod = harness.load_workload("W2")
    case = mod.cases(False)[0]
    data = mod.make_data(case)
    n = case["N"]
    rows = dict(streams(n))
    rows.update({name: (f(data), 16 * n) for name, f in mod.systems().items()
                 if name.startswith(("symgrad", "numba by hand"))})
    for call, _ in rows.values():
        call()
        call()
    times: dict = {name: [] for name in rows}
    for _ in range(args.rounds):
        for name, (call, _) in rows.items():
            t = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - t)
    print(f"W2 {case['label']}: {args.rounds} rounds, {numba.get_num_threads()} threads, "
          f"load {tuple(round(x, 2) for x in os.getloadavg())}")
    for name, (_, nbytes) in rows.items():
        med, best = float(np.median(times[name])), min(times[name])
        print(f"  {name:28s} median {med * 1e3:7.3f} ms ({nbytes / med / 1e9:5.1f} GB/s)"
              f"  best {best * 1e3:7.3f} ms ({nbytes / best / 1e9:5.1f} GB/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
