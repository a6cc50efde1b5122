"""Assembly by index: segment reductions and scatters (symgrad/ops/assembly, docs/assembly.md).

Values against plain numpy loops, gradients three ways (sg.evaluate, compiled cpu and
parallel, tape, finite differences), out-of-range ids on every engine, TF's conventions
(tests ported from TF's segment_reduction_ops_test.py are marked "TF:"), exact sparsity and
forward mode."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
from symgrad.testing import check_gradients

KINDS = ("sum", "max", "min", "prod", "mean")


def _op(kind):
    return getattr(sg, f"unsorted_segment_{kind}")


def _empty_value(kind, dtype):
    dtype = np.dtype(dtype)
    if kind in ("sum", "mean"):
        return 0
    if kind == "prod":
        return 1
    info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
    return info.min if kind == "max" else info.max


def reference(kind, data, ids, n):
    """A plain loop over the entries (TF's _segmentReduce): negative ids dropped."""
    ids = np.asarray(ids)
    inner = data.shape[ids.ndim:]
    rows = data.reshape((ids.size,) + inner)
    dtype = np.float64 if kind == "mean" and data.dtype.kind != "f" else data.dtype
    out = np.full((n,) + inner, _empty_value(kind, dtype), dtype=dtype)
    count = np.zeros(n)
    seen = np.zeros(n, bool)
    for i, s in enumerate(ids.ravel()):
        if s < 0:
            continue
        r = rows[i].astype(dtype)
        if kind in ("sum", "mean"):
            out[s] = out[s] + r
        elif kind == "prod":
            out[s] = out[s] * r
        elif kind == "max":
            out[s] = r if not seen[s] else np.maximum(out[s], r)
        else:
            out[s] = r if not seen[s] else np.minimum(out[s], r)
        seen[s] = True
        count[s] += 1
    if kind == "mean":
        out = out / np.maximum(count, 1).astype(dtype).reshape((n,) + (1,) * len(inner))
    return out


def tf_input(shape, dtype):
    """TF's _input: 1, 2, ... in ``shape``."""
    return np.arange(1, int(np.prod(shape)) + 1).reshape(shape).astype(dtype)


# --- values ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_values_match_loops_tf_testValues(dtype):
    """TF: UnsortedSegmentTest.testValues (ids flat and 5x2, inner sizes 1, 2, 3, 32)."""
    flat = np.array([0, 4, 0, 8, 3, 8, 4, 7, 7, 3])
    for ids in (flat, flat.reshape(5, 2)):
        for inner in (1, 2, 3, 32):
            data = tf_input(ids.shape + (inner,), dtype)
            for kind in KINDS:
                got = _op(kind)(data, ids, 12).numpy()
                want = reference(kind, data, ids, 12)
                assert got.shape == want.shape
                assert got.dtype == want.dtype, kind
                np.testing.assert_allclose(got, want, rtol=1e-6)


def test_drop_negatives_tf():
    """TF: testDropNegatives, testAllNegatives: negative ids drop their entries."""
    ids = np.array([0, 4, 0, -1, 3, -1, 4, 7, 7, 3])
    data = tf_input((10, 2), "float64")
    want = reference("sum", data, np.where(ids < 0, 11, ids), 12)
    want[11] = 0
    np.testing.assert_array_equal(sg.unsorted_segment_sum(data, ids, 12).numpy(), want)
    got = sg.unsorted_segment_sum(np.ones((2, 1)), np.array([-1, -1]), 2).numpy()
    np.testing.assert_array_equal(got, np.zeros((2, 1)))


def test_empty_segments_tf_conventions():
    data = np.array([2.0, -3.0])
    ids = [1, 1]
    f64 = np.finfo(np.float64)
    assert sg.unsorted_segment_max(data, ids, 3).numpy().tolist() == [f64.min, 2.0, f64.min]
    assert sg.unsorted_segment_min(data, ids, 3).numpy().tolist() == [f64.max, -3.0, f64.max]
    assert sg.unsorted_segment_prod(data, ids, 3).numpy().tolist() == [1.0, -6.0, 1.0]
    assert sg.unsorted_segment_mean(data, ids, 3).numpy().tolist() == [0.0, -0.5, 0.0]
    assert sg.unsorted_segment_sum(data, ids, 3).numpy().tolist() == [0.0, -1.0, 0.0]
    i32 = np.iinfo(np.int32)
    got = sg.unsorted_segment_max(np.array([4], np.int32), [0], 2).numpy()
    assert got.tolist() == [4, i32.min] and got.dtype == np.int32
    assert sg.unsorted_segment_min(np.array([4], np.int32), [0], 2).numpy().tolist() == \
        [4, i32.max]


def test_empty_second_dimension_tf():
    """TF: testEmptySecondDimension."""
    for dtype in ("float64", "int64", "int32"):
        out = sg.unsorted_segment_sum(np.zeros((2, 0), dtype), np.array([0, 1]), 2).numpy()
        assert out.shape == (2, 0) and out.dtype == np.dtype(dtype)


def test_nan_propagation_tf():
    """TF: testNaNPropagation (max and min keep NaN)."""
    nan = float("nan")
    assert np.isnan(sg.unsorted_segment_min(np.array([1.0, nan, 3.0]), [0, 0, 0], 1).numpy()[0])
    assert np.isnan(sg.unsorted_segment_max(np.array([3.0, nan, 1.0]), [0, 0, 0], 1).numpy()[0])
    data = np.array([[1.0, 2.0], [nan, 3.0], [3.0, 1.0]])
    lo = sg.unsorted_segment_min(data, [0, 0, 0], 1).numpy()
    hi = sg.unsorted_segment_max(data, [0, 0, 0], 1).numpy()
    assert np.isnan(lo[0, 0]) and lo[0, 1] == 1.0
    assert np.isnan(hi[0, 0]) and hi[0, 1] == 3.0


def test_segment_sum_values_tf():
    """TF: testValues (segment_sum), testSegmentIdsValid, GreaterThanZero, Hole."""
    for inner in (1, 2, 3, 32):
        data = tf_input((10, inner), "float64")
        ids = [i // 3 for i in range(10)]
        np.testing.assert_array_equal(sg.segment_sum(data, ids).numpy(),
                                      reference("sum", data, ids, 4))
    x = tf_input((4, 4), "float32")
    assert sg.segment_sum(x, [0, 0, 0, 1]).numpy().tolist() == [[15, 18, 21, 24],
                                                                 [13, 14, 15, 16]]
    for ids in ([1, 1, 2, 2], [0, 0, 3, 3]):
        np.testing.assert_array_equal(sg.segment_sum(x, ids).numpy(),
                                      reference("sum", x, ids, ids[-1] + 1))


def test_segment_sum_errors_tf():
    """TF: testSegmentIdsShape, testSegmentIdsInvalid1-5, testSegmentIdsSize."""
    x = tf_input((4, 4), "float64")
    with pytest.raises(sg.ShapeError, match="vector"):
        sg.segment_sum(sg.constant(x), sg.constant(np.array([[0, 1], [2, 2]])))
    for ids, message in (([-1, -1, 0, 0], "must be >= 0"), ([0, 1, 0, 1], "not increasing"),
                         ([0, 1, 2, 0], "not increasing"), ([0, 0, 0, -1], "must be >= 0"),
                         ([0, 0, 0, -2], "must be >= 0")):
        with pytest.raises(sg.SegmentIdError, match=message):
            sg.segment_sum(x, ids)
    with pytest.raises(sg.ShapeError, match="prefix"):
        sg.segment_sum(sg.constant(x), sg.constant(np.array([0, 1])))


def test_segment_sum_with_fed_ids_has_unknown_length():
    x = sg.placeholder("x", (None, 2))
    ids = sg.placeholder("ids", (None,), dtype="int64")
    y = sg.segment_sum(x * x, ids)
    assert y.shape == (None, 2)
    (g,) = sg.gradients(sg.reduce_sum(y * y), [x])
    xv = np.arange(10.0).reshape(5, 2)
    for idv in (np.array([0, 0, 1, 3, 3]), np.array([2, 2, 2, 2, 2])):
        n = idv[-1] + 1
        want_y = reference("sum", xv * xv, idv, n)
        want_g = 4 * xv * want_y[idv]
        for run in (lambda: sg.evaluate([y, g], {x: xv, ids: idv}),
                    lambda: sg.function([x, ids], [y, g])(xv, idv)):
            got_y, got_g = run()
            np.testing.assert_allclose(got_y, want_y)
            np.testing.assert_allclose(got_g, want_g)


def test_bad_arguments_are_clear_errors():
    x = sg.placeholder("x", (4, 2))
    with pytest.raises(ValueError, match="num_segments"):
        sg.unsorted_segment_sum(x, [0, 1, 2, 3], -1)
    with pytest.raises(ValueError, match="num_segments"):
        sg.unsorted_segment_sum(x, [0, 1, 2, 3], 2.5)
    with pytest.raises(sg.ShapeError, match="prefix"):
        sg.unsorted_segment_sum(x, [0, 1, 2], 4)
    with pytest.raises(sg.DTypeError, match="integer"):
        sg.unsorted_segment_sum(x, sg.constant(np.array([0.0, 1, 2, 3])), 4)
    with pytest.raises(sg.ShapeError, match="updates"):
        sg.scatter_nd([[0], [1]], x, (4, 3))
    with pytest.raises(sg.DTypeError, match="dtype"):
        sg.tensor_scatter_nd_add(x, [[0]], sg.constant(np.ones((1, 2), np.float32)))


# --- gradients ------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
def test_gradients_three_ways(kind):
    """TF: testGradientsTFGradients / testGradientsGradientTape (ids with -1, 5x2 too):
    evaluate, compiled cpu, tape and finite differences agree."""
    rng = np.random.default_rng(3)
    flat = np.array([0, 4, 0, -1, 3, -1, 4, 7, 7, 3])
    for ids in (flat, flat.reshape(5, 2)):
        data = rng.uniform(0.5, 1.5, ids.shape + (2,))

        def fn(d, i):   # clipped: an empty max segment is -1.8e308, beyond finite differences
            return sg.clip_by_value(_op(kind)(sg.sin(d) * d, i, 10), -1e3, 1e3)
        check_gradients(fn, data, ids, raise_on_error=True)


@pytest.mark.parametrize("kind", ["sum", "max", "prod"])
def test_gradients_parallel_target(kind):
    rng = np.random.default_rng(4)
    ids = np.array([2, 0, 2, -1, 1, 2])
    data = rng.uniform(0.5, 1.5, (6, 3))
    check_gradients(lambda d, i: sg.clip_by_value(_op(kind)(d * d, i, 4), -1e3, 1e3), data, ids,
                    target="parallel",
                    raise_on_error=True)


@pytest.mark.parametrize("kind", ["max", "min"])
def test_extremum_ties_split_evenly(kind):
    x = sg.placeholder("x", (5,))
    y = _op(kind)(x, [0, 0, 0, 1, -1], 2)
    (g,) = sg.gradients(y, [x], grad_ys=[np.array([6.0, 1.0])])
    value = np.array([2.0, 2.0, 2.0, 5.0, 2.0])
    got = sg.evaluate(g, {x: value})
    np.testing.assert_array_equal(got, [2.0, 2.0, 2.0, 1.0, 0.0])
    np.testing.assert_array_equal(sg.function([x], g)(value), got)
    v = sg.Variable(value)
    with sg.GradientTape() as tape:
        out = _op(kind)(v, np.array([0, 0, 0, 1, -1]), 2)
    np.testing.assert_array_equal(tape.gradient(out, v, output_gradients=np.array([6.0, 1.0])),
                                  got)


def test_prod_gradient_with_zeros_tf_testProdGrad():
    """TF: testProdGrad: the Jacobians (ids with and without dropped entries)."""
    values = np.array([0, 0, 1, 0, 2, 2, 3, 3, 3], dtype=np.float64)
    indices = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2])
    indices_neg = np.array([-1, 0, 0, -1, 1, 1, -1, 2, 2])
    want = np.zeros((9, 3))
    want[range(9), indices] = [0, 0, 0, 4, 0, 0, 9, 9, 9]
    want_neg = np.zeros((9, 3))
    want_neg[range(9), indices_neg] = [0, 1, 0, 0, 2, 2, 0, 3, 3]
    want_neg[indices_neg < 0] = 0
    x = sg.placeholder("x", (9,))
    for ids, jac in ((indices, want), (indices_neg, want_neg)):
        y = sg.unsorted_segment_prod(x, ids, 3)
        got = sg.evaluate(sg.jacobian(y, x), {x: values})
        np.testing.assert_allclose(got.T, jac)
        np.testing.assert_allclose(sg.function([x], sg.jacobian(y, x))(values).T, jac)


