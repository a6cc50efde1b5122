"""Compile time against graph size: wide sums and deep chains, value + gradient.

    python benchmarks/compile_scaling.py [--wide 125,400,1250] [--deep 200,700,2000,6667]
                                         [--json benchmarks/results/compile_scaling.json]
                                         [--profile wide:400]

Graphs (x a float64 vector placeholder of shape (None,)):
  wide K:  y = sum_k sin(x*k)*(k-1), k = 1..K          (about 4 nodes per term)
  deep L:  e = x; L times e = sin(e)*0.5 + x; y = e     (3 nodes per level)
Each case runs in a fresh subprocess with empty symgrad and numba caches and reports the
seconds of each phase: graph build, sg.gradients, then inside sg.function: fold, plan,
lowering (+cse), printing, module load, numba (sg.function compiles every kernel before it
returns); then the first call (nothing left to compile) and a second call; "compile" is
sg.function + first call, "total" build + gradients + compile (CPU seconds), "wall" the
wall seconds of the same, "process" the whole subprocess (imports and the check against
sg.evaluate included), "run" the best of 3 calls on 2,000 elements. ``--numba-bodies``
compiles the bodies lowered node by node as numba functions instead of LLVM IR
(``templates.LLVM_BODIES = False``), for comparison. Nodes are the graph nodes of
[y, dy/dx]. Per phase, a linear
fit time = a + b * nodes (b in seconds per 1000 nodes, with R^2) and the exponent of
time ~ nodes**c are printed over the sizes run. ``--profile`` runs one case under
cProfile and prints the top functions by cumulative and by own time.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# process CPU seconds: the machines this runs on are often shared (wall time is also kept)
clock = time.process_time
PHASES = ("build", "gradients", "fold", "plan", "lower", "print", "load", "numba", "function",
          "first_call", "second_call", "compile")
# sg.function's passes, timed by wrapping the names function.py calls (missing ones skipped)
PASSES = {"fold": "fold_graph", "plan": "build_plan", "lower": "lower_kernel",
          "numba": "compile_module"}


def build(sg, kind: str, size: int):
    x = sg.placeholder("x", (None,))
    if kind == "wide":
        y = sum(sg.sin(x * float(k)) * float(k - 1) for k in range(1, size + 1))
    else:
        y = x
        for _ in range(size):
            y = sg.sin(y) * 0.5 + x
    return x, y


def _timed(times: dict, phase: str, fn):
    def wrapper(*args, **kwargs):
        start = clock()
        try:
            return fn(*args, **kwargs)
        finally:
            times[phase] = times.get(phase, 0.0) + clock() - start
    return wrapper


def instrument(times: dict) -> None:
    """Wrap sg.function's passes so that each one's time is recorded."""
    import importlib

    cache = importlib.import_module("symgrad.compile.cache.modules")
    driver = importlib.import_module("symgrad.compile.cpu.driver")
    function = importlib.import_module("symgrad.compile.function")

    for phase, name in PASSES.items():
        if hasattr(function, name):
            setattr(function, name, _timed(times, phase, getattr(function, name)))
    writer = getattr(driver, "ModuleWriter", None)
    if writer is not None and hasattr(writer, "source"):
        writer.source = _timed(times, "print", writer.source)
    if hasattr(cache, "load_or_build"):
        original = cache.load_or_build

        def load_or_build(key, make):
            start = clock()
            result = original(key, make)
            inner = sum(times.get(p, 0.0) for p in ("lower", "print"))
            times["load"] = clock() - start - inner
            return result
        cache.load_or_build = load_or_build


RUN_ELEMENTS = 2_000


def measure(kind: str, size: int, llvm: bool = True) -> dict:
    """One case, in this process (run it in a fresh one). ``llvm=False``: bodies lowered
    node by node are numba functions, not LLVM IR (``templates.LLVM_BODIES``)."""
    import symgrad as sg
    from symgrad.compile.codegen import templates
    from symgrad.graph.traversal import topological_order

    templates.LLVM_BODIES = llvm

    times: dict = {}
    instrument(times)
    wall = time.perf_counter()
    start = clock()
    x, y = build(sg, kind, size)
    times["build"] = clock() - start
    start = clock()
    (g,) = sg.gradients(y, x)
    times["gradients"] = clock() - start
    start = clock()
    f = sg.function([x], [y, g])
    times["function"] = clock() - start
    arg = np.linspace(-1.0, 1.0, 7)
    for phase in ("first_call", "second_call"):
        start = clock()
        got = f(arg)
        times[phase] = clock() - start
    times["wall"] = time.perf_counter() - wall
    times["compile"] = times["function"] + times["first_call"]
    want = sg.evaluate([y, g], {x: arg})
    ok = all(np.allclose(a, b, rtol=1e-9, atol=1e-9) for a, b in zip(got, want))
    big = np.linspace(-1.0, 1.0, RUN_ELEMENTS)
    runs = []
    for _ in range(3):
        start = time.perf_counter()
        f(big)
        runs.append(time.perf_counter() - start)
    times["run_ms"] = min(runs) * 1e3
    return {"kind": kind, "size": size, "nodes": len(topological_order([y, g])),
            "kernels": len(f.plan.kernels), "source_lines": len(f.source.splitlines()),
            "agrees_with_evaluate": bool(ok), "wall": times["wall"], "llvm_bodies": llvm,
            "run_ms": times["run_ms"], **{p: times.get(p) for p in PHASES}}


def run_fresh(kind: str, size: int, timeout: float, llvm: bool = True) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, SYMGRAD_CACHE_DIR=os.path.join(tmp, "sg"),
                   NUMBA_CACHE_DIR=os.path.join(tmp, "numba"),
                   PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        code = (f"import json, sys; sys.path.insert(0, {ROOT!r}); "
                f"from benchmarks.compile_scaling import measure; "
                f"print('RESULT', json.dumps(measure({kind!r}, {size}, {llvm!r})))")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        try:
            done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                                  text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"kind": kind, "size": size, "error": f"timeout after {timeout:.0f} s"}
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            # the whole process (imports and the check against sg.evaluate included)
            return {**json.loads(line[7:]), "process_wall": wall,
                    "process_cpu": (after.ru_utime - before.ru_utime +
                                    after.ru_stime - before.ru_stime)}
    return {"kind": kind, "size": size, "error": done.stderr.strip().splitlines()[-1:]}


def fit_exponent(rows: list, phase: str) -> float | None:
    """Least-squares slope of log(time) against log(nodes)."""
    points = [(r["nodes"], r[phase]) for r in rows if r.get(phase) and r[phase] > 1e-3]
    if len(points) < 2:
        return None
    n, t = np.log(np.array(points, float)).T
    return float(np.polyfit(n, t, 1)[0])


def fit_linear(rows: list, phase: str) -> dict | None:
    """Least-squares time = a + b * nodes: {"a": seconds, "b_per_1000": seconds per 1000
    nodes, "r2": coefficient of determination}."""
    points = [(r["nodes"], r[phase]) for r in rows if r.get(phase) is not None]
    if len(points) < 2:
        return None
    n, t = np.array(points, float).T
    b, a = np.polyfit(n, t, 1)
    spread = float(np.sum((t - t.mean()) ** 2))
    r2 = 1.0 - float(np.sum((t - (a + b * n)) ** 2)) / spread if spread > 0 else 1.0
    return {"a": float(a), "b_per_1000": float(b) * 1000.0, "r2": r2}


def table(rows: list) -> str:
    shown = ("build", "gradients", "fold", "plan", "lower", "print", "numba", "function",
             "first_call")
    head = "| graph | nodes | " + " | ".join(shown) + " | total | wall | process | run |"
    lines = [head, "|" + " --- |" * (len(shown) + 6)]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['kind']} {r['size']} | | {r['error']} |")
            continue
        cells = [f"{r[p]:.2f}" if r.get(p) is not None else "" for p in shown]
        total = sum(r[p] or 0.0 for p in ("build", "gradients", "function", "first_call"))
        lines.append(f"| {r['kind']} {r['size']} | {r['nodes']} | {' | '.join(cells)} | "
                     f"{total:.2f} | {r['wall']:.2f} | {r.get('process_wall', 0.0):.2f} wall, "
                     f"{r.get('process_cpu', 0.0):.2f} CPU | {r['run_ms']:.1f} ms |")
    return "\n".join(lines)


def profile(case: str, top: int = 25) -> None:
    import cProfile
    import pstats

    kind, size = case.split(":")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["SYMGRAD_CACHE_DIR"] = os.path.join(tmp, "sg")
        os.environ["NUMBA_CACHE_DIR"] = os.path.join(tmp, "numba")
        profiler = cProfile.Profile()
        profiler.enable()
        result = measure(kind, int(size))
        profiler.disable()
    print(json.dumps(result))
    stats = pstats.Stats(profiler).strip_dirs()
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wide", default="125,400,1250")
    parser.add_argument("--deep", default="200,700,2000,6667")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--json", default=os.path.join(ROOT, "benchmarks", "results",
                                                       "compile_scaling.json"))
    parser.add_argument("--profile", default="")
    parser.add_argument("--numba-bodies", action="store_true",
                        help="bodies lowered node by node as numba functions, not LLVM IR")
    args = parser.parse_args(argv)
    if args.profile:
        profile(args.profile)
        return 0
    rows = []
    for kind, sizes in (("wide", args.wide), ("deep", args.deep)):
        for size in [int(s) for s in sizes.split(",") if s.strip()]:
            rows.append(run_fresh(kind, size, args.timeout, not args.numba_bodies))
            print(f"{kind} {size}: {rows[-1]}", file=sys.stderr, flush=True)
    print(table(rows))
    exponents = {kind: {p: fit_exponent([r for r in rows if r["kind"] == kind and
                                          "error" not in r], p)
                        for p in PHASES} for kind in ("wide", "deep")}
    linear = {kind: {p: fit_linear([r for r in rows if r["kind"] == kind and "error" not in r],
                                   p) for p in PHASES} for kind in ("wide", "deep")}
    for kind, fits in exponents.items():
        shown = ", ".join(f"{p} {b:.2f}" for p, b in fits.items() if b is not None)
        print(f"{kind}: time ~ nodes**c with c = {shown}")
        shown = ", ".join(f"{p} {f['a']:.2f} + {f['b_per_1000']:.3f}/1000 (R^2 {f['r2']:.3f})"
                          for p, f in linear[kind].items()
                          if f is not None and p in ("lower", "print", "numba", "compile"))
        print(f"{kind}: linear fit seconds = a + b * nodes: {shown}")
    payload = {"started": datetime.datetime.now().isoformat(timespec="seconds"),
               "command": " ".join(["python", "benchmarks/compile_scaling.py"] +
                                   (argv if argv is not None else sys.argv[1:])),
               "cpus": os.cpu_count(), "results": rows, "exponents": exponents,
               "linear": linear}
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as fh:
        json.dump(payload, fh, indent=1)
    print(f"wrote {os.path.relpath(args.json)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
