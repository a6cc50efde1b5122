"""Power chains (``compile/printing/powers.py``): the same values as the plain printed form at
ordinary and singular points (0, negative, inf, NaN, tiny, huge; float64 and float32), one
division and one square root per base in the printed kernel, and pair-sum gradients that
agree with ``sg.evaluate`` and finite differences."""

from __future__ import annotations

import re

import numpy as np
import pytest
import sympy as sp

import symgrad as sg
import symgrad.compile.codegen.lower as lower
from benchmarks.workloads import w3_pair_sums as w
from symgrad.compile.printing.powers import power_chains

pytestmark = pytest.mark.compiled

EDGES = [0.0, -1.0, -2.5, np.inf, np.nan, 1e-300, 1e-40, 1e300, 0.3, 2.0, 7.5]


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "sgcache"))


def _lj_sqrt(x):
    r = sg.sqrt(x)
    return 4.0 * (r**-12 - r**-6)


def _lj_r2(x):
    return x**-6 - x**-3 + 2.0 * x**-7


def _mixed(x):
    return sg.sqrt(x) * x * x + 1.0 / sg.sqrt(x) + x**-2 + 3.0 * x**-3


def _halves(x):
    return x**2.5 + x**-1.5 + x**-0.5 + x**0.5


def _compile(graph, dtype, chains: bool, monkeypatch):
    """value and gradient of ``sum(graph(x))``, with or without power chains (a distinct
    placeholder name keeps the two builds apart in the cache)."""
    if not chains:
        monkeypatch.setattr(lower, "power_chains", lambda s, r: (s, r))
    x = sg.placeholder("x_chains" if chains else "x_plain", shape=(len(EDGES),), dtype=dtype)
    y = graph(x)
    fn = sg.function([x], [y] + sg.gradients(sg.reduce_sum(y), x), target="cpu")
    monkeypatch.undo()
    return fn


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("graph", [_lj_sqrt, _lj_r2, _mixed, _halves])
def test_chains_give_the_plain_values(graph, dtype, monkeypatch):
    """Where the plain form gives a number (inf included) the chains give the same; where
    it gives NaN they give NaN, numpy's value, or inf where the NaN came from ``inf - inf``
    (``fastmath``'s ``reassoc`` lets LLVM factor sums of powers either way; in float32 it
    also turns ``1/sqrt(x)`` into an rsqrt estimate, NaN at 0 and inf in both forms)."""
    x = np.array(EDGES, dtype=dtype) if dtype == "float64" else \
        np.array([v if not np.isfinite(v) or abs(v) < 1e30 else np.inf for v in EDGES],
                 dtype=dtype)
    plain = _compile(graph, dtype, False, monkeypatch)(x)
    chained_fn = _compile(graph, dtype, True, monkeypatch)
    assert re.search(r"\bq0(_\w+)? = ", chained_fn.source)      # the chains were used
    chained = chained_fn(x)
    xs = sg.placeholder("x_eval", shape=x.shape, dtype=dtype)
    ys = graph(xs)
    numpy_ = sg.evaluate([ys] + sg.gradients(sg.reduce_sum(ys), xs), {xs: x})
    rtol = 1e-13 if dtype == "float64" else 3e-6
    with np.errstate(all="ignore"):
        for got, want, ref in zip(chained, plain, numpy_):
            assert got.dtype == np.dtype(dtype)
            # where the plain form is NaN: NaN, inf (from inf - inf) or numpy's value
            loose = np.isnan(want)
            ok = np.isnan(got) | np.isinf(got) | np.isclose(got, ref, rtol=rtol, equal_nan=True)
            assert ok[loose].all(), (got, want, ref)
            want = np.where(loose, got, want)
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
            np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
            finite = np.isfinite(want)
            np.testing.assert_allclose(got[finite], want[finite], rtol=rtol, atol=0)


