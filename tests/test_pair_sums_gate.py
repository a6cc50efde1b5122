"""A ``where(r < rc, f, 0)`` cutoff gates the pair inside a nest (``nest.nest_gate``: pairs
outside cost ``r2`` and a comparison), and the outer point function is specialised per part
of the loop (``nest.specialised``: masks fixed, products distributed over nonnegative
half-power bases, so the ``sqrt`` forms take no square root). Results equal ``sg.evaluate``,
gradients included; ``f.explain()`` names the gate."""

from __future__ import annotations

import re

import numpy as np
import pytest

import symgrad as sg
from benchmarks import pair_sums as bench
from benchmarks.workloads import w3_pair_sums as w

pytestmark = pytest.mark.compiled

N = 40


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "sgcache"))


def _asymmetric_cutoff(P, c):
    """A cutoff on a nest that visits every ordered pair (the weight is not symmetric)."""
    n = P.shape[0]
    wgt = sg.constant(np.add.outer(np.arange(n), 2 * np.arange(n)) / n + 1.0)
    r2 = w._r2(P)
    return sg.reduce_sum(sg.where(r2 < 2.0, wgt * sg.exp(-r2), 0.0))


def _cutoff_not_zero(P, c):
    """The pairs outside the cutoff add exp(-r2): nothing may be skipped."""
    r2 = w._r2(P)
    return sg.reduce_sum(sg.where(r2 < 2.0, (r2 + 1.0) ** -3, sg.exp(-r2)))


def _half_powers_of_any_sign(P, c):
    """``sqrt(s)`` of a sum ``s`` that may be negative, on the pairs a ``triu`` constant
    keeps: the gradient's half powers may not be combined into integer powers (they are
    NaN where ``s < 0``, as in ``sg.evaluate``)."""
    D = P[:, None, :] - P[None, :, :]
    s = sg.reduce_sum(D * sg.constant(np.array([1.0, 2.0, 3.0])), axis=-1)
    triu = sg.constant(np.triu(np.ones((P.shape[0],) * 2, bool), 1))
    r = sg.sqrt(sg.where(triu, s, 1.0))
    return sg.reduce_sum(sg.where(triu, r**-2 + r**-4, 0.0))


FORMS = {"lj: cutoff where(r < rc)": w.lj_cutoff, "coulomb, cutoff": w.coulomb_cutoff,
         "lj: mask before sqrt, r**-12 - r**-6": w.lj_mask_before_sqrt,
         "lj: mask after sqrt, r**-12 - r**-6": w.lj_mask_after_sqrt,
         "lj: eye constant guards sqrt": bench.lj_eye_constant,
         "lj: triu constant before sqrt": bench.lj_triu_constant,
         "asymmetric weight, cutoff": _asymmetric_cutoff,
         "cutoff, dropped pairs add": _cutoff_not_zero,
         "half powers of any sign": _half_powers_of_any_sign}
GATED = {"lj: cutoff where(r < rc)", "coulomb, cutoff", "asymmetric weight, cutoff"}
_FNS: dict = {}


def _fn(name, n=N, target="cpu"):
    """(compiled function, its results, sg.evaluate's), compiled once per test session."""
    key = (name, n, target)
    if key not in _FNS:
        data = w.make_data(n)
        P = sg.placeholder("P", shape=(n, 3))
        E = FORMS[name](P, w.constants(data))
        outs = [E] + sg.gradients(E, P)
        fn = sg.function([P], outs, target=target)
        _FNS[key] = (fn, fn(data["P"]), sg.evaluate(outs, {P: data["P"]}))
    return _FNS[key]


@pytest.mark.parametrize("name", list(FORMS))
def test_gated_and_specialised_nests_match_evaluate(name):
    fn, got, want = _fn(name)
    if name == "half powers of any sign":   # sympy folds sqrt(s)**-2 to 1/s (finite at
        got, want = got[1:], want[1:]        # s < 0, NaN in evaluate): on main as well
    for g, h in zip(got, want):
        h = np.asarray(h)
        finite = np.isfinite(h)
        np.testing.assert_array_equal(np.isfinite(g), finite)
        np.testing.assert_allclose(np.asarray(g)[finite], h[finite], rtol=1e-9,
                                   atol=1e-11 * np.abs(h[finite]).max(initial=1.0))
    gated = "skips the pairs where" in fn.explain()
    assert gated == (name in GATED), fn.explain()
    assert ("_gate(" in fn.source) == (name in GATED)


def test_explain_names_the_cutoff_condition():
    fn = _fn("lj: cutoff where(r < rc)")[0]
    line = next(x for x in fn.explain().splitlines() if "skips the pairs where" in x)
    assert "< 6.249999999999999" in line and "is False" in line, line   # rc**2, rounded down


@pytest.mark.parametrize("name", ["lj: mask before sqrt, r**-12 - r**-6",
                                  "lj: mask after sqrt, r**-12 - r**-6",
                                  "lj: eye constant guards sqrt",
                                  "lj: triu constant before sqrt"])
def test_sqrt_forms_take_no_square_root(name):
    """``(-12 r**-13 - 6 r**-7) * 0.5/r`` with ``r = sqrt(r2)`` is distributed to integer
    powers of ``1/r2`` on the loop's off-diagonal part (r2 a sum of squares)."""
    source = _fn(name)[0].source
    points = re.findall(r"def _n\d+_cpu_o\d+\(.*?(?=\n\n\n)", source, re.S)
    assert points, source
    assert not any("sqrt" in p for p in points), points


