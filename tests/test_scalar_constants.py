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


def test_distinct_rows_by_hash_match_the_exact_grouping():
    from symgrad.compile.scalar.elements import _distinct, _distinct_ids
    rng = np.random.default_rng(3)
    objects = [sp.Symbol(f"s{k}") for k in range(7)]
    for n, m in ((5, 1), (40, 2), (300, 3), (2000, 4)):
        columns = [[objects[i] for i in rng.integers(0, 3 + j, n)] for j in range(m)]
        ids = np.array([[id(v) for v in c] for c in columns], dtype=np.int64)
        firsts, inverse = _distinct_ids(ids)
        rows = list(zip(*columns))
        assert len(set(map(lambda r: tuple(map(id, r)), rows))) == len(firsts)
        assert all(rows[k] == rows[firsts[inverse[k]]] for k in range(n))
        assert sorted(firsts) == list(firsts)          # first occurrence order
        small = _distinct(columns)
        assert list(small[0]) == list(firsts) and list(small[1]) == list(inverse)


def test_distinct_rows_survive_a_hash_collision():
    from symgrad.compile.scalar.elements import _distinct_ids
    p = np.array([0x9E3779B97F4A7C15], dtype=np.uint64).view(np.int64)[0]
    ids = np.array([[1, 0, 1], [0, p, 0]], dtype=np.int64)   # rows (1, 0), (0, p): one hash
    firsts, inverse = _distinct_ids(ids)
    assert list(firsts) == [0, 1] and list(inverse) == [0, 1, 0]