def test_gradient_matches_segment_sum_tf():
    """TF: testGradientMatchesSegmentSum."""
    ids = [0, 0, 1, 1, 1, 2, 3, 4, 5]
    x = sg.placeholder("x", (9, 2))
    a = sg.jacobian(sg.unsorted_segment_sum(x, ids, 6), x)
    b = sg.jacobian(sg.segment_sum(x, ids), x)
    feed = {x: tf_input((9, 2), "float64")}
    np.testing.assert_array_equal(sg.evaluate(a, feed), sg.evaluate(b, feed))


def test_integer_ids_get_none_gradients():
    x = sg.placeholder("x", (3,))
    ids = sg.placeholder("ids", (3,), dtype="int64")
    y = sg.reduce_sum(sg.unsorted_segment_sum(x, ids, 2))
    assert sg.gradients(y, [ids]) == [None]
    idx = sg.placeholder("idx", (2, 1), dtype="int64")
    z = sg.reduce_sum(sg.tensor_scatter_nd_update(x, idx, x[:2]))
    assert sg.gradients(z, [idx]) == [None]


def test_second_order_through_scatter_and_gather():
    rng = np.random.default_rng(6)
    ids = np.array([1, 0, 1, 2])
    x = rng.uniform(0.5, 1.5, (4,))

    def fn(d):
        s = sg.unsorted_segment_sum(d * d, ids, 3)
        return sg.reduce_sum(s * s * s)
    xs = sg.placeholder("x", (4,))
    (g,) = sg.gradients(fn(xs), [xs])
    (h,) = sg.gradients(sg.reduce_sum(g * g), [xs])
    from .helpers import fd_gradients
    np.testing.assert_allclose(sg.evaluate(h, {xs: x}), fd_gradients(
        sg.reduce_sum(g * g), [xs], {xs: x})[0], rtol=1e-5)
    np.testing.assert_allclose(sg.function([xs], h)(x), sg.evaluate(h, {xs: x}), rtol=1e-12)


