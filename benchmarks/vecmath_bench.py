"""Vector math vs libm: ns per element of a loop ``out[i] = f(x[i])`` for each function.

    python benchmarks/vecmath_bench.py [--n 1000000] [--functions exp,log] [--no-libm]
                                       [--json benchmarks/results/vecmath.json]

For every function of ``symgrad.compile.kernel_lib.vecmath`` it compiles a loop with the generated
kernels' flags, once calling the vectorisable form and once calling libm (``math.*``), and
times it over ``--n`` float64 values in [-2, 2] (log over [1e-3, 1e3]). A plain copy loop
gives the memory floor, and ``sin+cos`` (both of one argument) should cost about one sin.
Timings are the median and the best of rounds that alternate the loops (the machine may be
shared: compare loops of one run, not runs). It also counts the
packed SIMD instructions in the fast loop's assembly (0 would mean it was not vectorised)
and the float <-> int conversions left in it (AVX2 has no packed float64 <-> int64
conversion, so each one is scalarised there). Writes JSON with the machine's ISA.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import sys
import time

import numba
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from symgrad.compile.kernel_lib import vecmath as vm  # noqa: E402

FLAGS = {"contract", "afn", "reassoc", "nsz"}   # the generated kernels' flags (compile/codegen/templates.py)
LIBM = {"exp": math.exp, "expm1": math.expm1, "log": math.log, "log1p": math.log1p,
        "sin": math.sin, "cos": math.cos, "tanh": math.tanh}
FUNCTIONS = ["exp", "expm1", "log", "log1p", "sin", "cos", "tanh", "sigmoid", "softplus"]


def loop(fn):
    @numba.njit(error_model="numpy", fastmath=FLAGS)
    def run(xs, out):
        for i in range(xs.size):
            out[i] = fn(xs[i])
    return run


@numba.njit(error_model="numpy", fastmath=FLAGS)
def copy(xs, out):
    for i in range(xs.size):
        out[i] = xs[i]


@numba.njit(error_model="numpy", fastmath=FLAGS)
def sincos(xs, out):
    """sin and cos of one argument: costs about one sin when the two share their work."""
    for i in range(xs.size):
        out[i] = vm.sin_f64(xs[i]) + vm.cos_f64(xs[i])


def libm_call(fn):
    return numba.njit(lambda x: fn(x))


def isa() -> str:
    flags = set()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    if "avx512f" in flags:
        return "AVX-512" + ("DQ" if "avx512dq" in flags else "F")
    if "avx2" in flags:
        return "AVX2" + (" + FMA" if "fma" in flags else "")
    return "SSE/other"


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def asm_counts(run) -> tuple[int, int]:
    asm = next(iter(run.inspect_asm().values()))
    packed = len(re.findall(r"\bv\w+pd\s+.*%[yz]mm", asm))
    converts = len(re.findall(r"\bv?cvt\w*(?:si2sd|sd2si|qq2pd|pd2qq)", asm))
    return packed, converts


def timed(runs: dict, inputs: dict, rounds: int) -> dict:
    """(median, best) ns per element of each loop, the loops alternating within a round."""
    outs = {key: np.empty_like(xs) for key, xs in inputs.items()}
    for key, run in runs.items():
        run(inputs[key], outs[key])
    samples: dict = {k: [] for k in runs}
    for _ in range(rounds):
        for key, run in runs.items():
            xs = inputs[key]
            t0 = time.perf_counter()
            run(xs, outs[key])
            samples[key].append((time.perf_counter() - t0) * 1e9 / xs.size)
    return {k: (float(np.median(v)), float(np.min(v))) for k, v in samples.items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10**6)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--functions", default=",".join(FUNCTIONS))
    ap.add_argument("--no-libm", action="store_true")
    ap.add_argument("--json", default=os.path.join(ROOT, "benchmarks", "results", "vecmath.json"))
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    names = args.functions.split(",")
    runs = {"copy": copy, "sin+cos": sincos}
    for name in names:
        runs[name] = loop(getattr(vm, f"{name}_f64"))
        if name in LIBM and not args.no_libm:
            runs[name + " libm"] = loop(libm_call(LIBM[name]))
    xs = rng.uniform(-2.0, 2.0, args.n)
    positive = rng.uniform(1e-3, 1e3, args.n)       # log of [-2, 2] would be half NaN
    inputs = {k: positive if k.startswith("log ") or k == "log" else xs for k in runs}
    times = timed(runs, inputs, args.rounds)
    rows = []
    print(f"{'loop':14s} {'ns/elt':>7s} {'best':>6s} {'packed':>7s} {'cvt':>4s}")
    for key in runs:
        packed, converts = asm_counts(runs[key])
        median, best = times[key]
        rows.append({"loop": key, "n": args.n, "ns_per_element": median,
                     "best_ns_per_element": best, "packed_simd_instructions": packed,
                     "scalar_conversions": converts})
        print(f"{key:14s} {median:7.2f} {best:6.2f} {packed:7d} {converts:4d}")
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    meta = {"cpu": cpu_model(), "isa": isa(), "llvm_cpu": numba.config.CPU_NAME or "host",
            "numba": numba.__version__, "command": "python benchmarks/vecmath_bench.py " +
            " ".join(argv if argv is not None else sys.argv[1:])}
    with open(args.json, "w") as fh:
        json.dump({**meta, "rows": rows}, fh, indent=1)
    print(f"{meta['cpu']} ({meta['isa']}); wrote {os.path.relpath(args.json)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
