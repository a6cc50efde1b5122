"""The LU element rules bind each form once per pattern of its atoms
(``linalg_elements._bind_form``): the statements they make are the ones sympy's evaluation
of every form makes (same templates, arguments, order and results), for matrices of
symbols, numbers, exact zeros and repeated entries."""

import numpy as np
import pytest
import sympy as sp

from symgrad.compile.printing.printer import ZERO
from symgrad.compile.scalar import linalg_elements as LE
from symgrad.compile.scalar.elements import ElementCode, input_elements

F64 = np.dtype("float64")


class _Node:
    def __init__(self, shape):
        self.shape, self.dtype = shape, F64


def _matrix(n, k, fill):
    """Rows of read symbols ``r<k>_<flat>``, some entries replaced by ``fill(i, j)``."""
    reads = input_elements(k, _Node((n, n)))
    rows = [list(r) for r in reads]
    for i in range(n):
        for j in range(n):
            v = fill(i, j)
            if v is not None:
                rows[i][j] = v(rows) if callable(v) else v
    return rows


FILLS = {
    "symbols": lambda i, j: None,
    "zeros": lambda i, j: ZERO if (i + 2 * j) % 3 == 0 and i != j else None,
    "numbers": lambda i, j: sp.Integer(i - j) if (i * j) % 4 == 1 else None,
    "repeated": lambda i, j: (lambda rows: rows[0][0]) if (i + j) % 5 == 2 else None,
}


def _run(rule, n, fill):
    code = ElementCode()
    a = _matrix(n, 0, FILLS[fill])
    b = [list(r) for r in input_elements(1, _Node((n, 3)))]
    if rule == "solve":
        out = LE.lu_solve(code, a, b, F64)
    elif rule == "solve_unchecked":
        out = LE.lu_solve(code, a, LE._identity(n), F64, check=None)
    elif rule == "det":
        out = LE.lu_det(code, a, F64)
    elif rule == "slogdet":
        out = list(LE.lu_slogdet(code, a, F64))
    else:
        out = LE.adjugate(code, a, F64)
    made = [(s.symbol.name, sp.srepr(s.template.expr), tuple(x.name for x in s.args))
            for s in code.statements]
    return made, sp.srepr(out)


@pytest.mark.parametrize("fill", list(FILLS))
@pytest.mark.parametrize("rule", ["solve", "solve_unchecked", "det", "slogdet", "adjugate"])
@pytest.mark.parametrize("n", [2, 4, 7])
def test_forms_bound_once_match_sympy_per_form(monkeypatch, rule, n, fill):
    if rule == "adjugate" and n <= 5:
        n = 6                                  # the LU branch of adjugate
    fast = _run(rule, n, fill)
    calls = []

    def plain(code, tag, build, atoms, dtype):
        calls.append(tag)
        return code.bind(build(*atoms), dtype)

    monkeypatch.setattr(LE, "_bind_form", plain)
    slow = _run(rule, n, fill)
    assert calls                               # the rule went through _bind_form
    assert fast == slow
    assert len(fast[0]) > n


def test_atom_key_tells_name_order_numbers_and_repeats():
    x, y = sp.Symbol("t10", real=True), sp.Symbol("t9", real=True)
    assert LE._atom_key((x, y))[1] != LE._atom_key((y, x))[1]       # "t10" < "t9"
    assert LE._atom_key((x, x)) != LE._atom_key((x, y))
    assert LE._atom_key((x, sp.Integer(1))) != LE._atom_key((x, sp.Float(1.0)))
    assert LE._atom_key((x, ZERO)) != LE._atom_key((x, sp.Integer(0)))
    assert LE._atom_key((x, x + y)) is None
