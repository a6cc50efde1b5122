"""TensorFlow's ``map_fn`` and ``vectorized_map`` tests, ported to ``sg.map_fn`` and
``sg.vectorized_map`` (issue 31, item 6).

Provenance (github:tensorflow/tensorflow):
  * tensorflow/python/kernel_tests/control_flow/map_fn_test.py, ``MapFnTest``:
    testMap_Simple, testMap_SimpleNotTensor, testMapVariable, testMapOverScalarErrors,
    testMap_Grad, testMap_SingleInputMultiOutput, testMap_MultiOutputMismatchedDtype,
    testMap_MultiInputSingleOutput, testMap_MultiInputSameStructureOutput, testMapShape,
    testMapUnknownShape, testMapEmptyScalar, testMapEmptyTensor, testMapEmptyList.
  * tensorflow/python/ops/parallel_for/control_flow_ops_test.py, ``PForTest``:
    test_vectorized_map, test_vectorized_map_with_dynamic_shape, test_where_shape,
    test_vectorized_map_broadcasts_unit_dimensions, test_vectorized_map_example_1,
    test_disable_tf_function, test_op_conversion_fallback_to_while_loop (top_k);
    the gradient-in-loop_fn test (``gradients(gather(out, i, axis=1), x)`` of a while
    loop's output, a Jacobian row per iteration).
  * tensorflow/python/ops/parallel_for/gradients_test.py, ``GradientsTest``:
    test_jacobian_fixed_shape, test_batch_jacobian_fixed_shape, test_fc_batch_jacobian,
    test_fc_per_eg_grad (TF's pfor jacobians, here sg.jacobian / sg.gradients inside
    sg.vectorized_map, against a loop over the examples).
  * tensorflow/python/ops/parallel_for/array_test.py: vectorized_map of
    ``gather(x, t, axis=-1)`` over ``range(2)`` under a GradientTape (gradient [[1, 1]]).
  * tensorflow/python/ops/parallel_for/xla_control_flow_ops_test.py: a vectorized_map
    inside a while loop's body (``while_compute``).
  * the Keras integration test vectorized_map_test.py (``test_vectorized_map``):
    per-example gradients of a dense layer computed inside the mapped function.

Not ported: sparse and ragged tensors, variable scopes and variable creation inside
``fn``, strings, autograph, XLA, ``parallel_iterations`` and pfor's ``pfor_config``
reductions (symgrad has none of these). TF broadcasts a leading length 1 against the
others in vectorized_map; symgrad requires equal leading lengths (docs/vectorized_map.md)
and the port checks its ShapeError instead.

Engines: sg.evaluate, compiled ``sg.function`` (cpu), the tape where fn's ops allow, and
``sg.testing.check_gradients`` (evaluate, function, tape, finite differences) for the
gradients.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import symgrad as sg
from symgrad.testing import check_gradients

NUMS = np.array([1, 2, 3, 4, 5, 6])


# --- map_fn_test.py ----------------------------------------------------------------------------
def test_map_simple():
    elems = sg.constant(NUMS.tolist(), name="data")
    r = sg.map_fn(lambda x: (x + 3) * 2, elems)
    assert np.array_equal(sg.evaluate(r, {}), (NUMS + 3) * 2)
    assert np.array_equal(sg.function([], r)(), (NUMS + 3) * 2)


def test_map_simple_not_tensor():
    r = sg.map_fn(lambda x: (x + 3) * 2, NUMS)
    assert np.array_equal(sg.evaluate(r, {}), (NUMS + 3) * 2)


def test_map_variable():
    """testMapVariable: a variable as elems (eager: the tape's scan path)."""
    v = sg.Variable(np.array([1.0, 2.0]))
    result = sg.map_fn(lambda x: x + 1, v)
    np.testing.assert_array_equal(np.asarray(result), [2.0, 3.0])


def test_map_over_scalar_errors():
    """TF: ValueError "must be a Tensor, not scalar" for a list of scalars and a scalar."""
    with pytest.raises(ValueError, match=r"scalar"):
        sg.map_fn(lambda x: x, [1, 2])
    with pytest.raises(ValueError, match=r"scalar"):
        sg.map_fn(lambda x: x, 1)


@pytest.mark.parametrize("engine", ["evaluate", "cpu", "tape"])
def test_map_grad(engine):
    """testMap_Grad: y = param * x^2 over elems 1..6; dy/dparam = 91, dy/dx = 4 x."""
    elems0 = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    if engine == "tape":
        param, elems = sg.Variable(2.0), sg.Variable(elems0)
        with sg.GradientTape(persistent=True) as tape:
            y = sg.map_fn(lambda x: sg.square(x) * param, elems)
        r_param, r_elems = tape.gradient(y, [param, elems])
        r_param, r_elems = np.asarray(r_param), np.asarray(r_elems)
    else:
        param, elems = sg.placeholder("param"), sg.placeholder("elems", (6,))
        y = sg.map_fn(lambda x: sg.square(x) * param, elems)
        (r_param,) = sg.gradients(y, [param])
        (r_elems,) = sg.gradients(y, [elems])
        if engine == "evaluate":
            r_param, r_elems = sg.evaluate([r_param, r_elems], {param: 2.0, elems: elems0})
        else:
            r_param, r_elems = sg.function([param, elems], [r_param, r_elems])(2.0, elems0)
    assert float(r_param) == 91.0
    np.testing.assert_array_equal(r_elems, [4.0, 8.0, 12.0, 16.0, 20.0, 24.0])


def test_map_single_input_multi_output():
    r = sg.map_fn(lambda x: ((x + 3) * 2, -(x + 3) * 2), NUMS, dtype=("int64", "int64"))
    assert len(r) == 2
    assert r[0].shape == (6,) and r[1].shape == (6,)
    received = sg.evaluate(list(r), {})
    assert np.array_equal(received[0], (NUMS + 3) * 2)
    assert np.array_equal(received[1], -(NUMS + 3) * 2)
    assert received[0].dtype == np.int64


def test_map_multi_output_mismatched_dtype():
    """fn returns a tuple, dtype is a list: TypeError naming both structures."""
    with pytest.raises(TypeError,
                       match=r"structure \[\*, \*\] but fn returns \(\*, \*\)"):
        sg.map_fn(lambda x: ((x + 3) * 2, -(x + 3) * 2), NUMS, dtype=["int64", "int64"])


def test_map_multi_input_single_output():
    r = sg.map_fn(lambda x: x[0] * x[1][0] + x[1][1], (NUMS, (NUMS, -NUMS)), dtype="int64")
    assert r.shape == (6,)
    assert np.array_equal(sg.evaluate(r, {}), NUMS * NUMS + (-NUMS))


def test_map_multi_input_same_structure_output():
    r = sg.map_fn(lambda x: (x[1][0], (x[1][1], x[0])), (NUMS, (2 * NUMS, -NUMS)))
    r = [r[0], r[1][0], r[1][1]]
    assert [t.shape for t in r] == [(6,)] * 3
    received = sg.evaluate(r, {})
    assert np.array_equal(received[0], 2 * NUMS)
    assert np.array_equal(received[1], -NUMS)
    assert np.array_equal(received[2], NUMS)


def test_map_shape():
    x = sg.constant([[1, 2, 3], [4, 5, 6]])
    y = sg.map_fn(lambda e: e, x)
    assert y.shape == sg.evaluate(y, {}).shape == (2, 3)


def test_map_unknown_shape():
    """testMapUnknownShape: a leading length unknown until the call (the scan path)."""
    x = sg.placeholder("x", (None, 3))
    y = sg.map_fn(lambda e: e * 2.0, x)
    assert y.shape[0] is None
    value = np.arange(12.0).reshape(4, 3)
    np.testing.assert_array_equal(sg.evaluate(y, {x: value}), 2 * value)
    np.testing.assert_array_equal(sg.function([x], y)(value[:3]), 2 * value[:3])


def test_map_empty_scalar():
    """testMapEmptyScalar: fn returning a Python number over an empty int vector."""
    r = sg.map_fn(lambda x: 1, sg.constant(np.array([], dtype=np.int32)))
    assert r.shape == (0,)
    assert sg.evaluate(r, {}).shape == (0,)


def test_map_empty_tensor():
    r = sg.map_fn(lambda x: sg.constant(np.zeros([3, 2])), sg.constant(np.array([])))
    assert r.shape == (0, 3, 2)
    assert sg.evaluate(r, {}).shape == (0, 3, 2)


def test_map_empty_list():
    with pytest.raises(ValueError, match=r"elems"):
        sg.map_fn(lambda e: e, [])


# --- parallel_for/control_flow_ops_test.py -----------------------------------------------------
def test_vectorized_map():
    result = sg.vectorized_map(lambda x: sg.reduce_mean(x, axis=0, keepdims=True),
                               sg.constant(np.ones((10, 5, 3))))
    assert result.shape == (10, 1, 3)
    np.testing.assert_array_equal(sg.evaluate(result, {}), np.ones((10, 1, 3)))


def test_vectorized_map_with_dynamic_shape():
    x = sg.placeholder("x", (None, None, None))
    result = sg.vectorized_map(lambda x: sg.reduce_mean(x, axis=0, keepdims=True), x)
    np.testing.assert_array_equal(sg.evaluate(result, {x: np.ones((10, 5, 3))}),
                                  np.ones((10, 1, 3)))


def test_where_shape():
    a = sg.constant([[1.0], [1.0]])
    b = sg.constant([1.0])
    result = sg.vectorized_map(lambda x: sg.where(x > 0, x, b), a)
    assert result.shape == (2, 1)
    np.testing.assert_array_equal(sg.function([], result)(), [[1.0], [1.0]])


def test_vectorized_map_broadcasts_unit_dimensions():
    """TF broadcasts a leading length 1; symgrad maps equal lengths only (ShapeError)."""
    for static in (True, False):
        a_value, b_value = np.array([3.1]), np.array([-2.0, 6.0, 9.0])
        a = sg.constant(a_value) if static else sg.placeholder("a", (None,))
        feeds = {} if static else {a: a_value}
        a_plus_1 = sg.vectorized_map(lambda a: a + 1, a)
        np.testing.assert_array_equal(sg.evaluate(a_plus_1, feeds), a_value + 1)
        a_plus_a = sg.vectorized_map(sum, (a, a))
        np.testing.assert_array_equal(sg.evaluate(a_plus_a, feeds), a_value + a_value)
    with pytest.raises(sg.ShapeError, match=r"leading length"):
        sg.vectorized_map(sum, (sg.constant(a_value), sg.constant(b_value)))


def test_vectorized_map_example_1():
    """The outer product of each element with itself: (batch, 32, 32, 32, 32) statically;
    values on a small batch against numpy."""
    c = sg.vectorized_map(lambda a: sg.tensordot(a, a, 0), sg.constant(np.ones((100, 32, 32))))
    assert c.shape == (100, 32, 32, 32, 32)
    a0 = np.random.default_rng(0).normal(size=(4, 3, 2))
    small = sg.vectorized_map(lambda a: sg.tensordot(a, a, 0), sg.constant(a0))
    np.testing.assert_allclose(sg.evaluate(small, {}),
                               np.einsum("bij,bkl->bijkl", a0, a0), rtol=1e-14)


def test_vectorized_map_on_ints():
    """test_disable_tf_function's values: x * x over range(4)."""
    r = sg.vectorized_map(lambda x: x * x, sg.constant(np.arange(4)))
    assert sg.evaluate(r, {}).tolist() == [0, 1, 4, 9]


def test_op_conversion_fallback_to_while_loop():
    """top_k has no batching rule: a scan, with a warning naming the op; the values
    match the per-element op (TF's _test_loop_fn compares pfor with a for loop)."""
    x0 = np.random.default_rng(1).uniform(size=(3, 2, 4))
    x = sg.placeholder("x", (3, 2, 4))

    def loop_fn(x_i):
        return sg.math.top_k(x_i)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        values, indices = sg.vectorized_map(loop_fn, x)
    batched_rule = not caught
    if not batched_rule:
        assert "top_k" in str(caught[0].message) or "has no batching rule" in str(
            caught[0].message)
    got_values, got_indices = sg.evaluate([values, indices], {x: x0})
    np.testing.assert_allclose(got_values[..., 0], x0.max(-1))
    np.testing.assert_array_equal(got_indices[..., 0], x0.argmax(-1))


def test_gradient_inside_the_mapped_function():
    """A Jacobian row per iteration: the gradient of column i of a while loop's output
    (x @ y @ y @ y @ y) with respect to x, mapped over i (TF's loop_fn of
    gradients(gather(out, i, axis=1), x))."""
    rng = np.random.default_rng(2)
    x0, y0 = rng.uniform(size=(2, 3)), rng.uniform(size=(3, 3))
    x, y = sg.placeholder("x", (2, 3)), sg.placeholder("y", (3, 3))
    _, out = sg.while_loop(lambda i, _: i < 4, lambda i, out: (i + 1, sg.matmul(out, y)),
                           [sg.constant(0), x])

    def loop_fn(i):
        out_i = sg.gather(out, i, axis=1)
        (grad,) = sg.gradients(out_i, [x])
        return sg.reshape(grad, [-1])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = sg.vectorized_map(loop_fn, sg.constant(np.arange(3)))
    got = sg.evaluate(rows, {x: x0, y: y0})
    y4 = np.linalg.matrix_power(y0, 4)
    # d sum_r (x y^4)[r, i] / d x[r, k] = y^4[k, i]
    want = np.stack([np.tile(y4[:, i], (2, 1)).reshape(-1) for i in range(3)])
    np.testing.assert_allclose(got, want, rtol=1e-12)


# --- parallel_for/gradients_test.py -------------------------------------------------------------
def test_jacobian_fixed_shape():
    """y = x^T x; row i of the Jacobian is the gradient of y.flat[i], mapped over i."""
    x0 = np.random.default_rng(6).uniform(size=(2, 2))
    x = sg.placeholder("x", (2, 2))
    y = sg.reshape(sg.matmul(sg.transpose(x), x), [-1])

    def row(i):
        return sg.gradients(sg.gather(y, i), [x])[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mapped = sg.reshape(sg.vectorized_map(row, sg.constant(np.arange(4))), (2, 2, 2, 2))
    answer = sg.stack([sg.gradients(y[k], [x])[0] for k in range(4)])
    got, want, full = sg.evaluate([mapped, answer, sg.jacobian(sg.reshape(y, (2, 2)), x)],
                                  {x: x0})
    np.testing.assert_allclose(got.reshape(4, 2, 2), want, rtol=1e-12)
    np.testing.assert_allclose(full, got, rtol=1e-12)


def test_batch_jacobian_fixed_shape():
    """y = x * x per example (3, 5): each example's Jacobian is diag(2 x)."""
    x0 = np.random.default_rng(7).uniform(size=(2, 3, 5))
    x = sg.placeholder("x", (2, 3, 5))
    batch_jacobian = sg.vectorized_map(lambda e: sg.jacobian(e * e, e), x)
    assert batch_jacobian.shape == (2, 3, 5, 3, 5)
    answer = np.stack([np.diag(2 * x0[b].reshape(-1)).reshape(3, 5, 3, 5) for b in range(2)])
    np.testing.assert_allclose(sg.evaluate(batch_jacobian, {x: x0}), answer, rtol=1e-14)
    np.testing.assert_allclose(sg.function([x], batch_jacobian)(x0), answer, rtol=1e-14)


def _fc(inputs, weights):
    """A small fully connected net (TF's create_fc_* : tanh layers)."""
    out = inputs
    for w in weights:
        out = sg.tanh(sg.matmul(out, w))
    return out


def test_fc_batch_jacobian_and_per_example_gradients():
    """create_fc_batch_jacobian(8, 4, 2) and create_fc_per_eg_grad(8, 4, 2): mapped
    Jacobians and per-example gradients equal a Python loop over the examples."""
    rng = np.random.default_rng(8)
    batch, size, layers = 8, 4, 2
    x0 = rng.normal(size=(batch, size))
    w0 = [rng.normal(size=(size, size)) / 2 for _ in range(layers)]
    x = sg.placeholder("x", (batch, size))
    ws = [sg.placeholder(f"w{k}", (size, size)) for k in range(layers)]
    feeds = {x: x0, **dict(zip(ws, w0))}

    def per_example(e):
        out = _fc(sg.expand_dims(e, 0), ws)[0]
        loss = sg.reduce_sum(out * out)
        return sg.jacobian(out, e), tuple(sg.gradients(loss, ws))
    jac, grads = sg.vectorized_map(per_example, x)
    looped = [per_example(x[b]) for b in range(batch)]
    got = sg.evaluate([jac, *grads], feeds)
    want_jac = sg.evaluate([j for j, _ in looped], feeds)
    want_grads = sg.evaluate([g for _, gs in looped for g in gs], feeds)
    np.testing.assert_allclose(got[0], np.stack(want_jac), rtol=1e-12, atol=1e-14)
    for k in range(layers):
        np.testing.assert_allclose(got[1 + k], np.stack(want_grads[k::layers]), rtol=1e-12,
                                   atol=1e-14)
    compiled = sg.function([x, *ws], [jac, *grads])(x0, *w0)
    for c, g in zip(compiled, got):
        np.testing.assert_allclose(c, g, rtol=1e-12, atol=1e-14)


# --- parallel_for/array_test.py ----------------------------------------------------------------
def test_gather_gradient_under_the_tape():
    x = sg.Variable(np.zeros([1, 2]))
    with sg.GradientTape() as tape:            # elems: numpy (a graph constant would mix)
        r = sg.vectorized_map(lambda t: sg.gather(x, t, axis=-1), np.arange(2))
    np.testing.assert_allclose(np.asarray(tape.gradient(r, x)), [[1.0, 1.0]])


def test_gather_gradient_on_the_graph():
    x = sg.placeholder("x", (1, 2))
    with warnings.catch_warnings():     # gather with a mapped index: batched, no scan
        warnings.simplefilter("error")
        r = sg.vectorized_map(lambda t: sg.gather(x, t, axis=-1), sg.constant(np.arange(2)))
    (g,) = sg.gradients(r, [x])
    np.testing.assert_allclose(sg.evaluate(g, {x: np.zeros((1, 2))}), [[1.0, 1.0]])


# --- parallel_for/xla_control_flow_ops_test.py -------------------------------------------------
def test_vectorized_map_inside_a_while_loop():
    x = sg.placeholder("x", (10, 5, 3))

    def vectorized_compute(i):
        inp = sg.gather(x, i)
        return sg.vectorized_map(lambda e: sg.reduce_mean(e, axis=0, keepdims=True), inp)

    _, result = sg.while_loop(lambda i, _: i < 10,
                              lambda i, y: (i + 1, y + vectorized_compute(i)),
                              [sg.constant(0), sg.constant(np.zeros([5, 1]))])
    np.testing.assert_allclose(sg.evaluate(result, {x: np.ones((10, 5, 3))}),
                               np.ones((5, 1)) * 10)


# --- keras integration_test/vectorized_map_test.py ---------------------------------------------
def test_per_example_gradients():
    """The gradient of each example's loss with respect to a dense layer's kernel and
    bias, computed inside the mapped function: (batch, features, 1) and (batch, 1)."""
    batch_size, num_features = 10, 32
    rng = np.random.default_rng(3)
    kernel0, bias0 = rng.normal(size=(num_features, 1)), rng.normal(size=(1,))
    inputs0, labels0 = rng.uniform(size=(batch_size, num_features)), rng.uniform(
        size=(batch_size, 1))
    kernel, bias = sg.placeholder("kernel", (num_features, 1)), sg.placeholder("bias", (1,))
    inputs = sg.placeholder("inputs", (batch_size, num_features))
    labels = sg.placeholder("labels", (batch_size, 1))

    def model_fn(arg):
        inp, label = arg
        prediction = sg.matmul(sg.expand_dims(inp, 0), kernel) + bias
        loss = 0.5 * sg.reduce_sum(sg.square(sg.expand_dims(label, 0) - prediction))
        return tuple(sg.gradients(loss, [kernel, bias]))

    g_kernel, g_bias = sg.vectorized_map(model_fn, (inputs, labels))
    assert g_kernel.shape == (batch_size, num_features, 1) and g_bias.shape == (batch_size, 1)
    feeds = [kernel0, bias0, inputs0, labels0]
    residual = inputs0 @ kernel0 + bias0 - labels0                       # (batch, 1)
    for got in (sg.evaluate([g_kernel, g_bias], dict(zip([kernel, bias, inputs, labels],
                                                         feeds))),
                sg.function([kernel, bias, inputs, labels], [g_kernel, g_bias])(*feeds)):
        np.testing.assert_allclose(got[0], inputs0[:, :, None] * residual[:, None, :],
                                   rtol=1e-12)
        np.testing.assert_allclose(got[1], residual, rtol=1e-12)


# --- gradients through the map on every engine ---------------------------------------------------
def _rk4_map(states, mu):
    def f(y):
        return sg.stack([y[1], mu * (1 - y[0] ** 2) * y[1] - y[0]], 0)

    def rk4(y, h=0.1):
        k1 = f(y)
        k2 = f(y + h / 2 * k1)
        k3 = f(y + h / 2 * k2)
        k4 = f(y + h * k3)
        return y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return sg.vectorized_map(rk4, states)


def test_vectorized_map_gradients_on_every_engine():
    """evaluate, sg.function (cpu), the tape and finite differences agree."""
    states = np.random.default_rng(4).normal(size=(6, 2))
    check_gradients(_rk4_map, states, np.array(1.5), raise_on_error=True)


def test_map_fn_fallback_gradients_on_every_engine():
    """A map whose fn has a loop (no batching rule): the scan, differentiated."""
    def fn(rows, w):
        def body(row):
            return sg.fori_loop(0, 3, lambda i, v: sg.sin(v) * w, row)
        return sg.map_fn(body, rows)
    rows = np.random.default_rng(5).normal(size=(4, 3))
    check_gradients(fn, rows, np.array([0.5, 1.0, 1.5]), raise_on_error=True)