# --- scatter_nd family -----------------------------------------------------------------------
def test_scatter_nd_values_match_loops():
    rng = np.random.default_rng(2)
    indices = np.array([[0, 1], [2, 0], [0, 1], [1, 2]])
    updates = rng.standard_normal((4, 5))
    want = np.zeros((3, 3, 5))
    for (i, j), u in zip(indices, updates):
        want[i, j] += u
    np.testing.assert_allclose(sg.scatter_nd(indices, updates, (3, 3, 5)).numpy(), want)
    tensor = rng.standard_normal((3, 3, 5))
    np.testing.assert_allclose(sg.tensor_scatter_nd_add(tensor, indices, updates).numpy(),
                               tensor + want)
    upd = tensor.copy()
    for (i, j), u in zip(indices[1:], updates[1:]):
        upd[i, j] = u
    np.testing.assert_allclose(
        sg.tensor_scatter_nd_update(tensor, indices[1:], updates[1:]).numpy(), upd)
    np.testing.assert_allclose(sg.gather_nd(tensor, indices).numpy(),
                               tensor[indices[:, 0], indices[:, 1]])
    ints = sg.scatter_nd([[1], [1]], np.array([2, 3], np.int32), (3,)).numpy()
    assert ints.tolist() == [0, 5, 0] and ints.dtype == np.int32


