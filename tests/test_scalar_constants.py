"""A folded constant's elements in the scalar pass (``elements.constant_elements``): each
distinct value made once, as ``printer.number`` makes it (a float 0 or -0 is ``ZERO``,
NaN and infinities sympy's, integers exact, bools sympy's)."""

import numpy as np
import sympy as sp

from symgrad.compile.printing.printer import ZERO, number
from symgrad.compile.scalar.elements import constant_elements


class _Const:
    def __init__(self, value):
        self.value = value


def test_constant_elements_are_numbers_of_each_value():
    value = np.array([[0.0, -0.0, 1.5], [np.nan, np.inf, 1.5], [3.0, -np.inf, 2.0]])
    out = constant_elements(_Const(value))
    assert out.shape == (3, 3) and out.dtype == object
    assert out[0, 0] is ZERO and out[0, 1] is ZERO
    assert out[0, 2] is out[1, 2] and out[0, 2] == sp.Float(1.5)
    assert out[1, 0] is sp.nan and out[1, 1] is sp.oo and out[2, 1] == -sp.oo
    assert out[2, 0] == sp.Integer(3) and isinstance(out[2, 0], sp.Integer)
    for index in np.ndindex(*value.shape):
        assert out[index] == number(value[index].item()) or value[index] != value[index]


def test_constant_elements_of_ints_bools_and_0d():
    ints = constant_elements(_Const(np.array([0, 7, 7], np.int64)))
    assert list(ints) == [sp.Integer(0), sp.Integer(7), sp.Integer(7)]
    bools = constant_elements(_Const(np.array([True, False])))
    assert bools[0] is sp.true and bools[1] is sp.false
    scalar = constant_elements(_Const(np.float64(0.25)))
    assert scalar.shape == () and scalar[()] == sp.Float(0.25)
