"""Gradient construction is linear in graph size (no exponential blow-up on sharing).

Counted in graph nodes, which is deterministic; the timing check is loose on purpose."""

from __future__ import annotations

import time

import symgrad as sg
from symgrad.graph.traversal import topological_order


def chain(levels: int):
    y = sg.placeholder("y")
    e = y
    for _ in range(levels):
        e = sg.sin(e) * e + y
    return y, e


def gradient_size(levels: int) -> tuple:
    y, e = chain(levels)
    start = time.perf_counter()
    (g,) = sg.gradients(e, y)
    elapsed = time.perf_counter() - start
    return len(topological_order([g])), elapsed


def test_gradient_graph_grows_linearly_with_depth():
    n100, _ = gradient_size(100)
    n200, _ = gradient_size(200)
    n400, _ = gradient_size(400)
    # exactly linear up to the few nodes of the tree that sums the contributions into y
    assert abs((n400 - n200) - 2 * (n200 - n100)) <= 10
    assert n400 < 4.1 * n100


def test_a_thousand_level_chain_is_differentiated_quickly():
    _, elapsed = gradient_size(1000)
    assert elapsed < 5.0  # about 0.2 s measured; sympy.diff of the composed tree never ends


def test_value_of_a_deep_chain_gradient_is_right():
    y, e = chain(50)
    (g,) = sg.gradients(e, y)
    h = 1e-6
    fd = (sg.evaluate(e, {y: 0.3 + h}) - sg.evaluate(e, {y: 0.3 - h})) / (2 * h)
    assert abs(sg.evaluate(g, {y: 0.3}) - fd) < 1e-5 * max(1.0, abs(fd))


# --- compile-size linearity (benchmarks/compile_scaling.py graphs; deterministic counts) --------
def compile_counts(kind: str, size: int) -> tuple:
    """Nodes of [y, dy/dx], nodes after folding, and sympy operations in the lowered
    kernels (cse statements included) for the graphs of benchmarks/compile_scaling.py."""
    import sympy as sp

    from benchmarks.compile_scaling import build
    from symgrad.compile.plan.fold import fold_graph
    from symgrad.compile.codegen.lower import lower_kernel
    from symgrad.compile.nest import nest_plan
    from symgrad.compile.plan.regions import build_plan

    x, y = build(sg, kind, size)
    (g,) = sg.gradients(y, x)
    graph = fold_graph([y, g], [x])
    lowered = [lower_kernel(k) for k in nest_plan(build_plan(graph, scatter=True)).kernels]
    ops = sum(sp.count_ops(e) for k in lowered for e in k.exprs)
    ops += sum(sp.count_ops(r[1]) for k in lowered for r in k.replacements)
    return len(topological_order([y, g])), len(graph.order), ops


def _linear(small: int, mid: int, large: int, slack: float) -> bool:
    """Counts at sizes n, 2n, 4n grow by about equal steps per n (``slack``: the allowed
    excess of the second step over twice the first; a quadratic count has 6x more)."""
    step1, step2 = mid - small, large - mid
    return step1 > 0 and step2 <= (2 + slack) * step1 + 8 and large <= 4.5 * small


def test_compiled_size_grows_linearly_for_wide_and_deep_graphs():
    for kind in ("wide", "deep"):
        counts = [compile_counts(kind, n) for n in (20, 40, 80)]
        # graph and folded nodes are exact; cse's choices move the op count a little
        for what, series, slack in zip(("graph nodes", "folded nodes", "sympy ops"),
                                       zip(*counts), (0.05, 0.05, 0.6)):
            assert _linear(*series, slack=slack), (kind, what, series)
