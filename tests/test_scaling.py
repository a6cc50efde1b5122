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
