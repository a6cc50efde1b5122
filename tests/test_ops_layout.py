"""Layout ops: errors (typed, naming the op and the argument), None dims, integer inputs,
where-masks through layout gradients, and the Tensor conveniences (.T .ndim .reshape len).

Values and gradients of every op are covered by the registry-driven tests
(tests/test_ops_registry.py, from each record's ``examples``) and by TF's recorded cases
(tests/test_v2_layout.py)."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg

X = sg.placeholder("x", (2, 3))


@pytest.mark.parametrize("build,error,match", [
    (lambda: sg.concat([X, sg.placeholder("b", (3, 3))], axis=1), ValueError,
     r"concat: dimension 0"),
    (lambda: sg.concat([X, sg.placeholder("c", (3,))], axis=0), ValueError, r"same rank"),
    (lambda: sg.concat([sg.placeholder("s", ())], axis=0), ValueError, r"scalars"),
    (lambda: sg.concat([X, X], axis=2), ValueError, r"concat: axis 2 is out of range"),
    (lambda: sg.concat([X], axis=1.0), TypeError, r"concat: axis must be an int"),
    (lambda: sg.concat(X, axis=0), TypeError, r"concat: values must be a non-empty list"),
    (lambda: sg.stack([X, sg.placeholder("d", (2, 4))]), ValueError, r"stack: dimension 1"),
    (lambda: sg.broadcast_to(sg.placeholder("e", (3,)), (2, 4)), ValueError,
     r"broadcast_to: 'e' of shape \(3,\) cannot be broadcast to shape \(2, 4\)"),
    (lambda: sg.broadcast_to(X, (3,)), ValueError, r"broadcast_to"),
    (lambda: sg.split(sg.placeholder("f", (5,)), 2), ValueError, r"not divisible by"),
    (lambda: sg.split(X, [1, 1], axis=1), ValueError, r"do not sum to the axis length 3"),
    (lambda: sg.split(X, [-1, -1], axis=1), ValueError, r"at most one -1"),
    (lambda: sg.split(X, 0), ValueError, r"num_or_size_splits must be >= 1"),
    (lambda: sg.unstack(sg.placeholder("u", (None, 2))), ValueError, r"unknown length"),
    (lambda: sg.squeeze(X, axis=0), ValueError, r"squeeze: axis 0 .* length 2, not 1"),
    (lambda: sg.tile(X, (2,)), ValueError, r"tile: multiples \(2,\)"),
    (lambda: sg.pad(X, [[1, 1]]), ValueError, r"pad: paddings must be 2 pairs"),
    (lambda: sg.pad(X, [[1, 1], [0, -1]]), ValueError, r"pad: paddings"),
    (lambda: sg.pad(X, [[1, 1], [0, 1]], constant_values="a"), TypeError, r"constant_values"),
    (lambda: sg.reverse(X, 2), ValueError, r"reverse: axis 2 is out of range"),
    (lambda: sg.roll(X, [1, 2], 0), ValueError, r"roll: shift .* same length"),
    (lambda: sg.tril(sg.placeholder("v", (3,))), ValueError, r"tril: 'v' must have at least 2"),
    (lambda: sg.triu(X, k=0.5), TypeError, r"triu: k must be an int"),
    (lambda: sg.diag(sg.placeholder("s2", ())), ValueError, r"diag: 's2' must have at least 1"),
    (lambda: sg.diag_part(sg.placeholder("v2", (3,))), ValueError, r"diag_part"),
    (lambda: sg.trace(sg.placeholder("v3", (3,))), ValueError, r"trace"),
    (lambda: sg.expand_dims(X, 3), ValueError, r"expand_dims: axis \(3,\) is out of range"),
    (lambda: len(sg.placeholder("w", (None, 2))), TypeError, r"unknown or no leading"),
    (lambda: len(sg.placeholder("w0", ())), TypeError, r"len\(\)"),
])
def test_bad_arguments_raise_typed_errors(build, error, match):
    with pytest.raises(error, match=match):
        build()


def test_eager_errors_match_graph_errors():
    with pytest.raises(ValueError, match="concat: dimension 0"):
        sg.concat([np.ones((2, 2)), sg.Variable(np.ones((3, 3)))], axis=1)
    with pytest.raises(ValueError, match="not divisible"):
        sg.split(sg.Variable(np.ones(5)), 2)


def test_unknown_lengths_are_checked_when_the_op_runs():
    x = sg.placeholder("x", (None,))
    first, second = sg.split(x, 2)
    assert first.shape == (None,)
    np.testing.assert_array_equal(sg.evaluate(second, {x: np.arange(4.0)}), [2.0, 3.0])
    with pytest.raises(ValueError, match="not divisible"):
        sg.evaluate(first, {x: np.arange(5.0)})
    y = sg.placeholder("y", (None, 3))
    squeezed = sg.squeeze(y, axis=0)
    assert squeezed.shape == (3,)
    with pytest.raises(ValueError):
        sg.evaluate(squeezed, {y: np.ones((2, 3))})
    assert sg.concat([y, y], 0).shape == (None, 3)
    assert sg.concat([y, sg.placeholder("z", (2, None))], 0).shape == (None, 3)
    assert sg.tile(y, (2, 2)).shape == (None, 6)
    assert sg.pad(y, [[1, 1], [0, 2]]).shape == (None, 5)
    assert sg.diag_part(sg.placeholder("m", (4, None))).shape == (None,)
    assert sg.split(y, [1, -1], axis=1)[1].shape == (None, 2)
    assert sg.split(x, [1, -1])[1].shape == (None,)


def test_integer_inputs_are_never_differentiated():
    x = sg.placeholder("x", (2,))
    k = sg.placeholder("k", (2,), "int64")
    y = sg.concat([x, sg.cast(k, "float64")], 0)
    gx, gk = sg.gradients(sg.reduce_sum(y * y), [x, k])
    assert gk is None
    np.testing.assert_array_equal(sg.evaluate(gx, {x: [1.0, 2.0], k: [3, 4]}), [2.0, 4.0])
    ints = sg.stack([k, k], axis=1)
    assert ints.dtype == np.int64
    assert sg.gradients(sg.reduce_sum(sg.cast(ints, "float64")), [k]) == [None]


def test_diag_keeps_zeros_off_the_diagonal_for_inf():
    out = sg.evaluate(sg.diag(sg.placeholder("v", (2,))), {"v": [np.inf, 1.0]})
    np.testing.assert_array_equal(out, [[np.inf, 0.0], [0.0, 1.0]])


@pytest.mark.parametrize("layout", [
    lambda t: sg.reverse(t, 0), lambda t: sg.roll(t, 1, 0), lambda t: sg.pad(t, [[1, 2]]),
    lambda t: sg.concat([t, t], 0), lambda t: sg.stack([t, t], 1),
    lambda t: sg.unstack(sg.expand_dims(t, 0))[0], lambda t: sg.split(t, 3)[1],
    lambda t: sg.diag_part(sg.diag(t)), lambda t: sg.squeeze(sg.expand_dims(t, -1)),
    lambda t: sg.tril(sg.diag(t))])
def test_the_unselected_where_branch_stays_zero_through_layout_ops(layout):
    """log(0) in the branch where did not select: the gradient at 0 is 0, not NaN."""
    x0 = np.array([0.0, 1.0, 2.0])
    x = sg.placeholder("x", (3,))
    y = sg.reduce_sum(layout(sg.where(x > 0, sg.log(x), 0.0)))
    symbolic = sg.evaluate(sg.gradients(y, x)[0], {x: x0})
    v = sg.Variable(x0)
    with sg.GradientTape() as tape:
        z = sg.reduce_sum(layout(sg.where(v > 0, sg.log(v), 0.0)))
    taped = tape.gradient(z, v).numpy()
    assert np.all(np.isfinite(symbolic)) and np.all(np.isfinite(taped))
    assert symbolic[0] == 0.0 and taped[0] == 0.0
    np.testing.assert_allclose(taped, symbolic)


def test_tensor_conveniences_on_graph_and_eager_values():
    x = sg.placeholder("x", (2, 3, 4))
    assert x.T.shape == (4, 3, 2) and x.ndim == 3 and len(x) == 2
    assert x.reshape(6, -1).shape == (6, 4) and x.reshape((4, 6)).shape == (4, 6)
    a = np.arange(24.0).reshape(2, 3, 4)
    v = sg.Variable(a)
    assert len(v) == 2 and v.ndim == 3 and len(sg.sin(v)) == 2
    np.testing.assert_array_equal(v.T.numpy(), a.T)
    np.testing.assert_array_equal(v.reshape(4, -1).numpy(), a.reshape(4, -1))
    with sg.GradientTape() as tape:
        y = sg.reduce_sum(v.reshape(-1)[:5] * v.T.reshape(24)[:5])
    g = tape.gradient(y, v).numpy()
    (gs,) = sg.evaluate(sg.gradients(sg.reduce_sum(x.reshape(-1)[:5] * x.T.reshape(24)[:5]),
                                     [x]), {x: a})
    np.testing.assert_allclose(g, gs)


def test_trace_and_diag_part_gradients_are_tf_rules():
    """trace: g on the diagonal; diag_part of a non-square matrix: matrix_set_diag."""
    x = sg.placeholder("x", (2, 3))
    (g,) = sg.gradients(sg.trace(x) * 2.0, [x])
    np.testing.assert_array_equal(sg.evaluate(g, {x: np.ones((2, 3))}),
                                  [[2.0, 0.0, 0.0], [0.0, 2.0, 0.0]])
    (g,) = sg.gradients(sg.diag_part(x), [x], grad_ys=[np.array([3.0, 4.0])])
    np.testing.assert_array_equal(sg.evaluate(g, {x: np.ones((2, 3))}),
                                  [[3.0, 0.0, 0.0], [0.0, 4.0, 0.0]])
