"""sg.hessians, sg.jacobian, tape.batch_jacobian, sg.AggregationMethod, sg.prevent_gradient,
the tape details of TF, and reduce_prod to second order: checked against finite
differences, the other engine (tape vs graph) and the compiled function."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

import symgrad as sg

from .helpers import central_difference
from .strategies import random_graph


def numeric_jacobian(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """d f(x) / d x by central differences, shape f(x).shape + x.shape."""
    x = np.array(x, dtype=np.float64)
    y0 = np.asarray(f(x))
    out = np.zeros(y0.shape + x.shape)
    for index in np.ndindex(*x.shape):
        up, down = x.copy(), x.copy()
        up[index] += eps
        down[index] -= eps
        out[(Ellipsis,) + index] = (np.asarray(f(up)) - np.asarray(f(down))) / (2 * eps)
    return out


def _loss(x):
    return sg.reduce_sum(sg.sin(x) * x * x) + sg.reduce_prod(x[:2])


def _loss_np(x):
    return float(np.sum(np.sin(x) * x * x) + np.prod(x.reshape(-1)[:2]))


# --- hessians -----------------------------------------------------------------------------
def test_hessians_match_finite_differences_and_compile():
    rng = np.random.default_rng(0)
    value = rng.uniform(-1, 1, (3,))
    x = sg.placeholder("x", (3,))
    (h,) = sg.hessians(_loss(x), x)
    assert h.shape == (3, 3)
    expected = numeric_jacobian(lambda v: central_difference(_loss_np, v, 1e-5), value, 1e-5)
    np.testing.assert_allclose(sg.evaluate(h, {x: value}), expected, rtol=1e-5, atol=1e-6)
    compiled = sg.function([x], h)(value)
    np.testing.assert_allclose(compiled, sg.evaluate(h, {x: value}), rtol=1e-12, atol=1e-14)


def test_hessians_of_a_matrix_have_shape_x_shape_twice_and_agree_with_the_tape():
    rng = np.random.default_rng(1)
    value = rng.uniform(-1, 1, (2, 2))
    x = sg.placeholder("x", (2, 2))
    (h,) = sg.hessians(sg.reduce_sum(sg.exp(x @ x)), x)
    assert h.shape == (2, 2, 2, 2)
    v = sg.Variable(value)
    with sg.GradientTape() as outer:
        with sg.GradientTape() as inner:
            y = sg.reduce_sum(sg.exp(v @ v))
        g = inner.gradient(y, v)
    np.testing.assert_allclose(sg.evaluate(h, {x: value}), outer.jacobian(g, v).numpy(),
                               rtol=1e-12)


def test_hessians_are_blocks_linear_gives_zeros_unconnected_gives_none():
    x, z, u = sg.placeholder("x", (2,)), sg.placeholder("z", ()), sg.placeholder("u", (2,))
    hx, hz, hu = sg.hessians(sg.reduce_sum(x) * 3.0 + z * z * z, [x, z, u])
    assert hu is None
    vx, vz = sg.evaluate([hx, hz], {x: [1.0, 2.0], z: 2.0})
    np.testing.assert_array_equal(vx, np.zeros((2, 2)))
    assert vz.shape == () and float(vz) == 12.0


def test_hessians_need_static_shapes():
    x = sg.placeholder("x", (None,))
    with pytest.raises(ValueError, match="static shape"):
        sg.hessians(sg.reduce_sum(x * x), x)


# --- jacobian -----------------------------------------------------------------------------
def _vector_fn(x, c):
    return sg.tanh(c * x) * sg.reduce_sum(x * x)


def test_jacobian_matches_finite_differences_the_tape_and_compiled():
    rng = np.random.default_rng(2)
    c = rng.uniform(-1, 1, (2, 3))
    value = rng.uniform(-1, 1, (3,))
    x = sg.placeholder("x", (3,))
    j = sg.jacobian(_vector_fn(x, c), x)
    assert j.shape == (2, 3, 3)
    got = sg.evaluate(j, {x: value})
    expected = numeric_jacobian(lambda v: np.tanh(c * v) * np.sum(v * v), value)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8)
    v = sg.Variable(value)
    with sg.GradientTape() as tape:
        y = _vector_fn(v, c)
    np.testing.assert_allclose(tape.jacobian(y, v).numpy(), got, rtol=1e-12)
    for target in ("cpu", "parallel"):
        np.testing.assert_allclose(sg.function([x], j, target=target)(value), got, rtol=1e-12)


def test_jacobian_differentiated_again():
    rng = np.random.default_rng(3)
    w = rng.uniform(-1, 1, (3, 3))
    value = rng.uniform(-1, 1, (3,))
    x = sg.placeholder("x", (3,))
    (g,) = sg.gradients(sg.reduce_sum(sg.jacobian(sg.sin(x) * x[0], x) * w), x)

    def f(v):
        jac = np.diag(np.cos(v) * v[0])
        jac[:, 0] += np.sin(v)
        return float(np.sum(jac * w))
    np.testing.assert_allclose(sg.evaluate(g, {x: value}), central_difference(f, value),
                               rtol=1e-6, atol=1e-8)


def test_jacobian_lists_scalars_and_unconnected_policies():
    x, z = sg.placeholder("x", (2,)), sg.placeholder("z", (2,))
    y = x * 2.0
    jx, jz = sg.jacobian(y, [x, z])
    assert jz is None
    np.testing.assert_array_equal(sg.evaluate(jx, {x: [1.0, 1.0]}), 2.0 * np.eye(2))
    zeros = sg.jacobian(y, z, unconnected_gradients="zero")
    np.testing.assert_array_equal(sg.evaluate(zeros, {}), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="not connected"):
        sg.jacobian(y, z, unconnected_gradients="raise")
    with pytest.raises(ValueError, match="Unknown value for unconnected_gradients"):
        sg.jacobian(y, z, unconnected_gradients="ZERO")
    scalar = sg.jacobian(sg.reduce_sum(x * x), x)
    assert scalar.shape == (2,)
    np.testing.assert_array_equal(sg.evaluate(scalar, {x: [1.0, 3.0]}), [2.0, 6.0])


# --- batch_jacobian -----------------------------------------------------------------------
def test_batch_jacobian_is_tf_definition():
    rng = np.random.default_rng(4)
    w = rng.uniform(-1, 1, (3, 2))
    value = rng.uniform(-1, 1, (4, 3))
    x = sg.Variable(value)
    with sg.GradientTape(persistent=True) as tape:
        y = sg.tanh(x @ w)
    bj = tape.batch_jacobian(y, x).numpy()
    full = tape.jacobian(y, x).numpy()  # (4, 2, 4, 3)
    assert bj.shape == (4, 2, 3)
    for b in range(4):
        np.testing.assert_allclose(bj[b], full[b, :, b, :], rtol=1e-12)
    np.testing.assert_allclose(bj[1], (1 - np.tanh(value[1] @ w) ** 2)[:, None] * w.T)


def test_batch_jacobian_sums_over_the_batch_like_tf_and_checks_shapes():
    x = sg.Variable([[1.0, 2.0], [3.0, 4.0]])
    with sg.GradientTape(persistent=True) as tape:
        mixed = x * sg.reduce_sum(x, axis=0)     # examples interact
        rank1 = sg.reduce_sum(x * x, axis=1)
    bj = tape.batch_jacobian(mixed, x).numpy()
    full = tape.jacobian(mixed, x).numpy()
    np.testing.assert_allclose(bj, full.sum(axis=0).transpose(1, 0, 2))  # d sum_m y[m,i]/dx[b,j]
    with pytest.raises(ValueError, match="must have rank at least 2"):  # TF (issue 20)
        tape.batch_jacobian(rank1, x)
    with pytest.raises(ValueError, match="first dimension"):
        tape.batch_jacobian(mixed, sg.Variable(np.ones((3, 2))))


def test_batch_jacobian_second_order_matches_the_graph_definition():
    rng = np.random.default_rng(5)
    value, weights = rng.uniform(-1, 1, (2, 3)), rng.uniform(-1, 1, (2, 3, 3))
    v = sg.Variable(value)
    with sg.GradientTape() as outer:
        with sg.GradientTape() as inner:
            y = v * v * sg.sin(v)
        s = sg.reduce_sum(inner.batch_jacobian(y, v) * weights)
    x = sg.placeholder("x", (2, 3))
    y = x * x * sg.sin(x)
    rows = [sg.gradients(y[:, i], x)[0] for i in range(3)]
    (g,) = sg.gradients(sg.reduce_sum(sg.stack(rows, axis=1) * weights), x)
    np.testing.assert_allclose(outer.gradient(s, v).numpy(), sg.evaluate(g, {x: value}),
                               rtol=1e-12)


# --- aggregation_method -------------------------------------------------------------------
@pytest.mark.parametrize("method", ["ADD_N", "DEFAULT", "EXPERIMENTAL_TREE",
                                    "EXPERIMENTAL_ACCUMULATE_N"])
def test_aggregation_methods_have_no_effect(method):
    x = sg.placeholder("x", (3,))
    ys = [x * sg.sin(x) + sg.exp(x), sg.reduce_sum(x * x)]
    value = np.array([0.1, -0.4, 0.7])
    plain = sg.evaluate(sg.gradients(ys, x)[0], {x: value})
    chosen = sg.gradients(ys, x, aggregation_method=getattr(sg.AggregationMethod, method))
    np.testing.assert_array_equal(sg.evaluate(chosen[0], {x: value}), plain)
    (h,) = sg.hessians(ys[1], x, aggregation_method=getattr(sg.AggregationMethod, method))
    np.testing.assert_array_equal(sg.evaluate(h, {x: value}), 2 * np.eye(3))


def test_unknown_aggregation_method_is_rejected():
    x = sg.placeholder("x", ())
    with pytest.raises(ValueError, match="aggregation_method"):
        sg.gradients(x * x, x, aggregation_method=7)


# --- prevent_gradient ---------------------------------------------------------------------
def test_prevent_gradient_forward_is_identity_everywhere():
    x = sg.placeholder("x", (3,))
    y = sg.prevent_gradient(sg.sin(x), message="m") * 2.0
    value = np.array([0.5, 1.0, 2.0])
    np.testing.assert_array_equal(sg.evaluate(y, {x: value}), 2 * np.sin(value))
    np.testing.assert_allclose(sg.function([x], y)(value), 2 * np.sin(value), rtol=1e-15)
    np.testing.assert_array_equal(sg.prevent_gradient(sg.Variable(value)).numpy(), value)


def test_prevent_gradient_raises_lookup_error_with_its_message_in_both_engines():
    x = sg.placeholder("x", (3,))
    y = sg.reduce_sum(sg.prevent_gradient(x * x, message="do not differentiate me"))
    with pytest.raises(LookupError, match="Gradient explicitly disabled. Reason: do not "):
        sg.gradients(y, x)
    v = sg.Variable([1.0, 2.0, 3.0])
    with sg.GradientTape() as tape:
        z = sg.reduce_sum(sg.prevent_gradient(v * v, message="frozen"))
    with pytest.raises(LookupError, match="Reason: frozen"):
        tape.gradient(z, v)


def test_prevent_gradient_behind_stop_gradient_graph_raises_tape_returns():
    x = sg.placeholder("x", (2,))
    y = sg.reduce_sum(sg.stop_gradient(sg.prevent_gradient(x, "hidden")) * x)
    with pytest.raises(LookupError, match="hidden"):
        sg.gradients(y, x)
    v = sg.Variable([1.0, 2.0])
    with sg.GradientTape() as tape:
        z = sg.reduce_sum(sg.stop_gradient(sg.prevent_gradient(v, "hidden")) * v)
    np.testing.assert_array_equal(tape.gradient(z, v).numpy(), [1.0, 2.0])


def test_prevent_gradient_off_the_path_or_stopped_by_argument_does_not_raise():
    x, u = sg.placeholder("x", ()), sg.placeholder("u", ())
    p = sg.prevent_gradient(u * u, "unused")
    y = x * x + p
    (g,) = sg.gradients(y, x)
    assert float(sg.evaluate(g, {x: 3.0, u: 1.0})) == 6.0
    q = sg.prevent_gradient(x * x, "stopped")
    (g2,) = sg.gradients(q + x, x, stop_gradients=[q])
    assert float(sg.evaluate(g2, {x: 3.0})) == 1.0
    below = sg.sin(sg.prevent_gradient(x, "below a stop"))
    (g3,) = sg.gradients(below * 2.0 + x, x, stop_gradients=[below])
    assert float(sg.evaluate(g3, {x: 3.0})) == 1.0


def test_prevent_gradient_downstream_of_a_stopped_tensor_still_raises():
    x = sg.placeholder("x", ())
    s = x * x
    y = sg.prevent_gradient(s, "after the stop") * x
    with pytest.raises(LookupError, match="after the stop"):
        sg.gradients(y, x, stop_gradients=[s])


# --- tape details -------------------------------------------------------------------------
def test_watched_variables_in_creation_order_and_reads_watch():
    a, b, c = sg.Variable(1.0), sg.Variable(2.0), sg.Variable(3.0)
    with sg.GradientTape() as tape:
        c.read_value()
        sg.identity(b)
        _ = a * 2.0
    assert tape.watched_variables() == (a, b, c)
    with sg.GradientTape() as tape:
        c.read_value()
    assert tape.watched_variables() == (c,)
    with sg.GradientTape(watch_accessed_variables=False) as tape:
        c.read_value()
    assert tape.watched_variables() == ()
    frozen = sg.Variable(1.0, trainable=False)
    with sg.GradientTape() as tape:
        frozen.read_value()
        with tape.stop_recording():
            a.read_value()
    assert tape.watched_variables() == ()


def test_tape_errors_carry_tf_wording():
    x = sg.Variable(2.0)
    tape = sg.GradientTape()
    with tape:
        with pytest.raises(ValueError, match="already"):
            tape.__enter__()
        y = x * x
    tape.gradient(y, x)
    with pytest.raises(RuntimeError, match="GradientTape.gradient can only be called once on "
                                           "non-persistent tapes"):
        tape.gradient(y, x)
    with sg.GradientTape() as tape:
        y = x * x
    with pytest.raises(ValueError, match="Unknown value for unconnected_gradients"):
        tape.gradient(y, x, unconnected_gradients="nothing")
    with pytest.raises(ValueError, match="Unknown value for unconnected_gradients"):
        sg.gradients(sg.placeholder("p", ()) * 2.0, sg.placeholder("q", ()),
                     unconnected_gradients="nothing")


# --- reduce_prod to second order ----------------------------------------------------------
@pytest.mark.parametrize("value", [[2.0, 3.0, 5.0], [2.0, 0.0, 5.0], [0.0, 0.0, 5.0],
                                   [-1.5, 0.5, 4.0]])
def test_reduce_prod_hessian_in_both_engines(value):
    value = np.array(value)
    x = sg.placeholder("x", (3,))
    (h,) = sg.hessians(sg.reduce_prod(x), x)
    expected = np.array([[0.0 if i == j else np.prod(np.delete(value, [i, j]))
                          for j in range(3)] for i in range(3)])
    np.testing.assert_allclose(sg.evaluate(h, {x: value}), expected, atol=1e-14)
    np.testing.assert_allclose(sg.function([x], h)(value), expected, atol=1e-14)
    v = sg.Variable(value)
    with sg.GradientTape() as outer:
        with sg.GradientTape() as inner:
            y = sg.reduce_prod(v)
        g = inner.gradient(y, v)
    np.testing.assert_allclose(outer.jacobian(g, v).numpy(), expected, atol=1e-14)


def test_reduce_prod_over_an_axis_second_order_matches_finite_differences():
    rng = np.random.default_rng(6)
    value, w = rng.uniform(0.5, 1.5, (2, 3)), rng.uniform(-1, 1, (2, 3))
    x = sg.placeholder("x", (2, 3))
    (g,) = sg.gradients(sg.reduce_sum(sg.reduce_prod(x * x, axis=1)), x)
    (gg,) = sg.gradients(sg.reduce_sum(g * w), x)

    def first(v):
        p = np.prod(v * v, axis=1, keepdims=True)
        return float(np.sum(2 * p / v * w))
    np.testing.assert_allclose(sg.evaluate(gg, {x: value}), central_difference(first, value),
                               rtol=1e-6)


# --- random graphs: sg.hessians (graph) against nested tapes ------------------------------
def _replay(tensor, leaves: dict):
    """Re-run a graph eagerly (the same op records on eager values), so tapes record it."""
    from symgrad.graph.traversal import topological_order
    from symgrad.ops.registry import apply
    values = {}
    for node in topological_order([tensor]):
        if id(node) in leaves:
            values[id(node)] = leaves[id(node)]
        elif node.op.name == "constant":
            values[id(node)] = node.attrs["value"]
        else:
            values[id(node)] = apply(node.op, tuple(values[id(i)] for i in node.inputs),
                                     node.attrs)
    return values[id(tensor)]


@settings(deadline=None, max_examples=15)
@given(random_graph(n_inputs=2, max_nodes=8, size=3))
def test_random_hessians_agree_with_nested_tapes(graph):
    xs, out, feeds = graph
    hessians = sg.evaluate(sg.hessians(out, xs), feeds)
    variables = [sg.Variable(feeds[x]) for x in xs]
    with sg.GradientTape(persistent=True) as outer:
        with sg.GradientTape() as inner:
            y = _replay(out, {id(x): v for x, v in zip(xs, variables)})
        grads = inner.gradient(y, variables)
    for x, v, g, h in zip(xs, variables, grads, hessians):
        if g is None:
            assert h is None
            continue
        expected = outer.jacobian(g, v, unconnected_gradients="zero").numpy()
        np.testing.assert_allclose(h, expected.reshape(h.shape), rtol=1e-9, atol=1e-11)
