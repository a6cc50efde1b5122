"""``logical_not`` of a comparison at NaN: sympy rewrites ``Not(x < y)`` as ``x >= y``,
which is False at NaN where numpy and TF say True. Every engine must say True."""

import numpy as np
import pytest

import symgrad as sg

V = np.array([np.nan, 0.1, 2.0, -np.inf])


def _graph():
    x = sg.placeholder("x", (None,))
    c = sg.logical_not(sg.sin(x) < 0.5)
    y = sg.reduce_sum(sg.where(c, x * x, -x))
    return x, c, y, sg.gradients(y, [x])[0]


def _expected():
    with np.errstate(invalid="ignore"):
        c = np.logical_not(np.sin(V) < 0.5)
    g = np.where(c, 2 * V, -1.0)
    return c, g


def test_evaluate_says_true_at_nan():
    x, c, _, g = _graph()
    got_c, got_g = sg.evaluate([c, g], {x: V})
    want_c, want_g = _expected()
    np.testing.assert_array_equal(got_c, want_c)
    np.testing.assert_array_equal(got_g, want_g)
    assert got_c[0]


@pytest.mark.parametrize("target", ["cpu", "parallel"])
def test_compiled_says_true_at_nan(target):
    x, c, _, g = _graph()
    got_c, got_g = sg.function([x], [c, g], target=target)(V)
    want_c, want_g = _expected()
    np.testing.assert_array_equal(got_c, want_c)
    np.testing.assert_array_equal(got_g, want_g)


def test_sympy_form_keeps_the_comparison():
    from symgrad.ops.elementwise.scalar import LogicalNot
    import sympy as sp
    s = sp.Symbol("s", real=True)
    assert isinstance(LogicalNot(s < 1), sp.Not)
    assert LogicalNot(LogicalNot(s < 1)) == (s < 1)
