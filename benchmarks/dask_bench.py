"""symgrad on dask: W1 and W4 in chunks, 1 vs 2 workers, against the in-memory call.

    python benchmarks/dask_bench.py [--rows 2e7] [--w4-rows 2e5] [--chunks 8] [--repeats 3]
                                    [--json benchmarks/results/dask.json]

For each workload the inputs are generated once (dask.array random, ``--chunks`` equal
chunks along the rows), held in memory (numpy for the in-memory call; persisted chunks
for dask), and each system computes the value and all gradients:

* ``in-memory``: the compiled function on numpy arrays (target cpu, one thread);
* ``threads k``: the same function on the dask arrays, threaded scheduler, k threads;
* ``cluster k``: a ``LocalCluster`` of k worker processes with one thread each, inputs
  persisted on the workers.

Dask results are persisted (they stay in chunks where they were computed, as a pipeline
would keep them), not gathered into one array. Times are the best of ``--repeats`` after
one warm-up call (which compiles the kernels, in every worker process too). The W4 MLP
(64 features, 256 hidden units) costs about 7-30 us per row, so its default is 1e5 rows.
BLAS runs one thread per process (set before numpy is imported), as the workers do.
"""

import argparse
import datetime
import json
import math
import os
import platform
import sys
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")      # one BLAS thread per worker: no oversubscription
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from symgrad.extras import require  # noqa: E402

dask = require("dask", extra="dask", why="benchmarks/dask_bench.py")
da = require("dask.array", extra="dask", why="benchmarks/dask_bench.py")
import numpy as np  # noqa: E402

import symgrad as sg  # noqa: E402
from benchmarks.workloads import w4_mlp  # noqa: E402


def w1(rows, chunk):
    x = sg.placeholder("x", shape=(None,))
    y = sg.placeholder("y", shape=(None,))
    loss = sg.reduce_sum(sg.sin(x) * sg.exp(-y**2) + sg.log1p(x**2 * y**2))
    f = sg.function([x, y], [loss] + sg.gradients(loss, [x, y]))
    rng = da.random.default_rng(1)
    inputs = [rng.uniform(-2.0, 2.0, rows, chunks=chunk),
              rng.uniform(-2.0, 2.0, rows, chunks=chunk)]
    return f, inputs, []


def w4(rows, chunk):
    params = w4_mlp.make_data({"B": 1, "D": 64, "H": 256})
    names = ("W1", "b1", "W2", "b2")
    ps = [sg.placeholder(n, shape=params[n].shape) for n in names]
    X = sg.placeholder("X", shape=(None, 64))
    Y = sg.placeholder("Y", shape=(None, 1))
    W1, b1, W2, b2 = ps
    loss = sg.reduce_mean(sg.square(sg.tanh(X @ W1 + b1) @ W2 + b2 - Y))
    f = sg.function([X, Y] + ps, [loss] + sg.gradients(loss, ps))
    rng = da.random.default_rng(4)
    inputs = [rng.normal(size=(rows, 64), chunks=(chunk, 64)),
              rng.normal(size=(rows, 1), chunks=(chunk, 1))]
    return f, inputs, [params[n] for n in names]


def best(call, repeats):
    call()                                         # warm-up: compiles
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
    return min(times)


def measure(name, build, rows, chunks, repeats, cluster_sizes):
    chunk = math.ceil(rows / chunks)
    f, lazy, params = build(rows, chunk)
    local = [a.compute() for a in lazy]
    held = list(dask.persist(*lazy, scheduler="threads"))
    want = f(*local, *params)
    out = {"workload": name, "rows": rows, "chunks": len(held[0].chunks[0]),
           "chunk_rows": chunk}
    out["in-memory"] = best(lambda: f(*local, *params), repeats)
    for k in (1, 2):
        def threaded():
            return dask.persist(*f(*held, *params), scheduler="threads", num_workers=k)
        out[f"threads {k}"] = best(threaded, repeats)
    got = dask.compute(*f(*held, *params), scheduler="threads")
    out["max_rel_err"] = max(float(np.max(np.abs(g - w)) / max(np.max(np.abs(w)), 1e-300))
                             for g, w in zip(got, want))
    for k in cluster_sizes:
        out[f"cluster {k}"] = cluster_time(f, lazy, params, k, repeats)
    return out


def cluster_time(f, lazy, params, workers, repeats):
    from dask.distributed import Client, LocalCluster, wait

    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        held = client.persist(lazy)
        wait(held)
        scattered = [da.from_array(p) for p in params]

        def run():
            result = client.persist(f(*held, *scattered))
            wait(result)
        return best(run, repeats)


def table(rows):
    systems = [k for k in rows[0] if k == "in-memory" or k.startswith(("threads", "cluster"))]
    head = f"{'workload':8} {'rows':>8} {'chunks':>6} " + " ".join(
        f"{s:>16}" for s in systems) + "  max rel err"
    lines = [head, "-" * len(head)]
    for r in rows:
        base = r["in-memory"]
        cells = []
        for s in systems:
            text = f"{r[s]:.3f} s" + ("" if s == "in-memory" else f" x{r[s] / base:.2f}")
            cells.append(f"{text:>16}")
        lines.append(f"{r['workload']:8} {r['rows']:>8.2g} {r['chunks']:>6} "
                     f"{' '.join(cells)}  {r['max_rel_err']:.1e}")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=float, default=2e7, help="W1 rows")
    ap.add_argument("--w4-rows", type=float, default=1e5, help="W4 rows")
    ap.add_argument("--chunks", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-cluster", action="store_true")
    ap.add_argument("--json", default=os.path.join(ROOT, "benchmarks", "results",
                                                   "dask.json"))
    args = ap.parse_args(argv)
    sizes = () if args.no_cluster else (1, 2)
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    results = [measure("W1", w1, int(args.rows), args.chunks, args.repeats, sizes),
               measure("W4 MLP", w4, int(args.w4_rows), args.chunks, args.repeats, sizes)]
    print(table(results))
    print("(x: time relative to the in-memory call; dask results persisted in chunks)")
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as handle:
        json.dump({"started": started, "command": " ".join(sys.argv),
                   "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                               "dask": dask.__version__},
                   "results": results}, handle, indent=1)
    print(f"wrote {args.json}")
    return results


if __name__ == "__main__":
    main()
