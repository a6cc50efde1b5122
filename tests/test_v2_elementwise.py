"""The v2 elementwise ops, reductions and normalisers: TF's conventions at kinks, the
scalar special functions against mpmath, every engine (sg.evaluate, tape, compiled cpu,
parallel, cuda under the simulator) on the same values, and gradients four ways.

The registry tables (tests/test_ops_registry.py) already check each public record's
sympy form against its numpy forward and its first and second derivatives against finite
differences; TF's recorded results are in tests/test_v2_elementwise_conformance.py.
"""

from __future__ import annotations

import math
import os

import mpmath
import numpy as np
import pytest
from hypothesis import given, strategies as st

import symgrad as sg
from symgrad.ops.elementwise import scalar_math as S
from symgrad.testing import check_gradients

SELU_ALPHA, SELU_SCALE = 1.6732632423543772, 1.0507009873554805

# name -> (function of tensors, input arrays); values away from kinks and poles
UNARY = {
    "reciprocal": (0.4, 2.5), "rsqrt": (0.3, 3.0), "cbrt": (-3.0, 3.0), "log2": (0.2, 3.0),
    "log10": (0.2, 3.0), "exp2": (-3.0, 3.0), "erfc": (-3.0, 6.0), "erfinv": (-0.95, 0.95),
    "lgamma": (-2.7, 6.0), "digamma": (-2.7, 6.0), "log_sigmoid": (-5.0, 5.0),
    "softsign": (-3.0, 3.0), "elu": (-3.0, 3.0), "selu": (-3.0, 3.0), "relu6": (-2.0, 8.0),
    "silu": (-5.0, 5.0), "gelu": (-3.0, 3.0), "leaky_relu": (-3.0, 3.0),
}
BINARY = {
    "logaddexp": ((-3.0, 3.0), (-3.0, 3.0)), "hypot": ((-3.0, 3.0), (-3.0, 3.0)),
    "xlogy": ((-2.0, 2.0), (0.2, 3.0)), "xlog1py": ((-2.0, 2.0), (-0.5, 3.0)),
    "xdivy": ((-2.0, 2.0), (0.3, 3.0)), "div_no_nan": ((-2.0, 2.0), (0.3, 3.0)),
    "mul_no_nan": ((-2.0, 2.0), (-2.0, 2.0)), "squared_difference": ((-2.0, 2.0), (-2.0, 2.0)),
    "floormod": ((-5.0, 5.0), (0.7, 2.0)), "floordiv": ((-5.0, 5.0), (0.7, 2.0)),
}
REDUCTIONS = {
    "reduce_logsumexp": lambda x: sg.reduce_logsumexp(x, axis=1),
    "reduce_variance": lambda x: sg.reduce_variance(x, axis=0, keepdims=True),
    "reduce_std": lambda x: sg.reduce_std(x, axis=-1),
    "norm": lambda x: sg.norm(x, axis=1),
    "norm_all": lambda x: sg.norm(x),
    "softmax": lambda x: sg.softmax(x),
    "log_softmax": lambda x: sg.log_softmax(x, axis=0),
    "clip_by_value": lambda x: sg.clip_by_value(x, -0.5, 0.7),
    "gelu_tanh": lambda x: sg.gelu(x, approximate=True),
}


def _values(rng, lo, hi, n=6):
    return rng.uniform(lo, hi, size=n)


def _unary_cases():
    rng = np.random.default_rng(0)
    return {name: (getattr(sg, name), [_values(rng, *dom)]) for name, dom in UNARY.items()}


def _binary_cases():
    rng = np.random.default_rng(1)
    return {name: (getattr(sg, name), [_values(rng, *a), _values(rng, *b)])
            for name, (a, b) in BINARY.items()}


def _reduction_cases():
    rng = np.random.default_rng(2)
    return {name: (fn, [rng.uniform(-2.0, 2.0, size=(3, 4))]) for name, fn in REDUCTIONS.items()}


CASES = {**_unary_cases(), **_binary_cases(), **_reduction_cases()}
DIFFERENTIABLE = sorted(n for n in CASES if n != "floordiv")


