"""The scalar fast path of all-scalar float64 functions (``cpu/driver.py`` ``fast_path``):
Python floats, numpy float64 scalars and 0-d float64 arrays go straight to the scalar
bodies; anything else takes the checked path; every kind agrees with ``sg.evaluate`` and
none compiles at call time."""

from __future__ import annotations

import numpy as np
import pytest
from numba.core import event

import symgrad as sg
from symgrad.errors import ArgumentError, FeedError

pytestmark = pytest.mark.compiled


def _compiles_during(call) -> int:
    with event.install_recorder("numba:compile") as recorded:
        call()
    return sum(1 for _, e in recorded.buffer if e.is_start)


@pytest.fixture(scope="module")
def w5():
    a, b, c = (sg.placeholder(n) for n in "abc")
    y = a * sg.sin(b) + sg.exp(c * a)
    outputs = [y] + sg.gradients(y, [a, b, c])
    return [a, b, c], outputs, sg.function([a, b, c], outputs)


KINDS = {
    "floats": lambda v: float(v),
    "numpy float64": lambda v: np.float64(v),
    "0-d arrays": lambda v: np.array(v),
    "python ints": lambda v: int(round(v)),
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_scalar_kind_agrees_with_evaluate(w5, kind):
    inputs, outputs, f = w5
    rng = np.random.default_rng(len(kind))
    for _ in range(5):
        values = [KINDS[kind](v) for v in rng.uniform(-2, 2, 3)]
        given = [np.array(v, copy=True) for v in values]
        got = f(*values)
        want = sg.evaluate(outputs, dict(zip(inputs, [np.float64(v) for v in values])))
        for g, h in zip(got, want):
            assert type(g) is np.ndarray and g.shape == () and g.dtype == np.float64
            np.testing.assert_allclose(g, h, rtol=1e-13)
        for v, before in zip(values, given):      # nothing a user passes is modified
            np.testing.assert_array_equal(v, before)


def test_mixed_kinds_nan_and_fresh_outputs(w5):
    inputs, outputs, f = w5
    a = np.array(0.3)
    got = f(a, np.float64(np.nan), 1.5)
    want = sg.evaluate(outputs, {inputs[0]: 0.3, inputs[1]: np.nan, inputs[2]: 1.5})
    for g, h in zip(got, want):
        np.testing.assert_allclose(g, h, rtol=1e-13)         # NaN where NaN
    again = f(a, 0.2, 1.5)
    assert all(g is not h for g, h in zip(got, again))
    got[0][()] = 7.0                                         # outputs are the caller's
    assert f(a, 0.2, 1.5)[0] == again[0]


def test_no_kind_compiles_at_call_time():
    a, b = sg.placeholder("a"), sg.placeholder("b")
    y = a * sg.cos(b) - sg.log1p(a * a)
    f = sg.function([a, b], [y] + sg.gradients(y, [a, b]))
    for kind in KINDS.values():
        assert _compiles_during(lambda: f(kind(0.4), kind(1.1))) == 0


def test_errors_and_keywords_keep_their_path(w5):
    inputs, outputs, f = w5
    want = f(0.5, 1.5, 0.25)
    for g, h in zip(f(0.5, 1.5, c=0.25), want):
        assert g == h
    with pytest.raises(ArgumentError, match="takes 3 arguments"):
        f(0.5, 1.5)
    with pytest.raises(FeedError, match="argument 'a'"):
        f(np.zeros(2), 1.5, 0.25)
    with pytest.raises(ArgumentError, match="argument 'b'.*got str"):
        f(0.5, "x", 0.25)
    with pytest.raises(FeedError, match="has dtype float64 but was fed float32"):
        f(0.5, 1.5, np.array(0.25, np.float32))
