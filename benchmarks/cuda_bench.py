"""GPU benchmark: symgrad target="cuda" against PyTorch CUDA autograd and
jax.jit(value_and_grad), float32 and float64, with bytes-moved / bandwidth floors.

    python -m benchmarks.cuda_bench [--quick] [--dtype float32|float64] [--only W1,W3,W4]
    python -m benchmarks.cuda_bench --smoke     # tiny sizes, symgrad only, runs under the
                                                # simulator (NUMBA_ENABLE_CUDASIM=1) too

Workloads: W1 (N = 1e7, 1e8), W3 (N = 3000, 20000), W4 (B = 4096). Inputs live on the
device before timing: symgrad gets CuPy arrays (and, as extra rows, numba device arrays
and torch CUDA tensors through DLPack, when installed), torch CUDA tensors, jax device
arrays; every timed call ends with a device synchronize; the median of the timed calls
is reported. The floor is the bytes the call must read and write once; floor / time is
the bandwidth achieved, shown next to the device's peak (memory clock x bus width). The
run ends with the issue-18 table (median ms per system). Exits 0 with a message when no
GPU is present. Needs ``pip install symgrad[cuda]`` (numba-cuda, CuPy).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

CASES = {"W1": [{"N": 10**7}, {"N": 10**8}],
         "W3": [{"N": 3000}, {"N": 20000}],
         "W4": [{"B": 4096, "D": 64, "H": 256}]}
QUICK = {"W1": [{"N": 10**6}], "W3": [{"N": 1000}], "W4": [{"B": 1024, "D": 64, "H": 256}]}
SMOKE = {"W1": [{"N": 64}], "W3": [{"N": 8}], "W4": [{"B": 8, "D": 4, "H": 6}]}
MODULES = {"W1": "w1_elementwise", "W3": "w3_pair_potential", "W4": "w4_mlp"}


def gpu_or_exit(smoke: bool = False):
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" and smoke:
        from numba import cuda
        return cuda
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        print("cuda_bench: NUMBA_ENABLE_CUDASIM=1 (simulator); timings need a real GPU")
        sys.exit(0)
    try:
        from numba import cuda
        ok = cuda.is_available()
    except Exception as exc:  # noqa: BLE001 - no numba.cuda, no driver
        print(f"cuda_bench: numba.cuda is unusable here ({exc}); nothing to time")
        sys.exit(0)
    if not ok:
        print("cuda_bench: no GPU found; nothing to time (run on a machine with a GPU)")
        sys.exit(0)
    return cuda


def peak_bandwidth(cuda) -> float:
    """Bytes/s: memory clock (kHz) x bus width (bits) x 2 (DDR) / 8."""
    dev = cuda.get_current_device()
    clock = getattr(dev, "MEMORY_CLOCK_RATE", 0)
    width = getattr(dev, "GLOBAL_MEMORY_BUS_WIDTH", 0)
    return clock * 1e3 * width * 2 / 8


def floor_bytes(key: str, case: dict, itemsize: int) -> int:
    """What one value-and-gradient call must move at least once."""
    if key == "W1":
        return 4 * case["N"] * itemsize                 # read x, y; write dx, dy
    if key == "W3":
        n = case["N"]
        return n * n + 2 * 3 * n * itemsize             # read the bool mask; P in, dP out
    b, d, h = case["B"], case["D"], case["H"]
    params = d * h + h + h + 1
    return (b * d + b + 2 * params) * itemsize          # X, Y in; params in, grads out


def load(key: str):
    import importlib
    return importlib.import_module(f"benchmarks.workloads.{MODULES[key]}")


def data_for(mod, case: dict, dtype: str) -> dict:
    data = mod.make_data(dict(case, label=""))
    return {k: (v.astype(dtype) if v.dtype.kind == "f" else v) for k, v in data.items()}


def time_call(call, sync, repeats: int = 7) -> float:
    """Median seconds of ``repeats`` synchronised calls, after one warm-up call."""
    call()
    sync()                                              # compile + warm up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        call()
        sync()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def names(mod):
    return (tuple(getattr(mod, "DIFF", ())), tuple(getattr(mod, "INPUTS", ())),
            tuple(getattr(mod, "CONSTS", ())))


def symgrad_function(mod, data, target: str = "cuda"):
    """symgrad's value-and-gradients function of a workload for ``target``."""
    from benchmarks.frameworks import _sg_ops
    ops = _sg_ops()
    sg = ops.mod
    diff, inputs, consts = names(mod)
    phs = [sg.placeholder(n, shape=data[n].shape, dtype=data[n].dtype.name)
           for n in diff + inputs]
    value = getattr(mod, "symgrad_loss", mod.loss)(ops, *phs, *[ops.const(data[n])
                                                                 for n in consts])
    return sg.function(phs, [value, *sg.gradients(value, phs[:len(diff)])], target=target)


