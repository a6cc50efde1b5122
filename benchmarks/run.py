"""Run the symgrad benchmark suite.

    python benchmarks/run.py [--quick] [--workloads W1,W2,...] [--json out.json]

Prints a table and writes JSON (default benchmarks/results/latest.json).
See benchmarks/README.md for what is measured.
"""

import argparse
import datetime
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from benchmarks import harness  # noqa: E402
from benchmarks.workloads import WORKLOADS  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes and short timing budgets")
    ap.add_argument("--workloads", default=",".join(WORKLOADS),
                    help="comma-separated subset of " + ",".join(WORKLOADS))
    ap.add_argument("--systems", default="",
                    help="comma-separated subset of system names (the reference and the "
                         "numba serial baseline always run)")
    ap.add_argument("--json", default=os.path.join(ROOT, "benchmarks", "results", "latest.json"),
                    help="output JSON path (default benchmarks/results/latest.json)")
    ap.add_argument("--no-memory", action="store_true",
                    help="skip the RSS peak-memory subprocess probes")
    ap.add_argument("--verbose", action="store_true", help="print tracebacks of failing systems")
    args = ap.parse_args(argv)

    keys = [k.strip().upper() for k in args.workloads.split(",") if k.strip()]
    unknown = [k for k in keys if k not in WORKLOADS]
    if unknown:
        ap.error("unknown workload(s): " + ", ".join(unknown))

    opts = {
        "quick": args.quick,
        "target_s": 0.3 if args.quick else 1.0,   # timing budget per system and case
        "min_runs": 3 if args.quick else 5,
        "max_runs": 30 if args.quick else 100,
        "latency_repeats": 3,
        "memory": not args.no_memory,
        "verbose": args.verbose,
        "systems": [s.strip() for s in args.systems.split(",") if s.strip()],
        "compile_timeout_s": 45 if args.quick else 90,   # per W6 probe process
    }

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    started = datetime.datetime.now().isoformat(timespec="seconds")
    t0 = time.perf_counter()
    rows = []
    for k in keys:
        log(f"== {k}")
        rows.extend(harness.run_workload(k, opts, log))
    elapsed = time.perf_counter() - t0

    print(harness.format_table(rows))
    print(f"\n(total {elapsed:.0f} s; 'x numba serial' = median / median of "
          f"'{harness.BASELINE}'; peak MB = extra memory of one call)")
    payload = {
        "started": started,
        "elapsed_s": elapsed,
        "command": " ".join(["python", "benchmarks/run.py"] + (argv if argv is not None else sys.argv[1:])),
        "quick": args.quick,
        "machine": harness.machine_info(),
        "options": opts,
        "results": rows,
    }
    payload["relative"] = relative_to_best_hand(rows)
    harness.write_json(args.json, payload)
    print(f"wrote {os.path.relpath(args.json)}")
    table = relative_table(payload["relative"])
    print("\n" + table)
    md = os.path.splitext(args.json)[0] + ".md"
    with open(md, "w") as fh:
        fh.write(table + "\n")
    print(f"wrote {os.path.relpath(md)}")
    from benchmarks import chart
    png = os.path.splitext(args.json)[0] + ".png"
    try:
        chart.draw(chart.relative_times(rows), png)
        print(f"wrote {os.path.relpath(png)}")
    except ImportError as exc:
        print(f"no chart: {exc}")
    return 0


def relative_to_best_hand(rows):
    """{"W2 N=1e6": {"best hand": system, system: median / best hand median}} where the
    best hand loop is the fastest 'numba by hand ...' row of that workload and case."""
    groups = {}
    for r in rows:
        if r.get("status") == "ok" and r.get("unit") == "s" and r.get("median"):
            groups.setdefault(f"{r['workload']} {r['case']}", {})[r["system"]] = r["median"]
    out = {}
    for key, times in groups.items():
        hands = {s: t for s, t in times.items() if s.startswith("numba by hand")}
        if not hands:
            continue
        best = min(hands, key=hands.get)
        out[key] = {"best hand": best, **{s: t / hands[best] for s, t in times.items()}}
    return out


def relative_table(relative):
    """Markdown: each system's median over the best hand loop's, per workload and case."""
    systems = []
    for ratios in relative.values():
        systems += [s for s in ratios if s != "best hand" and s not in systems]
    lines = ["| workload | best hand loop | " + " | ".join(systems) + " |",
             "|---|---|" + "---|" * len(systems)]
    for key, ratios in relative.items():
        cells = [f"{ratios[s]:.2f}" if s in ratios else "" for s in systems]
        lines.append(f"| {key} | {ratios['best hand']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
