"""Runner, cross-check, timing, memory measurement, table and JSON output.

A workload module (benchmarks/workloads/wN_*.py) provides

  TITLE                  one line
  KIND                   "array" | "latency" | "compile"
  cases(quick)           list of dicts, each with at least "label"
  make_data(case)        deterministic (seeded) inputs; a dict
  systems()              {system name: factory};  factory(data) -> call
                         call(*data.get("call_args", ())) -> [value, grads...]
  REFERENCE              name of the reference system (default "numpy by hand")
  run_compile(case, opts)  only for KIND == "compile": returns result rows

Every system is first called once (warm-up, includes JIT compilation) and its
outputs are cross-checked against the reference (rtol 1e-8, see ``check``);
a mismatching system is reported as WRONG and not timed.
"""

import ctypes
import gc
import importlib
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
import traceback
import tracemalloc

import numpy as np

from benchmarks.frameworks import NotInstalled

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASELINE = "numba by hand serial"

RTOL = 1e-8
# absolute slack relative to the largest reference entry of that output: sums
# of many terms (forces, batch gradients) carry cancellation error ~eps*sum|t|.
ATOL_REL = 1e-10


# ----------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------

def load_workload(key):
    from benchmarks.workloads import WORKLOADS
    return importlib.import_module(WORKLOADS[key])


def short_error(exc, limit=160):
    msg = f"{type(exc).__name__}: {exc}".strip().replace("\n", " ")
    return msg if len(msg) <= limit else msg[:limit - 3] + "..."


def to_numpy_list(outs):
    if not isinstance(outs, (list, tuple)):
        outs = [outs]
    res = []
    for o in outs:
        if o is None:
            res.append(None)
            continue
        if hasattr(o, "detach"):  # torch
            o = o.detach().cpu().numpy()
        res.append(np.asarray(o, dtype=np.float64))
    return res


def check(outs, ref):
    """Compare outputs with the reference; return (ok, max_rel_err, message)."""
    outs = to_numpy_list(outs)
    if len(outs) != len(ref):
        return False, math.inf, f"{len(outs)} outputs, expected {len(ref)}"
    worst = 0.0
    for i, (o, r) in enumerate(zip(outs, ref)):
        if o is None:
            return False, math.inf, f"output {i} is None"
        if o.shape != r.shape:
            if o.size == r.size == 1:
                o = o.reshape(r.shape)
            else:
                return False, math.inf, f"output {i} shape {o.shape}, expected {r.shape}"
        scale = float(np.max(np.abs(r))) if r.size else 0.0
        atol = ATOL_REL * scale
        err = np.abs(o - r)
        if not np.all(np.isfinite(o) == np.isfinite(r)):
            return False, math.inf, f"output {i}: non-finite entries differ"
        with np.errstate(invalid="ignore"):
            ok = np.all((err <= RTOL * np.abs(r) + atol) | (o == r))
        rel = float(np.nanmax(err)) / scale if scale > 0 and err.size else 0.0
        worst = max(worst, rel)
        if not ok:
            return False, worst, f"output {i} differs (max abs err {float(np.nanmax(err)):.3g}, scale {scale:.3g})"
    return True, worst, ""


def time_runs(call, args, target_s, min_runs, max_runs):
    """One untimed-but-measured call sizes the number of runs; returns times."""
    t0 = time.perf_counter()
    call(*args)
    probe = time.perf_counter() - t0
    n = int(target_s / max(probe, 1e-7))
    n = max(min_runs, min(max_runs, n))
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        call(*args)
        times.append(time.perf_counter() - t0)
    return times


def time_latency(call, args, n_calls, repeats):
    """Median over ``repeats`` batches of seconds per call."""
    per_call = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n_calls):
            call(*args)
        per_call.append((time.perf_counter() - t0) / n_calls)
    return per_call


def tracemalloc_peak(call, args):
    """Peak bytes allocated through tracked allocators (NumPy's and Python's;
    numba's NRT arrays are tracked as well) during one call."""
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        out = call(*args)
        peak = tracemalloc.get_traced_memory()[1]
        del out
    finally:
        tracemalloc.stop()
    return max(0, peak - base)


# ----------------------------------------------------------------------------
# RSS-based peak memory in a fresh subprocess
# ----------------------------------------------------------------------------

def _proc_status_kb():
    vals = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(("VmRSS:", "VmHWM:")):
                vals[line.split(":")[0]] = int(line.split()[1])
    return vals