def symgrad_call(mod, data, cuda, kind: str = "cupy"):
    """symgrad's value-and-gradients call on device arrays of ``kind``: 'cupy',
    'numba' (device arrays) or 'torch' (CUDA tensors, taken through DLPack)."""
    diff, inputs, _ = names(mod)
    f = symgrad_function(mod, data)
    for line in f.explain().splitlines():   # W3: which pair rule the device nest uses
        if "(tiled device kernel" in line:
            print(f"  symgrad plan: {line.strip()}")
    if kind == "cupy":
        import cupy
        args = [cupy.asarray(data[n]) for n in diff + inputs]
    elif kind == "torch":
        import torch
        args = [torch.tensor(data[n], device="cuda") for n in diff + inputs]
    else:
        args = [cuda.to_device(data[n]) for n in diff + inputs]
    return lambda: f(*args)


def torch_call(mod, data):
    import torch
    from benchmarks.frameworks import _torch
    _, ops = _torch()
    diff, inputs, consts = names(mod)
    dev = [torch.tensor(data[n], device="cuda", requires_grad=True) for n in diff]
    rest = [torch.tensor(data[n], device="cuda") for n in inputs + consts]

    def call():
        for t in dev:
            t.grad = None
        value = mod.loss(ops, *dev, *rest)
        value.backward()
        return value
    return call, torch.cuda.synchronize


def jax_call(mod, data):
    from benchmarks.frameworks import _jax
    jax, jnp, ops = _jax()
    diff, inputs, consts = names(mod)
    gpu = jax.devices("gpu")[0]
    args = [jax.device_put(jnp.asarray(data[n]), gpu) for n in diff + inputs + consts]
    vg = jax.jit(jax.value_and_grad(lambda *a: mod.loss(ops, *a),
                                    argnums=tuple(range(len(diff)))))
    return lambda: jax.block_until_ready(vg(*args)), lambda: None


def run(key, case, dtype, cuda, peak):
    mod = load(key)
    data = data_for(mod, case, dtype)
    floor = floor_bytes(key, case, np.dtype(dtype).itemsize)
    label = ", ".join(f"{k}={v:.0e}" if v >= 10**6 else f"{k}={v}" for k, v in case.items())
    at_peak = f" = {floor / peak * 1e3:.3f} ms at peak {peak / 1e9:.0f} GB/s" if peak else ""
    print(f"\n{key} {label} {dtype}: floor {floor / 1e6:.1f} MB{at_peak}")
    systems = [(SYMGRAD, lambda: (symgrad_call(mod, data, cuda, "cupy"), cuda.synchronize)),
               ("symgrad cuda, numba in", lambda: (symgrad_call(mod, data, cuda, "numba"),
                                                   cuda.synchronize)),
               ("symgrad cuda, torch in", lambda: (symgrad_call(mod, data, cuda, "torch"),
                                                   cuda.synchronize)),
               (TORCH, lambda: torch_call(mod, data)),
               (JAX, lambda: jax_call(mod, data))]
    base = None
    rows = []
    for name, make in systems:
        try:
            call, sync = make()
            t = time_call(call, sync)
        except ImportError as exc:
            print(f"  {name:26s} not installed ({exc})")
            continue
        except Exception as exc:  # noqa: BLE001 - report and go on with the others
            reason = "not installed" if type(exc).__name__ == "NotInstalled" else "failed"
            print(f"  {name:26s} {reason}: {type(exc).__name__}: {str(exc)[:120]}")
            rows.append({"system": name, "error": f"{type(exc).__name__}: {str(exc)[:200]}"})
            _release_memory()
            continue
        base = base or t
        print(f"  {name:26s} {t * 1e3:9.3f} ms  {floor / t / 1e9:7.1f} GB/s  "
              f"x{t / base:.2f} of symgrad")
        rows.append({"system": name, "seconds": t, "gb_per_s": floor / t / 1e9})
        _release_memory()
    return {"workload": key, "case": case, "dtype": dtype, "floor_bytes": floor, "rows": rows}


