"""Minor page faults, CPU time and wall time per call of W1, W4 and W7 with the workspace
(compile/cpu/workspace.py) on and off, interleaved in one process.

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python benchmarks/workspace_faults.py [rounds] [W4 W1 W7]
                                                                          [jax]

``jax``: JAX jit's call of the same workload runs in the rotation too (when installed): its
allocations change glibc's heap state, and with it whether fresh temporaries fault.
"""
import os
import resource
import sys
import time

import numpy as np

from benchmarks import frameworks
from benchmarks.workloads import w1_elementwise, w4_mlp, w7_stencil2d  # noqa: F401

WORKLOADS = {"W1": w1_elementwise, "W4": w4_mlp, "W7": w7_stencil2d}


def _function(call):
    """The CompiledFunction a benchmark closure calls."""
    for cell in call.__closure__ or ():
        v = cell.cell_contents
        if hasattr(v, "release_buffers"):
            return v
    raise LookupError("no compiled function in the closure")


def _one(call) -> tuple:
    r0, c0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.process_time(), \
        time.perf_counter()
    call()
    t1, c1, r1 = time.perf_counter(), time.process_time(), resource.getrusage(resource.RUSAGE_SELF)
    return t1 - t0, c1 - c0, r1.ru_minflt - r0.ru_minflt


def main(rounds: int = 21, names=("W4", "W1", "W7"), with_jax: bool = False) -> None:
    print(f"load {os.getloadavg()}; {rounds} rounds; median per call")
    for name in names:
        w = WORKLOADS[name]
        data = w.make_data(w.cases(False)[0])
        for target in ("cpu", "parallel"):
            call = frameworks.symgrad_factory(w, target)(data)
            f = _function(call)
            times = {True: [], False: [], "jax": []}
            other = frameworks.jax_factory(w)(data) if with_jax else None
            for _ in range(3):
                call()
                other and other()
            for _ in range(rounds):
                for on in (True, False):
                    f.workspaces.enabled = on   # off: fresh buffers, the kept ones stay
                    times[on].append(_one(call))
                if other:
                    times["jax"].append(_one(other))
            if other:
                wall, cpu, flt = (np.median([t[k] for t in times["jax"]]) for k in range(3))
                print(f"{name} jax jit: wall {wall * 1e3:7.2f} ms  cpu {cpu * 1e3:7.2f} ms  "
                      f"minflt {flt:6.0f}")
            for on in (True, False):
                wall, cpu, flt = (np.median([t[k] for t in times[on]]) for k in range(3))
                print(f"{name} {target:8s} workspace {'on ' if on else 'off'}: wall "
                      f"{wall * 1e3:7.2f} ms  cpu {cpu * 1e3:7.2f} ms  minflt {flt:6.0f}  "
                      f"kept {f.workspaces.nbytes() / 2**20:.1f} MiB")


if __name__ == "__main__":
    args = sys.argv[2:]
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 21,
         tuple(a for a in args if a != "jax") or ("W4", "W1", "W7"), "jax" in args)