def _malloc_trim():
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except Exception:
        pass


def mem_probe_main(argv=None):
    """Subprocess entry: python -c '...mem_probe_main()' WKEY CASE_INDEX SYSTEM QUICK"""
    argv = sys.argv[1:] if argv is None else argv
    wkey, idx, system, quick = argv[0], int(argv[1]), argv[2], argv[3] == "1"
    res = {"ok": False}
    try:
        mod = load_workload(wkey)
        case = mod.cases(quick)[idx]
        data = mod.make_data(case)
        args = tuple(data.get("call_args", ()))
        call = mod.systems()[system](data)
        for _ in range(2):
            out = call(*args)
            del out
        gc.collect()
        _malloc_trim()
        base = _proc_status_kb()["VmRSS"]
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")  # reset the peak-RSS high-water mark to the current RSS
        out = call(*args)
        hwm = _proc_status_kb()["VmHWM"]
        del out
        res = {"ok": True, "peak_rss_mb": (hwm - base) / 1024.0}
    except Exception as exc:
        res = {"ok": False, "error": short_error(exc)}
    sys.stdout.write("MEMPROBE " + json.dumps(res) + "\n")
    sys.stdout.flush()


def rss_peak_subprocess(wkey, case_index, system, quick, timeout=300):
    env = dict(os.environ)
    # a fixed mmap threshold disables glibc's dynamic threshold, so freed big
    # arrays go back to the OS and a later call's allocations show up in RSS
    env["MALLOC_MMAP_THRESHOLD_"] = "65536"
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, "-c",
           "from benchmarks import harness; harness.mem_probe_main()",
           wkey, str(case_index), system, "1" if quick else "0"]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           cwd=ROOT, env=env)
    except subprocess.TimeoutExpired:
        return None, "memory probe timed out"
    for line in p.stdout.splitlines():
        if line.startswith("MEMPROBE "):
            r = json.loads(line[len("MEMPROBE "):])
            if r.get("ok"):
                return r["peak_rss_mb"], None
            return None, r.get("error")
    return None, (p.stderr.strip().splitlines() or ["memory probe failed"])[-1][:160]


# ----------------------------------------------------------------------------
# running a workload
# ----------------------------------------------------------------------------

def _row(wkey, mod, case, system, **kw):
    row = {"workload": wkey, "title": mod.TITLE, "case": case["label"], "system": system,
           "status": "ok", "detail": "", "unit": "s", "median": None, "runs": 0,
           "times": [], "ratio_vs_numba_serial": None, "peak_rss_mb": None,
           "peak_tracemalloc_mb": None, "max_rel_err": None}
    row.update(kw)
    return row


def run_array_case(wkey, mod, case_index, case, opts, log):
    quick = opts["quick"]
    data = mod.make_data(case)
    args = tuple(data.get("call_args", ()))
    latency = getattr(mod, "KIND", "array") == "latency"
    systems = mod.systems()
    ref_name = getattr(mod, "REFERENCE", "numpy by hand")
    ref = to_numpy_list(systems[ref_name](data)(*args))
    rows = []
    for name, factory in systems.items():
        if opts.get("systems") and name not in opts["systems"] and name not in (ref_name, BASELINE):
            continue
        log(f"  [{wkey} {case['label']}] {name} ...")
        try:
            t0 = time.perf_counter()
            call = factory(data)
            outs = call(*args)  # warm-up, includes JIT compilation
            setup = time.perf_counter() - t0
        except NotInstalled as exc:
            rows.append(_row(wkey, mod, case, name, status="not installed", detail=str(exc)[:120]))
            continue
        except Exception as exc:
            if opts.get("verbose"):
                traceback.print_exc()
            rows.append(_row(wkey, mod, case, name, status="error", detail=short_error(exc)))
            continue
        ok, err, msg = check(outs, ref)
        del outs
        if not ok:
            rows.append(_row(wkey, mod, case, name, status="WRONG", detail=msg, max_rel_err=err))
            continue
        row = _row(wkey, mod, case, name, max_rel_err=err, setup_s=setup)
        try:
            if latency:
                n_calls = case["calls"]
                times = time_latency(call, args, n_calls, opts["latency_repeats"])
                row.update(unit="s/call", calls_per_run=n_calls)
            else:
                times = time_runs(call, args, opts["target_s"], opts["min_runs"], opts["max_runs"])
            row["times"] = times
            row["runs"] = len(times)
            row["median"] = statistics.median(times)
            if not latency:
                row["peak_tracemalloc_mb"] = tracemalloc_peak(call, args) / 2**20
        except Exception as exc:
            row.update(status="error", detail="during timing: " + short_error(exc))
        del call
        gc.collect()
        if not latency and opts["memory"] and row["status"] == "ok":
            mb, why = rss_peak_subprocess(wkey, case_index, name, quick)
            row["peak_rss_mb"] = mb
            if why:
                row["detail"] = (row["detail"] + " rss probe: " + why).strip()
        rows.append(row)
    base = next((r["median"] for r in rows if r["system"] == BASELINE and r["median"]), None)
    for r in rows:
        if base and r["median"]:
            r["ratio_vs_numba_serial"] = r["median"] / base
    return rows


