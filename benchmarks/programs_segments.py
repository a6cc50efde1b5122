"""Segment sums (issue 25 item 4): value and gradient of an edge-to-node assembly over E
random edges, a compiled symgrad function against a hand-written numba scatter/gather loop.

    python benchmarks/programs_segments.py [--edges 1000000] [--nodes 100000] [--inner 1]
        [--json benchmarks/results/programs_segments.json]

The program: ``e = sin(x) * w`` per edge (x, w of shape (E,) or (E, inner)), assembled
onto N nodes ``y = unsorted_segment_sum(e, ids, N)``, loss ``sum(y * y)``; value and
d loss / d x. The numba baseline writes the same in two loops (a scatter for y, a gather
for the gradient), one pass each. "per call": the best of 5 x 10 calls (after warm-up);
ratio = symgrad / numba (lower is better; 1.0 = as fast as the hand-written loop). The
first row also times ``np.add.at`` alone (numpy's unbuffered scatter) for scale.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
import timeit

import numba
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import symgrad as sg  # noqa: E402


@numba.njit(cache=False)
def numba_value_grad(x, w, ids, n):
    """Hand-written: y = segment sum of sin(x) * w; loss = sum(y^2); grad = 2 y[ids] w cos(x)."""
    m = x.shape[0]
    width = x.shape[1]
    y = np.zeros((n, width))
    for i in range(m):
        s = ids[i]
        for j in range(width):
            y[s, j] += np.sin(x[i, j]) * w[i, j]
    loss = 0.0
    for s in range(n):
        for j in range(width):
            loss += y[s, j] * y[s, j]
    grad = np.empty_like(x)
    for i in range(m):
        s = ids[i]
        for j in range(width):
            grad[i, j] = 2.0 * y[s, j] * w[i, j] * np.cos(x[i, j])
    return loss, grad


def per_call(fn, *args) -> float:
    fn(*args)
    return min(timeit.repeat(lambda: fn(*args), number=10, repeat=5)) / 10


def run(edges: int, nodes: int, inner: int, target: str) -> dict:
    rng = np.random.default_rng(0)
    shape = (edges, inner)
    xv, wv = rng.standard_normal(shape), rng.standard_normal(shape)
    idv = rng.integers(0, nodes, edges)
    x = sg.placeholder("x", shape=(None, inner))
    w = sg.placeholder("w", shape=(None, inner))
    ids = sg.placeholder("ids", shape=(None,), dtype="int64")
    y = sg.unsorted_segment_sum(sg.sin(x) * w, ids, nodes)
    loss = sg.reduce_sum(y * y)
    (g,) = sg.gradients(loss, [x])
    start = time.perf_counter()
    f = sg.function([x, w, ids], [loss, g], target=target)
    value, grad = f(xv, wv, idv)
    cold = time.perf_counter() - start
    ref_value, ref_grad = numba_value_grad(xv, wv, idv, nodes)
    assert np.isclose(value, ref_value, rtol=1e-9) and np.allclose(grad, ref_grad, atol=1e-9)
    ours = per_call(f, xv, wv, idv)
    theirs = per_call(numba_value_grad, xv, wv, idv, nodes)
    out = np.zeros((nodes, inner))
    add_at = per_call(lambda: np.add.at(out, idv, xv))
    return {"edges": edges, "nodes": nodes, "inner": inner, "target": target,
            "symgrad_s": ours, "numba_s": theirs, "ratio": ours / theirs,
            "np_add_at_s": add_at, "cold_s": cold}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edges", type=int, default=1_000_000)
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--inner", type=str, default="1,2")
    parser.add_argument("--targets", type=str, default="cpu")
    parser.add_argument("--json", type=str, default="")
    args = parser.parse_args()
    rows = [run(args.edges, args.nodes, int(inner), target)
            for inner in args.inner.split(",") for target in args.targets.split(",")]
    print(f"{'edges':>9} {'nodes':>8} {'inner':>5} {'target':>8} {'symgrad ms':>11} "
          f"{'numba ms':>9} {'ratio':>6} {'np.add.at ms':>12} {'cold s':>7}")
    for r in rows:
        print(f"{r['edges']:>9} {r['nodes']:>8} {r['inner']:>5} {r['target']:>8} "
              f"{1e3 * r['symgrad_s']:>11.2f} {1e3 * r['numba_s']:>9.2f} {r['ratio']:>6.2f} "
              f"{1e3 * r['np_add_at_s']:>12.2f} {r['cold_s']:>7.2f}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"date": datetime.datetime.now().isoformat(timespec="seconds"),
                       "cpus": os.cpu_count(), "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