def test_half_powers_of_a_base_of_any_sign_keep_their_square_root():
    fn, got, want = _fn("half powers of any sign")
    assert np.isnan(np.asarray(want[1])).any()    # some s < 0: the check above is not void
    assert "def _n1_cpu(" in fn.source   # a nest
    points = re.findall(r"def _n\d+_cpu_o\d+\(.*?(?=\n\n\n)", fn.source, re.S)
    assert all("sqrt" in p for p in points if "return (0.0" not in p), points


def test_parallel_gated_nest_matches_evaluate():
    n = 200   # 40000 pairs: above PARALLEL_THRESHOLD, so the parallel nest runs
    FORMS["coulomb (parallel)"] = w.coulomb_cutoff
    fn, got, want = _fn("coulomb (parallel)", n, "parallel")
    assert "_n1_parallel_gate(" in fn.source and "range(c, n0, nc)" in fn.source
    for g, h in zip(got, want):
        np.testing.assert_allclose(g, h, rtol=1e-9, atol=1e-11 * np.abs(h).max())


FORMS.update({"lj: explicit components": w.lj_components,
              "morse: components, triu constant, cutoff": bench.morse_components})


@pytest.mark.parametrize("name, rule", [
    ("lj: explicit components", "with i0 <= i1: the sum is symmetric"),
    ("morse: components, triu constant, cutoff", "skips the pairs where")])
def test_component_forms_are_nests_of_one_kernel(name, rule):
    """``dx = x[:, None] - x[None, :]`` per component: one flat pair kernel of sums, run as a
    nest of that kernel alone (``nest._pair_loop``) to get the nest's rules."""
    fn, got, want = _fn(name)
    for g, h in zip(got, want):
        np.testing.assert_allclose(g, h, rtol=1e-9, atol=1e-11 * np.abs(h).max())
    assert rule in fn.explain(), fn.explain()
    assert "flat pair loops" not in fn.explain()


def test_symmetric_components_parallel_matches_evaluate():
    FORMS["lj: explicit components (parallel)"] = w.lj_components
    fn, got, want = _fn("lj: explicit components (parallel)", 200, "parallel")
    assert "for i1 in range(i0 + 1, n1)" in fn.source and "range(c, n0, nc)" in fn.source
    for g, h in zip(got, want):
        np.testing.assert_allclose(g, h, rtol=1e-9, atol=1e-11 * np.abs(h).max())


def test_asymmetric_flat_pair_loop_is_explained():
    """No rule pays (not symmetric, no mask, no cutoff): the flat loop stays, and explain
    says which rules it misses."""
    P = sg.placeholder("P", shape=(N, 3))
    x = P[:, 0]
    E = sg.reduce_sum(sg.exp(-(x[:, None] - 2.0 * x[None, :]) ** 2))
    fn = sg.function([P], [E] + sg.gradients(E, P), target="cpu")
    data = w.make_data(N)
    for g, h in zip(fn(data["P"]), sg.evaluate([E] + sg.gradients(E, P), {P: data["P"]})):
        np.testing.assert_allclose(g, h, rtol=1e-9, atol=1e-12)
    report = fn.explain()
    assert "flat pair loops:" in report and "is a flat loop, not a nest" in report, report


def _charges(other):
    def loss(P, c):
        n = P.shape[0]
        q = np.where(np.arange(n) % 3 == 0, 1.0, -0.5)
        r = sg.sqrt(sg.where(c["eye"], w._r2(P), 1.0))
        qq = sg.constant(q)[:, None] * sg.constant(other(q))[None, :]
        return 0.5 * sg.reduce_sum(sg.where(sg.logical_and(c["eye"], r < 3.0), qq / r, 0.0))
    return loss


FORMS.update({"charges q_i q_j": _charges(lambda q: q),
              "charges q_i (q_j + 1)": _charges(lambda q: q + 1.0)})


@pytest.mark.parametrize("name, symmetric", [("coulomb, cutoff", True),
                                             ("charges q_i q_j", True),
                                             ("charges q_i (q_j + 1)", False)])
def test_vectors_read_along_both_pair_axes_may_be_swapped(name, symmetric):
    """``q[:, None] * q[None, :]`` (views or folded (N, 1) / (1, N) constants) is symmetric:
    the nest visits i0 <= i1; ``q[:, None] * (q + 1)[None, :]`` is not."""
    fn, got, want = _fn(name)
    for g, h in zip(got, want):
        np.testing.assert_allclose(g, h, rtol=1e-9, atol=1e-11 * np.abs(h).max())
    assert ("with i0 <= i1: the sum is symmetric" in fn.explain()) == symmetric
    assert "skips the pairs where" in fn.explain()


def test_outer_product_constant_is_read_as_a_column_and_a_row():
    from symgrad.compile.plan.masks import outer_factors

    class Node:
        value = np.multiply.outer(np.array([-1.0, 1.0, 0.5]), np.array([1.0, -1.0, 4.0]))
    assert outer_factors(Node, "[i0, i1]") == (0, 1)   # value[0, 1] == 1
    assert outer_factors(Node, "[i1, i0]") is None
    Node.value = Node.value + np.eye(3)
    assert outer_factors(Node, "[i0, i1]") is None
