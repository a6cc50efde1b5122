"""Loop-invariant hoisting across broadcast axes (symgrad/compile/plan/hoist.py): hoisted
kernels give the unhoisted kernels' values, NaNs and infs (batched Jacobians and Hessians,
generic broadcast kernels, cpu and parallel), and the hoist is visible in ``explain()``
and in the generated source."""

from __future__ import annotations

import re

import numpy as np
import pytest

import symgrad as sg
from symgrad.compile.plan import hoist
from symgrad.compile.scalar import settings as scalar_settings

pytestmark = pytest.mark.compiled

N = 128


def _y(x):
    return sg.sin(x[1:]) * x[:-1] ** 2 + sg.exp(-x[1:])


def _derivatives():
    x = sg.placeholder("x", shape=(N,))
    y = _y(x)
    (hess,) = sg.hessians(sg.reduce_sum(y), x)
    return x, sg.jacobian(y, x), hess


def _broadcasts():
    """Generic broadcast kernels: (k, n), a middle axis of a 3-D shape, a Piecewise."""
    x = sg.placeholder("x", shape=(128,))
    w = sg.placeholder("w", shape=(256, 128))
    z = sg.placeholder("z", shape=(4, 1, 64))
    v = sg.placeholder("v", shape=(4, 128, 64))
    return [x, w, z, v], [sg.xlogy(w, x), sg.div_no_nan(v, sg.expm1(z) + 1.0) + sg.xlogy(v, z)]


def _compile(build, target: str, enabled: bool):
    """Loop kernels only: the scalar pass off (under the IR path's build constants part
    of the Jacobian becomes a scalar kernel in both plans, and the two then differ by
    ~4e-14 relative on 2 of 16,256 entries, more than the loops' last bits)."""
    old, hoist.ENABLED = hoist.ENABLED, enabled
    scalar, scalar_settings.ENABLED = scalar_settings.ENABLED, False
    try:
        inputs, outputs = build()
        return sg.function(inputs, outputs, target=target)
    finally:
        hoist.ENABLED = old
        scalar_settings.ENABLED = scalar


def _jac_build():
    x, jac, hess = _derivatives()
    return [x], [jac, hess]


@pytest.fixture(scope="module", params=["cpu", "parallel"])
def jacobians(request):
    return (_compile(_jac_build, request.param, True),
            _compile(_jac_build, request.param, False))


@pytest.fixture(scope="module", params=["cpu", "parallel"])
def broadcasts(request):
    return (_compile(_broadcasts, request.param, True),
            _compile(_broadcasts, request.param, False))


def _same(a, b) -> None:
    """Equal values (to the last few bits of the vector math), NaN and inf in the same
    places, with the same signs."""
    for u, v in zip(a, b):
        u, v = np.asarray(u), np.asarray(v)
        assert u.shape == v.shape
        np.testing.assert_array_equal(np.isnan(u), np.isnan(v))
        np.testing.assert_array_equal(np.isposinf(u), np.isposinf(v))
        np.testing.assert_array_equal(np.isneginf(u), np.isneginf(v))
        np.testing.assert_allclose(u, v, rtol=1e-14, atol=0, equal_nan=True)


def _analytic_jacobian(x: np.ndarray) -> np.ndarray:
    n = x.size
    jac = np.zeros((n - 1, n))
    i = np.arange(n - 1)
    jac[i, i] = 2 * x[:-1] * np.sin(x[1:])
    jac[i, i + 1] = np.cos(x[1:]) * x[:-1] ** 2 - np.exp(-x[1:])
    return jac


