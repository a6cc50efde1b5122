"""Index ops with constant indices inside scalar kernels (compile/scalar/gather_elements.py):
gather (and x[idx]), its scatter-add gradient, unsorted_segment_sum, segment_sum and
segment_gather are element rules, so a program written with index arrays is one scalar
kernel; its values agree with the loop path's (the numpy steps), its gradients with finite
differences and the tape, and its statement counts with what the rules emit."""

import numpy as np
import pytest
import sympy as sp

import symgrad as sg
from symgrad.compile.plan.fold import fold_graph
from symgrad.compile.scalar import cost, settings
from symgrad.compile.scalar import gather_elements as GE
from symgrad.compile.scalar.elements import ElementCode, node_elements, input_elements
from symgrad.errors import GatherIndexError

RNG = np.random.default_rng(5)
A = np.array([0, 2, 5, 1, 3, 0, 4, 5, 2, 2])
B = np.array([1, 1, 0, 4, 5, 3, 2, 0, 5, 2])
C = np.array([3, 4, 1, 0, 2, 5, 5, 1, 0, 3])
K = RNG.uniform(0.1, 2.0, size=len(A))


def _kinetics(x, how: str):
    """Mass action written with index arrays: the rates and the rhs (segment sums or a
    scatter through the gradient of a gather)."""
    rates = K * x[A] * x[B]
    if how == "segments":
        signed = sg.concat([-rates, -rates, rates], 0)
        return sg.unsorted_segment_sum(signed, np.concatenate([A, B, C]), 6)
    return sg.gather(sg.exp(x), C) * rates        # gather (wrap=False) and x[idx] together


def _steps(f) -> list:
    return [line.split()[1] for line in f.explain().splitlines() if line.startswith("step")]


def _loop_path(inputs, outputs, args):
    enabled = settings.ENABLED
    settings.ENABLED = False
    try:
        return sg.function(inputs, outputs)(*args)
    finally:
        settings.ENABLED = enabled


def _close(got, want):
    """Equal to a few ulp (a long straight-line body may be reassociated,
    docs/scalar_code.md)."""
    np.testing.assert_allclose(got, want, rtol=4e-15, atol=1e-15)


@pytest.mark.parametrize("how", ["segments", "gather"])
def test_index_program_is_one_scalar_kernel(how):
    x = sg.placeholder("x", (6,))
    rhs = _kinetics(x, how)
    outs = [rhs, sg.jacobian(rhs, x)]
    f = sg.function([x], outs)
    text = f.explain()
    assert "1 scalar kernel" in text and "0 kernels" in text, text
    assert _steps(f) == [], text
    xv = np.linspace(0.5, 1.5, 6)
    got = f(xv)
    for g, w in zip(got, _loop_path([x], outs, [xv])):
        _close(g, w)
    for g, o in zip(got, outs):
        _close(g, sg.evaluate(o, {x: xv}))


def test_jacobian_matches_finite_differences_and_tape():
    x = sg.placeholder("x", (6,))
    rhs = sg.concat([_kinetics(x, "segments"), _kinetics(x, "gather")], 0)
    f = sg.function([x], [sg.jacobian(rhs, x)])
    assert _steps(f) == [], f.explain()
    xv = np.linspace(0.5, 1.5, 6)
    (jac,) = f(xv)
    h = 1e-6
    fd = np.stack([(sg.evaluate(rhs, {x: xv + h * e}) - sg.evaluate(rhs, {x: xv - h * e}))
                   / (2 * h) for e in np.eye(6)], axis=-1)
    np.testing.assert_allclose(jac, fd, rtol=1e-6, atol=1e-8)
    v = sg.Variable(xv)
    with sg.GradientTape() as tape:
        y = sg.concat([_kinetics(v, "segments"), _kinetics(v, "gather")], 0)
    np.testing.assert_allclose(jac, tape.jacobian(y, v).numpy(), rtol=1e-13, atol=1e-14)


def test_gather_along_an_axis_with_index_matrix_and_wrapping():
    """axis 1, a 2-D index with duplicates, negative indices wrapped (x[:, idx]), and the
    scatter-add gradient along that axis."""
    x = sg.placeholder("x", (3, 5))
    idx = np.array([[4, 0], [0, 2], [4, 4]])
    y = sg.gather(x, idx, axis=1) * x[:, np.array([-1, 1, -5, 2, 2, 0])][:, :, None][:, :3]
    loss = sg.reduce_sum(sg.tanh(y))
    outs = [y, sg.gradients(loss, [x])[0]]
    f = sg.function([x], outs)
    assert _steps(f) == [], f.explain()
    xv = RNG.normal(size=(3, 5))
    got = f(xv)
    for g, w in zip(got, _loop_path([x], outs, [xv])):
        _close(g, w)
    v = sg.Variable(xv)
    with sg.GradientTape() as tape:
        yv = sg.gather(v, idx, axis=1) * v[:, np.array([-1, 1, -5, 2, 2, 0])][:, :, None][:, :3]
        lv = sg.reduce_sum(sg.tanh(yv))
    np.testing.assert_allclose(got[1], tape.gradient(lv, v).numpy(), rtol=1e-13)


