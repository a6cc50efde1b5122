"""Sparse Jacobians and Hessians (issue 17, items 3-5): exact sparsity, colouring,
compressed evaluation, in scipy's stiff solver; against scipy's finite differences with
``jac_sparsity`` and ``scipy.optimize.rosen_hess``.

    python benchmarks/jacobians_sparse.py [--cases brusselator,rd2d,rosen100,rosen1e5]
        [--rd-n 128] [--json benchmarks/results/jacobians_sparse.json]

Each case runs in a fresh interpreter with empty symgrad and numba caches. "cold" is
sg.sparsity + sparse_jacobian/sparse_hessian + sg.function + the first call (numba compiles
there); "per call" the best of 5 x 20 calls of the compiled sparse Jacobian (returning a
csr_array); "peak MB" the process's peak resident memory. BDF rows: solve_ivp(method="BDF")
with jac= the compiled sparse Jacobian against jac_sparsity= finite differences.
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
import timeit

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = ("brusselator", "rd2d", "rosen100", "rosen1e5")


def per_call(fn, *args) -> float:
    return min(timeit.repeat(lambda: fn(*args), number=20, repeat=5)) / 20


def brusselator_1d(sg, n: int):
    """1-D Brusselator (Hairer–Wanner), diffusion by sg.pad and shifted slices."""
    y = sg.placeholder("y", shape=(2 * n,))
    u, v = y[:n], y[n:]
    alpha = 0.02 * (n + 1) ** 2
    pu = sg.pad(u, [[1, 1]], constant_values=1.0)
    pv = sg.pad(v, [[1, 1]], constant_values=3.0)
    du = 1.0 + u * u * v - 4.0 * u + alpha * (pu[2:] - 2.0 * u + pu[:-2])
    dv = 3.0 * u - u * u * v + alpha * (pv[2:] - 2.0 * v + pv[:-2])
    y0 = np.concatenate([1.0 + np.sin(2 * np.pi * np.arange(1, n + 1) / (n + 1)),
                         np.full(n, 3.0)])
    return y, sg.concat([du, dv], axis=0), y0, 10.0


def reaction_diffusion_2d(sg, n: int):
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    from reaction_diffusion import gray_scott, initial_state
    y, rhs = gray_scott(n)
    return y, rhs, initial_state(n), 1.0


def ode_case(name: str, n: int) -> dict:
    start = time.perf_counter()
    import symgrad as sg
    from scipy.integrate import solve_ivp
    out = {"case": name, "n": n, "import_s": time.perf_counter() - start}
    build = brusselator_1d if name == "brusselator" else reaction_diffusion_2d
    y, rhs, y0, t_end = build(sg, n)
    out["unknowns"] = int(y0.size)
    start = time.perf_counter()
    pattern = sg.sparsity(rhs, y)
    out["sparsity_s"] = time.perf_counter() - start
    jac = sg.sparse.sparse_jacobian(rhs, y)
    jf = sg.function([y], jac)
    J = jf(y0)
    out["cold_s"] = time.perf_counter() - start
    out.update(nnz=int(pattern.nnz), colours=int(jac.info["colours"]),
               per_call_us=per_call(jf, y0) * 1e6)
    f = sg.function([y], rhs)
    f(y0)
    out["rhs_per_call_us"] = per_call(f, y0) * 1e6
    step, probe = 1e-7, np.random.default_rng(0).standard_normal(y0.size)
    fd = (f(y0 + step * probe) - f(y0 - step * probe)) / (2 * step)
    out["jv_rel_err"] = float(np.abs(J @ probe - fd).max() / np.abs(fd).max())
    for label, kw in (("jac", {"jac": lambda t, s: jf(s)}),
                      ("jac_sparsity", {"jac_sparsity": pattern})):
        t0 = time.perf_counter()
        sol = solve_ivp(lambda t, s: f(s), (0.0, t_end), y0, method="BDF", rtol=1e-6,
                        atol=1e-8, **kw)
        out[f"bdf_{label}"] = {"s": time.perf_counter() - t0, "nfev": int(sol.nfev),
                               "njev": int(sol.njev), "nlu": int(sol.nlu),
                               "status": int(sol.status)}
        out[f"_y_{label}"] = sol.y[:, -1]
    out["bdf_max_diff"] = float(np.abs(out.pop("_y_jac") - out.pop("_y_jac_sparsity")).max())
    return out


def rosen_case(name: str, n: int) -> dict:
    start = time.perf_counter()
    import symgrad as sg
    from scipy.optimize import rosen_hess
    reference = rosen_hess if n <= 1000 else rosen_hess_sparse   # rosen_hess is dense
    out = {"case": name, "n": n, "unknowns": n, "import_s": time.perf_counter() - start}
    x = sg.placeholder("x", shape=(n,))
    y = 100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2
    xv = np.random.default_rng(0).uniform(-1.0, 1.0, n)
    start = time.perf_counter()
    pattern = sg.hessian_sparsity(y, x)
    out["sparsity_s"] = time.perf_counter() - start
    hess = sg.sparse.sparse_hessian(y, x)
    hf = sg.function([x], hess)
    H = hf(xv)
    out["cold_s"] = time.perf_counter() - start
    out.update(nnz=int(pattern.nnz), colours=int(hess.info["colours"]),
               per_call_us=per_call(hf, xv) * 1e6,
               rosen_hess_us=per_call(reference, xv) * 1e6,
               reference=reference.__name__)
    ref = reference(xv)
    ref = ref if hasattr(ref, "toarray") else np.asarray(ref)
    out["max_abs_err"] = float(abs(H - ref).max())
    return out


def rosen_hess_sparse(x: np.ndarray):
    """scipy's rosen_hess formula as a scipy.sparse tridiagonal matrix (numpy, by hand)."""
    import scipy.sparse as sparse
    off = -400.0 * x[:-1]
    main = np.zeros_like(x)
    main[0] = 1200 * x[0] ** 2 - 400 * x[1] + 2
    main[-1] = 200.0
    main[1:-1] = 202 + 1200 * x[1:-1] ** 2 - 400 * x[2:]
    return sparse.diags_array([off, main, off], offsets=[-1, 0, 1], format="csr")


