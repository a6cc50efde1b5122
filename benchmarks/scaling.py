"""Gradient-construction scaling of sg.gradients on a deep chain.

    python benchmarks/scaling.py [--levels 100,1000,10000] [--repeats 3] [--json out.json]

Graph: x, y scalar placeholders; e = x; repeat L times: e = sin(e)*e + y.
Each level adds 3 op nodes (sin, mul, add).  Reports the median time of graph
construction and of sg.gradients(e, [x, y]) alone, and the time per node, so
that (non-)linearity is visible.  Writes benchmarks/results/scaling.json.
"""

import argparse
import datetime
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from benchmarks import harness  # noqa: E402


def build(sg, levels):
    x = sg.placeholder("x", shape=())
    y = sg.placeholder("y", shape=())
    e = x
    for _ in range(levels):
        e = sg.sin(e) * e + y
    return x, y, e


def measure(sg, levels, repeats):
    build_t, grad_t = [], []
    for _ in range(repeats):
        t = time.perf_counter()
        x, y, e = build(sg, levels)
        build_t.append(time.perf_counter() - t)
        t = time.perf_counter()
        grads = sg.gradients(e, [x, y])
        grad_t.append(time.perf_counter() - t)
        assert len(grads) == 2 and all(g is not None for g in grads)
        del x, y, e, grads
    return statistics.median(build_t), statistics.median(grad_t)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--levels", default="100,1000,10000")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", default=os.path.join(ROOT, "benchmarks", "results", "scaling.json"))
    args = ap.parse_args(argv)
    levels = [int(v) for v in args.levels.split(",") if v.strip()]

    rows = []
    try:
        import symgrad as sg
        missing = [n for n in ("placeholder", "sin", "gradients") if not hasattr(sg, n)]
        if missing:
            raise RuntimeError("symgrad lacks " + ", ".join("sg." + m for m in missing))
    except Exception as exc:
        sg = None
        err = harness.short_error(exc)
    for L in levels:
        nodes = 3 * L
        row = {"levels": L, "op_nodes": nodes, "status": "ok", "detail": "",
               "build_s": None, "gradients_s": None, "gradients_us_per_node": None}
        if sg is None:
            row.update(status="error", detail=err)
        else:
            try:
                b, g = measure(sg, L, args.repeats)
                row.update(build_s=b, gradients_s=g, gradients_us_per_node=g / nodes * 1e6,
                           build_us_per_node=b / nodes * 1e6)
            except RecursionError as exc:
                row.update(status="error", detail="RecursionError: " + str(exc)[:100])
            except Exception as exc:
                row.update(status="error", detail=harness.short_error(exc))
        rows.append(row)
        print(f"levels={L} done ({row['status']})", file=sys.stderr, flush=True)

    head = f"{'levels':>7} | {'op nodes':>8} | {'build':>10} | {'sg.gradients':>12} | {'us/node':>8} | status"
    print(head)
    print("-" * len(head))
    for r in rows:
        def f(v):
            return "" if v is None else harness.fmt_time(v, "s")
        upn = "" if r["gradients_us_per_node"] is None else f"{r['gradients_us_per_node']:.2f}"
        st = r["status"] + (": " + r["detail"] if r["detail"] else "")
        print(f"{r['levels']:>7} | {r['op_nodes']:>8} | {f(r['build_s']):>10} | "
              f"{f(r['gradients_s']):>12} | {upn:>8} | {st}")
    payload = {"started": datetime.datetime.now().isoformat(timespec="seconds"),
               "command": " ".join(["python", "benchmarks/scaling.py"] + (argv if argv is not None else sys.argv[1:])),
               "machine": harness.machine_info(), "repeats": args.repeats, "results": rows}
    harness.write_json(args.json, payload)
    print(f"wrote {os.path.relpath(args.json)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