def test_scatter_gradients_three_ways():
    rng = np.random.default_rng(7)
    indices = np.array([[0, 1], [2, 0], [1, 2]])
    tensor = rng.uniform(0.5, 1.5, (3, 3, 2))
    updates = rng.uniform(0.5, 1.5, (3, 2))
    check_gradients(lambda t, u, i: sg.tensor_scatter_nd_update(t * t, i, sg.sin(u)),
                    tensor, updates, indices, raise_on_error=True)
    check_gradients(lambda t, u, i: sg.tensor_scatter_nd_add(t * t, i, u * u) ** 2,
                    tensor, updates, indices, raise_on_error=True)
    check_gradients(lambda u, i: sg.scatter_nd(i, u * u, (3, 3, 2)) ** 2,
                    updates, indices, raise_on_error=True)


def test_tensor_scatter_update_gradient_zeroes_updated_entries():
    t = sg.placeholder("t", (4,))
    u = sg.placeholder("u", (2,))
    y = sg.tensor_scatter_nd_update(t, [[1], [3]], u)
    gt, gu = sg.gradients(y, [t, u], grad_ys=[np.array([1.0, 2.0, 3.0, 4.0])])
    got = sg.evaluate([gt, gu], {t: np.zeros(4), u: np.zeros(2)})
    assert got[0].tolist() == [1.0, 0.0, 3.0, 0.0] and got[1].tolist() == [2.0, 4.0]