def run_case(name: str, rd_n: int) -> dict:
    if name in ("brusselator", "rd2d"):
        out = ode_case(name, 50 if name == "brusselator" else rd_n)
    else:
        out = rosen_case(name, 100 if name == "rosen100" else 100_000)
    out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def fresh(name: str, rd_n: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, SYMGRAD_CACHE_DIR=os.path.join(tmp, "sg"),
                   NUMBA_CACHE_DIR=os.path.join(tmp, "numba"), PYTHONPATH=ROOT)
        done = subprocess.run([sys.executable, __file__, "--one", name, "--rd-n", str(rd_n)],
                              capture_output=True, text=True, env=env, cwd=ROOT)
    if done.returncode:
        return {"case": name, "error": done.stderr[-2000:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def table(rows: list) -> str:
    lines = ["| case | unknowns | nnz | colours | sparsity s | cold s | per call us | "
             "reference | BDF jac s (njev) | BDF jac_sparsity s (njev) | peak MB |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['case']} | error: {r['error'].splitlines()[-1]} |")
            continue
        if "rosen_hess_us" in r:
            ref = f"{r['reference']} {r['rosen_hess_us']:.0f} us"
            bdf = "| - | - "
        else:
            ref = f"rhs {r['rhs_per_call_us']:.0f} us"
            a, b = r["bdf_jac"], r["bdf_jac_sparsity"]
            bdf = f"| {a['s']:.2f} ({a['njev']}) | {b['s']:.2f} ({b['njev']}) "
        lines.append(f"| {r['case']} | {r['unknowns']} | {r['nnz']} | {r['colours']} | "
                     f"{r['sparsity_s']:.3f} | {r['cold_s']:.2f} | {r['per_call_us']:.0f} | "
                     f"{ref} {bdf}| {r['peak_mb']:.0f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--rd-n", type=int, default=128)
    parser.add_argument("--json", default=os.path.join(ROOT, "benchmarks", "results",
                                                       "jacobians_sparse.json"))
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(run_case(args.one, args.rd_n)))
        return 0
    rows = []
    for name in args.cases.split(","):
        rows.append(fresh(name, args.rd_n))
        print(json.dumps(rows[-1]), file=sys.stderr)
    print(table(rows))
    with open(args.json, "w") as fh:
        json.dump({"date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                   "machine": f"{os.cpu_count()} cores", "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
