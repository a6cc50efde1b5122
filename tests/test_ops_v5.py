"""The v5 ops (issue 31 item 4, first slice): sort, argsort, sg.math.top_k, searchsorted,
interp, switch_case, sg.linalg.norm and sg.linalg.matrix_power: forward vs numpy on every
engine (evaluate, eager tape, compiled cpu and parallel, cuda under the simulator),
gradients vs finite differences and the tape, TF's conventions at ties and edges, errors."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
from symgrad.testing import check_gradients

from .helpers import to_host

RNG = np.random.default_rng(31)


def _list(value):
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _all_engines(fn, arrays, cuda=True):
    """``{engine: [outputs]}`` of ``fn`` on ``arrays`` by every engine."""
    xs = [sg.placeholder(f"x{j}", a.shape, dtype=a.dtype) for j, a in enumerate(arrays)]
    ys = _list(fn(*xs))
    feeds = dict(zip(xs, arrays))
    out = {"evaluate": sg.evaluate(ys, feeds),
           "eager": [y.numpy() for y in _list(fn(*[sg.Variable(a) if a.dtype.kind == "f"
                                                   else a for a in arrays]))]}
    targets = ("cpu", "parallel", "cuda") if cuda else ("cpu", "parallel")
    for target in targets:
        out[target] = [to_host(v) for v in sg.function(xs, ys, target=target)(*arrays)]
    return out


def _assert_engines(fn, arrays, want, cuda=True):
    for engine, got in _all_engines(fn, arrays, cuda).items():
        assert len(got) == len(want), engine
        for g, w in zip(got, want):
            assert np.asarray(g).dtype == np.asarray(w).dtype, (engine, g.dtype, w.dtype)
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14, err_msg=engine)


# --- forward on every engine ----------------------------------------------------------------
X = RNG.uniform(-2, 2, (3, 5))
TIES = np.array([[2.0, 1.0, 2.0, 0.0, 1.0], [5.0, 5.0, 5.0, 5.0, 5.0]])


def _argsort_ref(x, axis=-1, descending=False):
    """TF's stable order: ties by increasing index in both directions."""
    keys = -x if descending else x
    return np.argsort(keys, axis=axis, kind="stable").astype(np.int32)