SYMGRAD, TORCH, JAX = "symgrad cuda", "torch cuda autograd", "jax.jit(value_and_grad)"


def issue_table(results: list) -> str:
    """The issue-18 table: one row per workload, case and dtype; median ms per system."""
    systems = [SYMGRAD, JAX, TORCH]
    lines = ["| workload | " + " | ".join(systems) + " |",
             "|---|" + "---|" * len(systems)]
    for r in results:
        case = ", ".join(f"{k}={v:.0e}" if v >= 10**6 else f"{k}={v}"
                         for k, v in r["case"].items())
        cells = []
        for name in systems:
            row = next((x for x in r["rows"] if x["system"] == name), None)
            cells.append("-" if row is None else "failed" if "error" in row
                         else f"{row['seconds'] * 1e3:.3g} ms")
        lines.append(f"| {r['workload']} {case} {r['dtype']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _release_memory() -> None:
    """Give cached device memory back between systems (one process holds all three)."""
    import gc
    gc.collect()
    try:
        import cupy
        cupy.get_default_memory_pool().free_all_blocks()
    except Exception:  # noqa: BLE001 - CuPy absent
        pass
    try:
        import torch
        torch.cuda.empty_cache()
    except Exception:  # noqa: BLE001 - torch absent or without CUDA
        pass


def smoke(cuda, dtypes) -> int:
    """Tiny sizes, symgrad only (numba device arrays in): compiles and runs every workload
    on the device (or the simulator), checks the values against target="cpu" and prints
    the issue-18 table. Returns 1 when a value differs."""
    import warnings
    warnings.filterwarnings("ignore", category=RuntimeWarning)   # the simulator's scalars
    results, bad = [], 0
    for key, cases in SMOKE.items():
        mod = load(key)
        for case in cases:
            for dtype in dtypes:
                data = data_for(mod, case, dtype)
                diff, inputs, _ = names(mod)
                host = [data[n] for n in diff + inputs]
                want = symgrad_function(mod, data, "cpu")(*host)
                got = symgrad_function(mod, data)(*[cuda.to_device(a) for a in host])
                tol = 1e-4 if dtype == "float32" else 1e-9
                ok = all(np.allclose(g.copy_to_host(), w, rtol=tol, atol=tol)
                         for g, w in zip(got, want))
                bad += not ok
                t = time_call(symgrad_call(mod, data, cuda, "numba"), cuda.synchronize, 1)
                print(f"{key} {case} {dtype}: {t * 1e3:.3f} ms, values "
                      f"{'agree with' if ok else 'DIFFER from'} target='cpu'")
                results.append({"workload": key, "case": case, "dtype": dtype,
                                "rows": [{"system": SYMGRAD, "seconds": t}]})
    print("\n" + issue_table(results))
    return 1 if bad else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes")
    parser.add_argument("--dtype", choices=("float32", "float64"), action="append")
    parser.add_argument("--only", default="W1,W3,W4")
    parser.add_argument("--json", default="benchmarks/results/cuda_bench.json",
                        help="where to write the figures")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes, symgrad only, values checked against the cpu "
                             "target; runs under the simulator too (no figures written)")
    args = parser.parse_args(argv)
    cuda = gpu_or_exit(args.smoke)
    if args.smoke:
        return smoke(cuda, args.dtype or ("float32", "float64"))
    peak = peak_bandwidth(cuda)
    print(f"device: {cuda.get_current_device().name}")
    table = QUICK if args.quick else CASES
    results = []
    for key in args.only.split(","):
        for case in table[key]:
            for dtype in args.dtype or ("float32", "float64"):
                results.append(run(key, case, dtype, cuda, peak))
    os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
    with open(args.json, "w") as fh:
        json.dump({"device": cuda.get_current_device().name.decode()
                   if isinstance(cuda.get_current_device().name, bytes)
                   else str(cuda.get_current_device().name),
                   "peak_bytes_per_s": peak, "results": results}, fh, indent=1)
    print("\n" + issue_table(results))
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
