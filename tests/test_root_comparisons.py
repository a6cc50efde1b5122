"""``sqrt(b) <op> c`` compiled as a comparison of ``b`` (``compile/printing/rootcmp.py``) is the same
predicate as numpy's at every value: around the threshold (a few ulps either side), at
0, -0.0, negatives, inf and NaN, in float64 and float32; and a pair sum's cutoff no
longer takes a square root to decide."""

from __future__ import annotations

import operator
import re

import numpy as np
import pytest
import sympy as sp

import symgrad as sg
from benchmarks.workloads import w3_pair_sums as w
from symgrad.compile.printing.rootcmp import root_comparisons, threshold

OPS = {"<": (operator.lt, sp.StrictLessThan), "<=": (operator.le, sp.LessThan),
       ">": (operator.gt, sp.StrictGreaterThan), ">=": (operator.ge, sp.GreaterThan)}
CONSTANTS = [2.5, 3.0, 0.1, 1e-3, 7.3, 1.7e150, 1.0]


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "sgcache"))


def _probe(c: float, dtype) -> np.ndarray:
    """Values within 6 ulps of both thresholds, and the special values."""
    ftype = np.dtype(dtype).type
    out = [ftype(v) for v in (0.0, -0.0, -1.0, np.inf, -np.inf, np.nan, 1e-300, c)]
    for strict in (True, False):
        t = threshold(c, strict, dtype)
        for _ in range(6):
            t = np.nextafter(t, ftype(0))
        for _ in range(13):
            out.append(t)
            t = np.nextafter(t, ftype(np.inf))
    return np.array(out, dtype=dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("c", CONSTANTS)
@pytest.mark.parametrize("op", list(OPS))
def test_rewritten_predicate_is_numpys(op, c, dtype):
    if dtype == "float32" and c > 1e30:
        pytest.skip("not a float32 value")
    b = sp.Symbol("b", real=True)
    compare, relation = OPS[op]
    rewritten = root_comparisons(relation(sp.sqrt(b), sp.Float(float(np.dtype(dtype).type(c)))),
                                 dtype)
    assert not rewritten.has(sp.sqrt(b))
    x = _probe(c, dtype)
    got = sp.lambdify([b], rewritten, "numpy")(x)
    with np.errstate(invalid="ignore"):
        want = compare(np.sqrt(x), np.dtype(dtype).type(c))
    np.testing.assert_array_equal(np.broadcast_to(got, x.shape), want)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_compiled_cutoff_matches_numpy_at_the_threshold(dtype):
    c = 2.5
    x = _probe(c, dtype)
    xs = sg.placeholder("x", shape=x.shape, dtype=dtype)
    y = sg.where(sg.sqrt(xs) < c, xs * 2.0 + 1.0, -1.0)
    fn = sg.function([xs], [y], target="cpu")
    assert "math.sqrt" not in fn.source
    with np.errstate(invalid="ignore"):
        want = np.where(np.sqrt(x) < np.dtype(dtype).type(c), x * 2.0 + 1.0, -1.0).astype(dtype)
    np.testing.assert_array_equal(fn(x)[0], want)
    np.testing.assert_array_equal(sg.evaluate([y], {xs: x})[0], want)


def test_pair_cutoffs_compare_r2():
    data = w.make_data(20)
    for name in ("lj: cutoff where(r < rc)", "coulomb, cutoff"):
        P = sg.placeholder("P", shape=(20, 3))
        E = w.FORMULATIONS[name][0](P, w.constants(data))
        fn = sg.function([P], [E] + sg.gradients(E, P), target="cpu")
        start = fn.source.index("def ", fn.source.index("outer kernel"))
        body = fn.source[start:fn.source.index("\n\n\n", start)]
        assert re.search(r"\(a\d+ < [0-9.]+\)", body), body          # r2 < threshold
        assert not re.search(r"sqrt\(a\d+\) <|t\d+ < ", body), body   # no root compared
