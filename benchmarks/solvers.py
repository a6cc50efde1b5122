"""Solvers (issue 31): roots, vectorized maps (and later ODE solves) beside CasADi and JAX.

    python benchmarks/solvers.py [--cases root,vmap] [--quick] [--timeout 300]
                                 [--json benchmarks/results/solvers.json]
                                 [--chart benchmarks/results/solvers.png]

Every (case, program) runs in a fresh subprocess with empty symgrad and numba caches: the
child measures CPU seconds (``time.process_time``) of the build (graph + gradients +
``sg.function`` / ``casadi.Function`` + first call: the cold build), then the per-call time
(best of repeated calls on slightly different arguments: a loop's result for the same
arguments is reused; BLAS on one thread, as CasADi's), and the peak memory of one call
(``tracemalloc``: numpy's buffers).

Cases (``CASES``: each names its programs, its reference program and its targets; the
odeint rows are to be added there):

- ``root``  a Bratu-like system of n = 100 (``--quick``: 20) unknowns with 10 parameters:
  ``F_i(x, th) = (x_{i-1} - 2 x_i + x_{i+1}) / h^2 + th[i // (n/10)] exp(x_i) + 1``,
  ``x_0 = x_{n+1} = 0``; value ``sum(x*^2) / 2`` and its gradient with respect to ``th``.
  Programs: ``sg.root`` (implicit gradient); ``unrolled``: the same Newton written by hand
  with ``sg.while_loop`` (``sg.jacobian``, ``sg.linalg.solve``), differentiated through
  its iterations; ``unrolled kN``: exactly N iterations (memory against iterations);
  CasADi ``rootfinder('newton')`` with its derivative, when casadi imports. Targets:
  ``sg.root`` per call <= 0.5x unrolled, memory independent of the iterations (moonshot:
  <= CasADi), build <= 2 s.
- ``vmap``  one RK4 step of Lotka-Volterra (h = 0.01) over 10^5 (quick: 10^3) states:
  ``sg.vectorized_map`` of the one-state step vs the same written on (N, 2) arrays, value
  ``sum`` of the new states; target <= 1.2x the array program, build <= 2 s.

JAX rows run where jax imports (not installed on the machine of the README's figures).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from typing import Callable, Optional

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "benchmarks", "results")


# --- the programs -------------------------------------------------------------------------
def _bratu_sg(sg, n: int):
    h2 = (1.0 / (n + 1)) ** 2
    owner = np.repeat(np.arange(10), n // 10)
    lap = (np.diag(np.ones(n - 1), -1) - 2 * np.eye(n) + np.diag(np.ones(n - 1), 1)) / h2

    def residual(x, th):     # the Laplacian as a constant matrix (a concat of x's
        # neighbours fails in the unrolled program's second-order sweep on main)
        lx = sg.reshape(sg.linalg.matmul(sg.constant(lap), sg.reshape(x, (n, 1))), (n,))
        return lx + sg.gather(th, owner) * sg.exp(x) + 1.0
    return residual


def _x0(n: int) -> np.ndarray:
    return np.zeros(n)


def _theta(k: int) -> np.ndarray:
    return np.linspace(0.5, 1.5, 10) * (1 + 0.01 * k)


def sg_root(sg, n: int, iterations: Optional[int] = None):
    th = sg.placeholder("th", shape=(10,))
    f = _bratu_sg(sg, n)
    x = sg.root(lambda x: f(x, th), _x0(n), tol=1e-10)
    loss = 0.5 * sg.reduce_sum(x * x)
    (g,) = sg.gradients(loss, th)
    return [th], [loss, g]


def sg_unrolled(sg, n: int, iterations: Optional[int] = None):
    """Newton by hand in sg.while_loop (iterations: exactly that many), differentiated
    through its iterations."""
    th = sg.placeholder("th", shape=(10,))
    f = _bratu_sg(sg, n)

    def cond(i, x, norm):
        if iterations is not None:
            return i < iterations
        return sg.logical_and(i < 50, norm > 1e-10)

    def body(i, x, norm):
        r = f(x, th)
        J = sg.jacobian(r, x)
        x = x - sg.reshape(sg.linalg.solve(J, sg.reshape(r, (n, 1))), (n,))
        r = f(x, th)
        return i + 1, x, sg.sqrt(sg.reduce_sum(r * r))
    x0 = sg.constant(_x0(n))
    r0 = f(x0, th)
    _, x, _ = sg.while_loop(cond, body, [sg.constant(np.int64(0)), x0,
                                         sg.sqrt(sg.reduce_sum(r0 * r0))])
    loss = 0.5 * sg.reduce_sum(x * x)
    (g,) = sg.gradients(loss, th)
    return [th], [loss, g]


def casadi_root(n: int):
    import casadi as ca
    h2 = (1.0 / (n + 1)) ** 2
    x = ca.SX.sym("x", n)
    th = ca.SX.sym("th", 10)
    owner = np.repeat(np.arange(10), n // 10)
    padded = ca.vertcat(0, x, 0)
    lap = (padded[:-2] - 2 * x + padded[2:]) / h2
    r = lap + ca.vertcat(*[th[int(k)] for k in owner]) * ca.exp(x) + 1
    G = ca.Function("G", [x, th], [r])
    rf = ca.rootfinder("rf", "newton", G, {"abstol": 1e-10})
    thm = ca.MX.sym("th", 10)
    xs = rf(ca.MX(_x0(n)), thm)
    loss = 0.5 * ca.dot(xs, xs)
    return ca.Function("F", [thm], [loss, ca.gradient(loss, thm)])


def _lv(sg_or_np, u, h=0.01, p=(1.0, 0.5, 1.0, 0.3)):
    """One RK4 step of Lotka-Volterra on u[..., 0:2] (sg or numpy arrays alike)."""
    def f(u):
        x, y = u[..., 0], u[..., 1]
        return sg_or_np.stack([p[0] * x - p[1] * x * y, p[3] * x * y - p[2] * y], axis=-1)
    k1 = f(u)
    k2 = f(u + h / 2 * k1)
    k3 = f(u + h / 2 * k2)
    k4 = f(u + h * k3)
    return u + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def sg_vmap(sg, n: int, iterations=None):
    u = sg.placeholder("u", shape=(n, 2))
    out = sg.vectorized_map(lambda s: _lv(sg, s), u)
    return [u], [out]


def sg_arrays(sg, n: int, iterations=None):
    u = sg.placeholder("u", shape=(n, 2))
    return [u], [_lv(sg, u)]


def _states(n: int, k: int) -> list:
    rng = np.random.default_rng(k)
    return [1.0 + rng.random((n, 2))]


CASES = {
    "root": {
        "size": (100, 20),
        "programs": {"sg.root": sg_root, "unrolled": sg_unrolled},
        "iterations": (5, 10, 20, 40),           # unrolled kN rows (memory vs iterations)
        "peers": {"casadi rootfinder": ("casadi", casadi_root)},
        "args": lambda n, k: [_theta(k)],
        "reference": "unrolled",
        "target": ("sg.root", 0.5),              # per call <= 0.5x the reference
    },
    "vmap": {
        "size": (100_000, 1000),
        "programs": {"sg.vectorized_map": sg_vmap, "arrays": sg_arrays},
        "iterations": (),
        "peers": {},
        "args": _states,
        "reference": "arrays",
        "target": ("sg.vectorized_map", 1.2),
    },
}
"""Each case: sizes (default, quick), symgrad programs ``(sg, n, iterations) -> (inputs,
outputs)``, ``iterations`` (extra rows of the reference with that many loop iterations),
peers ``{name: (module, build(n) -> callable)}``, ``args(n, k)`` (the k-th argument set),
the reference program and the target (program, ratio). An odeint case adds an entry."""


# --- the child: one (case, program) in a fresh process ------------------------------------
def best_call(call: Callable, arg_sets: list, budget_s: float = 1.0, batch_s: float = 0.02,
              min_batches: int = 5) -> float:
    """Best CPU seconds of one call: batches of calls over ``arg_sets`` in turn (each batch
    at least ``batch_s``: the CPU clock's ticks are coarse), the best batch's mean."""
    t = time.process_time()
    count = 0
    while time.process_time() - t < batch_s:
        call(*arg_sets[count % len(arg_sets)])
        count += 1
    size = max(count, len(arg_sets))
    best, batches, start = float("inf"), 0, time.process_time()
    while batches < min_batches or time.process_time() - start < budget_s:
        t = time.process_time()
        for k in range(size):
            call(*arg_sets[k % len(arg_sets)])
        best, batches = min(best, (time.process_time() - t) / size), batches + 1
    return best


def child(case: str, program: str, n: int, iterations: Optional[int]) -> dict:
    spec = CASES[case]
    arg_sets = [spec["args"](n, k) for k in range(4)]
    t0 = time.process_time()
    if program in spec["peers"]:
        module, build = spec["peers"][program]
        t = time.process_time()
        fn = build(n)
        call = lambda *a: fn(*a)   # noqa: E731
    else:
        import symgrad as sg
        t = time.process_time()
        inputs, outputs = spec["programs"][program](sg, n, iterations)
        fn = sg.function(inputs, outputs)
        call = fn
    first = call(*arg_sets[0])
    build_s = time.process_time() - t
    values = [np.asarray(v, dtype=float).ravel()[:3].tolist() for v in
              (first if isinstance(first, (list, tuple)) else [first])]
    per_call = best_call(call, arg_sets)
    tracemalloc.start()
    call(*arg_sets[1])
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"build_s": build_s, "import_s": t - t0, "per_call_us": per_call * 1e6,
            "peak_bytes": peak, "values": values}


def run_child(case: str, program: str, n: int, iterations, timeout: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="sgsolv_") as cache:
        env = dict(os.environ, SYMGRAD_CACHE_DIR=os.path.join(cache, "sg"),
                   OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
                   NUMBA_CACHE_DIR=os.path.join(cache, "nb"),
                   PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        code = ("import json, sys; from benchmarks import solvers as s; "
                f"print('RESULT' + json.dumps(s.child({case!r}, {program!r}, {n}, "
                f"{iterations!r})))")
        limit = max(1, int(timeout))

        def cap():
            resource.setrlimit(resource.RLIMIT_CPU, (limit, limit + 5))
        try:
            done = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT,
                                  capture_output=True, text=True, timeout=20 * limit,
                                  preexec_fn=cap)
        except subprocess.TimeoutExpired:
            return {"timeout_s": limit}
    for line in done.stdout.splitlines():
        if line.startswith("RESULT"):
            return json.loads(line[len("RESULT"):])
    if done.returncode < 0 or done.returncode == 128 + 24:
        return {"timeout_s": limit}
    return {"error": (done.stderr.strip().splitlines() or ["?"])[-1][:300]}


# --- table, chart, main -------------------------------------------------------------------
def _fmt(v, unit: str) -> str:
    if v is None:
        return "-"
    if unit == "us":
        return f"{v / 1000:.3g} ms" if v >= 1000 else f"{v:.3g} us"
    if unit == "B":
        return f"{v / 2 ** 20:.2f} MiB" if v >= 2 ** 20 else f"{v / 1024:.1f} KiB"
    return f"{v:.2f} s"


def format_table(rows: list) -> str:
    lines = ["| case | n | program | build (CPU s, cold) | per call | peak memory of a call "
             "| vs reference |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r or "timeout_s" in r:
            why = r.get("error") or f"> {r['timeout_s']} s CPU"
            lines.append(f"| {r['case']} | {r['n']} | {r['program']} | {why} | | | |")
            continue
        ratio = "" if r.get("ratio") is None else f"{r['ratio']:.2f}x"
        lines.append(f"| {r['case']} | {r['n']} | {r['program']} | {_fmt(r['build_s'], 's')} "
                     f"| {_fmt(r['per_call_us'], 'us')} | {_fmt(r['peak_bytes'], 'B')} "
                     f"| {ratio} |")
    return "\n".join(lines)


def targets(rows: list) -> list:
    """[(what, measured, met)] for every case's targets."""
    out = []
    for case, spec in CASES.items():
        got = {r["program"]: r for r in rows if r["case"] == case and "per_call_us" in r}
        program, limit = spec["target"]
        if program in got and spec["reference"] in got:
            ratio = got[program]["per_call_us"] / got[spec["reference"]]["per_call_us"]
            out.append((f"{case}: {program} per call <= {limit}x {spec['reference']}",
                        f"{ratio:.2f}x", ratio <= limit))
        for name, r in got.items():
            if not name.startswith(("sg.", "unrolled", "arrays")) or " k" in name:
                continue
            out.append((f"{case}: {name} build <= 2 s cold", f"{r['build_s']:.2f} s",
                        r["build_s"] <= 2.0))
        peers = [got[p] for p in spec["peers"] if p in got]
        if program in got and peers:
            ratio = got[program]["per_call_us"] / peers[0]["per_call_us"]
            out.append((f"{case}: {program} per call <= {list(spec['peers'])[0]} (moonshot)",
                        f"{ratio:.2f}x", ratio <= 1.0))
    return out


def chart(rows: list, path: str) -> Optional[str]:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    ok = [r for r in rows if "per_call_us" in r]
    if not ok:
        return None
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    labels = [f"{r['case']}\n{r['program']}" for r in ok]
    ax[0].barh(labels, [r["per_call_us"] for r in ok])
    ax[0].set_xscale("log")
    ax[0].set_xlabel("per call (CPU us, best)")
    ax[1].barh(labels, [r["peak_bytes"] / 1024 for r in ok])
    ax[1].set_xscale("log")
    ax[1].set_xlabel("peak memory of a call (KiB)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: Optional[list] = None) -> list:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    parser.add_argument("--timeout", type=float, default=300.0, help="CPU s per process")
    parser.add_argument("--no-peers", action="store_true")
    parser.add_argument("--no-iterations", action="store_true",
                        help="skip the rows of fixed iteration counts")
    parser.add_argument("--json", default=os.path.join(RESULTS, "solvers.json"))
    parser.add_argument("--chart", default=os.path.join(RESULTS, "solvers.png"))
    opts = parser.parse_args(argv)
    rows = []
    for case in opts.cases.split(","):
        spec = CASES[case]
        n = spec["size"][1 if opts.quick else 0]
        jobs = [(p, None) for p in spec["programs"]]
        if not opts.no_iterations:
            jobs += [(spec["reference"], k) for k in spec["iterations"]]
        if not opts.no_peers:
            jobs += [(p, None) for p, (module, _) in spec["peers"].items()
                     if importlib.util.find_spec(module) is not None]
        for program, k in jobs:
            row = {"case": case, "n": n, "program": program + (f" k{k}" if k else "")}
            row.update(run_child(case, program, n, k, opts.timeout))
            rows.append(row)
            print(format_table([row]).splitlines()[-1], flush=True)
        ref = next((r for r in rows if r["case"] == case and r["program"] == spec["reference"]
                    and "per_call_us" in r), None)
        for r in rows:
            if r["case"] == case and ref and "per_call_us" in r:
                r["ratio"] = r["per_call_us"] / ref["per_call_us"]
    print(format_table(rows))
    met = targets(rows)
    for what, value, ok in met:
        print(f"- {what}: {value} ({'met' if ok else 'not met'})")
    if opts.json:
        os.makedirs(os.path.dirname(opts.json) or ".", exist_ok=True)
        with open(opts.json, "w") as fh:
            json.dump({"date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                       "machine": platform.processor() or platform.machine(),
                       "quick": opts.quick, "rows": rows,
                       "targets": [{"what": w, "value": v, "met": ok} for w, v, ok in met]},
                      fh, indent=1)
    if opts.chart:
        chart(rows, opts.chart)
    return rows


if __name__ == "__main__":
    main()
