"""@sg.custom_gradient (TF's contract) in sg.gradients, sg.evaluate, sg.function and the tape,
to second order when grad_fn is written with symgrad ops."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
from tests.conformance.presets import clip_grad_norm as clip_grad
from tests.conformance.presets import log1pexp, sin_grad3cos


def _graph_grad(fn, value):
    x = sg.placeholder("x", np.shape(value))
    (g,) = sg.gradients(sg.reduce_sum(fn(x) * 2.0), x)
    return x, g


def _tape_grad(fn, value):
    v = sg.Variable(value)
    with sg.GradientTape() as tape:
        y = sg.reduce_sum(fn(v) * 2.0)
    return tape.gradient(y, v).numpy()


def test_the_tf_docstring_example_is_stable_where_the_plain_gradient_is_nan():
    value = np.array([0.0, 50.0, 1000.0])
    x, g = _graph_grad(log1pexp, value)
    expected = 2.0 / (1.0 + np.exp(-np.minimum(value, 50.0)))
    np.testing.assert_allclose(sg.evaluate(g, {x: value}), expected, rtol=1e-12)
    for target in ("cpu", "parallel"):
        np.testing.assert_allclose(sg.function([x], g, target=target)(value), expected,
                                   rtol=1e-12)
    np.testing.assert_allclose(_tape_grad(log1pexp, value), expected, rtol=1e-12)
    (plain,) = sg.gradients(sg.reduce_sum(sg.log(1.0 + sg.exp(x))), x)
    assert np.isnan(sg.evaluate(plain, {x: value})[2])


def test_the_declared_gradient_replaces_the_true_one_forward_unchanged():
    value = np.array([0.3, -1.2])
    x, g = _graph_grad(sin_grad3cos, value)
    np.testing.assert_allclose(sg.evaluate(g, {x: value}), 6.0 * np.cos(value))
    np.testing.assert_allclose(_tape_grad(sin_grad3cos, value), 6.0 * np.cos(value))
    np.testing.assert_allclose(sg.evaluate(sin_grad3cos(x), {x: value}), np.sin(value))
    np.testing.assert_allclose(sg.function([x], sin_grad3cos(x))(value), np.sin(value))


def test_a_nonlinear_grad_fn_sees_the_upstream_gradient():
    value = np.array([1.0, 2.0])
    x, g = _graph_grad(clip_grad, value)
    np.testing.assert_array_equal(sg.evaluate(g, {x: value}), [0.5, 0.5])
    np.testing.assert_array_equal(_tape_grad(clip_grad, value), [0.5, 0.5])


def test_second_order_through_grad_fn_in_both_engines():
    value = np.array([0.3, -1.2, 2.0])
    x = sg.placeholder("x", (3,))
    (g,) = sg.gradients(sg.reduce_sum(sin_grad3cos(x)), x)
    (gg,) = sg.gradients(sg.reduce_sum(g), x)
    np.testing.assert_allclose(sg.evaluate(gg, {x: value}), -3.0 * np.sin(value))
    np.testing.assert_allclose(sg.function([x], gg)(value), -3.0 * np.sin(value))
    v = sg.Variable(value)
    with sg.GradientTape() as outer:
        with sg.GradientTape() as inner:
            y = sg.reduce_sum(sin_grad3cos(v))
        s = sg.reduce_sum(inner.gradient(y, v))
    np.testing.assert_allclose(outer.gradient(s, v).numpy(), -3.0 * np.sin(value))


def test_two_inputs_two_outputs_none_and_numpy_gradients():
    @sg.custom_gradient
    def pair(a, b):
        def grad(da, db):
            return da * 10.0 + db, None
        return [a * b, a + b], grad

    @sg.custom_gradient
    def const_grad(a):
        return a * a, lambda up: np.full(3, 7.0)

    a, b = sg.placeholder("a", (3,)), sg.placeholder("b", (3,))
    p, q = pair(a, b)
    ga, gb = sg.gradients(sg.reduce_sum(p) + 2.0 * sg.reduce_sum(q), [a, b])
    assert gb is None
    np.testing.assert_array_equal(sg.evaluate(ga, {a: np.ones(3), b: np.ones(3)}),
                                  np.full(3, 12.0))
    (gc,) = sg.gradients(sg.reduce_sum(const_grad(a)), a)
    np.testing.assert_array_equal(sg.evaluate(gc, {a: np.ones(3)}), np.full(3, 7.0))
    va, vb = sg.Variable(np.ones(3)), sg.Variable(np.ones(3))
    with sg.GradientTape() as tape:
        p, q = pair(va, vb)
        y = sg.reduce_sum(p) + 2.0 * sg.reduce_sum(q)
    ta, tb = tape.gradient(y, [va, vb])
    assert tb is None
    np.testing.assert_array_equal(ta.numpy(), np.full(3, 12.0))


def test_misuse_is_reported():
    @sg.custom_gradient
    def wrong_count(a, b):
        return a * b, lambda up: up

    @sg.custom_gradient
    def no_pair(a):
        return a * 2.0

    a, b = sg.placeholder("a", ()), sg.placeholder("b", ())
    with pytest.raises(ValueError, match="returned 1 gradient"):
        sg.gradients(wrong_count(a, b), [a, b])
    with pytest.raises(TypeError, match=r"\(y, grad_fn\)"):
        no_pair(a)


def test_keyword_arguments_are_passed_and_not_differentiated():
    @sg.custom_gradient
    def scaled(x, factor=1.0):
        return x * factor, lambda up: up * factor * 100.0

    x = sg.placeholder("x", ())
    (g,) = sg.gradients(scaled(x, factor=2.0), x)
    assert float(sg.evaluate(g, {x: 1.0})) == 200.0


def test_grad_fn_is_called_once_with_every_upstream_in_both_engines():
    calls = []

    @sg.custom_gradient
    def two(a):
        def grad(da, db):
            calls.append(1)
            return sg.maximum(da, db)   # not linear: one call differs from a sum of calls
        return [a * 1.0, a * 2.0], grad

    a = sg.placeholder("a", (2,))
    p, q = two(a)
    y = sg.reduce_sum(p * 3.0) + sg.reduce_sum(q * sg.constant([1.0, 5.0]))
    (g,) = sg.gradients(y, a)
    assert len(calls) == 1
    np.testing.assert_array_equal(sg.evaluate(g, {a: np.zeros(2)}), [3.0, 5.0])
    v = sg.Variable(np.zeros(2))
    with sg.GradientTape() as tape:
        p, q = two(v)
        y = sg.reduce_sum(p * 3.0) + sg.reduce_sum(q * np.array([1.0, 5.0]))
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), [3.0, 5.0])
    assert len(calls) == 2
    (g_only_q,) = sg.gradients(sg.reduce_sum(two(a)[1]), a)     # the other upstream: zeros
    np.testing.assert_array_equal(sg.evaluate(g_only_q, {a: np.zeros(2)}), [1.0, 1.0])
