"""Hypothesis strategies for random graphs built from the public ops."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import symgrad as sg

# Smooth ops with a domain-safe composition: inputs are squashed first where needed.
UNARY = {
    "sin": sg.sin, "cos": sg.cos, "tanh": sg.tanh, "exp": lambda t: sg.exp(sg.tanh(t)),
    "log1p_sq": lambda t: sg.log1p(t * t), "sqrt_sq": lambda t: sg.sqrt(t * t + 1.0),
    "sigmoid": sg.sigmoid, "softplus": sg.softplus, "arctan": sg.arctan, "erf": sg.erf,
    "square": sg.square, "neg": lambda t: -t, "sinh": lambda t: sg.sinh(sg.tanh(t)),
}
BINARY = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / (b * b + 1.0), "pow": lambda a, b: (a * a + 0.5) ** sg.tanh(b),
    "arctan2": lambda a, b: sg.arctan2(a, b * b + 0.5),
}
REDUCE = {"sum": sg.reduce_sum, "mean": sg.reduce_mean}


@st.composite
def random_graph(draw, n_inputs: int = 3, max_nodes: int = 12, size: int = 4):
    """(placeholders, scalar output, feeds): a random DAG of smooth ops over vectors and
    scalars (so broadcasting and un-broadcast sums are exercised), ending in a sum."""
    shapes = [draw(st.sampled_from([(size,), ()])) for _ in range(n_inputs)]
    xs = [sg.placeholder(f"x{k}", shape=s) for k, s in enumerate(shapes)]
    pool = list(xs)
    for _ in range(draw(st.integers(1, max_nodes))):
        if draw(st.booleans()):
            name = draw(st.sampled_from(sorted(UNARY)))
            pool.append(UNARY[name](draw(st.sampled_from(pool))))
        else:
            name = draw(st.sampled_from(sorted(BINARY)))
            a, b = draw(st.sampled_from(pool)), draw(st.sampled_from(pool))
            pool.append(BINARY[name](a, b))
    tail = pool[-draw(st.integers(1, min(3, len(pool)))):]
    out = sum((REDUCE[draw(st.sampled_from(sorted(REDUCE)))](t) for t in tail[1:]),
              sg.reduce_sum(tail[0]))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    feeds = {x: rng.uniform(-1.5, 1.5, size=x.shape) for x in xs}
    return xs, out, feeds