def test_jacobian_and_hessian_equal_unhoisted_and_analytic(jacobians):
    hoisted, plain = jacobians
    x = np.linspace(0.1, 1.0, N)
    got = hoisted(x)
    _same(got, plain(x))
    np.testing.assert_allclose(got[0], _analytic_jacobian(x), rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(got[1], got[1].T, rtol=1e-13, atol=1e-14)


def test_jacobian_nan_and_inf_propagate_as_unhoisted(jacobians):
    """exp(-x) overflows at x = -800: the seed's zeros times inf are NaN off the
    diagonal, as in the unhoisted kernel (and TF); a NaN input poisons its column."""
    hoisted, plain = jacobians
    x = np.linspace(0.1, 1.0, N)
    x[5], x[9], x[20], x[30] = -800.0, np.nan, np.inf, 0.0
    got, want = hoisted(x), plain(x)
    _same(got, want)
    jac = got[0]
    assert np.isneginf(jac[4, 5]) and np.isnan(jac[0, 5]) and np.isnan(jac[:, 9]).all()
    assert jac[0, 1] == want[0][0, 1] and not np.isnan(jac[0, 40])


def test_broadcast_kernels_equal_unhoisted(broadcasts):
    hoisted, plain = broadcasts
    rng = np.random.default_rng(0)
    x = rng.uniform(0.0, 2.0, 128)
    w = rng.uniform(-1.0, 1.0, (256, 128))
    z = rng.uniform(-1.0, 1.0, (4, 1, 64))
    v = rng.uniform(-1.0, 1.0, (4, 128, 64))
    x[:4] = [0.0, -1.0, np.nan, np.inf]         # log: -inf, nan, nan, inf
    w[:3, :4] = 0.0                              # xlogy's 0 where w == 0, even at log 0
    z[0, 0, :3] = [np.nan, -np.inf, 800.0]       # expm1 + 1: nan, 0 (div_no_nan: 0), inf
    v[0, :2, :3] = 0.0
    args = (x, w, z, v)
    got = hoisted(*args)
    _same(got, plain(*args))
    with np.errstate(all="ignore"):
        want0 = np.where(w == 0, 0.0, w * np.log(x))
    _same([got[0]], [want0])


def _kernel_bodies(source: str) -> dict:
    """{kernel index: text of its point functions}."""
    out: dict = {}
    for m in re.finditer(r"def _k(\d+)_point(?:_libm)?\(.*?\n\n\n", source, re.S):
        out[int(m.group(1))] = out.get(int(m.group(1)), "") + m.group(0)
    return out


def test_the_hoist_is_in_explain_and_in_the_source(jacobians, broadcasts):
    f = jacobians[0]
    text = f.explain()
    section = text.split("hoisted out of broadcast axes", 1)[1].splitlines()[1:]
    hoisted = [line for line in section if line.startswith("  ")]
    assert any("exp(" in line and "(127, 127)" in line and "(127,)" in line
               for line in hoisted)
    assert any("cos(" in line for line in hoisted)
    decided = dict((r.name, r.decided) for r in f.passes)   # no fold on a warm cache hit
    assert "hoisted out of broadcast axes" in decided.get("fold", "") or \
        "hit" in decided["warm key"] and f.plan.graph.hoisted
    assert "hoisted out of broadcast axes" not in jacobians[1].explain()
    # the (k, n) kernels call no exp/cos: each is computed in a 1-D kernel
    big = [k.index for k in f.plan.kernels if len(k.shape) == 2]
    bodies = _kernel_bodies(f.source)
    assert big and all(not re.search(r"\b(exp|cos)(_f64)?\(", bodies[k]) for k in big)
    plain = _kernel_bodies(jacobians[1].source)
    assert any(re.search(r"\b(exp|cos)(_f64)?\(", plain[k.index])
               for k in jacobians[1].plan.kernels if len(k.shape) == 2)
    g = broadcasts[0]
    assert "log(x) once per element of (128,)" in g.explain()
    assert "log(z) once per element of (4, 1, 64)" in g.explain()     # a middle axis


def test_identity_seed_is_an_index_predicate_in_the_gather_loop(jacobians):
    """The dense Jacobian's one-hot seed (an eye constant) is read as ``j0 == j1`` by the
    gather loop, not as an (N, N) array."""
    f = jacobians[0]
    assert "(1.0 if j0 == j1 else 0.0)" in f.source
    assert "as i0 == i1" in f.explain()


def test_small_kernels_without_a_smaller_loop_are_not_hoisted():
    """No elementwise node of the small shape and a small kernel: no new kernel is made."""
    x = sg.placeholder("x", shape=(16,))
    w = sg.placeholder("w", shape=(8, 16))
    from symgrad.compile.plan.fold import fold_graph
    graph, hoisted = hoist.hoist_invariants(fold_graph([sg.xlogy(w, x)], [x, w]))
    assert hoisted == [] and graph.outputs[0].op.name == "xlogy"


@pytest.mark.parametrize("formula, hoisted, rest", [
    ("a/sqrt(b)", ["sqrt(_0)"], "_0/_1"),                  # a divisor stays a divisor
    ("a/b", [], "_0/_1"),                                   # never a*(1/b)
    ("a*cos(b)/(b + 1)", ["cos(_0)"], "_0*_2/(_1 + 1)"),    # factors are not regrouped
    ("a/(b + exp(b))", ["_0 + exp(_0)"], "_0/_1"),          # the maximal invariant tree
    ("a*b**2 + b", [], None),                               # nothing costly
])
def test_what_is_hoisted_from_a_formula(formula, hoisted, rest):
    import sympy as sp
    from symgrad.compile.plan.fold import fold_graph
    from symgrad.ops.elementwise.api import expr
    from symgrad.ops.symbols import input_symbol
    a, b = input_symbol(0, "f"), input_symbol(1, "f")
    x = sg.placeholder("x", shape=(128,))
    w = sg.placeholder("w", shape=(256, 128))
    node = expr([w, x], sp.sympify(formula, locals={"a": a, "b": b}), "float64")
    graph, found = hoist.hoist_invariants(fold_graph([node], [x, w]))
    assert [str(h.node.attrs["expr"]) for h in found] == hoisted
    assert all(h.node.shape == (128,) for h in found)
    if rest is not None:
        assert str(graph.outputs[0].attrs["expr"]) == rest
