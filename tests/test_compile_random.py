"""Random elementwise graphs (values and gradients): sg.function agrees with sg.evaluate."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import symgrad as sg

UNARY = ("sin", "cos", "tanh", "exp", "sigmoid", "softplus", "abs", "relu", "square", "erf")
BINARY = ("add", "subtract", "multiply", "maximum", "minimum")


def build(ops, shapes):
    xs = [sg.placeholder(f"x{k}", shape=s) for k, s in enumerate(shapes)]
    nodes = list(xs)
    for kind, a, b in ops:
        u, v = nodes[a % len(nodes)], nodes[b % len(nodes)]
        if kind in UNARY:
            nodes.append(getattr(sg, kind)(u))
        else:
            nodes.append(getattr(sg, kind)(u, v))
    loss = sg.reduce_sum(nodes[-1]) + sg.reduce_sum(nodes[len(xs)])
    return xs, [loss] + sg.gradients(loss, xs)


@settings(deadline=None, max_examples=8)
@given(ops=st.lists(st.tuples(st.sampled_from(UNARY + BINARY), st.integers(0, 50),
                              st.integers(0, 50)), min_size=1, max_size=12),
       target=st.sampled_from(["cpu", "parallel"]), seed=st.integers(0, 100))
def test_random_graphs(ops, target, seed):
    shapes = [(5, 3), (3,), (5, 1)]
    xs, outputs = build(ops, shapes)
    rng = np.random.default_rng(seed)
    args = [rng.uniform(-1.5, 1.5, size=s) for s in shapes]
    f = sg.function(xs, outputs, target=target)
    got = f(*args)
    want = sg.evaluate(outputs, dict(zip(xs, args)))
    for g, w in zip(got, want):
        if w is None:
            assert g is None
        else:
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