def test_chains_agree_with_numpy_power_away_from_minus_infinity():
    b = sp.Symbol("b", real=True)
    exps = [-6, -3, sp.Rational(-13, 2), sp.Rational(-1, 2), sp.Rational(5, 2), 7, -1]
    statements, results = power_chains([], [b**e for e in exps])
    values = np.array([v for v in EDGES if not np.isnan(v)])
    env = {b: values}
    with np.errstate(all="ignore"):
        for sym, expr in statements:
            env[sym] = sp.lambdify(list(env), expr, "numpy")(*env.values())
        for e, res in zip(exps, results):
            got = sp.lambdify(list(env), res, "numpy")(*env.values())
            np.testing.assert_allclose(got, np.power(values, float(e)), rtol=1e-13)
    # one reciprocal of b, one of sqrt(b) (not sqrt(1/b): 1/b overflows for subnormal b)
    assert len([s for s, e in statements if e.is_Pow and e.exp == -1]) == 2


def _point_source(source: str, marker: str) -> str:
    """The code lines (no comments) of the first point function after ``marker``."""
    start = source.index("def ", source.index(marker))
    lines = source[start:source.index("\n\n\n", start)].splitlines()[1:]
    return "\n".join(line for line in lines if not line.strip().startswith("#"))


@pytest.mark.parametrize("name, sqrts, divisions", [
    ("lj: mask before sqrt, r**-12 - r**-6", 1, 2),
    ("lj: mask after sqrt, r**-12 - r**-6", 1, 2),
    ("lj: 0.5*sum ~eye, r2**-6 - r2**-3", 0, 1),
    ("lj: cutoff where(r < rc)", 1, 2),
    ("coulomb, cutoff", 1, 2)])
def test_pair_kernel_divides_at_most_twice(name, sqrts, divisions):
    """One reciprocal of r2 and one of sqrt(r2) per pair at most, however many powers."""
    data = w.make_data(20)
    P = sg.placeholder("P", shape=(20, 3))
    E = w.FORMULATIONS[name][0](P, w.constants(data))
    fn = sg.function([P], [E] + sg.gradients(E, P), target="cpu")
    body = _point_source(fn.source, "outer kernel")
    assert body.count("math.sqrt(") <= sqrts
    assert len(re.findall(r"/(?!2\.0)", body)) == divisions  # /2.0 is a multiplication
    assert "**" not in body


@pytest.mark.parametrize("name", ["lj: mask before sqrt, r**-12 - r**-6",
                                  "lj: cutoff where(r < rc)", "coulomb, cutoff"])
def test_pair_gradients_agree_with_evaluate_and_finite_differences(name):
    n = 12
    data = w.make_data(n)
    P = sg.placeholder("P", shape=(n, 3))
    E = w.FORMULATIONS[name][0](P, w.constants(data))
    grads = sg.gradients(E, P)
    fn = sg.function([P], [E] + grads, target="cpu")
    x = data["P"] + 0.05 * np.random.default_rng(0).standard_normal(data["P"].shape)
    value, grad = fn(x)
    ref_value, ref_grad = sg.evaluate([E] + grads, {P: x})
    np.testing.assert_allclose(value, ref_value, rtol=1e-12)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-10, atol=1e-12 * np.abs(ref_grad).max())
    h = 1e-6
    for i, k in [(0, 0), (3, 1), (n - 1, 2)]:
        xp, xm = x.copy(), x.copy()
        xp[i, k] += h
        xm[i, k] -= h
        fd = (fn(xp)[0] - fn(xm)[0]) / (2 * h)
        assert abs(fd - grad[i, k]) <= 1e-5 * max(1.0, abs(grad[i, k]))


@pytest.mark.parametrize("target", ["cpu", "parallel"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_reciprocal_square_roots_are_exact_at_special_points(target, dtype):
    """No reciprocal-sqrt estimate (fast-math 'arcp'): 1/sqrt at 0, inf and subnormals is
    numpy's, in float32 as in float64."""
    tiny = np.finfo(dtype).smallest_subnormal * 1000
    values = np.array([0.0, np.inf, tiny, 4.0, 2.0, -1.0, 3e37], dtype)
    x = sg.placeholder("x", (values.size,), dtype)
    f = sg.function([x], [x ** -0.5, 1.0 / sg.sqrt(x), 3.0 / x, x ** -1.5 + x ** -2.0],
                    target=target)
    with np.errstate(all="ignore"):
        expected = [values ** -0.5, 1.0 / np.sqrt(values), 3.0 / values,
                    values ** -1.5 + values ** -2.0]
    for got, want in zip(f(values), expected):
        np.testing.assert_allclose(got, want.astype(dtype), rtol=2 * np.finfo(dtype).eps)
