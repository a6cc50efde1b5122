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
    harness.write_json(args.json, payload)
    print(f"wrote {os.path.relpath(args.json)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