FORWARD = {
    "sort": (lambda x: sg.sort(x), [X], lambda x: [np.sort(x, -1)]),
    "sort_desc_axis0": (lambda x: sg.sort(x, axis=0, direction="DESCENDING"), [X],
                        lambda x: [-np.sort(-x, 0)]),
    "argsort_ties": (lambda x: sg.argsort(x), [TIES], lambda x: [_argsort_ref(x)]),
    "argsort_ties_desc": (lambda x: sg.argsort(x, direction="DESCENDING", stable=True), [TIES],
                          lambda x: [_argsort_ref(x, descending=True)]),
    "top_k_ties": (lambda x: sg.math.top_k(x, k=3), [TIES],
                   lambda x: [np.take_along_axis(x, _argsort_ref(x, -1, True)[:, :3], -1),
                              _argsort_ref(x, -1, True)[:, :3]]),
    "searchsorted_batched": (
        lambda s, v: [sg.searchsorted(s, v), sg.searchsorted(s, v, side="right",
                                                             out_type="int64")],
        [np.array([[0.0, 1.0, 1.0, 3.0], [-1.0, 0.0, 2.0, 2.0]]),
         np.array([[1.0, -5.0, 9.0], [2.0, 0.5, -1.0]])],
        lambda s, v: [np.stack([np.searchsorted(a, b) for a, b in zip(s, v)]).astype(np.int32),
                      np.stack([np.searchsorted(a, b, "right") for a, b in zip(s, v)])]),
    "searchsorted_1d": (lambda s, v: sg.searchsorted(s, v),
                        [np.array([0.0, 1.0, 2.0]), np.array([[0.5, 2.0], [-1.0, 3.0]])],
                        lambda s, v: [np.searchsorted(s, v).astype(np.int32)]),
    "interp": (lambda x, xp, fp: sg.interp(x, xp, fp),
               [np.array([-1.0, 0.0, 0.3, 1.0, 2.5, 3.0, 7.0]), np.array([0.0, 1.0, 3.0]),
                np.array([1.0, -1.0, 2.0])],
               lambda x, xp, fp: [np.interp(x, xp, fp)]),
    "interp_left_right": (lambda x, xp, fp: sg.interp(x, xp, fp, left=-9.0, right=9.0),
                          [np.array([[-1.0, 0.5], [3.0, 3.5]]), np.array([0.0, 1.0, 3.0]),
                           np.array([1.0, -1.0, 2.0])],
                          lambda x, xp, fp: [np.interp(x, xp, fp, left=-9.0, right=9.0)]),
    "interp_cubic": (lambda x, xp, fp: sg.interp(x, xp, fp, method="cubic"),
                     [np.array([-1.0, 0.0, 0.3, 1.0, 2.5, 3.0, 3.5, 7.0]),
                      np.array([0.0, 1.0, 3.0, 4.0]), np.array([1.0, -1.0, 2.0, 0.0])],
                     lambda x, xp, fp: [_natural_spline(x, xp, fp)]),
    "norm_vectors": (lambda x: [sg.linalg.norm(x), sg.linalg.norm(x, ord=1, axis=0),
                                sg.linalg.norm(x, ord=np.inf, axis=1, keepdims=True),
                                sg.linalg.norm(x, ord=3, axis=-1)], [X],
                     lambda x: [np.linalg.norm(x), np.linalg.norm(x, 1, axis=0),
                                np.linalg.norm(x, np.inf, axis=1, keepdims=True),
                                np.linalg.norm(x, 3, axis=-1)]),
    "norm_matrices": (lambda a: [sg.linalg.norm(a, ord=o, axis=(-2, -1)) for o in
                                 ("fro", 1, np.inf, 2)] + [sg.linalg.norm(a, 1, (2, 1))],
                      [RNG.uniform(-2, 2, (2, 3, 4))],
                      lambda a: [np.linalg.norm(a, o, axis=(-2, -1)) for o in
                                 ("fro", 1, np.inf, 2)] + [np.linalg.norm(a, 1, (2, 1))]),
    "matrix_power": (lambda a: [sg.linalg.matrix_power(a, n) for n in (0, 1, 5, -2)],
                     [np.eye(3) + RNG.uniform(-0.3, 0.3, (2, 3, 3))],
                     lambda a: [np.linalg.matrix_power(a, n) for n in (0, 1, 5, -2)]),
}


@pytest.mark.cuda
@pytest.mark.parametrize("case", sorted(FORWARD))
def test_forward_matches_numpy_on_every_engine(case):
    fn, arrays, reference = FORWARD[case]
    want = reference(*arrays)
    if case == "matrix_power":      # inv: agree to rounding, not bitwise
        for engine, got in _all_engines(fn, arrays).items():
            for g, w in zip(got, want):
                np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12, err_msg=engine)
        return
    if case in ("norm_matrices", "interp_cubic"):     # eigh, solve: to rounding
        for engine, got in _all_engines(fn, arrays).items():
            for g, w in zip(got, want):
                np.testing.assert_allclose(g, w, rtol=1e-12, err_msg=engine)
        return
    _assert_engines(fn, arrays, want)


# --- gradients: finite differences, tape, compiled ------------------------------------------
GRADIENTS = {
    "sort": (lambda x: sg.sort(x, axis=0) * np.arange(1.0, 4.0)[:, None], [X]),
    "sort_desc": (lambda x: sg.sort(x, direction="DESCENDING") ** 2, [X]),
    "top_k": (lambda x: sg.math.top_k(x, k=2).values * [1.0, 3.0], [X]),
    "interp": (lambda x, fp: sg.interp(x, np.array([0.0, 1.0, 3.0]), fp),
               [np.array([-1.0, 0.3, 1.7, 2.5, 4.0]), np.array([1.0, -1.0, 2.0])]),
    "interp_xp": (lambda x, xp, fp: sg.interp(x, xp, fp),
                  [np.array([0.3, 1.7, 2.5]), np.array([0.0, 1.0, 3.0]),
                   np.array([1.0, -1.0, 2.0])]),
    "interp_cubic": (lambda x, xp, fp: sg.interp(x, xp, fp, method="cubic"),
                     [np.array([-0.5, 0.3, 1.7, 2.5, 3.2, 4.5]), np.array([0.0, 1.0, 3.0, 4.0]),
                      np.array([1.0, -1.0, 2.0, 0.0])]),
    "norm": (lambda x: [sg.linalg.norm(x), sg.linalg.norm(x, 1, axis=0),
                        sg.linalg.norm(x, 3.5, axis=1), sg.linalg.norm(x, np.inf, axis=1)], [X]),
    "matrix_norms": (lambda a: [sg.linalg.norm(a, o, (-2, -1)) for o in ("fro", 1, np.inf, 2)],
                     [RNG.uniform(-2, 2, (2, 3, 4))]),
    "matrix_power": (lambda a: [sg.linalg.matrix_power(a, 3), sg.linalg.matrix_power(a, -1)],
                     [np.eye(3) + RNG.uniform(-0.3, 0.3, (3, 3))]),
}


