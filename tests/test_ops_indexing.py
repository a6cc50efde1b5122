"""Index, scan and contraction ops: gather and integer-array indexing, cumsum/cumprod,
tensordot/einsum, argmax/argmin, one_hot, and reduce_prod to second order.

Every gradient is checked by finite differences and across engines (sg.evaluate, the
tape, compiled cpu/parallel); kinks and errors are hand-computed.
"""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
from symgrad.errors import GatherIndexError, IndexRangeError
from symgrad.testing import check_gradients, check_vjp
from tests.conformance.ops import V2_INDEXING
from tests.conformance.v2 import TARGETS, check_graph_case, check_tape_case, uses_ops, v2_cases

RNG = np.random.default_rng(20261122)
X43 = RNG.normal(size=(4, 3))
SQ = RNG.normal(size=(3, 3))
IDX = np.array([[0, 3], [3, 3], [1, 0]])

# name -> (fn of one tensor, input): each case is smooth in its input.
CASES = {
    "gather_axis0_2d_indices": (lambda x: sg.sin(sg.gather(x, IDX)), X43),
    "gather_axis1_duplicates": (lambda x: sg.sin(sg.gather(x, [2, 2, 0], axis=1))
                                * sg.gather(x, [1], axis=-1), X43),
    "gather_scalar_index": (lambda x: sg.exp(sg.gather(x, 2)), X43),
    "getitem_wraps": (lambda x: sg.sin(x[np.array([-1, 0, 0])]), X43),
    "getitem_columns": (lambda x: sg.exp(x[:, [0, -1, 0]]), X43),
    "getitem_slice_then_array": (lambda x: sg.exp(x[1:, np.array([[0, 1], [2, 2]])]), X43),
    "getitem_ellipsis_newaxis": (lambda x: sg.sin(x[None, ..., np.array([2, 0])]), X43),
    "cumsum": (lambda x: sg.sin(sg.cumsum(x, 1, exclusive=True)) * sg.cumsum(x, reverse=True),
               X43),
    "cumprod": (lambda x: sg.sin(sg.cumprod(x, 0)), X43),
    "cumprod_exclusive_reverse": (lambda x: sg.cos(sg.cumprod(x, -1, exclusive=True,
                                                              reverse=True)), X43),
    "cumprod_zeros": (lambda x: sg.sin(sg.cumprod(x, 0)),
                      np.array([[2.0, 0.0, 1.0], [0.0, 0.5, -1.0], [3.0, 0.0, 0.7],
                                [0.0, 1.5, 2.0]])),
    "reduce_prod_zeros": (lambda x: sg.sin(sg.reduce_prod(x, axis=0)),
                          np.array([[2.0, 0.0, 1.0], [0.0, 0.5, -1.0], [3.0, 0.0, 0.7],
                                    [1.1, 1.5, 2.0]])),
    "reduce_prod_all_axes": (lambda x: sg.sin(sg.reduce_prod(x)), X43),
    "einsum_matmul": (lambda x: sg.sin(sg.einsum("ij,kj->ik", x, x)), X43),
    "einsum_summed_out": (lambda x: sg.sin(sg.einsum("ij->i", x)), X43),
    "einsum_implicit": (lambda x: sg.sin(sg.einsum("ij", x)), X43),
    "einsum_three": (lambda x: sg.einsum("ij,ik,il->jkl", x, sg.sin(x), x), X43),
    "einsum_diagonal": (lambda x: sg.einsum("ii->i", x) * sg.sin(x[0]), SQ),
    "einsum_trace": (lambda x: sg.sin(sg.einsum("ii", x)), SQ),
    "einsum_diagonal_outer": (lambda x: sg.einsum("ii,jk->ijk", x, sg.sin(x)), SQ),
    "einsum_triple_diagonal": (lambda x: sg.sin(sg.einsum("iii->i", x)),
                               RNG.normal(size=(3, 3, 3))),
    "einsum_diagonal_and_sum": (lambda x: sg.sin(sg.einsum("iij,kk->jk", x, x[:, :, 0])),
                                RNG.normal(size=(3, 3, 3))),
    "tensordot_lists": (lambda x: sg.tanh(sg.tensordot(x, x, [[0], [0]])), X43),
    "tensordot_int": (lambda x: sg.tanh(sg.tensordot(x, sg.sin(x), 2)), X43),
    "tensordot_outer": (lambda x: sg.tanh(sg.tensordot(x, x, 0)), X43),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_three_way(name):
    """sg.gradients (evaluate and compiled cpu), the tape and finite differences agree."""
    fn, x0 = CASES[name]
    check_gradients(fn, x0, rtol=1e-6, atol=1e-8).assert_ok()


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("engine", ["tape", "symbolic"])
def test_dot_product_vjp(name, engine):
    fn, x0 = CASES[name]
    check_vjp(fn, x0, engine=engine, seed=3)


def _hessian_vector_products(fn, x0, v):
    """H v by sg.gradients twice, by nested tapes, and by differences of the gradient."""
    x = sg.placeholder("x", shape=x0.shape)
    (g,) = sg.gradients(sg.reduce_sum(fn(x)), [x])
    (hv,) = sg.gradients(sg.reduce_sum(g * v), [x])
    symbolic = np.zeros_like(x0) if hv is None else sg.evaluate(hv, {x: x0})
    eps = 1e-5
    fd = (sg.evaluate(g, {x: x0 + eps * v}) - sg.evaluate(g, {x: x0 - eps * v})) / (2 * eps)
    xv = sg.Variable(x0)
    with sg.GradientTape() as outer:
        with sg.GradientTape() as inner:
            y = sg.reduce_sum(fn(xv))
        target = sg.reduce_sum(inner.gradient(y, xv) * v)
    tape = outer.gradient(target, xv)
    return symbolic, np.zeros_like(x0) if tape is None else tape.numpy(), fd


@pytest.mark.parametrize("name", sorted(CASES))
def test_second_order_symbolic_tape_and_differences(name):
    fn, x0 = CASES[name]
    v = np.random.default_rng(5).normal(size=x0.shape)
    symbolic, tape, fd = _hessian_vector_products(fn, x0, v)
    np.testing.assert_allclose(symbolic, fd, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(tape, symbolic, rtol=1e-9, atol=1e-12)


# --- forward values against numpy -----------------------------------------------------------
def test_forward_values_match_numpy():
    x = sg.placeholder("x", shape=(None, 3))
    feeds = {x: X43}
    got = sg.evaluate([sg.gather(x, IDX), sg.gather(x, [2, 0], axis=-1), x[:, [-1]],
                       x[np.array([[3], [-4]])], sg.cumsum(x, 0), sg.cumprod(x, 1),
                       sg.cumsum(x, 1, exclusive=True, reverse=True),
                       sg.cumprod(x, 0, exclusive=True), sg.einsum("ij,kj->ki", x, x),
                       sg.tensordot(x, x, [[0, 1], [0, 1]]), sg.argmax(x, 1),
                       sg.argmin(x, axis=0), sg.one_hot(sg.constant([[2, 0], [3, -1]]), 3)],
                      feeds)
    x0 = X43
    want = [np.take(x0, IDX, 0), x0[:, [2, 0]], x0[:, [-1]], x0[np.array([[3], [0]])],
            np.cumsum(x0, 0), np.cumprod(x0, 1),
            np.concatenate([np.cumsum(x0[:, ::-1], 1)[:, :-1][:, ::-1], np.zeros((4, 1))], 1),
            np.concatenate([np.ones((1, 3)), np.cumprod(x0, 0)[:-1]], 0),
            np.einsum("ij,kj->ki", x0, x0), np.tensordot(x0, x0, 2), np.argmax(x0, 1),
            np.argmin(x0, 0), np.array([[[0, 0, 1], [1, 0, 0]], [[0, 0, 0], [0, 0, 0]]])]
    for k, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_allclose(a, b, rtol=1e-14, err_msg=f"output {k}")
    assert got[10].dtype == np.int64 and got[11].dtype == np.int64
    assert got[12].dtype == np.float64


def test_static_shapes_follow_tf_with_unknown_dims():
    x = sg.placeholder("x", shape=(None, 3, 5))
    i = sg.placeholder("i", shape=(2, None), dtype="int64")
    assert sg.gather(x, i, axis=1).shape == (None, 2, None, 5)
    assert sg.gather(x, 0, axis=-1).shape == (None, 3)
    assert x[:, [0, 1, 1, 2]].shape == (None, 4, 5)
    assert sg.cumprod(x, 2).shape == (None, 3, 5)
    assert sg.einsum("abc,dc->bda", x, sg.placeholder("w", shape=(None, None))).shape == \
        (3, None, None)
    assert sg.tensordot(x, sg.placeholder("w2", shape=(5, 7)), 1).shape == (None, 3, 7)
    assert sg.argmax(x, -1).shape == (None, 3) and sg.argmax(x, -1).dtype == np.int64
    assert sg.one_hot(i, 4, dtype="float32").shape == (2, None, 4)


# --- hand-computed gradients --------------------------------------------------------------------
@pytest.mark.parametrize("engine", ["symbolic", "tape"])
def test_gather_gradient_accumulates_duplicates(engine):
    x0 = np.array([1.0, 2.0, 3.0, 4.0])
    weights = np.array([1.0, 10.0, 100.0, 1000.0])
    fn = lambda x: sg.reduce_sum(sg.gather(x, [3, 0, 3, 3]) * weights)  # noqa: E731
    if engine == "symbolic":
        x = sg.placeholder("x", shape=(4,))
        grad = sg.evaluate(sg.gradients(fn(x), [x])[0], {x: x0})
    else:
        v = sg.Variable(x0)
        with sg.GradientTape() as tape:
            y = fn(v)
        grad = tape.gradient(y, v).numpy()
    np.testing.assert_array_equal(grad, [10.0, 0.0, 0.0, 1101.0])


def test_cumprod_gradient_is_exact_at_zeros_where_tf_gives_zero():
    """d/dx sum(cumprod(x)) at x = (2, 0, 3): [1 + 0 + 0, 2 + 2*3, 0]. TF's div_no_nan
    gives 0 at the zero entry (a documented difference)."""
    x = sg.placeholder("x", shape=(3,))
    (g,) = sg.gradients(sg.reduce_sum(sg.cumprod(x)), [x])
    np.testing.assert_array_equal(sg.evaluate(g, {x: [2.0, 0.0, 3.0]}), [1.0, 8.0, 0.0])
    (gg,) = sg.gradients(g[1], [x])  # d/dx (1 + x0 + x0 x2) = (1 + x2, 0, x0)
    np.testing.assert_array_equal(sg.evaluate(gg, {x: [2.0, 0.0, 3.0]}), [4.0, 0.0, 2.0])


def test_reduce_prod_second_order_at_zeros_both_engines():
    """prod(x) with x = (0, 0, 2): the Hessian is [[0, 2, 0], [2, 0, 0], [0, 0, 0]]."""
    x0 = np.array([0.0, 0.0, 2.0])
    want = np.array([[0.0, 2.0, 0.0], [2.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    x = sg.placeholder("x", shape=(3,))
    (g,) = sg.gradients(sg.reduce_prod(x), [x])
    rows = [sg.evaluate(sg.gradients(g[k], [x])[0], {x: x0}) for k in range(3)]
    np.testing.assert_array_equal(np.stack(rows), want)
    v = sg.Variable(x0)
    for k in range(3):
        with sg.GradientTape() as outer:
            with sg.GradientTape() as inner:
                y = sg.reduce_prod(v)
            gk = inner.gradient(y, v)[k]
        np.testing.assert_array_equal(outer.gradient(gk, v).numpy(), want[k])


def test_reduce_prod_third_order_multi_axis():
    x = sg.placeholder("x", shape=(2, 3))
    x0 = np.array([[0.5, 0.0, 2.0], [1.5, -1.0, 0.7]])
    y = sg.reduce_prod(x, axis=(0, 1)) + sg.reduce_sum(sg.square(sg.reduce_prod(x, axis=1)))
    (g,) = sg.gradients(y, [x])
    (h,) = sg.gradients(sg.reduce_sum(g * g), [x])
    (t,) = sg.gradients(sg.reduce_sum(h * h), [x])
    hf = lambda z: sg.evaluate(h, {x: z})  # noqa: E731
    v = np.arange(6.0).reshape(2, 3) / 6
    fd = np.sum((hf(x0 + 1e-5 * v) - hf(x0 - 1e-5 * v)) / 2e-5 * 2 * hf(x0))
    np.testing.assert_allclose(np.sum(sg.evaluate(t, {x: x0}) * v), fd, rtol=1e-6)


@pytest.mark.parametrize("policy, expected", [("none", None), ("zero", 0.0)])
def test_argmax_is_never_differentiated(policy, expected):
    x = sg.placeholder("x", shape=(2, 3))
    y = sg.cast(sg.argmax(x, 1), "float64") + sg.cast(sg.argmin(x, 0), "float64")[:2]
    (g,) = sg.gradients(y, [x], unconnected_gradients=policy)
    if expected is None:
        assert g is None
    else:
        np.testing.assert_array_equal(sg.evaluate(g, {x: X43[:2]}), np.zeros((2, 3)))
    v = sg.Variable(X43[:2])
    with sg.GradientTape() as tape:
        z = sg.cast(sg.argmax(v, 1), "float64")
    got = tape.gradient(z, v, unconnected_gradients=policy)
    assert got is None if expected is None else not np.any(got.numpy())


def test_one_hot_labels_select_and_integer_indices_get_no_gradient():
    logits = sg.placeholder("logits", shape=(None, 3))
    labels = sg.placeholder("labels", shape=(None,), dtype="int64")
    loss = -sg.reduce_sum(sg.one_hot(labels, 3) * logits) - sg.reduce_sum(
        sg.gather(logits, labels, axis=0))
    g_logits, g_labels = sg.gradients(loss, [logits, labels])
    assert g_labels is None
    got = sg.evaluate(g_logits, {logits: X43, labels: np.array([2, 0, 0, 1])})
    want = -np.eye(3)[[2, 0, 0, 1]]
    np.add.at(want, [2, 0, 0, 1], -1.0)  # gather's rows, duplicates accumulated
    np.testing.assert_array_equal(got, want)


# --- errors -----------------------------------------------------------------------------------
@pytest.mark.parametrize("target", [None, "cpu", "parallel"])
def test_gather_out_of_range_is_a_value_error_naming_the_index(target):
    x = sg.placeholder("x", shape=(None,))
    i = sg.placeholder("i", shape=(None,), dtype="int64")
    (g,) = sg.gradients(sg.reduce_sum(sg.gather(x, i) ** 2), [x])
    if target is None:
        run = lambda *a: sg.evaluate(g, {x: a[0], i: a[1]})  # noqa: E731
    else:
        run = sg.function([x, i], g, target=target)
    np.testing.assert_array_equal(run(np.ones(3), np.array([2, 2])), [0.0, 0.0, 4.0])
    with pytest.raises(ValueError, match=r"indices\[1\] = 3 is not in \[0, 3\)"):
        run(np.ones(3), np.array([0, 3]))
    with pytest.raises(GatherIndexError, match=r"indices\[0\] = -1 is not in \[0, 3\)"):
        run(np.ones(3), np.array([-1]))


def test_gather_errors_at_build_and_in_eager_mode():
    with pytest.raises(ValueError, match=r"indices\[0\] = 2 is not in \[0, 2\)"):
        sg.gather(sg.Variable([1.0, 2.0]), [2])
    with pytest.raises(TypeError, match="gather: indices .* integer dtype.*float64"):
        sg.gather(sg.placeholder("x", shape=(3,)), np.array([0.0, 1.0]))
    with pytest.raises(TypeError, match="integer dtype"):
        sg.gather(sg.Variable([1.0, 2.0]), [0.0])
    with pytest.raises(TypeError, match="one_hot: indices .* integer dtype"):
        sg.one_hot(sg.constant([0.0, 1.0]), 3)


def test_integer_array_indexing_follows_numpy():
    x = sg.placeholder("x", shape=(3,))
    with pytest.raises(IndexError, match="index 3 .* out of bounds for axis 0 with size 3"):
        x[np.array([0, 3])]
    with pytest.raises(IndexError, match="index -4"):
        x[[-4]]
    xn = sg.placeholder("xn", shape=(None,))
    i = sg.placeholder("i", shape=(None,), dtype="int64")
    f = sg.function([xn, i], xn[i], target="cpu")
    np.testing.assert_array_equal(f(np.arange(3.0), np.array([-1, 0])), [2.0, 0.0])
    with pytest.raises(IndexError, match="index 3"):
        f(np.arange(3.0), np.array([3]))
    with pytest.raises(IndexError):
        sg.Variable([1.0, 2.0])[[2]]
    np.testing.assert_array_equal(sg.Variable([1.0, 2.0, 3.0])[[-1, 0]].numpy(), [3.0, 1.0])
    for bad, message in [(np.array([0.5]), "integers"), (np.array([True, False, True]),
                                                          "boolean"),
                         ((np.array([0]), np.array([1])), "only one integer-array")]:
        with pytest.raises(TypeError, match=message):
            sg.placeholder("m", shape=(3, 3))[bad]
    with pytest.raises(TypeError, match="integer index combined"):
        sg.placeholder("m3", shape=(2, 2, 2))[0, :, [1]]


def test_contraction_errors_name_the_problem():
    a, b = sg.placeholder("a", shape=(2, 3)), sg.placeholder("b", shape=(4, 2))
    with pytest.raises(ValueError, match="operand 0 has rank 2 but subscripts 'i'"):
        sg.einsum("i,jk->ik", a, b)
    with pytest.raises(ValueError, match="index 'j' has lengths 3 and 4"):
        sg.einsum("ij,jk->ik", a, b)
    with pytest.raises(ValueError, match="ellipsis"):
        sg.einsum("...i->i", a)
    with pytest.raises(ValueError, match="axis 1 of 'a' .* axis 0 of 'b'"):
        sg.tensordot(a, b, 1)
    with pytest.raises(ValueError, match="repeat an axis"):
        sg.tensordot(a, b, [[0, 0], [1, 1]])


# --- compiled vs evaluate, None dims included --------------------------------------------------
def _compiled_cases(x, i):
    return {
        "gather_fed": sg.gather(sg.sin(x), i),
        "getitem_fed": sg.exp(x[i]),
        "getitem_const": sg.exp(x[:, np.array([-1, 0])]),
        "cumsum": sg.cumsum(sg.sin(x), 0, exclusive=True, reverse=True),
        "cumprod": sg.cumprod(x, 0, reverse=True),
        "einsum": sg.einsum("ij,kj->ik", x, sg.sin(x)),
        "tensordot": sg.tensordot(x, sg.cos(x), [[0], [0]]),
        "reduce_prod": sg.reduce_prod(x, axis=0),
        "argmax_one_hot": sg.one_hot(sg.argmin(x, 1), 3) * x
        + sg.cast(sg.argmax(x, 1), "float64")[:, None],
    }


@pytest.mark.parametrize("target", ["cpu", "parallel"])
@pytest.mark.parametrize("name", sorted(_compiled_cases(sg.placeholder("x", (None, 3)),
                                                        sg.placeholder("i", (None,),
                                                                       "int64"))))
def test_compiled_matches_evaluate_to_second_order(name, target):
    x = sg.placeholder("x", shape=(None, 3))
    i = sg.placeholder("i", shape=(None,), dtype="int64")
    y = _compiled_cases(x, i)[name]
    (g,) = sg.gradients(sg.reduce_sum(sg.sin(y)), [x])
    (h,) = sg.gradients(sg.reduce_sum(g * g), [x])
    f = sg.function([x, i], [y, g, h], target=target)
    for rows, index in [(4, np.array([3, 0, 0])), (6, np.array([5]))]:
        x0 = np.random.default_rng(rows).normal(size=(rows, 3))
        x0[1, 1] = 0.0  # a zero for cumprod and reduce_prod
        want = sg.evaluate([y, g, h], {x: x0, i: index})
        for got, ref in zip(f(x0, index), want):
            np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-13)


# --- TensorFlow's recorded results (tests/conformance/v2, copied from shared/) -----------------
def _indexes_with_an_array(case: dict) -> bool:
    """A getitem node whose key holds an integer array."""
    return any(isinstance(k, dict) and "array" in k for n in case["nodes"]
               for k in n.get("attrs", {}).get("key", []))


TF_CASES = v2_cases(lambda case: uses_ops(V2_INDEXING)(case) or _indexes_with_an_array(case))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", TF_CASES)
def test_tensorflow_v2_cases(case, target):
    check_graph_case(case, target)


@pytest.mark.parametrize("case", TF_CASES)
def test_tensorflow_v2_cases_on_the_tape(case):
    """The same cases run eagerly under GradientTape (tests/conformance/tape.py's mapping)."""
    check_tape_case(case)
