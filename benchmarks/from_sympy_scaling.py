"""sg.from_sympy on expressions with shared sub-expressions: conversion time and graph size
against the DAG's depth (the tree would have 3**depth leaves).

    python benchmarks/from_sympy_scaling.py [--depths 100,200,400,800]
                                            [--json benchmarks/results/from_sympy.json]

Expression: e = x; depth times e = sin(e)*e + y (3 sympy nodes per level). For each depth:
the seconds sympy takes to build it (fresh symbols, so no cache hits), the seconds
``sg.from_sympy`` takes (best of 3; CPU time of this process), the graph nodes, and the
seconds per 1000 levels. Linear conversion shows as a constant last column.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import sympy as sp  # noqa: E402

import symgrad as sg  # noqa: E402
from symgrad.graph.traversal import topological_order  # noqa: E402


def one(depth: int) -> dict:
    a, b = sp.symbols(f"a{depth} b{depth}")
    start = time.process_time()
    e = a
    for _ in range(depth):
        e = sp.sin(e) * e + b
    built = time.process_time() - start
    X, Y = sg.placeholder("X", (None,)), sg.placeholder("Y", (None,))
    best, t = float("inf"), None
    for _ in range(3):
        start = time.process_time()
        t = sg.from_sympy(e, {a: X, b: Y})
        best = min(best, time.process_time() - start)
    nodes = len(topological_order([t]))
    return {"depth": depth, "sympy_build_s": built, "from_sympy_s": best, "nodes": nodes,
            "s_per_1000_levels": best / depth * 1000}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depths", default="100,200,400,800")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    rows = [one(int(d)) for d in args.depths.split(",")]
    print(f"{'depth':>6} {'sympy build s':>14} {'from_sympy s':>13} {'nodes':>7} "
          f"{'s / 1000 levels':>16}")
    for r in rows:
        print(f"{r['depth']:>6} {r['sympy_build_s']:>14.3f} {r['from_sympy_s']:>13.4f} "
              f"{r['nodes']:>7} {r['s_per_1000_levels']:>16.4f}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
