"""The cold start: the first function compiled in a fresh process (issue 24 item 4).

    python benchmarks/cold_start.py [--cases jacobian,hessian,w6] [--repeats 1]
                                    [--profile CASE] [--json benchmarks/results/cold_start.json]

Each case runs in a fresh subprocess with empty ``SYMGRAD_CACHE_DIR`` and ``NUMBA_CACHE_DIR``
(a new temporary directory per run: nothing symgrad or numba wrote before is on disk) and
reports the child's **CPU seconds** (``time.process_time``: the machines this runs on are
shared, wall time is also kept) of each phase: ``import`` (``import symgrad``), ``build``
(graph and derivatives), ``function`` (``sg.function``: fold, plan, lowering, numba), and
``first call``; ``cold`` is ``build + function + first call`` (the figure of issue 24:
imports excluded) and ``process`` the same plus the import.

Cases:
  jacobian   dense Jacobian of ``y = sin(x[1:]) * x[:-1]**2 + exp(-x[1:])``, n = 128
             (``benchmarks/jacobians.py``), target <= 1 s
  hessian    Hessian of ``reduce_sum(y)``, n = 128, target <= 1 s
  w6         W6's 200-node random elementwise graph, value + 4 gradients, N = 1e4
             (``benchmarks/workloads/w6_compile.py``), target <= min(0.5 s, JAX)

With ``--repeats N`` each case runs N times (interleaved) and the best cold figure of each
is printed after the table (the CPU time of one run still varies by 20-40 % on a loaded
machine). ``--profile CASE`` runs one case in a fresh process under cProfile and prints the top
functions by cumulative and own time. ``--warm-helpers`` first runs a throwaway process on
the same (then not empty) numba cache directory, so that the second process finds numba's
files of symgrad's kernel helpers (the situation of every process after the first on a
machine) while the symgrad cache is still empty.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = ("jacobian", "hessian", "w6")
TARGETS = {"jacobian": 1.0, "hessian": 1.0, "w6": 0.5}


def build_case(sg, case: str):
    """(inputs, outputs, arrays) of one case."""
    if case in ("jacobian", "hessian"):
        from benchmarks import jacobians
        builder = jacobians.build_jacobian if case == "jacobian" else jacobians.build_hessian
        return builder(sg, 128)
    from benchmarks.workloads import w6_compile as w6
    graph = w6.make_graph(200)
    xs = w6.make_inputs(10**4)
    phs = [sg.placeholder(f"x{i}", shape=(len(xs[0]),)) for i in range(4)]
    value = w6.build(_SgOps(sg), graph, phs)
    return phs, [value, *sg.gradients(value, phs)], xs


class _SgOps:
    """The array namespace W6's ``build`` calls (``benchmarks/frameworks._sg_ops``, without
    importing the frameworks module)."""

    def __init__(self, sg):
        self.sin, self.cos, self.tanh, self.exp = sg.sin, sg.cos, sg.tanh, sg.exp
        self.sigmoid, self.arctan, self.sum = sg.sigmoid, sg.arctan, sg.reduce_sum


def child(case: str, profile: bool = False) -> dict:
    """Runs in the fresh subprocess."""
    clock = time.process_time
    times = {}
    wall0, cpu0 = time.perf_counter(), clock()
    profiler = None
    if profile:
        import cProfile
        profiler = cProfile.Profile()
        profiler.enable()
    import symgrad as sg
    times["import"] = clock() - cpu0
    start = clock()
    inputs, outputs, arrays = build_case(sg, case)
    times["build"] = clock() - start
    start = clock()
    f = sg.function(inputs, outputs)
    times["function"] = clock() - start
    start = clock()
    f(*arrays)
    times["first_call"] = clock() - start
    times["cold"] = times["build"] + times["function"] + times["first_call"]
    times["process"] = clock() - cpu0
    times["process_wall"] = time.perf_counter() - wall0
    if profiler is not None:
        import pstats
        profiler.disable()
        for key in ("cumulative", "tottime"):
            pstats.Stats(profiler, stream=sys.stderr).sort_stats(key).print_stats(40)
    times["modules"] = len(sys.modules)
    return times


def run_fresh(case: str, profile: bool = False, warm_helpers: bool = False,
              timeout: float = 600) -> dict:
    """One case in a fresh subprocess with empty caches."""
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, NUMBA_CACHE_DIR=os.path.join(tmp, "numba"),
                   PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        cmd = [sys.executable, "-m", "benchmarks.cold_start", "--child", case]
        if profile:
            cmd.append("--profile-child")
        if warm_helpers:
            env["SYMGRAD_CACHE_DIR"] = os.path.join(tmp, "sg0")
            subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, timeout=timeout)
        env["SYMGRAD_CACHE_DIR"] = os.path.join(tmp, "sg")
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=timeout)
    if profile:
        sys.stdout.write(proc.stderr)
    if proc.returncode != 0:
        return {"case": case, "error": (proc.stderr.strip().splitlines() or ["?"])[-1][:200]}
    return {"case": case, **json.loads(proc.stdout.strip().splitlines()[-1])}


def format_table(rows: list) -> str:
    cols = ("import", "build", "function", "first_call", "cold", "process", "process_wall")
    lines = ["| case | " + " | ".join(cols) + " | target (cold) |",
             "|" + "---|" * (len(cols) + 2)]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['case']} | error: {r['error']} |")
            continue
        target = TARGETS.get(r["case"])
        met = "met" if r["cold"] <= target else "NOT met"
        lines.append(f"| {r['case']} | " + " | ".join(f"{r[c]:.3f}" for c in cols) +
                     f" | ≤ {target:g} s: {met} |")
    best = {}
    for r in rows:
        if "error" not in r:
            best[r["case"]] = min(best.get(r["case"], r["cold"]), r["cold"])
    if len(rows) > len(best):
        lines.append("")
        lines.append("best cold over the repeats (CPU s): " +
                     ", ".join(f"{c} {v:.3f}" for c, v in best.items()))
    return "\n".join(lines)


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--profile")
    parser.add_argument("--warm-helpers", action="store_true")
    parser.add_argument("--json")
    parser.add_argument("--child")
    parser.add_argument("--profile-child", action="store_true")
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.profile_child)))
        return 0
    if args.profile:
        run_fresh(args.profile, profile=True, warm_helpers=args.warm_helpers)
        return 0
    rows = [run_fresh(c, warm_helpers=args.warm_helpers)
            for _ in range(args.repeats) for c in args.cases.split(",")]
    print("CPU seconds of the child process (time.process_time); process_wall in wall s")
    print(format_table(rows))
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"date": datetime.datetime.now().isoformat(timespec="seconds"),
                       "warm_helpers": args.warm_helpers, "rows": rows}, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
