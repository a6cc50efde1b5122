"""W4 side by side in one process, interleaved: symgrad cpu, symgrad parallel, JAX jit.

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python benchmarks/w4_side.py [rounds] [gap_ms]

``gap_ms`` (default 0) sleeps between calls: a system's worker threads spin for a while
after its work (XLA's pool, OpenMP), which slows whichever system runs next on 2 cores.
"""
import sys
import time

import numpy as np

from benchmarks import frameworks
from benchmarks.workloads import w4_mlp as w


def main(rounds: int = 15, gap_ms: int = 0) -> None:
    data = w.make_data(w.cases(False)[0])
    calls = {"symgrad cpu": frameworks.symgrad_factory(w, "cpu")(data),
             "symgrad parallel": frameworks.symgrad_factory(w, "parallel")(data),
             "jax jit": frameworks.jax_factory(w)(data)}
    times: dict = {k: [] for k in calls}
    for c in calls.values():
        c()
        c()
    for _ in range(rounds):
        for k, c in calls.items():
            time.sleep(gap_ms / 1e3)
            t = time.perf_counter()
            c()
            times[k].append(time.perf_counter() - t)
    jax = np.median(times["jax jit"])
    for k, ts in times.items():
        m = np.median(ts)
        print(f"{k:18s} {m * 1e3:7.2f} ms  ({m / jax:.2f}x jax)")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
