"""tf.gradients semantics as readable examples: the documentation's cases, kinks,
None vs zeros, integers, grad_ys, stop_gradients and the errors users rely on."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

import symgrad as sg


def ev(tensors, feeds=None):
    return sg.evaluate(tensors, feeds or {})


# --- the examples of the tf.gradients documentation and of the seed API ----------------------
def test_total_derivatives_of_a_plus_b_with_b_twice_a():
    a = sg.constant(0.0)
    b = 2 * a
    assert [float(v) for v in ev(sg.gradients(a + b, [a, b]))] == [3.0, 1.0]


def test_partial_derivatives_with_stop_gradients():
    a = sg.constant(0.0)
    b = 2 * a
    g = sg.gradients(a + b, [a, b], stop_gradients=[a, b])
    assert [float(v) for v in ev(g)] == [1.0, 1.0]


def test_stop_gradient_op_equals_stop_gradients_argument():
    a = sg.constant(0.0)
    b = sg.stop_gradient(2 * a)
    assert [float(v) for v in ev(sg.gradients(a + b, [a, b]))] == [1.0, 1.0]


def test_unconnected_none_vs_zero():
    a = sg.constant(np.ones((3, 3)))
    b = sg.constant(np.ones((3, 3)))
    c = sg.reduce_sum(a * sg.constant(2.0))
    assert sg.gradients(c, [b]) == [None]
    (zero,) = ev(sg.gradients(c, [b], unconnected_gradients="zero"))
    np.testing.assert_array_equal(zero, np.zeros((3, 3)))
    (zero,) = ev(sg.gradients(c, [b], unconnected_gradients=sg.UnconnectedGradients.ZERO))
    assert zero.shape == (3, 3)


def test_unconnected_raise_names_the_x():
    x = sg.placeholder("x")
    w = sg.placeholder("weights")
    with pytest.raises(sg.UnconnectedGradientError, match="'weights'") as info:
        sg.gradients(sg.sin(x), [x, w], unconnected_gradients="raise")
    assert isinstance(info.value, ValueError)


def test_grad_ys_weights_each_y_and_ys_are_summed():
    x = sg.placeholder("x", shape=(2,))
    y1, y2 = x * x, sg.sin(x)
    feeds = {x: np.array([1.0, 2.0])}
    (g,) = ev(sg.gradients([y1, y2], x, grad_ys=[np.array([1.0, 10.0]), None]), feeds)
    np.testing.assert_allclose(g, 2 * feeds[x] * [1, 10] + np.cos(feeds[x]))


def test_gradients_of_gradients_to_third_order():
    x = sg.placeholder("x")
    g = x ** 4
    for _ in range(3):
        g = sg.gradients(g, x)[0]
    assert float(ev(g, {x: 2.0})) == 24.0 * 2.0


# --- conventions at non-smooth points (TF's), and the where rule (ours) ----------------------
@pytest.mark.parametrize("name,expected", [("relu", 0.0), ("abs", 0.0), ("sign", 0.0)])
def test_kinks_at_zero(name, expected):
    x = sg.placeholder("x")
    (g,) = ev(sg.gradients(getattr(sg, name)(x), x), {x: 0.0})
    assert g == expected


@pytest.mark.parametrize("name", ["floor", "ceil", "round"])
def test_rounding_is_unconnected(name):
    x = sg.placeholder("x")
    assert sg.gradients(getattr(sg, name)(x) * x, x)[0] is not None
    assert sg.gradients(getattr(sg, name)(x), x) == [None]


def test_maximum_ties_go_to_the_first_argument():
    x, y = sg.placeholder("x"), sg.placeholder("y")
    assert [float(v) for v in ev(sg.gradients(sg.maximum(x, y), [x, y]), {x: 1., y: 1.})] == [1, 0]
    assert [float(v) for v in ev(sg.gradients(sg.minimum(x, y), [x, y]), {x: 1., y: 1.})] == [1, 0]


def test_reduce_max_ties_split_evenly():
    x = sg.placeholder("x", shape=(4,))
    (g,) = ev(sg.gradients(sg.reduce_max(x), x), {x: np.array([1.0, 3.0, 3.0, 0.0])})
    np.testing.assert_array_equal(g, [0.0, 0.5, 0.5, 0.0])


def test_pow_gradient_wrt_exponent_is_zero_for_nonpositive_base():
    x, p = sg.placeholder("x", shape=(2,)), sg.placeholder("p", shape=(2,))
    (dp,) = ev(sg.gradients(x ** p, p), {x: np.array([0.0, -2.0]), p: np.array([2.0, 2.0])})
    np.testing.assert_array_equal(dp, [0.0, 0.0])


def test_softplus_gradient_is_stable_for_large_inputs():
    x = sg.placeholder("x", shape=(3,))
    (g,) = ev(sg.gradients(sg.softplus(x), x), {x: np.array([-800.0, 0.0, 800.0])})
    np.testing.assert_allclose(g, [0.0, 0.5, 1.0])


def test_unselected_where_branch_contributes_exactly_zero():
    x = sg.placeholder("x", shape=(3,))
    y = sg.where(x > 0, sg.log(x), 0.0 * x)
    (g,) = ev(sg.gradients(y, x), {x: np.array([0.0, 4.0, -1.0])})
    np.testing.assert_array_equal(g, [0.0, 0.25, 0.0])


def test_where_rule_holds_through_nested_wheres_and_chains():
    x = sg.placeholder("x", shape=(3,))
    inner = sg.where(x > -1.0, sg.sqrt(x) * 3.0, x)
    y = sg.where(x > 0, sg.exp(inner), 1.0)
    (g,) = ev(sg.gradients(y, x), {x: np.array([-0.5, 0.0, 1.0])})
    assert np.isfinite(g[:2]).all() and g[0] == 0.0
    np.testing.assert_allclose(g[2], np.exp(3.0) * 1.5)


def test_heaviside_never_leaks_into_results():
    x, y = sg.placeholder("x"), sg.placeholder("y")
    for out in (sg.maximum(x, y), sg.relu(x), sg.abs(x)):
        for g in sg.gradients(out, [x, y]):
            if g is not None:
                assert not sg.to_sympy(g).has(sp.Heaviside, sp.DiracDelta)


# --- integers and bools ----------------------------------------------------------------------
def test_integer_path_gives_none_and_integer_zero_policy_keeps_dtype():
    n = sg.placeholder("n", shape=(3,), dtype="int32")
    y = sg.cast(n, "float64") ** 2
    assert sg.gradients(y, n) == [None]
    (z,) = ev(sg.gradients(y, n, unconnected_gradients="zero"), {n: np.arange(3, dtype=np.int32)})
    assert z.dtype == np.int32 and not z.any()


def test_bool_mask_is_a_constant():
    x = sg.placeholder("x", shape=(4,))
    y = sg.cast(x > 0, "float64") * x
    (g,) = ev(sg.gradients(y, x), {x: np.array([1.5, -2.0, 0.5, -0.1])})
    np.testing.assert_array_equal(g, [1.0, 0.0, 1.0, 0.0])


# --- errors users rely on ------------------------------------------------------------------
def test_grad_ys_shape_mismatch_names_the_entry():
    x = sg.placeholder("x", shape=(3,))
    with pytest.raises(ValueError, match=r"grad_ys\[0\] has shape \(\) .* shape \(3,\)"):
        sg.gradients(sg.sin(x), x, grad_ys=[np.array(2.0)])


def test_grad_ys_dtype_mismatch_is_a_type_error():
    x = sg.placeholder("x", shape=(2,))
    with pytest.raises(TypeError, match="float32"):
        sg.gradients(sg.sin(x), x, grad_ys=[np.ones(2, np.float32)])


def test_a_seed_or_tangent_that_is_not_a_number_names_the_api_and_the_entry():
    """grad_ys, output_gradients and tangents share one conversion (arguments.array_of)."""
    x = sg.placeholder("x", shape=(2,))
    with pytest.raises(TypeError, match=r"^sg\.gradients: grad_ys\[0\] cannot be converted "
                                        r"to float64"):
        sg.gradients(sg.sin(x), x, grad_ys=[["a", "b"]])
    with pytest.raises(TypeError, match=r"^sg\.jvp: tangents\[0\] cannot be converted to "
                                        r"float64"):
        sg.jvp([x * 2.0], [x], [["a", "b"]])
    v = sg.Variable(np.ones(2))
    with sg.GradientTape() as tape:
        y = v * 3.0
    with pytest.raises(TypeError, match=r"^GradientTape\.gradient: output_gradients\[0\] "
                                        r"cannot be converted to float64"):
        tape.gradient(y, v, output_gradients=[["a", "b"]])


def test_grad_ys_length_mismatch():
    x = sg.placeholder("x", shape=(2,))
    with pytest.raises(ValueError, match="grad_ys has 2 entries but ys has 1"):
        sg.gradients(sg.sin(x), x, grad_ys=[None, None])


@pytest.mark.parametrize("bad", [3.0, None, np.ones(2)])
def test_non_tensor_xs_are_type_errors(bad):
    x = sg.placeholder("x", shape=(2,))
    with pytest.raises(TypeError, match=r"xs\[0\]"):
        sg.gradients(x * x, [bad])


def test_unknown_policy_string_is_a_value_error():
    x = sg.placeholder("x")
    with pytest.raises(ValueError, match="unconnected_gradients"):
        sg.gradients(sg.exp(x), x, unconnected_gradients="ZERO")


def test_undefined_sympy_function_is_a_lookup_error_naming_the_op():
    from symgrad.ops.elementwise.api import expr
    f = sp.Function("f")
    x = sg.placeholder("x")
    y = expr([x], f(sp.Symbol("_0", real=True)), "float64", name="q")
    with pytest.raises(LookupError, match="No gradient defined for operation 'expr'.*'q'"):
        sg.gradients(sg.sin(y), x)
    assert sg.gradients(sg.stop_gradient(y) * x, x)[0] is not None


def test_impossible_broadcast_names_op_and_shapes():
    a, b = sg.placeholder("a", shape=(3,)), sg.placeholder("b", shape=(4,))
    with pytest.raises(ValueError, match=r"add: .*'a' \(3,\).*'b' \(4,\)"):
        _ = a + b


def test_duplicate_placeholder_names_are_an_error():
    a, b = sg.placeholder("x"), sg.placeholder("x")
    with pytest.raises(ValueError, match="two different placeholders are named 'x'"):
        sg.evaluate(a + b, {a: 1.0, b: 2.0})


def test_feeding_wrong_shape_or_dtype_names_the_placeholder():
    x = sg.placeholder("speed", shape=(None, 3))
    with pytest.raises(ValueError, match=r"'speed' has shape \(None, 3\) but was fed shape \(2, 4\)"):
        sg.evaluate(x * 2.0, {x: np.ones((2, 4))})
    with pytest.raises(ValueError, match="'speed' has dtype float64 but was fed float32"):
        sg.evaluate(x * 2.0, {x: np.ones((2, 3), np.float32)})  # integers convert: docs/inputs.md
    with pytest.raises(ValueError, match="'speed'.*missing"):
        sg.evaluate(x * 2.0, {})


def test_user_values_are_never_modified():
    value = np.array([1.0, 2.0, 3.0])
    c = sg.constant(value)
    value[0] = 100.0
    x = sg.placeholder("x", shape=(3,))
    feed = np.array([0.5, 0.5, 0.5])
    out = sg.evaluate(c * x, {x: feed})
    np.testing.assert_array_equal(out, [0.5, 1.0, 1.5])
    np.testing.assert_array_equal(feed, [0.5, 0.5, 0.5])


def test_gradient_nodes_are_named_under_the_name_scope():
    x = sg.placeholder("x")
    (g,) = sg.gradients(sg.sin(x) * x, x, name="my_grads")
    assert g.name.startswith("my_grads/")


def test_to_sympy_and_latex_of_a_derivative():
    x = sg.placeholder("x")
    g = sg.gradients(sg.sin(x) * x, x)[0]
    xs = sp.Symbol("x", real=True)
    assert sp.simplify(sg.to_sympy(g) - (xs * sp.cos(xs) + sp.sin(xs))) == 0
    assert "\\cos" in sg.latex(g)


def test_duplicate_placeholder_names_are_an_error_in_gradients():
    a, b = sg.placeholder("w"), sg.placeholder("w")
    with pytest.raises(ValueError, match="named 'w'"):
        sg.gradients(a * b, a)


def test_second_derivative_through_a_selection_is_none_as_in_tf():
    """maximum's gradient selects g by a comparison: no float path to x (TF gives None),
    while relu'' and abs'' are zeros (TF's ReluGrad and sign have zero gradients)."""
    x = sg.placeholder("x", shape=(2,))
    first = sg.gradients(sg.maximum(x, 0.5), x)[0]
    assert sg.gradients(first, x) == [None]
    for op in (sg.relu, sg.abs):
        (second,) = sg.evaluate(sg.gradients(sg.gradients(op(x), x)[0], x), {x: [0.0, 1.0]})
        np.testing.assert_array_equal(second, [0.0, 0.0])


@pytest.mark.parametrize("target", ["evaluate", "cpu", "parallel"])
def test_where_rule_holds_with_unknown_lengths_and_broadcasting(target):
    """The mask survives the un-broadcast that unknown (None) lengths require."""
    s, b = sg.placeholder("s", shape=(None,)), sg.placeholder("b", shape=(None,))
    y = sg.reduce_sum(sg.where(s > 0, sg.sqrt(s * b), 0.0) + sg.where(s > 0, sg.log(s), 0.0))
    grads = sg.gradients(y, [s, b])
    feeds = [np.array([0.0, 1.0, -1.0]), np.array([2.0])]
    got = (sg.evaluate(grads, dict(zip([s, b], feeds))) if target == "evaluate"
           else sg.function([s, b], grads, target=target)(*feeds))
    np.testing.assert_allclose(got[0], [0.0, np.sqrt(2) / 2 + 1.0, 0.0])
    np.testing.assert_allclose(got[1], [0.5 / np.sqrt(2.0)])


def test_where_rule_holds_through_slices_and_reshapes():
    """The mask moves with the gradient through layout ops, so sqrt'(0) = inf below a
    slice or reshape is never multiplied by the unselected branch's 0."""
    x = sg.placeholder("x", shape=(4,))
    v = {x: np.array([1.0, 0.0, 4.0, 0.0])}
    s = sg.sqrt(x)[1:]
    (g,) = sg.evaluate(sg.gradients(sg.reduce_sum(sg.where(s > 0, sg.log(s), 0.0)), x), v)
    np.testing.assert_array_equal(g, [0.0, 0.0, 0.125, 0.0])
    m = sg.reshape(sg.sqrt(x), (2, 2))
    (g,) = sg.evaluate(sg.gradients(sg.reduce_sum(sg.where(m > 0, sg.log(m), 0.0)), x), v)
    np.testing.assert_array_equal(g, [0.5, 0.0, 0.125, 0.0])