@pytest.mark.parametrize("case", sorted(GRADIENTS))
def test_gradients_four_ways(case):
    fn, arrays = GRADIENTS[case]
    check_gradients(fn, *arrays, rtol=1e-6, atol=1e-8).assert_ok()


def test_sort_gradient_goes_back_through_the_permutation():
    x = sg.placeholder("x", shape=(4,))
    (g,) = sg.gradients(sg.reduce_sum(sg.sort(x, direction="DESCENDING") * [1.0, 2.0, 3.0, 4.0]),
                        [x])
    np.testing.assert_array_equal(sg.evaluate(g, {x: [0.5, 3.0, -1.0, 2.0]}), [3.0, 1.0, 4.0, 2.0])
    # ties: each tied entry takes the cotangent of the position the stable order gives it
    np.testing.assert_array_equal(sg.evaluate(g, {x: [1.0, 1.0, 1.0, 0.0]}), [1.0, 2.0, 3.0, 4.0])


def test_top_k_gradient_scatters_to_the_indices_and_second_order():
    x = sg.placeholder("x", shape=(2, 4))
    values, indices = sg.math.top_k(x, k=2)
    assert values.dtype == np.float64 and indices.dtype == np.int32
    loss = sg.reduce_sum(values ** 3)
    (g,) = sg.gradients(loss, [x])
    (h,) = sg.gradients(sg.reduce_sum(g), [x])
    a = np.array([[1.0, 4.0, 2.0, 3.0], [0.0, -1.0, 5.0, 5.0]])
    np.testing.assert_allclose(sg.evaluate(g, {x: a}), [[0, 48, 0, 27], [0, 0, 75, 75]])
    np.testing.assert_allclose(sg.evaluate(h, {x: a}), [[0, 24, 0, 18], [0, 0, 30, 30]])
    assert sg.gradients(sg.reduce_sum(sg.cast(indices, "float64")), [x]) == [None]


def test_integer_outputs_have_no_gradient():
    x = sg.placeholder("x", shape=(3,))
    s = sg.constant(np.array([0.0, 1.0, 2.0]))
    for y in (sg.argsort(x), sg.searchsorted(s, x)):
        assert sg.gradients(sg.reduce_sum(sg.cast(y, "float64")), [x]) == [None]


def test_interp_gradients_numpy_rule_outside():
    x, fp = sg.placeholder("x", shape=(5,)), sg.placeholder("fp", shape=(3,))
    y = sg.interp(x, np.array([0.0, 1.0, 3.0]), fp, left=-5.0)
    gx, gfp = sg.gradients(sg.reduce_sum(y), [x, fp])
    feeds = {x: [-1.0, 0.0, 1.0, 2.0, 4.0], fp: [1.0, -1.0, 2.0]}
    value, dx, dfp = sg.evaluate([y, gx, gfp], feeds)
    np.testing.assert_allclose(value, [-5.0, 1.0, -1.0, 0.5, 2.0])
    np.testing.assert_allclose(dx, [0.0, -2.0, 1.5, 1.5, 0.0])   # at a knot: the right slope
    # fp: weights 1 (x=0), 1 (x=1), 0.5 + 0.5 (x=2) and the right end (x=4); left is given
    np.testing.assert_allclose(dfp, [1.0, 1.5, 1.5])


def _natural_spline(x, xp, fp):
    from scipy.interpolate import CubicSpline
    inside = CubicSpline(xp, fp, bc_type="natural")(x) if len(xp) > 2 else np.interp(x, xp, fp)
    return np.where(x < xp[0], fp[0], np.where(x > xp[-1], fp[-1], inside))


