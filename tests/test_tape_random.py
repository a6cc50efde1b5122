"""Random graphs: symbolic gradients, the tape and finite differences agree (hypothesis)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import symgrad as sg

# Smooth everywhere on the inputs' range, so finite differences are meaningful.
UNARY = {
    "sin": sg.sin, "cos": sg.cos, "tanh": sg.tanh, "sigmoid": sg.sigmoid,
    "softplus": sg.softplus, "arctan": sg.arctan, "erf": sg.erf, "square": sg.square,
    "neg": lambda a: -a,
    "log1p_sq": lambda a: sg.log1p(a * a),
    "sqrt_1p_sq": lambda a: sg.sqrt(1.0 + sg.square(a)),
    "exp_tanh": lambda a: sg.exp(sg.tanh(a)),
    "pow_int": lambda a: a ** 3.0,
    # C1 at 0 (both sides have slope 1); log's branch is evaluated at a <= 0 too (nan)
    "where_log": lambda a: sg.where(a > 0.0, sg.log(1.0 + sg.abs(a)), a),
}
BINARY = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / (1.5 + sg.sin(b)),
    "arctan2": lambda a, b: sg.arctan2(a, 2.0 + sg.square(b)),
    "pow": lambda a, b: sg.pow(1.0 + sg.sigmoid(a), b),
}
def _full(a):
    """Broadcast to (2, 3) so every structural op applies to any node."""
    return a + np.zeros((2, 3))


MATRIX = np.linspace(-1.0, 1.0, 12).reshape(3, 4)
STRUCTURAL = {
    "sum0": lambda a: sg.reduce_sum(a, axis=0, keepdims=True),
    "mean1": lambda a: sg.reduce_mean(a, axis=-1, keepdims=True),
    "transpose_back": lambda a: sg.transpose(sg.transpose(a)),
    "matmul": lambda a: a @ MATRIX @ np.ones((4, 3)) * 0.3,
    "slice_pad": lambda a: a[:, :1] + a[:, 1:2] * a[:, 2:],
    "reshape": lambda a: sg.reshape(sg.reshape(a, (-1,)), (2, 3)),
    "prod": lambda a: sg.reduce_prod(1.0 + 0.1 * a, axis=1, keepdims=True),
}

step = st.one_of(
    st.tuples(st.just("u"), st.sampled_from(sorted(UNARY)), st.integers(0, 50)),
    st.tuples(st.just("b"), st.sampled_from(sorted(BINARY)), st.integers(0, 50),
              st.integers(0, 50)),
    st.tuples(st.just("s"), st.sampled_from(sorted(STRUCTURAL)), st.integers(0, 50)),
)
values = st.lists(st.floats(-1.5, 1.5, allow_nan=False), min_size=6, max_size=6)


def build(program):
    def fn(x, y, v):
        nodes = [x, y, v]
        for kind, name, *refs in program:
            args = [nodes[r % len(nodes)] for r in refs]
            args = [_full(a) for a in args] if kind == "s" else args
            fn_table = {"u": UNARY, "b": BINARY, "s": STRUCTURAL}[kind]
            nodes.append(fn_table[name](*args))
        return sg.reduce_sum(sum(nodes[3:], nodes[-1] * 0.5))
    fn.__name__ = "random_graph"
    return fn


@settings(deadline=None, max_examples=30)
@given(program=st.lists(step, min_size=1, max_size=6), xs=values, ys=values,
       vs=st.lists(st.floats(-1.5, 1.5, allow_nan=False), min_size=3, max_size=3))
def test_random_graphs_three_way(program, xs, ys, vs):
    x = np.array(xs).reshape(2, 3)
    y = np.array(ys).reshape(2, 3)
    v = np.array(vs)
    # where_log's kink at 0 is excluded: finite differences straddling it disagree
    x, y, v = (np.where(np.abs(a) < 1e-3, 0.25, a) for a in (x, y, v))
    report = sg.testing.check_gradients(build(program), x, y, v, compiled=False,
                                        rtol=1e-5, atol=1e-6)
    report.assert_ok()


@settings(deadline=None, max_examples=15)
@given(program=st.lists(step, min_size=1, max_size=4), xs=values)
def test_random_graphs_second_order_tape_vs_symbolic(program, xs):
    """Nested tapes vs sg.gradients of sg.gradients (Hessian-vector products)."""
    x0 = np.where(np.abs(np.array(xs)) < 1e-3, 0.25, np.array(xs)).reshape(2, 3)
    fn = build(program)
    direction = np.linspace(0.5, -0.5, 6).reshape(2, 3)
    const_y, const_v = np.full((2, 3), 0.3), np.array([0.1, -0.2, 0.4])

    p, py, pv = sg.placeholder("x", (2, 3)), sg.placeholder("y", (2, 3)), sg.placeholder("v", (3,))
    (g,) = sg.gradients(fn(p, py, pv), [p])
    if g is None:
        return
    (hv,) = sg.gradients(sg.reduce_sum(g * direction), [p])
    symbolic = None if hv is None else sg.evaluate(hv, {p: x0, py: const_y, pv: const_v})

    x = sg.Variable(x0)
    y, v = sg.Variable(const_y), sg.Variable(const_v)
    with sg.GradientTape() as outer:
        with sg.GradientTape() as inner:
            out = fn(x, y, v)
        g_tape = inner.gradient(out, x)
        target = sg.reduce_sum(g_tape * direction)
    tape = outer.gradient(target, x)
    if symbolic is None or tape is None:
        assert symbolic is None or np.all(symbolic == 0)
        assert tape is None or np.all(tape.numpy() == 0)
        return
    np.testing.assert_allclose(tape.numpy(), symbolic, rtol=1e-9, atol=1e-10)