def run_workload(wkey, opts, log):
    mod = load_workload(wkey)
    rows = []
    for i, case in enumerate(mod.cases(opts["quick"])):
        if getattr(mod, "KIND", "array") == "compile":
            rows.extend(mod.run_compile(wkey, case, opts, log))
        else:
            rows.extend(run_array_case(wkey, mod, i, case, opts, log))
    return rows


# ----------------------------------------------------------------------------
# output
# ----------------------------------------------------------------------------

def fmt_time(sec, unit):
    if sec is None:
        return ""
    if unit == "s/call":
        return f"{sec * 1e6:.2f} us/call"
    if sec < 1e-3:
        return f"{sec * 1e6:.1f} us"
    if sec < 1:
        return f"{sec * 1e3:.2f} ms"
    return f"{sec:.3f} s"


def format_table(rows):
    head = ["workload", "case", "system", "median", "x numba serial", "runs",
            "peak MB (RSS)", "peak MB (tracemalloc)", "status"]
    lines = []
    for r in rows:
        status = r["status"] if r["status"] == "ok" else (
            f"{r['status']}: {r['detail']}" if r["detail"] else r["status"])
        if r["status"] == "ok" and r.get("detail"):
            status = "ok (" + r["detail"] + ")"
        lines.append([
            r["workload"], r["case"], r["system"], fmt_time(r["median"], r["unit"]),
            "" if r["ratio_vs_numba_serial"] is None else f"{r['ratio_vs_numba_serial']:.2f}",
            str(r["runs"]) if r["runs"] else "",
            "" if r["peak_rss_mb"] is None else f"{r['peak_rss_mb']:.1f}",
            "" if r["peak_tracemalloc_mb"] is None else f"{r['peak_tracemalloc_mb']:.1f}",
            status,
        ])
    widths = [max(len(h), *(len(l[i]) for l in lines)) if lines else len(h)
              for i, h in enumerate(head)]
    widths[-1] = len(head[-1])
    out = [" | ".join(h.ljust(w) for h, w in zip(head, widths)),
           "-|-".join("-" * w for w in widths)]
    prev = None
    for l in lines:
        key = (l[0], l[1])
        if prev is not None and key != prev:
            out.append("-|-".join("-" * w for w in widths))
        prev = key
        out.append(" | ".join(c.ljust(w) for c, w in zip(l, widths)))
    return "\n".join(out)


def machine_info():
    info = {"python": sys.version.split()[0], "platform": platform.platform(),
            "cpu_count": os.cpu_count(), "numpy": np.__version__}
    for mod in ("numba", "sympy", "jax", "torch", "pytensor", "symgrad"):
        try:
            m = importlib.import_module(mod)
            info[mod] = getattr(m, "__version__", "?")
        except Exception:
            info[mod] = None
    try:
        info["loadavg_1_5_15"] = os.getloadavg()
    except OSError:
        pass
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        with open("/proc/meminfo") as fh:
            info["mem_total_gib"] = round(int(fh.readline().split()[1]) / 2**20, 1)
    except OSError:
        pass
    return info


def write_json(path, payload):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(_finite(payload), fh, indent=1, default=_json_default)
    os.replace(tmp, path)


def _finite(o):
    """inf/nan are not JSON: write them as null."""
    if isinstance(o, float) and not math.isfinite(o):
        return None
    if isinstance(o, dict):
        return {k: _finite(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_finite(v) for v in o]
    return o


def _json_default(o):
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    return str(o)