@pytest.mark.parametrize("n", [2, 3, 4, 6])
def test_interp_cubic_is_scipys_natural_spline(n):
    xp = np.cumsum(RNG.uniform(0.3, 1.0, n))
    fp = RNG.uniform(-1, 1, n)
    q = np.linspace(xp[0] - 0.5, xp[-1] + 0.5, 9)
    x = sg.placeholder("x", shape=(None,))
    y = sg.interp(x, xp, fp, method="cubic")
    (g,) = sg.gradients(sg.reduce_sum(y), [x])
    value, slope = sg.evaluate([y, g], {x: q})
    np.testing.assert_allclose(value, _natural_spline(q, xp, fp), rtol=1e-12, atol=1e-13)
    if n > 2:
        from scipy.interpolate import CubicSpline
        inside = (q >= xp[0]) & (q <= xp[-1])
        want = np.where(inside, CubicSpline(xp, fp, bc_type="natural")(q, 1), 0.0)
        np.testing.assert_allclose(slope, want, rtol=1e-11, atol=1e-12)


# --- switch_case ------------------------------------------------------------------------------
def _switch(i, x):
    return sg.switch_case(i, [lambda: x * 2.0, lambda: x * x, lambda: sg.sin(x)],
                          default=lambda: -x)


@pytest.mark.parametrize("k,value,slope", [(0, 6.0, 2.0), (1, 9.0, 6.0),
                                           (2, np.sin(3.0), np.cos(3.0)),
                                           (3, -3.0, -1.0), (-1, -3.0, -1.0)])
def test_switch_case_branches_gradients_and_default(k, value, slope):
    i, x = sg.placeholder("i", dtype="int32"), sg.placeholder("x")
    y = _switch(i, x)
    (g,) = sg.gradients(y, [x])
    got = sg.evaluate([y, g], {i: k, x: 3.0})
    np.testing.assert_allclose(got, [value, slope])
    compiled = sg.function([i, x], [y, g])(np.int32(k), 3.0)
    np.testing.assert_allclose(compiled, [value, slope])
    with sg.GradientTape() as tape:          # eager: the branch is picked in Python
        v = sg.Variable(3.0)
        out = _switch(k, v)
    np.testing.assert_allclose([out.numpy(), tape.gradient(out, v).numpy()], [value, slope])


def test_switch_case_without_default_runs_the_last_branch():
    i, x = sg.placeholder("i", dtype="int32"), sg.placeholder("x")
    y = sg.switch_case(i, {3: lambda: x + 1.0, 1: lambda: x * 10.0})
    assert [float(sg.evaluate(y, {i: k, x: 2.0})) for k in (1, 3, 0, 9)] == [20.0, 3.0, 3.0, 3.0]


# --- TF edge cases and errors -------------------------------------------------------------
def test_top_k_k_larger_than_the_axis_is_an_error_naming_both():
    with pytest.raises(sg.ShapeError, match=r"top_k.*'x'.*k=4.*got 3"):
        sg.math.top_k(sg.placeholder("x", shape=(2, 3)), k=4)
    x = sg.placeholder("x", shape=(None,))
    values, _ = sg.math.top_k(x, k=4)
    with pytest.raises(sg.ShapeError, match="k=4"):
        sg.evaluate(values, {x: [1.0, 2.0]})
    with pytest.raises(ValueError, match="non-negative"):
        sg.math.top_k(np.ones(3), k=-1)


def test_bad_arguments_name_the_api():
    x = sg.placeholder("x", shape=(3,))
    with pytest.raises(ValueError, match=r"sg\.sort: direction .*'up'"):
        sg.sort(x, direction="up")
    with pytest.raises(ValueError, match=r"sg\.argsort: values 's' must have at least one"):
        sg.argsort(sg.placeholder("s"))
    with pytest.raises(ValueError, match=r"sg\.searchsorted: side"):
        sg.searchsorted(x, x, side="middle")
    with pytest.raises(ValueError, match=r"out_type must be int32 or int64, got float64"):
        sg.searchsorted(x, x, out_type="float64")
    with pytest.raises(sg.ShapeError, match=r"sg\.searchsorted: values 'v'.*leading dims"):
        sg.searchsorted(sg.placeholder("s", shape=(2, 3)), sg.placeholder("v", shape=(3, 3)))
    with pytest.raises(sg.ShapeError, match=r"sg\.interp: xp and fp .* 3 and 2"):
        sg.interp(x, np.arange(3.0), np.arange(2.0))
    with pytest.raises(ValueError, match=r"sg\.interp: method"):
        sg.interp(x, np.arange(3.0), np.arange(3.0), method="quadratic")
    with pytest.raises(ValueError, match=r"sg\.linalg\.norm: ord='fro' is a matrix norm"):
        sg.linalg.norm(x, ord="fro")
    with pytest.raises(ValueError, match=r"sg\.linalg\.norm: ord must be a supported vector"):
        sg.linalg.norm(x, ord=-1)
    with pytest.raises(sg.ShapeError, match=r"sg\.linalg\.matrix_power: .*\(2, 3\)"):
        sg.linalg.matrix_power(np.ones((2, 3)), 2)
    with pytest.raises(TypeError, match=r"sg\.linalg\.matrix_power: n must be"):
        sg.linalg.matrix_power(np.eye(2), 1.5)


