"""Dense Jacobians and Hessians: cold compile + first call and per-call time (issue 17).

    python benchmarks/jacobians.py [--n 16,64,128] [--rows 16,64] [--floor] [--hoist-variants]
                                   [--json benchmarks/results/jacobians.json]
                                   [--chart benchmarks/results/jacobians.png]

Function: ``y = sin(x[1:]) * x[:-1]**2 + exp(-x[1:])``; the dense Jacobian ``dy/dx``
(``sg.jacobian``) and the Hessian of ``reduce_sum(y)`` (``sg.hessians``). Each case runs in
a fresh subprocess with an empty ``SYMGRAD_CACHE_DIR``: ``cold`` is graph + ``sg.function``
+ first call (numba compiles there), ``per call`` the best of repeated calls. Cold is
shown as wall and process CPU seconds (the machines this runs on are often shared: CPU
time is the steadier figure). A JAX column (``jit(jacfwd)`` / ``jit(hessian)``) is added
when jax imports. ``--rows N,..`` adds the per-row construction that ``sg.jacobian`` used
before (one ``sg.gradients`` per output entry, stacked) for comparison in the same run.

``--hoist-variants`` times, by hand in numba, the three ways a ``(k, n)`` loop can treat a
factor that reads only ``(n,)`` operands (``compile/plan/hoist.py`` chose the second): computed
in every row, computed once into a 1-D temporary, or the loops interchanged (columns
outer, the factor in a register, strided stores).

Other modules add rows: build ``Case`` objects naming a builder ``module:function(sg, n)``
that returns ``(inputs, outputs, arrays)`` (and optionally a JAX builder), append them to a
list and call ``main(cases=...)`` or ``run_case`` / ``format_table`` directly
(``benchmarks/jacobians_sparse.py``).
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from typing import Optional

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET_COLD_S = 1.0


@dataclass(frozen=True)
class Case:
    """One row: ``builder`` is ``'module:function'``, called as ``function(sg, n)`` in the
    child process; ``jax_builder`` likewise as ``function(jax, n)`` -> ``(fn, args)``."""

    name: str
    n: int
    builder: str
    jax_builder: Optional[str] = None
    target_cold_s: Optional[float] = TARGET_COLD_S
    target_call_s: Optional[float] = None


# --- the dense cases -------------------------------------------------------------------------
def _y(sg, x):
    return sg.sin(x[1:]) * x[:-1] ** 2 + sg.exp(-x[1:])


def x0(n: int) -> np.ndarray:
    return np.linspace(0.1, 1.0, n)


def build_jacobian(sg, n: int):
    x = sg.placeholder("x", shape=(n,))
    return [x], sg.jacobian(_y(sg, x), x), [x0(n)]


def build_hessian(sg, n: int):
    x = sg.placeholder("x", shape=(n,))
    (h,) = sg.hessians(sg.reduce_sum(_y(sg, x)), x)
    return [x], h, [x0(n)]


def build_floor(sg, n: int):
    """The compile floor: the function itself, one kernel (no derivative)."""
    x = sg.placeholder("x", shape=(n,))
    return [x], _y(sg, x), [x0(n)]


def build_jacobian_rows(sg, n: int):
    """The former construction: one one-hot-seeded sweep per entry of y, stacked."""
    x = sg.placeholder("x", shape=(n,))
    y = _y(sg, x)
    rows = []
    for k in range(n - 1):
        seed = np.zeros(n - 1)
        seed[k] = 1
        rows.append(sg.gradients(y, [x], grad_ys=[seed])[0])
    return [x], sg.stack(rows), [x0(n)]


def _jax_y(jnp, x):
    return jnp.sin(x[1:]) * x[:-1] ** 2 + jnp.exp(-x[1:])


def jax_jacobian(jax, n: int):
    import jax.numpy as jnp
    return jax.jit(jax.jacfwd(lambda x: _jax_y(jnp, x))), (jnp.asarray(x0(n)),)


def jax_hessian(jax, n: int):
    import jax.numpy as jnp
    return jax.jit(jax.hessian(lambda x: jnp.sum(_jax_y(jnp, x)))), (jnp.asarray(x0(n)),)


def dense_cases(sizes=(16, 64, 128)) -> list:
    here = "benchmarks.jacobians"
    cases = []
    for n in sizes:
        cases.append(Case("dense jacobian", n, f"{here}:build_jacobian", f"{here}:jax_jacobian"))
        cases.append(Case("dense hessian", n, f"{here}:build_hessian", f"{here}:jax_hessian"))
    return cases


CASES = dense_cases()


# --- hoisting variants, by hand -----------------------------------------------------------
def hoist_variants(shapes=((127, 128), (1000, 1000))) -> list:
    """[(k, n, {variant: best seconds})] for ``out[i, j] = s[i, j] * f(x[j])``."""
    import math
    import numba
    fm = {"contract", "afn", "reassoc", "nsz"}

    @numba.njit(fastmath=fm, error_model="numpy")
    def every_row(s, x, out):
        for i in range(s.shape[0]):
            for j in range(s.shape[1]):
                out[i, j] = s[i, j] * (math.cos(x[j]) * x[j] * x[j] - math.exp(-x[j]))

    @numba.njit(fastmath=fm, error_model="numpy")
    def temporary(s, x, out):
        t = np.empty(s.shape[1])
        for j in range(s.shape[1]):
            t[j] = math.cos(x[j]) * x[j] * x[j] - math.exp(-x[j])
        for i in range(s.shape[0]):
            for j in range(s.shape[1]):
                out[i, j] = s[i, j] * t[j]

    @numba.njit(fastmath=fm, error_model="numpy")
    def interchanged(s, x, out):
        for j in range(s.shape[1]):
            c = math.cos(x[j]) * x[j] * x[j] - math.exp(-x[j])
            for i in range(s.shape[0]):
                out[i, j] = s[i, j] * c

    rows = []
    for k, n in shapes:
        args = (np.random.default_rng(0).random((k, n)), x0(n), np.empty((k, n)))
        rows.append((k, n, {f.__name__: best_call(f, args) for f in
                            (every_row, temporary, interchanged)}))
    return rows


# --- measuring ---------------------------------------------------------------------------------
def _resolve(spec: str):
    module, name = spec.split(":")
    return getattr(importlib.import_module(module), name)


def best_call(call, args, budget_s: float = 0.3, max_runs: int = 2000) -> float:
    """The best time of repeated calls (seconds), within about ``budget_s``."""
    times = []
    start = time.perf_counter()
    while len(times) < max_runs and (len(times) < 5 or time.perf_counter() - start < budget_s):
        t = time.perf_counter()
        call(*args)
        times.append(time.perf_counter() - t)
    return min(times)


def child(builder: str, n: int) -> dict:
    """Runs in the fresh subprocess: one symgrad case."""
    import symgrad as sg
    from symgrad.graph.traversal import topological_order

    start, cpu = time.perf_counter(), time.process_time()
    inputs, outputs, arrays = _resolve(builder)(sg, n)
    built = time.perf_counter()
    f = sg.function(inputs, outputs)
    compiled = time.perf_counter()
    f(*arrays)
    first = time.perf_counter()
    outs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    cold_cpu = time.process_time() - cpu
    return {"cold_s": first - start, "cold_cpu_s": cold_cpu, "build_s": built - start,
            "function_s": compiled - built, "first_call_s": first - compiled,
            "per_call_s": best_call(f, arrays),
            "nodes": len(topological_order([o for o in outs if isinstance(o, sg.Tensor)]))}


def jax_child(jax_builder: str, n: int) -> dict:
    import jax
    jax.config.update("jax_enable_x64", True)
    start = time.perf_counter()
    fn, args = _resolve(jax_builder)(jax, n)
    fn(*args).block_until_ready()
    cold = time.perf_counter() - start
    return {"jax_cold_s": cold,
            "jax_per_call_s": best_call(lambda *a: fn(*a).block_until_ready(), args)}


def jax_available() -> bool:
    return importlib.util.find_spec("jax") is not None


def _subprocess(args: list, timeout: float) -> dict:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with tempfile.TemporaryDirectory() as cache:
        env["SYMGRAD_CACHE_DIR"] = cache
        env["NUMBA_CACHE_DIR"] = cache
        proc = subprocess.run([sys.executable, "-m", "benchmarks.jacobians"] + args, cwd=ROOT,
                              env=env, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["failed"])[-1][:200]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_case(case: Case, jax: bool = True, timeout: float = 600) -> dict:
    """One row: the case's fields plus the measured figures (fresh subprocesses)."""
    row = asdict(case)
    row.update(_subprocess(["--child", case.builder, str(case.n)], timeout))
    if jax and case.jax_builder and jax_available():
        row.update(_subprocess(["--jax-child", case.jax_builder, str(case.n)], timeout))
    cold, call = row.get("cold_s"), row.get("per_call_s")
    row["cold_met"] = None if case.target_cold_s is None or cold is None else bool(
        cold <= case.target_cold_s)
    row["call_met"] = None if case.target_call_s is None or call is None else bool(
        call <= case.target_call_s)
    return row


