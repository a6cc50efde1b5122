"""Vector math vs libm: each function over 10**7 float64 values in one fused loop.

    python benchmarks/vecmath_bench.py [--n 10000000] [--json benchmarks/results/vecmath.json]

For every function of ``symgrad.compile.vecmath`` it times a loop compiled with the
generated kernels' flags, once calling the vectorisable form and once calling libm
(``math.*``), and counts the packed SIMD instructions in the fast loop's assembly (0 means
it was not vectorised: a regression). Prints a table and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import time

import numba
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from symgrad.compile import vecmath as vm  # noqa: E402

FLAGS = {"contract", "afn", "reassoc", "arcp", "nsz"}
LIBM = {"exp": math.exp, "expm1": math.expm1, "log": math.log, "log1p": math.log1p,
        "sin": math.sin, "cos": math.cos, "tanh": math.tanh}
DOMAIN = {"exp": (-700, 700), "expm1": (-5, 5), "log": (1e-3, 1e3), "log1p": (-0.9, 10),
          "sin": (-100, 100), "cos": (-100, 100), "tanh": (-5, 5), "sigmoid": (-30, 30),
          "softplus": (-30, 30)}


def loop(fn):
    @numba.njit(error_model="numpy", fastmath=FLAGS)
    def run(xs, out):
        for i in range(xs.size):
            out[i] = fn(xs[i])
    return run


def best_of(run, xs, out, repeats=5) -> float:
    run(xs, out)
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        run(xs, out)
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10**7)
    ap.add_argument("--json", default=os.path.join(ROOT, "benchmarks", "results", "vecmath.json"))
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    rows = []
    print(f"{'function':10s} {'fast ms':>9s} {'libm ms':>9s} {'speed-up':>9s} {'packed ops':>11s}")
    for name, (lo, hi) in DOMAIN.items():
        xs = rng.uniform(lo, hi, args.n)
        out = np.empty_like(xs)
        fast = loop(getattr(vm, f"{name}_f64"))
        t_fast = best_of(fast, xs, out)
        asm = next(iter(fast.inspect_asm().values()))
        packed = len(re.findall(r"\bv\w+pd\s+%[yz]mm", asm))
        t_libm = math.nan
        if name in LIBM:
            libm = LIBM[name]
            t_libm = best_of(loop(numba.njit(lambda x: libm(x))), xs, out)
        rows.append({"function": name, "n": args.n, "fast_s": t_fast, "libm_s": t_libm,
                     "packed_simd_instructions": packed})
        print(f"{name:10s} {t_fast * 1e3:9.1f} {t_libm * 1e3:9.1f} {t_libm / t_fast:8.1f}x "
              f"{packed:11d}")
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as fh:
        json.dump({"cpu": numba.config.CPU_NAME or "host", "rows": rows}, fh, indent=1)
    print(f"wrote {os.path.relpath(args.json)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