def test_switch_case_errors():
    x = sg.placeholder("x")
    with pytest.raises(sg.DTypeError, match=r"sg\.switch_case: branch_index 'f'.*float64"):
        sg.switch_case(sg.placeholder("f"), [lambda: x])
    with pytest.raises(sg.ShapeError, match=r"branch_index 'v' has shape \(2,\)"):
        sg.switch_case(sg.placeholder("v", shape=(2,), dtype="int32"), [lambda: x])
    with pytest.raises(ValueError, match="branch_fns is empty"):
        sg.switch_case(0, [])
    with pytest.raises(TypeError, match="branch 1 is int"):
        sg.switch_case(0, [lambda: x, 3])
    with pytest.raises(sg.ShapeError, match=r"sg\.switch_case .*same structure"):
        sg.switch_case(sg.placeholder("i", dtype="int32"), [lambda: x, lambda: [x, x]])


@pytest.mark.cuda
def test_switch_case_and_interp_on_cuda():
    i, x = sg.placeholder("i", dtype="int32"), sg.placeholder("x", shape=(3,))
    y = sg.switch_case(i, [lambda: sg.reduce_sum(sg.interp(x, np.array([0.0, 1.0, 2.0]),
                                                           np.array([0.0, 3.0, 1.0]))),
                           lambda: sg.reduce_sum(sg.sort(x) * [1.0, 2.0, 3.0])])
    (g,) = sg.gradients(y, [x])
    f = sg.function([i, x], [y, g], target="cuda")
    a = np.array([0.5, 1.5, 2.5])
    for k in (0, 1, 4):
        want = sg.evaluate([y, g], {i: k, x: a})
        for got, w in zip(f(np.int32(k), a), want):
            np.testing.assert_allclose(to_host(got), w, rtol=1e-13)


def test_unknown_dims_compile():
    x = sg.placeholder("x", shape=(None, None))
    values, indices = sg.math.top_k(x, k=2)
    ys = [sg.sort(x), values, indices, sg.interp(x, np.array([0.0, 1.0]), np.array([2.0, 4.0]))]
    (g,) = sg.gradients(sum(sg.reduce_sum(y ** 2) for y in ys if y.dtype.kind == "f"), [x])
    a = RNG.uniform(-1, 2, (3, 4))
    want = sg.evaluate(ys + [g], {x: a})
    for got, w in zip(sg.function([x], ys + [g])(a), want):
        np.testing.assert_allclose(got, w, rtol=1e-13)


@pytest.mark.parametrize("case", ["sort", "top_k", "interp_cubic"])
def test_forward_mode_matches_the_jacobian(case):
    """sg.jvp (the engines' transposition of the vjp) agrees with J @ v."""
    fn = {"sort": lambda x: sg.sort(x, direction="DESCENDING"),
          "top_k": lambda x: sg.math.top_k(x, 2).values,
          "interp_cubic": lambda x: sg.interp(x, np.array([0.0, 2.0, 5.0]),
                                              np.array([1.0, 3.0, 0.0]), method="cubic")}[case]
    x = sg.placeholder("x", shape=(4,))
    y = fn(x)
    a, v = np.array([3.0, 1.0, 4.0, 2.0]), np.array([1.0, 2.0, 3.0, 4.0])
    (t,) = sg.jvp([y], [x], [v])
    np.testing.assert_allclose(sg.evaluate(t, {x: a}), sg.evaluate(sg.jacobian(y, x), {x: a}) @ v,
                               rtol=1e-12)
