"""Pair sums guarded by constant masks built in numpy (``np.eye``, ``np.triu``, ``np.tril``)
read the masks as index predicates inside the loop (``compile/plan/masks.py``), skip the pairs
a triangular mask drops when they add exactly 0, and agree with ``sg.evaluate``."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
from benchmarks import pair_sums as bench
from benchmarks.workloads import w3_pair_sums as w
from symgrad.compile.plan.masks import band, complement, mask_band, predicate
from symgrad.compile.nest import Nest, nest_rejections

pytestmark = pytest.mark.compiled

N = 40


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "sgcache"))


def _holds(b, n0, n1):
    d = np.arange(n1)[None, :] - np.arange(n0)[:, None]
    op, k = b
    return {"==": d == k, "!=": d != k, ">=": d >= k, "<=": d <= k}[op]


@pytest.mark.parametrize("shape", [(6, 6), (4, 7), (7, 4), (1, 5)])
def test_band_recognises_every_triangle_and_diagonal(shape):
    ones = np.ones(shape, bool)
    for k in range(-8, 9):
        for v in (np.triu(ones, k), np.tril(ones, k)):
            b = band(v)
            if v.all() or not v.any():
                assert b is None
            else:
                assert np.array_equal(_holds(b, *shape), v), (k, b)
                assert np.array_equal(_holds(complement(b), *shape), ~v)
    if shape[0] == shape[1]:
        assert band(np.eye(shape[0], dtype=bool)) == ("==", 0)
        assert band(~np.eye(shape[0], dtype=bool)) == ("!=", 0)


def test_band_rejects_other_masks():
    rng = np.random.default_rng(0)
    for _ in range(300):
        v = rng.random((5, 5)) < 0.5
        b = band(v)
        assert b is None or np.array_equal(_holds(b, 5, 5), v)
    v = np.triu(np.ones((5, 5), bool), 1)
    v[4, 0] = True
    assert band(v) is None
    assert band(np.eye(4, dtype=bool)[:, ::-1]) is None


def test_float_constants_of_two_values_are_bands():
    class Node:
        value = np.where(np.triu(np.ones((5, 5), bool), 1), 4.0, 0.0)
    assert mask_band(Node, "[i0, i1]") == (("<=", 0), 0.0, 4.0)
    assert mask_band(Node, "[i1, i0]") is None
    Node.value = np.where(np.triu(np.ones((5, 5), bool), 1), np.inf, 0.0)
    assert mask_band(Node, "[i0, i1]") is None
    assert predicate(("<=", -1), "i0", "i1") == "i0 > i1"
    assert predicate((">=", 3), "i0", "i1") == "i1 - i0 >= 3"


def _tril_lj(P, c):
    tril = sg.constant(np.tril(np.ones((P.shape[0],) * 2, bool), -1))
    r2 = w._r2(P)
    return sg.reduce_sum(sg.where(tril, 4.0 * (r2**-6 - r2**-3), 0.0))


def _triu_not_zero(P, c):
    """The pairs the mask drops add exp(-r2): no pair may be skipped."""
    triu = sg.constant(np.triu(np.ones((P.shape[0],) * 2, bool), 1))
    r2 = w._r2(P)
    return sg.reduce_sum(sg.where(triu, 4.0 * (sg.sqrt(r2 + 1.0) ** -6), sg.exp(-r2)))


def _random_mask(P, c):
    m = np.random.default_rng(1).random((P.shape[0],) * 2) < 0.5
    np.fill_diagonal(m, False)
    r2 = w._r2(P)
    return sg.reduce_sum(sg.where(sg.constant(m), sg.exp(-r2), 0.0))


FORMS = {**{name: loss for name, (loss, _) in bench.MASK_FORMS.items()},
         "tril(-1) mask": _tril_lj, "triu mask, dropped pairs add": _triu_not_zero,
         "random constant mask": _random_mask}
SKIPS = {"lj: triu constant before sqrt": "i0 < i1", "tril(-1) mask": "i0 > i1",
         "morse: components, triu constant, cutoff": "i0 < i1",
         "lj: eye constant guards sqrt": "i0 <= i1"}   # symmetric: i0 <= i1


def _check(name, n, target):
    data = w.make_data(n)
    P = sg.placeholder("P", shape=(n, 3))
    E = FORMS[name](P, w.constants(data))
    outs = [E] + sg.gradients(E, P)
    fn = sg.function([P], outs, target=target)
    got = fn(data["P"])
    want = sg.evaluate(outs, {P: data["P"]})
    for g, h in zip(got, want):
        np.testing.assert_allclose(g, h, rtol=1e-9, atol=1e-11 * np.abs(h).max())
    return fn


@pytest.mark.parametrize("name", list(FORMS))
def test_mask_forms_match_evaluate_without_nxn_temporary(name):
    fn = _check(name, N, "cpu")
    report = fn.explain()
    temps = report.split("temporaries:")[1].split("fusion boundaries:")[0]
    assert f"({N}, {N})" not in temps, temps
    assert nest_rejections(fn.plan) == []
    if name == "random constant mask":
        assert " as i0" not in report   # not a band: read from the array
        return
    assert " as i0 " in report, report   # the mask is read as a predicate
    skip = SKIPS.get(name)
    visits = [line for line in report.splitlines() if "visits only the" in line]
    if skip is None:
        assert visits == [], visits
    else:
        assert len(visits) == 1 and f"with {skip}" in visits[0], visits
        source = fn.source
        assert "for i1 in range(max(i0 + 1, 0), n1)" in source or \
            "for i1 in range(min(i0 + 0, n1))" in source or \
            "for i1 in range(i0 + 1, n1)" in source, source


def test_eye_form_nests_and_reads_eye_as_predicate():
    fn = _check("lj: eye constant guards sqrt", N, "cpu")
    assert any(isinstance(u, Nest) for u in fn.plan.units)
    assert "as i0 == i1 (no (N, N) read)" in fn.explain()


@pytest.mark.parametrize("name", ["lj: triu constant before sqrt",
                                  "morse: components, triu constant, cutoff"])
def test_parallel_skipping_loops_match_evaluate(name):
    n = 200   # 40000 pairs: above PARALLEL_THRESHOLD, so the parallel loops run
    fn = _check(name, n, "parallel")
    assert "range(c, n0, nc)" in fn.source   # rows dealt round-robin (triangular work)


def _asymmetric_constant(P, c):
    """A constant weight that is not symmetric: the nest must visit every ordered pair."""
    n = P.shape[0]
    wgt = sg.constant(np.add.outer(np.arange(n), 2 * np.arange(n)) / n + 1.0)
    return sg.reduce_sum(wgt * sg.exp(-w._r2(P)))


def _symmetric_constant(P, c):
    n = P.shape[0]
    wgt = sg.constant(np.add.outer(np.arange(n), np.arange(n)) / n + 1.0)
    return sg.reduce_sum(wgt * sg.exp(-w._r2(P)))


FORMS.update({"asymmetric constant weight": _asymmetric_constant,
              "symmetric constant weight": _symmetric_constant})


@pytest.mark.parametrize("name, symmetric", [
    ("symmetric constant weight", True), ("asymmetric constant weight", False),
    ("lj: eye constant guards sqrt", True), ("lj: triu constant before sqrt", False)])
def test_symmetric_sums_visit_half_the_pairs(name, symmetric):
    fn = _check(name, N, "cpu")
    assert any(isinstance(u, Nest) for u in fn.plan.units)
    assert ("with i0 <= i1: the sum is symmetric" in fn.explain()) == symmetric
    assert ("for i1 in range(i0 + 1, n1)" in fn.source) == symmetric


def test_symmetric_parallel_matches_evaluate():
    fn = _check("lj: eye constant guards sqrt", 200, "parallel")
    assert "for i1 in range(i0 + 1, n1)" in fn.source and "range(c, n0, nc)" in fn.source