def _fmt(seconds, unit: str = "s") -> str:
    if seconds is None:
        return "-"
    return f"{seconds:.2f} s" if unit == "s" else f"{seconds * 1e6:.1f} µs"


def format_table(rows: list) -> str:
    head = ("| case | n | nodes | cold sg.function + first call (wall / CPU) | per call | "
            "JAX cold | JAX per call | cold target |")
    lines = [head, "|" + "---|" * 8]
    for r in rows:
        met = {True: "met", False: "NOT met", None: "-"}[r.get("cold_met")]
        target = "-" if r.get("target_cold_s") is None else f"≤ {r['target_cold_s']:g} s: {met}"
        err = f" ({r['error']})" if "error" in r else ""
        lines.append(f"| {r['name']}{err} | {r['n']} | {r.get('nodes', '-')} | "
                     f"{_fmt(r.get('cold_s'))} / {_fmt(r.get('cold_cpu_s'))} | "
                     f"{_fmt(r.get('per_call_s'), 'us')} | "
                     f"{_fmt(r.get('jax_cold_s'))} | {_fmt(r.get('jax_per_call_s'), 'us')} | "
                     f"{target} |")
    return "\n".join(lines)


def chart(rows: list, path: str) -> Optional[str]:
    try:
        from symgrad.extras import require
        matplotlib = require("matplotlib", extra="bench", why="benchmark charts")
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, ax = plt.subplots(figsize=(6, 4))
    for name in dict.fromkeys(r["name"] for r in rows):
        pts = [(r["n"], r["cold_s"]) for r in rows if r["name"] == name and "cold_s" in r]
        if pts:
            ax.plot(*zip(*pts), marker="o", label=name)
    ax.axhline(TARGET_COLD_S, color="grey", ls="--", label="target")
    ax.set_xlabel("n")
    ax.set_ylabel("cold sg.function + first call (s)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    return path


def main(argv: Optional[list] = None, cases: Optional[list] = None,
         json_path: str = os.path.join(ROOT, "benchmarks", "results", "jacobians.json"),
         chart_path: Optional[str] = os.path.join(ROOT, "benchmarks", "results",
                                                  "jacobians.png")) -> list:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", default=None, help="comma-separated sizes (dense cases)")
    parser.add_argument("--rows", default="", help="sizes for the per-row reference rows")
    parser.add_argument("--floor", action="store_true", help="add the y-alone floor row")
    parser.add_argument("--json", default=json_path)
    parser.add_argument("--chart", default=chart_path)
    parser.add_argument("--child", nargs=2, metavar=("BUILDER", "N"))
    parser.add_argument("--jax-child", nargs=2, metavar=("BUILDER", "N"))
    parser.add_argument("--hoist-variants", action="store_true",
                        help="only time the hand-written hoisting variants")
    args = parser.parse_args(argv)
    if args.hoist_variants:
        for k, n, times in hoist_variants():
            print(f"(k, n) = ({k}, {n}): " + ", ".join(f"{name} {t * 1e6:.1f} µs"
                                                      for name, t in times.items()))
        return []
    if args.child:
        print(json.dumps(child(args.child[0], int(args.child[1]))))
        return []
    if args.jax_child:
        print(json.dumps(jax_child(args.jax_child[0], int(args.jax_child[1]))))
        return []
    if cases is None:
        cases = dense_cases(tuple(int(s) for s in args.n.split(","))) if args.n else CASES
        cases = cases + [Case("per-row jacobian (before)", int(n),
                              "benchmarks.jacobians:build_jacobian_rows", target_cold_s=None)
                         for n in args.rows.split(",") if n]
        if args.floor:
            cases = [Case("y alone (compile floor)", 16, "benchmarks.jacobians:build_floor",
                          target_cold_s=None)] + cases
    if not jax_available():
        print("(jax is not importable: no JAX column)")
    rows = []
    for case in cases:
        rows.append(run_case(case))
        print(f"  {case.name} n={case.n}: cold {_fmt(rows[-1].get('cold_s'))}", flush=True)
    print(format_table(rows))
    if args.json:
        os.makedirs(os.path.dirname(args.json), exist_ok=True)
        with open(args.json, "w") as fh:
            json.dump({"date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                       "cpus": os.cpu_count(), "rows": rows}, fh, indent=1)
    if args.chart and chart(rows, args.chart):
        print(f"chart: {args.chart}")
    return rows


if __name__ == "__main__":
    main()
