"""Memory kept per compiled-then-dropped function: symgrad beside numba's own floor.

    python benchmarks/memory_per_function.py [--count 60] [--warmup 10]
                                             [--json benchmarks/results/memory_per_function.json]

Each case runs in a fresh subprocess with empty symgrad and numba caches (temporary
folders). It compiles ``warmup`` distinct functions, calls each once and drops it, then
measures RSS (``/proc/self/statm``) after ``gc.collect()`` (and again after glibc's
``malloc_trim(0)``, which returns freed heap pages to the system); then ``count`` more
functions the same way, and prints the RSS added per function.

* ``numba``: a hand-written ``numba.njit`` loop per function (exec'd source with its own
  constant): value and gradient of ``sum(sin(x*c) * x + c)``, one loop; numba's floor
  (what numba keeps per compiled function: its LLVM code, the dispatcher's overloads).
* ``symgrad``: ``sg.function([x], [loss] + sg.gradients(loss, [x]))`` with the same loss
  and its own constant (a distinct key, a distinct module).
* ``symgrad-cleared``: as ``symgrad``, with ``sg.clear_caches()`` after each function.

The target of issue 24 is symgrad at most 1.5x numba's floor.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import gc
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

NUMBA_SOURCE = '''
import math
import numba

@numba.njit(error_model="numpy")
def value_and_grad(x, out):
    s = 0.0
    for i in range(x.shape[0]):
        t = math.sin(x[i] * {c})
        s += t * x[i] + {c}
        out[i] = math.cos(x[i] * {c}) * {c} * x[i] + t
    return s
'''


def rss_kb() -> float:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1024


def _trim() -> None:
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:
        pass


def _numba_one(k: int) -> None:
    import numpy as np
    ns: dict = {}
    exec(NUMBA_SOURCE.format(c=1.0 + k / 997.0), ns)   # noqa: S102 - our own text
    x = np.linspace(0, 1, 8)
    ns["value_and_grad"](x, np.empty_like(x))


def _symgrad_one(k: int, clear: bool) -> None:
    import numpy as np
    import symgrad as sg
    x = sg.placeholder("x", shape=(None,))
    c = 1.0 + k / 997.0
    loss = sg.reduce_sum(sg.sin(x * c) * x + c)
    f = sg.function([x], [loss] + sg.gradients(loss, [x]))
    f(np.linspace(0, 1, 8))
    del f, loss, x
    if clear:
        sg.clear_caches()


def measure(case: str, count: int, warmup: int) -> dict:
    """Run in this process (a fresh subprocess): KB kept per function."""
    one = {"numba": _numba_one,
           "symgrad": lambda k: _symgrad_one(k, False),
           "symgrad-cleared": lambda k: _symgrad_one(k, True)}[case]
    for k in range(warmup):
        one(k)
    gc.collect()
    before, _ = rss_kb(), _trim()
    before_trim = rss_kb()
    for k in range(warmup, warmup + count):
        one(k)
    gc.collect()
    after, _ = rss_kb(), _trim()
    after_trim = rss_kb()
    result = {"case": case, "count": count, "warmup": warmup,
              "kb_per_function": (after - before) / count,
              "kb_per_function_trimmed": (after_trim - before_trim) / count,
              "rss_mb_end": after_trim / 1024}
    if case.startswith("symgrad"):
        import symgrad as sg
        result["cache_sizes"] = sg.cache_info()
    return result


def run_case(case: str, count: int, warmup: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, SYMGRAD_CACHE_DIR=os.path.join(tmp, "sg"),
                   NUMBA_CACHE_DIR=os.path.join(tmp, "nb"),
                   PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        out = subprocess.run([sys.executable, __file__, "--child", case, "--count", str(count),
                              "--warmup", str(warmup)], env=env, capture_output=True,
                             text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--cases", default="numba,symgrad,symgrad-cleared")
    parser.add_argument("--json", default=os.path.join(ROOT, "benchmarks", "results",
                                                       "memory_per_function.json"))
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, args.count, args.warmup)))
        return
    rows = [run_case(c, args.count, args.warmup) for c in args.cases.split(",")]
    floor = next((r for r in rows if r["case"] == "numba"), None)
    print(f"{'case':<16} {'KB/function':>12} {'trimmed':>9} {'x numba':>8} {'RSS end MB':>11}")
    for r in rows:
        ratio = r["kb_per_function_trimmed"] / floor["kb_per_function_trimmed"] \
            if floor and floor["kb_per_function_trimmed"] > 0 else float("nan")
        r["ratio_to_numba_trimmed"] = ratio
        print(f"{r['case']:<16} {r['kb_per_function']:>12.0f} "
              f"{r['kb_per_function_trimmed']:>9.0f} {ratio:>8.2f} {r['rss_mb_end']:>11.0f}")
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump({"when": datetime.datetime.now().isoformat(timespec="seconds"),
                   "python": sys.version.split()[0], "rows": rows}, f, indent=1)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
