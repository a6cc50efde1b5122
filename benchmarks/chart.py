"""Draw every workload's time relative to the hand-written numba loop, per system.

    python benchmarks/chart.py [--json benchmarks/results/latest.json] [--out benchmarks/results/relative.png]

Reads the JSON that ``benchmarks/run.py`` writes and draws one group of bars per
workload/case (log scale, 1.0 = the fastest ``numba by hand`` loop; lower is faster). matplotlib is a
benchmark-only optional dependency (``pip install -e ".[bench]"``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASELINE = "numba by hand serial"
ORDER = ["symgrad cpu", "symgrad parallel", "numba by hand serial", "numba by hand prange",
         "jax", "torch.compile", "torch eager", "pytensor", "numpy by hand"]


def relative_times(results: list) -> dict:
    """{(workload, case): {system: median / best hand median}} for the rows that ran
    (the best hand loop: the fastest 'numba by hand ...' system of that case)."""
    groups: dict = {}
    for row in results:
        if row.get("status") == "ok" and row.get("unit") == "s" and row.get("median"):
            groups.setdefault((row["workload"], row["case"]), {})[row["system"]] = row["median"]
    out = {}
    for key, times in groups.items():
        hands = [t for s, t in times.items() if s.startswith("numba by hand")]
        if hands:
            base = min(hands)
            out[key] = {s: t / base for s, t in times.items()}
    return out


def draw(ratios: dict, path: str) -> None:
    from symgrad.extras import require
    matplotlib = require("matplotlib", extra="bench", why="benchmark charts")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = sorted(ratios)
    systems = [s for s in ORDER if any(s in ratios[k] for k in keys)]
    systems += sorted({s for k in keys for s in ratios[k]} - set(systems))
    width = 0.8 / max(1, len(systems))
    fig, ax = plt.subplots(figsize=(max(8, 1.3 * len(keys)), 5))
    for j, system in enumerate(systems):
        xs = [i + j * width for i, k in enumerate(keys) if system in ratios[k]]
        ys = [ratios[k][system] for k in keys if system in ratios[k]]
        ax.bar(xs, ys, width, label=system)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(keys))])
    ax.set_xticklabels([f"{w}\n{c}" for w, c in keys], fontsize=8)
    ax.set_ylabel("time / best numba-by-hand loop (log; lower is faster)")
    ax.legend(fontsize=7, ncol=3)
    ax.set_title("symgrad and peers relative to the hand-written numba loop")
    fig.tight_layout()
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fig.savefig(path, dpi=110)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", default=os.path.join(ROOT, "benchmarks", "results", "latest.json"))
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "relative.png"))
    args = ap.parse_args(argv)
    with open(args.json) as fh:
        ratios = relative_times(json.load(fh)["results"])
    try:
        draw(ratios, args.out)
    except ImportError as exc:
        print(f"chart.py: no chart drawn: {exc}")
        return 0
    print(f"wrote {os.path.relpath(args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
