"""Gaussian-process negative log marginal likelihood and its gradient (issue 25, programs):
compile time and per-call time of ``sg.function`` against hand-written numpy/scipy and,
when it imports, JAX.

    python benchmarks/programs_gp.py [--n 500] [--repeat 20] [--json benchmarks/results/programs_gp.json]

The program is ``examples/gp_regression.py``'s: RBF kernel of ``n`` points plus noise,
one Cholesky, one triangular solve, ``sum(log(diag(L)))``; gradient with respect to the
three log-hyperparameters (the reverse sweep adds two triangular solves). ``cold`` runs in a
fresh subprocess with an empty ``SYMGRAD_CACHE_DIR`` (graph + ``sg.function`` + first
call); ``per call`` is the best of ``--repeat`` calls. The numpy column is the textbook
closed form (``alpha = K^{-1} y``, ``dK/dtheta`` traces through ``K^{-1}``: one
``cho_solve`` with ``n`` right-hand sides).

LAPACK and BLAS use OpenBLAS's threads: on a small shared machine set
``OPENBLAS_NUM_THREADS`` to the free cores (a 200x200 Cholesky took 0.4-0.9 s instead of
0.5 ms with two threads contending on two busy cores); the JSON records the setting.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import scipy.linalg

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def data(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(-3, 3, n))
    y = (np.sin(2 * x) + 0.1 * rng.standard_normal(n))[:, None]
    return np.log([1.0, 1.0, 0.5]), (x[:, None] - x[None, :]) ** 2, y


def numpy_value_and_grad(theta, d2, y):
    """The closed form: nlml and d nlml / d log(ell, sf, sn)."""
    ell, sf, sn = np.exp(theta)
    n = len(y)
    kf = sf ** 2 * np.exp(-0.5 * d2 / ell ** 2)
    k = kf + (sn ** 2 + 1e-8) * np.eye(n)
    c = scipy.linalg.cho_factor(k, lower=True)
    alpha = scipy.linalg.cho_solve(c, y)
    value = 0.5 * float((y.T @ alpha)[0, 0]) + float(np.sum(np.log(np.diag(c[0])))) \
        + 0.5 * n * np.log(2 * np.pi)
    w = scipy.linalg.cho_solve(c, np.eye(n)) - alpha @ alpha.T
    dks = (kf * d2 / ell ** 2, 2 * kf, 2 * sn ** 2 * np.eye(n))
    return value, np.array([0.5 * np.sum(w * dk) for dk in dks])


def symgrad_cold(n: int) -> dict:
    """Graph + compile + first call in a fresh process with an empty cache."""
    code = ("import time; t0 = time.perf_counter(); c0 = time.process_time()\n"
            "import sys; sys.path.insert(0, 'examples')\n"
            "import gp_regression as gp\n"
            "from benchmarks.programs_gp import data\n"
            f"theta, d2, y = data({n})\n"
            f"f = gp.build({n}); f(theta, d2, y)\n"
            "print(time.perf_counter() - t0, time.process_time() - c0)\n")
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, SYMGRAD_CACHE_DIR=cache, PYTHONPATH=ROOT)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             cwd=ROOT, env=env, timeout=900)
    if out.returncode:
        raise RuntimeError(out.stderr[-2000:])
    wall, cpu = map(float, out.stdout.split()[-2:])
    return {"cold_wall_s": wall, "cold_cpu_s": cpu}


def best_of(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def jax_row(n: int, repeat: int):
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    theta, d2, y = data(n)

    def nlml(t, d2, y):
        ell, sf, sn = jnp.exp(t)
        k = sf ** 2 * jnp.exp(-0.5 * d2 / ell ** 2) + (sn ** 2 + 1e-8) * jnp.eye(n)
        chol = jnp.linalg.cholesky(k)
        v = jax.scipy.linalg.solve_triangular(chol, y, lower=True)
        return 0.5 * jnp.sum(v ** 2) + jnp.sum(jnp.log(jnp.diag(chol))) \
            + 0.5 * n * jnp.log(2 * jnp.pi)
    fn = jax.jit(jax.value_and_grad(nlml))
    start = time.perf_counter()
    jax.block_until_ready(fn(theta, d2, y))
    cold = time.perf_counter() - start
    call = best_of(lambda: jax.block_until_ready(fn(theta, d2, y)), repeat)
    return {"cold_wall_s": cold, "per_call_s": call}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--json", default=os.path.join(ROOT, "benchmarks", "results",
                                                       "programs_gp.json"))
    args = parser.parse_args(argv)
    sys.path.insert(0, ROOT)
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    import gp_regression as gp

    theta, d2, y = data(args.n)
    f = gp.build(args.n)
    value, grad = f(theta, d2, y)
    ref_value, ref_grad = numpy_value_and_grad(theta, d2, y)
    agree = bool(np.isclose(value, ref_value, rtol=1e-9) and
                 np.allclose(grad, ref_grad, rtol=1e-6, atol=1e-8))
    rows = {"symgrad cpu": {**symgrad_cold(args.n),
                            "per_call_s": best_of(lambda: f(theta, d2, y), args.repeat)},
            "numpy closed form": {"per_call_s": best_of(
                lambda: numpy_value_and_grad(theta, d2, y), args.repeat)}}
    jax_result = jax_row(args.n, args.repeat)
    if jax_result is not None:
        rows["jax jit(value_and_grad)"] = jax_result
    print(f"GP negative log marginal likelihood + gradient, n={args.n} "
          f"(values agree with the closed form: {agree})")
    print(f"{'engine':26s} {'cold wall s':>12s} {'cold cpu s':>11s} {'per call ms':>12s}")
    for name, row in rows.items():
        cold = row.get("cold_wall_s")
        cpu = row.get("cold_cpu_s")
        print(f"{name:26s} {'' if cold is None else f'{cold:12.2f}':>12s} "
              f"{'' if cpu is None else f'{cpu:11.2f}':>11s} {1e3 * row['per_call_s']:12.2f}")
    if jax_result is None:
        print("jax: not importable, skipped")
    result = {"n": args.n, "repeat": args.repeat, "agree": agree, "rows": rows,
              "openblas_num_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
              "cpu_count": os.cpu_count()}
    if args.json:
        os.makedirs(os.path.dirname(args.json), exist_ok=True)
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=2)
    return result


if __name__ == "__main__":
    main()