# --- kinks and special points: TF's conventions (API.md v2 clarifications) ----------------
def _grad(fn, *values):
    xs = [sg.placeholder(f"x{k}", np.shape(v)) for k, v in enumerate(values)]
    grads = sg.gradients(fn(*xs), xs)
    return sg.evaluate(grads, dict(zip(xs, [np.asarray(v, float) for v in values])))


def _tape_grad(fn, *values):
    variables = [sg.Variable(np.asarray(v, float)) for v in values]
    with sg.GradientTape() as tape:
        y = fn(*variables)
    return [None if g is None else g.numpy() for g in tape.gradient(y, variables)]


def _both(fn, *values):
    symbolic, tape = _grad(fn, *values), _tape_grad(fn, *values)
    for s, t in zip(symbolic, tape):
        np.testing.assert_allclose(t, s, rtol=1e-12, atol=0)
    return symbolic


def test_activation_derivatives_at_kinks_are_tfs():
    x = [0.0, 6.0, -1.0, 7.0]
    assert _both(sg.selu, x)[0][0] == pytest.approx(SELU_SCALE)   # TF's SeluGrad
    assert _both(sg.elu, x)[0][0] == 1.0
    assert _both(sg.leaky_relu, x)[0][0] == pytest.approx(0.2)
    assert _both(lambda v: sg.leaky_relu(v, alpha=0.05), x)[0][2] == pytest.approx(0.05)
    np.testing.assert_array_equal(_both(sg.relu6, x)[0], [0.0, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(_both(sg.relu6, [3.0])[0], [1.0])


def test_second_derivatives_at_kinks_are_tfs():
    """EluGradGrad / SeluGradGrad: the second derivative is 0 at x = 0."""
    for fn in (sg.elu, sg.selu):
        x = sg.placeholder("x", (2,))
        g = sg.gradients(fn(x), x)[0]
        h = sg.evaluate(sg.gradients(g, x)[0], {x: [0.0, -1.0]})
        assert h[0] == 0.0 and h[1] > 0


def test_cbrt_derivative_at_zero_is_plus_infinity():
    assert _both(sg.cbrt, [0.0, -8.0])[0].tolist() == [math.inf, pytest.approx(1 / 12)]


def test_logaddexp_tie_and_hypot_origin():
    ga, gb = _both(sg.logaddexp, [1.5, -2.0], [1.5, 3.0])
    assert ga[0] == gb[0] == 0.5
    ha, hb = _both(sg.hypot, [0.0, 3.0], [0.0, -4.0])
    np.testing.assert_allclose(ha, [0.0, 0.6])
    np.testing.assert_allclose(hb, [0.0, -0.8])


def test_zero_safe_products_and_quotients():
    gx, gy = _both(sg.xlogy, [0.0, 0.0, 2.0], [0.0, 3.0, 3.0])
    np.testing.assert_allclose(gx, [0.0, 0.0, math.log(3.0)])
    np.testing.assert_allclose(gy, [0.0, 0.0, 2.0 / 3.0])
    gx, gy = _both(sg.xdivy, [0.0, 2.0], [0.0, 4.0])
    np.testing.assert_allclose(gx, [0.0, 0.25])
    np.testing.assert_allclose(gy, [0.0, -2.0 / 16.0])
    gx, gy = _both(sg.div_no_nan, [3.0, 2.0], [0.0, 4.0])
    np.testing.assert_allclose(gx, [0.0, 0.25])
    np.testing.assert_allclose(gy, [0.0, -2.0 / 16.0])
    x = sg.placeholder("x", (3,))
    feeds = {x: [0.0, 1.0, -2.0]}
    np.testing.assert_array_equal(sg.evaluate(sg.div_no_nan(x, 0.0), feeds), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(sg.evaluate(sg.mul_no_nan(np.inf, x), feeds),
                                  [0.0, np.inf, -np.inf])


@pytest.mark.parametrize("engine", ["evaluate", "cpu", "parallel", "tape"])
def test_no_nan_gradients_follow_tf_against_infinite_factors(engine):
    """TF's gradients are mul_no_nan(grad, y), mul_no_nan(x, grad) and div_no_nan(grad, y):
    a zero wins over an infinite or nan factor (not g * partial = 0 * inf = nan)."""
    xv = np.array([np.inf, 2.0, 3.0, np.inf])
    yv = np.array([1.0, 0.0, np.inf, 0.0])
    gv = np.array([0.0, np.inf, 0.0, 1.0])
    expected = {
        "mul_no_nan": ([0.0, 0.0, np.nan, 0.0], [0.0, np.inf, 0.0, np.inf]),
        "div_no_nan": ([0.0, 0.0, 0.0, 0.0], [np.nan, np.nan, -0.0, 0.0]),
    }
    for name, (want_x, want_y) in expected.items():
        op = getattr(sg, name)
        if engine == "tape":
            xa, ya = sg.Variable(xv), sg.Variable(yv)
            with sg.GradientTape() as tape:
                out = op(xa, ya)
            got = tape.gradient(out, [xa, ya], output_gradients=gv)
        else:
            x, y, g = (sg.placeholder(n, (4,)) for n in ("x", "y", "g"))
            grads = sg.gradients(op(x, y), [x, y], grad_ys=g)
            if engine == "evaluate":
                got = sg.evaluate(grads, {x: xv, y: yv, g: gv})
            else:
                got = sg.function([x, y, g], grads, target=engine)(xv, yv, gv)
        np.testing.assert_array_equal(np.asarray(got[0]), want_x, err_msg=f"{name} d/dx")
        np.testing.assert_array_equal(np.asarray(got[1]), want_y, err_msg=f"{name} d/dy")


def test_floormod_and_floordiv_operators():
    a, b = sg.placeholder("a", (4,)), sg.placeholder("b", (4,))
    feeds = {a: [-7.0, 7.0, -7.0, 5.5], b: [3.0, -3.0, -3.0, 2.0]}
    mod, div = sg.evaluate([a % b, a // b], feeds)
    np.testing.assert_array_equal(mod, np.mod(feeds[a], feeds[b]))
    np.testing.assert_array_equal(div, np.floor_divide(feeds[a], feeds[b]))
    assert (a % b).op.name == "floormod" and (7.0 // b).op.name == "floordiv"
    ga, gb = sg.evaluate(sg.gradients(a % b, [a, b]), feeds)
    np.testing.assert_array_equal(ga, [1.0] * 4)
    np.testing.assert_array_equal(gb, -np.floor_divide(feeds[a], feeds[b]))
    assert sg.gradients(a // b, [a, b]) == [None, None]
    zero = sg.gradients(a // b, [a], unconnected_gradients="zero")[0]
    np.testing.assert_array_equal(sg.evaluate(zero, feeds), np.zeros(4))


def test_integer_floormod_and_floordiv():
    a = sg.placeholder("a", (3,), "int64")
    got = sg.evaluate([a % 3, a // 3], {a: [-7, 7, 2]})
    assert got[0].dtype == np.int64
    np.testing.assert_array_equal(got[0], [2, 1, 2])
    np.testing.assert_array_equal(got[1], [-3, 2, 0])
    compiled = sg.function([a], [a % 3, a // 3])(np.array([-7, 7, 2]))
    np.testing.assert_array_equal(compiled[0], got[0])
    np.testing.assert_array_equal(compiled[1], got[1])


def test_softsign_second_order_is_mathematical():
    """TF raises LookupError (no SoftsignGrad gradient); symgrad gives -2 sign/(1+|x|)**3."""
    values = np.array([-3.0, -0.5, 0.4, 10.0])
    want = -2.0 * np.sign(values) / (1.0 + np.abs(values)) ** 3
    x = sg.placeholder("x", (4,))
    second = sg.gradients(sg.gradients(sg.softsign(x), x)[0], x)[0]
    np.testing.assert_allclose(sg.evaluate(second, {x: values}), want, rtol=1e-14)
    v = sg.Variable(values)
    with sg.GradientTape() as outer:
        with sg.GradientTape() as inner:
            y = sg.softsign(v)
        g = inner.gradient(y, v)
    np.testing.assert_allclose(outer.gradient(g, v).numpy(), want, rtol=1e-14)


def test_reductions_at_degenerate_rows_follow_the_contract():
    x = sg.placeholder("x", (2, 3))
    feeds = {x: [[0.0, 0.0, 0.0], [3.0, 0.0, 4.0]]}
    g = sg.evaluate(sg.gradients(sg.norm(x, axis=1), x)[0], feeds)
    np.testing.assert_allclose(g, [[0.0, 0.0, 0.0], [0.6, 0.0, 0.8]])
    g = sg.evaluate(sg.gradients(sg.reduce_std(x, axis=1), x)[0], feeds)
    assert np.isnan(g[0]).all() and np.isfinite(g[1]).all()
    feeds = {x: [[-np.inf] * 3, [0.0, np.log(2.0), -np.inf]]}
    y, g = sg.evaluate([sg.reduce_logsumexp(x, axis=1),
                        sg.gradients(sg.reduce_logsumexp(x, axis=1), x)[0]], feeds)
    assert y[0] == -np.inf and y[1] == pytest.approx(math.log(3.0))
    assert np.isnan(g[0]).all()
    np.testing.assert_allclose(g[1], [1 / 3, 2 / 3, 0.0])


def test_clip_by_value_gradients_at_and_beyond_the_bounds():
    t, lo, hi = (sg.placeholder(n, (5,)) for n in ("t", "lo", "hi"))
    feeds = {t: [-2.0, -1.0, 0.0, 1.0, 2.0], lo: [-1.0] * 5, hi: [1.0] * 5}
    gt, glo, ghi = sg.evaluate(sg.gradients(sg.clip_by_value(t, lo, hi), [t, lo, hi]), feeds)
    np.testing.assert_array_equal(gt, [0.0, 1.0, 1.0, 1.0, 0.0])
    np.testing.assert_array_equal(glo, [1.0, 0.0, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(ghi, [0.0, 0.0, 0.0, 0.0, 1.0])


def test_softmax_matches_numpy_and_rows_sum_to_one():
    values = np.random.default_rng(3).normal(size=(3, 5)) * 50
    x = sg.placeholder("x", (3, 5))
    y, ly = sg.evaluate([sg.softmax(x), sg.log_softmax(x)], {x: values})
    shifted = values - values.max(axis=-1, keepdims=True)
    want = np.exp(shifted) / np.exp(shifted).sum(axis=-1, keepdims=True)
    np.testing.assert_allclose(y, want, rtol=1e-13)
    np.testing.assert_allclose(ly, np.log(want), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(y.sum(axis=-1), 1.0, rtol=1e-14)


def test_gelu_variants_and_polygamma_orders():
    x = np.linspace(-3.0, 3.0, 7)
    exact = 0.5 * x * (1 + np.array([math.erf(v / math.sqrt(2)) for v in x]))
    approx = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    np.testing.assert_allclose(sg.gelu(sg.Variable(x)).numpy(), exact, rtol=1e-14)
    np.testing.assert_allclose(sg.gelu(sg.Variable(x), approximate=True).numpy(), approx,
                               rtol=1e-14)
    p = sg.placeholder("p", (4,))
    values = np.array([-1.5, 0.3, 1.0, 5.2])
    d = sg.digamma(p)
    derivatives = []
    for _ in range(3):
        d = sg.gradients(d, p)[0]
        derivatives.append(d)
    got = sg.evaluate(derivatives, {p: values})
    for n, row in enumerate(got, start=1):
        want = [float(mpmath.polygamma(n, v)) for v in values]
        np.testing.assert_allclose(row, want, rtol=1e-13)


# --- the scalar special functions against mpmath --------------------------------------------
def _mp_lgamma(v):
    return float(mpmath.log(abs(mpmath.gamma(v))))


SPECIAL = {
    "erfc": (np.concatenate([np.linspace(-6.0, 27.0, 331)]), mpmath.erfc, 2e-15, 0.0),
    "erfinv": (np.concatenate([np.linspace(-0.999, 0.999, 201), 1 - np.logspace(-16, -3, 30)]),
               mpmath.erfinv, 4e-15, 0.0),
    "lgamma": (np.concatenate([np.linspace(-20.3, 40.0, 301), np.logspace(-5, 5, 40)]),
               _mp_lgamma, 2e-14, 1.0),
    "digamma": (np.concatenate([np.linspace(-20.3, 40.0, 301), np.logspace(-5, 5, 40)]),
                mpmath.digamma, 3e-14, 1.0),
    "cbrt": (np.linspace(-30.0, 30.0, 301), lambda v: math.copysign(abs(v) ** (1 / 3), v)
             if v == 0 else float(mpmath.sign(v) * mpmath.cbrt(abs(v))), 3e-16, 1e-300),
}


@pytest.mark.parametrize("name", sorted(SPECIAL))
def test_special_function_accuracy_against_mpmath(name):
    """Error relative to max(|f|, floor): the documented accuracy (elementwise/scalar_math.py)."""
    from symgrad.compile.kernel_lib import support_v2
    points, reference, tol, floor = SPECIAL[name]
    with mpmath.workdps(30):
        want = np.array([float(reference(mpmath.mpf(float(v)))) for v in points])
    scale = np.maximum(np.abs(want), floor)
    numpy_values = S.vectorized(getattr(S, name))(points)
    njit = getattr(support_v2, name + "_")
    compiled = np.array([njit(float(v), 1.0) for v in points])
    for got in (numpy_values, compiled):
        assert np.max(np.abs(got - want) / scale) < tol


def test_polygamma_accuracy_against_mpmath():
    points = np.concatenate([np.linspace(-5.3, 30.0, 120), np.logspace(-3, 4, 30)])
    fn = S.vectorized(S.polygamma)
    for n in (1, 2, 3):
        with mpmath.workdps(30):
            want = np.array([float(mpmath.polygamma(n, float(v))) for v in points])
        got = fn(points, np.full_like(points, n))
        assert np.max(np.abs(got - want) / np.maximum(np.abs(want), 1.0)) < 5e-14, n


def test_special_values():
    inf, nan = math.inf, math.nan
    f = {n: S.vectorized(getattr(S, n)) for n in ("erfc", "erfinv", "lgamma", "digamma",
                                                   "cbrt", "hypot", "logaddexp")}
    np.testing.assert_array_equal(f["erfc"](np.array([-inf, inf, nan])), [2.0, 0.0, nan])
    np.testing.assert_array_equal(f["erfinv"](np.array([-1.0, 1.0, 1.5, 0.0])),
                                  [-inf, inf, nan, 0.0])
    np.testing.assert_array_equal(f["lgamma"](np.array([0.0, -3.0, 1.0, 2.0, inf])),
                                  [inf, inf, 0.0, 0.0, inf])
    assert np.isnan(f["digamma"](np.array([0.0, -2.0, nan]))).all()
    np.testing.assert_array_equal(f["cbrt"](np.array([-27.0, 0.0, -inf])), [-3.0, 0.0, -inf])
    np.testing.assert_allclose(f["hypot"](np.array([inf, 0.0, 3e200]),
                                          np.array([nan, 0.0, 4e200])), [inf, 0.0, 5e200],
                               rtol=1e-15)
    np.testing.assert_array_equal(f["logaddexp"](np.array([-inf, inf, 1.0]),
                                                 np.array([-inf, -inf, 1.0])),
                                  [-inf, inf, 1.0 + math.log(2.0)])


# --- every engine gives the same numbers -------------------------------------------------------
@pytest.mark.parametrize("name", sorted(CASES))
def test_tape_symbolic_and_finite_differences_agree(name):
    fn, arrays = CASES[name]
    if name == "floordiv":
        pytest.skip("not differentiable")
    check_gradients(fn, *arrays, rtol=1e-6, atol=1e-8, compiled=False).assert_ok()


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_second_order_tape_matches_symbolic(name):
    fn, arrays = CASES[name]
    xs = [sg.placeholder(f"x{k}", a.shape) for k, a in enumerate(arrays)]
    first = sg.gradients(sg.reduce_sum(sg.sin(fn(*xs))), xs)
    second = sg.gradients(sum(sg.reduce_sum(g) for g in first), xs)
    symbolic = sg.evaluate(second, dict(zip(xs, arrays)))
    variables = [sg.Variable(a) for a in arrays]
    with sg.GradientTape(persistent=True) as outer:
        with sg.GradientTape() as inner:
            y = sg.reduce_sum(sg.sin(fn(*variables)))
        g = inner.gradient(y, variables)
        total = sum(sg.reduce_sum(v) for v in g)
    tape = outer.gradient(total, variables)
    for s, t in zip(symbolic, tape):
        if s is None or t is None:
            assert t is None or not np.any(t.numpy()), name
            continue
        np.testing.assert_allclose(t.numpy(), s, rtol=1e-9, atol=1e-12, err_msg=name)


GROUP = 6
GROUPS = [sorted(CASES)[k:k + GROUP] for k in range(0, len(CASES), GROUP)]
# A few cases per compiled function, so that a failure names its ops.


def _graph(names):
    """One graph holding the cases and their gradients: (placeholders, outputs, arrays)."""
    placeholders, outputs, arrays = [], [], []
    for name in names:
        fn, values = CASES[name]
        xs = [sg.placeholder(f"{name}_{k}", a.shape) for k, a in enumerate(values)]
        y = fn(*xs)
        outputs.append(y)
        if name != "floordiv":
            outputs.extend(sg.gradients(sg.reduce_sum(sg.sin(y)), xs))
        placeholders.extend(xs)
        arrays.extend(values)
    return placeholders, outputs, arrays


@pytest.mark.compiled
@pytest.mark.parametrize("names", GROUPS, ids=[g[0] for g in GROUPS])
@pytest.mark.parametrize("target,math_mode", [("cpu", "fast"), ("cpu", "libm"),
                                              ("parallel", "fast")])
def test_compiled_matches_evaluate(target, math_mode, names):
    xs, outputs, arrays = _graph(names)
    want = sg.evaluate(outputs, dict(zip(xs, arrays)))
    got = sg.function(xs, outputs, target=target, math=math_mode)(*arrays)
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-13, err_msg=str(outputs[k].name))


@pytest.mark.compiled
def test_compiled_float32():
    x = sg.placeholder("x", (6,), "float32")
    y = sg.placeholder("y", (6,), "float32")
    outputs = [sg.erfc(x), sg.lgamma(x + 3.0), sg.digamma(x + 3.0), sg.cbrt(x),
               sg.logaddexp(x, y), sg.hypot(x, y), sg.xlogy(x, y + 3.0), x % (y + 3.0)]
    outputs += sg.gradients(sg.add(sg.reduce_sum(outputs[0]), sg.reduce_sum(outputs[2])), [x])
    rng = np.random.default_rng(5)
    a, b = (rng.uniform(-2, 2, 6).astype(np.float32) for _ in range(2))
    want = sg.evaluate(outputs, {x: a, y: b})
    got = sg.function([x, y], outputs)(a, b)
    for g, w in zip(got, want):
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=1e-6)


@pytest.mark.cuda
@pytest.mark.compiled
@pytest.mark.skipif(os.environ.get("NUMBA_ENABLE_CUDASIM") != "1",
                    reason="runs under the CUDA simulator (tests/conftest.py sets it)")
@pytest.mark.parametrize("names", GROUPS, ids=[g[0] for g in GROUPS])
def test_cuda_simulator_matches_cpu(names):
    xs, outputs, arrays = _graph(names)
    want = sg.function(xs, outputs, target="cpu", math="libm")(*arrays)
    got = sg.function(xs, outputs, target="cuda")(*arrays)
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-13, err_msg=str(outputs[k].name))


def test_reduction_errors_name_the_op_and_the_axis():
    from symgrad.errors import ShapeError
    x = sg.placeholder("x", (2, 3))
    with pytest.raises(ShapeError, match=r"sg\.norm: axis 2 is out of range"):
        sg.norm(x, axis=2)
    with pytest.raises(ShapeError, match=r"sg\.softmax: axis -3"):
        sg.softmax(x, axis=-3)
    with pytest.raises(ShapeError, match=r"sg\.reduce_logsumexp: axis \(1, 1\) repeats"):
        sg.reduce_logsumexp(x, axis=(1, 1))
    with pytest.raises(TypeError, match=r"sg\.log_softmax: axis must be an int"):
        sg.log_softmax(x, axis=(0, 1))
    assert isinstance(ShapeError("x"), ValueError)
    assert sg.reduce_std(x, axis=-1, keepdims=True, name="spread").shape == (2, 1)
    assert sg.norm(x, axis=(0, 1)).shape == ()


# --- identities of the special functions on random points (hypothesis) ----------------------
_erf = S.vectorized(S.erfinv)


@given(st.floats(-3.0, 3.0))
def test_erfinv_inverts_erf(x):
    assert abs(float(_erf(math.erf(x))) - x) <= 1e-12 * max(1.0, math.exp(x * x))


@given(st.floats(0.05, 60.0))
def test_lgamma_and_digamma_recurrences(x):
    lg, dg = S.vectorized(S.lgamma), S.vectorized(S.digamma)
    step = float(lg(x + 1.0)) - float(lg(x))
    assert abs(step - math.log(x)) <= 1e-13 * max(1.0, abs(float(lg(x + 1.0))))
    assert abs(float(dg(x + 1.0)) - float(dg(x)) - 1.0 / x) <= 1e-13 * max(1.0, 1.0 / x)


@given(st.floats(-30.0, 30.0), st.floats(-30.0, 30.0))
def test_logaddexp_and_hypot_against_direct_formulas(x, y):
    fn = S.vectorized(S.logaddexp)
    assert float(fn(x, y)) == pytest.approx(math.log(math.exp(x) + math.exp(y)), rel=1e-14,
                                            abs=1e-14)
    assert float(S.vectorized(S.hypot)(x, y)) == pytest.approx(math.hypot(x, y), rel=1e-15,
                                                               abs=0.0)


@pytest.mark.compiled
def test_integer_inputs_compile_like_numpy():
    x = sg.placeholder("x", (4,), "int64")
    a = np.array([-2, 0, 1, 3])
    outputs = [sg.exp2(x), sg.reciprocal(x + 5), sg.log2(x + 3), sg.cbrt(x),
               sg.squared_difference(x, 1), sg.hypot(x, 2)]
    want = sg.evaluate(outputs, {x: a})
    got = sg.function([x], outputs)(a)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-15)
    np.testing.assert_array_equal(want[0], [0.25, 1.0, 2.0, 8.0])


@pytest.mark.cuda
@pytest.mark.compiled
def test_every_v2_kernel_compiles_for_a_real_gpu():
    """The real numba.cuda type check of the v2 kernels and helpers (NVVM, no GPU needed):
    tests/cuda_ptx_check_elementwise.py in a subprocess; skipped without a toolkit."""
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    out = subprocess.run([sys.executable, str(root / "tests" / "cuda_ptx_check_elementwise.py")],
                         capture_output=True, text=True, cwd=root, env=env, timeout=900)
    if out.returncode == 2:
        pytest.skip(out.stdout.strip())
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1].startswith("OK")


@pytest.mark.compiled
@pytest.mark.parametrize("target", ["cpu", "parallel"])
def test_a_kernel_with_more_than_30_outputs_and_conditionals_compiles(target):
    """Regression (compile/codegen/templates.py ``_named_results``): numba rejected the point
    function's return of more than 30 values when one was a conditional expression."""
    xs = [sg.placeholder(f"x{k}", (4,)) for k in range(16)]
    outputs = []
    for x in xs:
        y = sg.relu6(x) * sg.abs(x)
        outputs += [y, sg.gradients(sg.reduce_sum(y), x)[0]]
    arrays = [np.linspace(-1.0, 7.0, 4) + 0.1 * k for k in range(16)]
    got = sg.function(xs, outputs, target=target)(*arrays)
    want = sg.evaluate(outputs, dict(zip(xs, arrays)))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-14)