def test_sorted_segment_sum_and_dropped_ids():
    x = sg.placeholder("x", (5, 2))
    s = sg.segment_sum(x * x, np.array([0, 0, 1, 3, 3]))
    u = sg.unsorted_segment_sum(sg.sin(x), np.array([2, -1, 0, 2, -1]), 4)
    loss = sg.reduce_sum(s * s) + sg.reduce_sum(u * sg.reduce_sum(s))
    outs = [s, u, sg.gradients(loss, [x])[0]]
    f = sg.function([x], outs)
    assert _steps(f) == [], f.explain()
    xv = RNG.normal(size=(5, 2))
    got = f(xv)
    assert np.all(got[1][1] == 0.0) and np.all(got[1][3] == 0.0)   # empty segments
    for g, w in zip(got, _loop_path([x], outs, [xv])):
        _close(g, w)


def test_fed_indices_stay_a_step():
    """Indices that are not a constant have no element rule: the gather stays a step."""
    x = sg.placeholder("x", (6,))
    i = sg.placeholder("i", (4,), dtype="int64")
    y = sg.stack([x[0] * x[1], x[2] * x[3]])
    z = sg.gather(sg.concat([y, x], 0), i) * 2.0
    f = sg.function([x, i], [z])
    assert "gather" in _steps(f), f.explain()
    xv = RNG.normal(size=6)
    np.testing.assert_array_equal(f(xv, np.array([0, 7, 1, 1]))[0],
                                  2.0 * np.concatenate([[xv[0] * xv[1], xv[2] * xv[3]],
                                                        xv])[[0, 7, 1, 1]])


def test_out_of_range_constant_index_raises_when_run():
    x = sg.placeholder("x", (3,))
    y = sg.stack([x[0] * x[1], x[1] * x[2]])
    z = sg.gather(sg.concat([y, x], 0), np.array([1, 5])) * x[0]
    graph = fold_graph([z])
    gather = next(n for n in graph.order if n.op.name == "gather")
    assert GE.GATHER_RULES[gather.op].statements(gather) is None     # declined
    f = sg.function([x], [z])
    with pytest.raises(GatherIndexError, match="indices"):
        f(np.ones(3))


@pytest.mark.parametrize("ids, dense", [
    (np.array([1, 0, 1, 1, 2]), False), (np.array([2, 2, 2, -1, 0]), False),
    (np.array([0, 1, 0, 1, 1]), True)])
def test_structure_counts_the_statements_the_rule_emits(ids, dense):
    """The structure pass's classes for a segment sum: one statement per distinct partial
    sum, an element with one term that term, none an exact zero (as the rule binds)."""
    x = sg.placeholder("x", (5, 2))
    data = x if dense else sg.stack([x[0], x[0], x[1], x[1], x[3]])  # equal rows share
    s = sg.unsorted_segment_sum(data, ids, 3)
    graph = fold_graph([s])
    node = graph.order[-1]
    known = cost.known(graph)
    want = cost.statements(node, known)
    code = ElementCode()
    values = {}
    for n in graph.order:
        if n.kind == "source":
            values[id(n)] = input_elements(0, n)
        elif n.is_const:
            values[id(n)] = np.asarray(n.value).astype(object)
        else:
            before = len(code.statements)
            values[id(n)] = node_elements(n, [values[id(i)] for i in n.inputs], code)
            if n is node:
                made = len(code.statements) - before
    assert made == want
    classes = known[id(node)].cls
    out = values[id(node)]
    for a in range(classes.size):           # equal classes <=> equal element expressions
        for b in range(classes.size):
            assert (classes.flat[a] == classes.flat[b]) == (out.flat[a] == out.flat[b])
    assert all((c == 0) == (v is GE.ZERO) for c, v in zip(classes.flat, out.flat))


def test_scatter_add_keeps_numpy_order():
    """Partial sums in ``np.add.at``'s order: ((g0 + g2) + g3) for index 1."""
    code = ElementCode()
    g = np.array(sp.symbols("g0:4", real=True), dtype=object)
    out = GE.scatter_add(code, g, np.array([1, 0, 1, 1]), (3,), np.dtype("float64"))
    assert out[0] == g[1] and out[2] is GE.ZERO
    first, second = code.statements
    assert set(first.args) == {g[0], g[2]}
    assert set(second.args) == {first.symbol, g[3]} and out[1] is second.symbol

