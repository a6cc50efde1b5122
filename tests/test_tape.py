"""sg.GradientTape, sg.Variable and eager tensors: TF's seed examples and semantics."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg


# --- eager values ----------------------------------------------------------------------------
def test_eager_ops_compute_immediately_with_numpy_forward():
    v = sg.Variable([[1.0, -2.0], [3.0, 0.5]])
    y = sg.reduce_sum(sg.where(v > 0, sg.sin(v) * 2.0, v ** 2), axis=0)
    expected = np.sum(np.where(v.numpy() > 0, np.sin(v.numpy()) * 2, v.numpy() ** 2), axis=0)
    assert isinstance(y, sg.EagerTensor)
    np.testing.assert_allclose(y.numpy(), expected)
    assert y.shape == (2,) and y.dtype == np.float64
    assert (v @ v).shape == (2, 2) and v[:, 0].shape == (2,) and v[None, 1:].shape == (1, 1, 2)
    assert sg.transpose(v).numpy()[0, 1] == 3.0 and sg.reshape(v, (-1,)).shape == (4,)


def test_eager_dtypes_follow_sg_evaluate():
    x32 = sg.Variable(np.array([1.0, 2.0], np.float32))
    assert (x32 * 2.0).dtype == np.float32
    i = sg.Variable(np.array([1, 2], np.int32))
    assert (i * 2.0).dtype == np.float64
    assert sg.reduce_sum(i).dtype == np.int64
    assert sg.cast(x32, "float64").dtype == np.float64
    assert sg.sin(np.array([0.0, 1.0])).dtype == np.float64  # numpy arrays compute eagerly


def test_numpy_operands_and_python_protocols():
    v = sg.Variable([1.0, 2.0])
    assert isinstance(np.array([1.0, 1.0]) + v, sg.EagerTensor)
    assert float(sg.reduce_sum(v)) == 3.0
    assert [float(t) for t in v * 1.0] == [1.0, 2.0]
    np.testing.assert_array_equal(np.asarray(v * 2.0), [2.0, 4.0])


def test_mixing_eager_and_symbolic_is_a_type_error():
    v = sg.Variable(1.0)
    x = sg.placeholder("x_mix")
    with pytest.raises(TypeError, match="mix"):
        v * x
    with pytest.raises(TypeError):
        sg.GradientTape().gradient(x, v)


def test_eager_shape_errors_are_symgrad_errors():
    with pytest.raises(sg.ShapeError):
        sg.Variable([1.0, 2.0]) + sg.Variable([1.0, 2.0, 3.0])


# --- TF's seed examples ------------------------------------------------------------------------
def test_persistent_tape():
    x = sg.Variable(3.0)
    with sg.GradientTape(persistent=True) as tape:
        y = x * x
        z = y * y
    assert float(tape.gradient(z, x)) == 108.0
    assert float(tape.gradient(y, x)) == 6.0


def test_non_persistent_tape_second_call_raises():
    x = sg.Variable(3.0)
    with sg.GradientTape() as tape:
        y = x * x
    tape.gradient(y, x)
    with pytest.raises(RuntimeError, match="non-persistent"):
        tape.gradient(y, x)
    with pytest.raises(sg.TapeError):
        tape.gradient(y, x)


def test_nested_tapes_second_derivative():
    x = sg.Variable(3.0)
    with sg.GradientTape() as t2:
        with sg.GradientTape() as t1:
            y = x * x * x
        dy_dx = t1.gradient(y, x)
    d2y_dx2 = t2.gradient(dy_dx, x)
    assert float(dy_dx) == 27.0 and float(d2y_dx2) == 18.0


def test_third_derivative_three_tapes():
    x = sg.Variable(0.7)
    with sg.GradientTape() as t3:
        with sg.GradientTape() as t2:
            with sg.GradientTape() as t1:
                y = sg.sin(x)
            g1 = t1.gradient(y, x)
        g2 = t2.gradient(g1, x)
    g3 = t3.gradient(g2, x)
    assert np.isclose(float(g3), -np.cos(0.7))


def test_dense_layer_gradients_by_position():
    rng = np.random.default_rng(0)
    w = sg.Variable(rng.standard_normal((3, 2)), name="w")
    b = sg.Variable(np.zeros(2), name="b")
    x = rng.standard_normal((4, 3))
    with sg.GradientTape() as tape:
        y = x @ w + b
        loss = sg.reduce_mean(y ** 2)
    grads = tape.gradient(loss, [w, b])
    assert isinstance(grads, list) and len(grads) == 2
    dw, db = grads
    yv = x @ w.numpy() + b.numpy()
    np.testing.assert_allclose(dw.numpy(), x.T @ (2 * yv / yv.size))
    np.testing.assert_allclose(db.numpy(), np.sum(2 * yv / yv.size, axis=0))


def test_unconnected_variable_gives_none_or_zeros():
    x, other = sg.Variable(2.0), sg.Variable([1.0, 2.0])
    with sg.GradientTape(persistent=True) as tape:
        y = x * x
    assert tape.gradient(y, other) is None
    np.testing.assert_array_equal(
        tape.gradient(y, other, unconnected_gradients="zero").numpy(), [0.0, 0.0])
    np.testing.assert_array_equal(
        tape.gradient(y, other, unconnected_gradients=sg.UnconnectedGradients.ZERO).numpy(),
        [0.0, 0.0])
    with pytest.raises(ValueError, match="not connected"):
        tape.gradient(y, [x, other], unconnected_gradients="raise")
    with pytest.raises(ValueError, match="unconnected_gradients"):
        tape.gradient(y, x, unconnected_gradients="ZERO!")


# --- watching ----------------------------------------------------------------------------------
def test_watch_constants_and_watch_accessed_variables():
    c = sg.sin(np.array(1.0))  # an eager tensor, not a Variable: needs watch
    v = sg.Variable(2.0)
    with sg.GradientTape(persistent=True) as tape:
        y = c * c
    assert tape.gradient(y, c) is None
    with sg.GradientTape(persistent=True) as tape:
        tape.watch([c])
        y = c * c
    assert np.isclose(float(tape.gradient(y, c)), 2 * np.sin(1.0))
    with sg.GradientTape(watch_accessed_variables=False) as tape:
        y = v * v
    assert tape.gradient(y, v) is None
    with sg.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(v)
        y = v * v
    assert tape.watched_variables() == (v,)
    assert float(tape.gradient(y, v)) == 4.0
    frozen = sg.Variable(2.0, trainable=False)
    with sg.GradientTape() as tape:
        y = frozen * frozen
    assert tape.gradient(y, frozen) is None


def test_integer_sources_and_targets_are_not_differentiated():
    i = sg.Variable(np.array([1, 2], np.int32))
    x = sg.Variable([1.0, 2.0])
    with sg.GradientTape(persistent=True) as tape:
        tape.watch(i)
        y = sg.cast(i, "float64") * x
    assert tape.gradient(y, i) is None
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [1.0, 2.0])
    with sg.GradientTape() as tape:
        k = sg.cast(x, "int32") * 2
        z = sg.cast(k, "float64") + x
    np.testing.assert_array_equal(tape.gradient(z, x).numpy(), [1.0, 1.0])


def test_stop_gradient_and_stop_recording_and_reset():
    x = sg.Variable(3.0)
    with sg.GradientTape(persistent=True) as tape:
        y = sg.stop_gradient(x * x) * x
        with tape.stop_recording():
            z = x * x
    assert float(tape.gradient(y, x)) == 9.0
    assert tape.gradient(z, x) is None
    with sg.GradientTape(persistent=True) as tape:
        a = x * x
        tape.reset()
        b = x * 2.0
    assert tape.gradient(a, x) is None and float(tape.gradient(b, x)) == 2.0
    with pytest.raises(ValueError, match="not recording"):
        with tape.stop_recording():
            pass


def test_a_tape_cannot_be_entered_twice():
    tape = sg.GradientTape()
    with tape:
        with pytest.raises(RuntimeError, match="already recording"):
            tape.__enter__()


# --- targets, sources and output_gradients -------------------------------------------------------
def test_structures_targets_summed_and_sources_shaped_like_input():
    x, y = sg.Variable(1.0), sg.Variable(2.0)
    with sg.GradientTape(persistent=True) as tape:
        a, b = x * y, x + y
    grads = tape.gradient([a, b], {"x": x, "pair": (y, x)})
    assert set(grads) == {"x", "pair"} and isinstance(grads["pair"], tuple)
    assert float(grads["x"]) == 3.0 and float(grads["pair"][0]) == 2.0
    assert tape.gradient([], [x]) == [None]


def test_output_gradients_rules():
    x = sg.Variable([1.0, 2.0])
    with sg.GradientTape(persistent=True) as tape:
        y = x * 3.0
    np.testing.assert_array_equal(tape.gradient(y, x, output_gradients=[1, 2]).numpy(), [3, 6])
    np.testing.assert_array_equal(
        tape.gradient([y, y], x, output_gradients=[None, np.array([1.0, 0.0])]).numpy(), [6, 3])
    with pytest.raises(ValueError, match=r"output_gradients\[0\] has shape"):
        tape.gradient(y, x, output_gradients=np.ones(1))
    with pytest.raises(TypeError, match="dtype"):
        tape.gradient(y, x, output_gradients=np.ones(2, np.float32))
    with pytest.raises(ValueError, match="entries"):
        tape.gradient([y, y], x, output_gradients=[None])


def test_non_eager_sources_are_type_errors():
    x = sg.Variable(1.0)
    with sg.GradientTape(persistent=True) as tape:
        y = x * x
    with pytest.raises(TypeError, match=r"sources\[1\]"):
        tape.gradient(y, [x, None])
    with pytest.raises(TypeError):
        tape.gradient(y, 3.0)


# --- conventions at kinks and the where rule --------------------------------------------------
def _grad(fn, value):
    x = sg.Variable(value)
    with sg.GradientTape() as tape:
        y = fn(x)
    g = tape.gradient(y, x)
    return None if g is None else g.numpy()


def test_kink_conventions():
    zero = np.array([0.0, 0.0])
    np.testing.assert_array_equal(_grad(sg.relu, zero), [0.0, 0.0])
    np.testing.assert_array_equal(_grad(sg.abs, zero), [0.0, 0.0])
    np.testing.assert_array_equal(_grad(sg.sign, np.array([-1.0, 2.0])), [0.0, 0.0])
    assert _grad(sg.floor, np.array([1.5])) is None
    np.testing.assert_array_equal(_grad(lambda x: sg.maximum(x, x * 1.0), zero), [1.0, 1.0])
    np.testing.assert_array_equal(_grad(lambda x: sg.maximum(x, 0.0), zero), [1.0, 1.0])
    np.testing.assert_array_equal(_grad(sg.reduce_max, np.array([1.0, 3.0, 3.0])),
                                  [0.0, 0.5, 0.5])
    np.testing.assert_array_equal(_grad(lambda x: sg.pow(x, 2.0), np.array([-2.0, 0.0])),
                                  [-4.0, 0.0])
    b = sg.Variable(np.array([0.0, -1.0]))
    with sg.GradientTape() as tape:
        y = sg.pow(b, 2.0) + sg.pow(2.0, b)
    assert np.all(np.isfinite(tape.gradient(y, b).numpy()))


def test_where_unselected_branch_contributes_exactly_zero():
    with np.errstate(all="raise"):  # no numpy warning escapes either
        g = _grad(lambda x: sg.where(x > 0, sg.log(x), 0.0), np.array([0.0, 2.0]))
    np.testing.assert_array_equal(g, [0.0, 0.5])
    g = _grad(lambda x: sg.where(x > 0, sg.sqrt(x) * sg.log(x) + 1.0, x), np.array([0.0, 1.0]))
    np.testing.assert_array_equal(g, [1.0, 1.0])


def test_where_second_derivative_is_finite():
    x = sg.Variable(np.array([0.0, 2.0]))
    with sg.GradientTape() as outer:
        with sg.GradientTape() as inner:
            y = sg.where(x > 0, sg.log(x), 0.0)
        g = inner.gradient(y, x)
    np.testing.assert_array_equal(outer.gradient(g, x).numpy(), [0.0, -0.25])


def test_jacobian():
    x = sg.Variable([1.0, 2.0, 3.0])
    with sg.GradientTape(persistent=True) as tape:
        y = sg.reshape(x * x, (3, 1))
        z = sg.reduce_sum(x) * 2.0
    np.testing.assert_array_equal(tape.jacobian(y, x).numpy(), np.diag([2.0, 4, 6])[:, None, :])
    np.testing.assert_array_equal(tape.jacobian(z, x).numpy(), [2.0, 2.0, 2.0])
    assert tape.jacobian(y, sg.Variable(1.0)) is None


def test_jacobian_inside_outer_tape_gives_hessian():
    x = sg.Variable([1.0, 2.0])
    with sg.GradientTape() as outer:
        with sg.GradientTape() as inner:
            y = x[0] * x[0] * x[1]
        g = inner.gradient(y, x)
    hessian = outer.jacobian(g, x).numpy()
    np.testing.assert_array_equal(hessian, [[4.0, 2.0], [2.0, 0.0]])


def test_variable_assign_keeps_recorded_values():
    v = sg.Variable(2.0)
    with sg.GradientTape() as tape:
        y = v * v
    v.assign(10.0)
    assert float(tape.gradient(y, v)) == 4.0
    with pytest.raises(sg.ShapeError):
        v.assign([1.0, 2.0])


# --- get_gradient --------------------------------------------------------------------------------
def test_get_gradient_tape_and_symbolic():
    x = sg.Variable([1.0, 2.0, 3.0])
    with sg.GradientTape(persistent=True) as tape:
        y = x * x
        g = sg.get_gradient(sg.reduce_sum(y), x, tape=tape, higher_order=True)
        g_plain = sg.get_gradient(sg.reduce_sum(y), x, tape=tape)
        s, s_plain = sg.reduce_sum(g), sg.reduce_sum(g_plain)
    np.testing.assert_array_equal(g.numpy(), [2.0, 4.0, 6.0])
    np.testing.assert_array_equal(sg.get_gradient(s, x, tape=tape).numpy(), [2.0, 2.0, 2.0])
    assert sg.get_gradient(s_plain, x, tape=tape) is None

    p = sg.placeholder("x_get_gradient", shape=(3,))
    ys = sg.reduce_sum(p * p)
    feed = {p: [1.0, 2.0, 3.0]}
    first = sg.get_gradient(ys, [p], higher_order=True)
    np.testing.assert_array_equal(sg.evaluate(first, feed)[0], [2.0, 4.0, 6.0])
    assert sg.get_gradient(sg.reduce_sum(sg.get_gradient(ys, p)), p) is None
    np.testing.assert_array_equal(
        sg.evaluate(sg.get_gradient(sg.reduce_sum(first[0]), p), feed), [2.0, 2.0, 2.0])