# --- out-of-range ids: an error on every engine, nothing written ---------------------------
CASES = {
    "unsorted_segment_sum": (lambda d, i: sg.unsorted_segment_sum(d, i, 3),
                             np.array([0, 3, 1]), r"segment_ids\[1\] = 3 is out of range \[0, 3\)"),
    "unsorted_segment_max": (lambda d, i: sg.unsorted_segment_max(d, i, 3),
                             np.array([0, 1, 7]), r"segment_ids\[2\] = 7"),
    "segment_sum": (lambda d, i: sg.segment_sum(d, i), np.array([0, 2, 1]), "not increasing"),
    "scatter_nd": (lambda d, i: sg.scatter_nd(i[:, None], d, (3,)), np.array([0, -1, 1]),
                   r"scatter_nd: indices\[1\] = \[-1\]"),
    "tensor_scatter_nd_add": (lambda d, i: sg.tensor_scatter_nd_add(d, i[:, None], d),
                              np.array([0, 3, 1]), r"tensor_scatter_nd_add: indices\[1\]"),
    "tensor_scatter_nd_update": (lambda d, i: sg.tensor_scatter_nd_update(d, i[:, None], d),
                                 np.array([0, 1, 5]), r"indices\[2\] = \[5\]"),
    "gather_nd": (lambda d, i: sg.gather_nd(d, i[:, None]), np.array([3, 0, 0]),
                  r"gather_nd: indices\[0\]"),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("engine", ["evaluate", "cpu", "parallel", "tape", "cuda"])
def test_out_of_range_is_an_error_on_every_engine(name, engine):
    fn, bad, message = CASES[name]
    data = np.array([1.0, 2.0, 3.0])
    if engine == "tape":
        with pytest.raises(sg.SegmentIdError, match=message):
            with sg.GradientTape() as tape:
                v = sg.Variable(data)
                tape.watch(v)
                fn(v, bad)
        return
    d = sg.placeholder("d", (3,))
    i = sg.placeholder("i", (3,), dtype="int64")
    y = fn(d, i)
    (g,) = sg.gradients(sg.reduce_sum(y * y), [d])
    with pytest.raises(sg.SegmentIdError, match=message):
        if engine == "evaluate":
            sg.evaluate([y, g], {d: data, i: bad})
        else:
            sg.function([d, i], [y, g], target=engine)(data, bad)


def test_gradient_ids_out_of_range_in_the_backward_gather():
    """The gather of a gradient checks its ids too (a graph whose forward never ran)."""
    g = sg.placeholder("g", (3,))
    d = sg.placeholder("d", (4,))
    y = sg.unsorted_segment_sum(d, [0, 1, 2, 2], 3)
    (gd,) = sg.gradients(y, [d], grad_ys=[g])
    assert gd is not None
    with pytest.raises(sg.SegmentIdError, match="segment gradient"):
        from symgrad.ops.assembly import records as A
        A.segment_gather.numpy(np.ones(3), np.array([0, 5]), 3)


# --- sparsity and forward mode --------------------------------------------------------------
def _dense_pattern(y, x, value):
    jac = sg.evaluate(sg.jacobian(y, x), {x: value})
    return jac.reshape(int(np.prod(y.shape)), -1) != 0


SPARSE_CASES = {
    "sum": lambda x: sg.unsorted_segment_sum(x * x, [2, 0, -1, 2, 4], 5),
    "max": lambda x: sg.unsorted_segment_max(x, [[2, 0], [1, 2], [4, 0], [0, 0], [3, 3]], 5),
    "min": lambda x: sg.unsorted_segment_min(x, [1, 1, 0, 3, 4], 5),
    "prod": lambda x: sg.unsorted_segment_prod(x + 3.0, [0, 0, 2, 2, -1], 3),
    "mean": lambda x: sg.unsorted_segment_mean(sg.exp(x), [1, 0, 1, 1, 0], 2),
    "segment_sum": lambda x: sg.segment_sum(x, [0, 0, 1, 3, 3]),
    "scatter_nd": lambda x: sg.scatter_nd([[1, 0], [0, 1], [1, 0], [2, 1], [0, 0]], x, (3, 2, 2)),
    "tensor_add": lambda x: sg.tensor_scatter_nd_add(x, [[1], [4], [1]], x[:3] * x[2:]),
    "tensor_update": lambda x: sg.tensor_scatter_nd_update(x, [[1], [4]], x[3:] * 2.0),
    "gather_nd": lambda x: sg.gather_nd(x, [[4, 1], [0, 0], [4, 1]]),
    "second_order": lambda x: sg.gradients(sg.reduce_sum(
        sg.unsorted_segment_sum(x * x, [1, 0, 1, 2, 0], 3) ** 3), [x])[0],
}


@pytest.mark.parametrize("name", sorted(SPARSE_CASES))
def test_sparsity_is_exact(name):
    """The pattern equals the nonzeros of the dense Jacobian at a generic point (values where
    no entry cancels), so neither extra nor missing entries."""
    x = sg.placeholder("x", (5, 2))
    y = SPARSE_CASES[name](x)
    value = np.random.default_rng(1).uniform(0.5, 1.5, (5, 2))
    pattern = sg.sparsity(y, x).toarray()
    want = _dense_pattern(y, x, value)
    if name in ("max", "min"):
        # structural: every entry of a segment can be its extremum, so the pattern is the
        # segment's (the sum's); at a point, only the extremum's entry is nonzero
        ids = {"max": [[2, 0], [1, 2], [4, 0], [0, 0], [3, 3]], "min": [1, 1, 0, 3, 4]}[name]
        structural = sg.sparsity(sg.unsorted_segment_sum(x, ids, 5), x).toarray()
        np.testing.assert_array_equal(pattern, structural)
        assert (want <= pattern).all() and want.sum() < pattern.sum()
        return
    np.testing.assert_array_equal(pattern, want)


@pytest.mark.parametrize("name", sorted(set(SPARSE_CASES) - {"second_order"}))
def test_jvp_matches_finite_differences(name):
    x = sg.placeholder("x", (5, 2))
    y = SPARSE_CASES[name](x)
    rng = np.random.default_rng(5)
    value, tangent = rng.uniform(0.5, 1.5, (5, 2)), rng.standard_normal((5, 2))
    (t,) = sg.jvp([y], [x], [tangent])
    eps = 1e-6
    fd = (sg.evaluate(y, {x: value + eps * tangent}) -
          sg.evaluate(y, {x: value - eps * tangent})) / (2 * eps)
    np.testing.assert_allclose(sg.evaluate(t, {x: value}), fd, rtol=1e-5, atol=1e-7)


def test_numpy_forwards_do_not_modify_inputs():
    tensor = np.ones((3, 2))
    before = tensor.copy()
    sg.tensor_scatter_nd_add(tensor, [[0]], np.ones((1, 2)))
    sg.tensor_scatter_nd_update(tensor, [[0]], np.zeros((1, 2)))
    np.testing.assert_array_equal(tensor, before)


def test_spring_network_example_converges_with_exact_sparse_hessian():
    """examples/spring_network.py (also run as a script by tests/test_examples.py)."""
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).resolve().parent.parent / "examples" / "spring_network.py"
    spec = importlib.util.spec_from_file_location("spring_network", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = module.solve(side=5, verbose=False)
    assert result["converged"] and result["pattern_is_exact"]
    assert result["forces_are_minus_gradient"]
    assert result["hessian_nnz"] == result["pattern_nnz"] < (2 * 20) ** 2
    assert result["newton_steps"] <= 12


def test_forward_accumulator_eager():
    x, t = np.array([1.0, 3.0, 2.0, 3.0]), np.ones(4)
    v = sg.Variable(x)
    with sg.ForwardAccumulator(v, t) as acc:
        y = sg.unsorted_segment_max(v, np.array([0, 0, 1, 0]), 2)      # ties share: 0.5 + 0.5
        z = sg.unsorted_segment_sum(v * v, np.array([0, 0, 1, -1]), 2)
        w = sg.tensor_scatter_nd_update(v, np.array([[0]]), v[1:2] * 2.0)
    assert acc.jvp(y).numpy().tolist() == [1.0, 1.0]
    assert acc.jvp(z).numpy().tolist() == [8.0, 4.0]
    assert acc.jvp(w).numpy().tolist() == [2.0, 1.0, 1.0, 1.0]


@pytest.mark.parametrize("kind", KINDS)
def test_large_inputs_use_the_compiled_loop_and_match_loops(kind):
    """Past kernel_lib.scatter.MIN_LOOP entries the numba loop writes (ufunc.at below)."""
    from symgrad.compile.kernel_lib.scatter import MIN_LOOP
    rng = np.random.default_rng(11)
    ids = rng.integers(-1, 50, MIN_LOOP + 7)
    for dtype in ("float64", "float32", "int64"):
        data = (rng.uniform(0.9, 1.1, (ids.size, 2)) if dtype != "int64" else
                rng.integers(-3, 4, (ids.size, 2))).astype(dtype)
        if kind == "prod" and dtype == "int64":
            data = np.where(data == 0, 1, np.sign(data))
        data[3, 0] = np.nan if dtype != "int64" else data[3, 0]
        got = _op(kind)(data, ids, 53).numpy()
        want = reference(kind, data, ids, 53)
        np.testing.assert_allclose(got, want, rtol=1e-4 if dtype == "float32" else 1e-12)
