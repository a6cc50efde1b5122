"""W4 side by side in one process, interleaved: symgrad cpu, symgrad parallel, numpy/BLAS
by hand, and JAX jit when it is installed.

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python benchmarks/w4_side.py [rounds] [gap_ms]

``gap_ms`` (default 0) sleeps between calls: a system's worker threads spin for a while
after its work (XLA's pool, OpenMP), which slows whichever system runs next on 2 cores.
Prints the BLAS kernel (threadpoolctl, when installed), the load average, and beside each
median wall time the median CPU time (user + system, all threads) and minor page faults of
one call.
"""
import os
import resource
import sys
import time

import numpy as np

from benchmarks import frameworks
from benchmarks.workloads import w4_mlp as w


def _blas() -> str:
    try:
        import threadpoolctl
    except ImportError:
        return "threadpoolctl not installed"
    return ", ".join(f"{i.get('internal_api')} {i.get('architecture')} "
                     f"{i.get('num_threads')} threads"
                     for i in threadpoolctl.threadpool_info() if i.get("user_api") == "blas")


def main(rounds: int = 15, gap_ms: int = 0) -> None:
    data = w.make_data(w.cases(False)[0])
    calls = {"symgrad cpu": frameworks.symgrad_factory(w, "cpu")(data),
             "symgrad parallel": frameworks.symgrad_factory(w, "parallel")(data),
             "numpy by hand (BLAS)": w.numpy_factory(data)}
    try:
        calls["jax jit"] = frameworks.jax_factory(w)(data)
        calls["jax jit"]()
    except Exception:   # not installed
        calls.pop("jax jit", None)
    times: dict = {k: [] for k in calls}
    cpu: dict = {k: [] for k in calls}
    faults: dict = {k: [] for k in calls}
    for c in calls.values():
        c()
        c()
    for _ in range(rounds):
        for k, c in calls.items():
            time.sleep(gap_ms / 1e3)
            r, p, t = resource.getrusage(resource.RUSAGE_SELF), time.process_time(), \
                time.perf_counter()
            c()
            times[k].append(time.perf_counter() - t)
            cpu[k].append(time.process_time() - p)
            faults[k].append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - r.ru_minflt)
    ref = "jax jit" if "jax jit" in times else "numpy by hand (BLAS)"
    base = np.median(times[ref])
    print(f"BLAS: {_blas()}; load {os.getloadavg()}; {rounds} rounds")
    for k, ts in times.items():
        m = np.median(ts)
        print(f"{k:22s} {m * 1e3:7.2f} ms  min {min(ts) * 1e3:7.2f}  ({m / base:.2f}x {ref})"
              f"  cpu {np.median(cpu[k]) * 1e3:6.2f} ms  minflt {np.median(faults[k]):5.0f}")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
