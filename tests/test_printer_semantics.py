"""The numba printer must print what sympy means: precedence, powers, selections.

Printed code is executed as plain Python (numba compiles the same text), and compared with
sympy's own numeric value of the expression."""

from __future__ import annotations

import math

import numpy as np
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from symgrad.compile.kernel_lib import support
from symgrad.compile.printing.printer import NumbaPrinter

X, Y = sp.symbols("x y", real=True)
C = sp.Symbol("c")
LEAVES = [X, Y, sp.Integer(2), sp.Integer(-3), sp.Rational(1, 2), sp.Float(0.75)]


def _pow(a, n):
    return sp.Pow(a, n)


@st.composite
def expressions(draw, depth=3):
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(LEAVES))
    a = draw(expressions(depth=depth - 1))
    b = draw(expressions(depth=depth - 1))
    kind = draw(st.sampled_from(["add", "sub", "mul", "div", "pow", "neg", "sin", "select"]))
    if kind == "add":
        return a + b
    if kind == "sub":
        return a - b
    if kind == "mul":
        return a * b
    if kind == "div":
        return a / (b * b + 1)
    if kind == "pow":
        exponent = draw(st.sampled_from([-6, -3, -2, -1, 2, 3, 5, sp.Rational(1, 2)]))
        bases = [X, a * a + 1] if exponent == sp.Rational(1, 2) else [X, Y, a * a + 1]
        base = draw(st.sampled_from(bases))  # x**3 prints as x*x*x; y < 0 has no sqrt
        return b * _pow(base, exponent)
    if kind == "neg":
        return -a
    if kind == "sin":
        return sp.sin(a)
    return sp.Piecewise((a, C), (b, True))


def _namespace():
    ns = {"math": math, "np": np, "f32": np.float32}
    ns.update({name: getattr(support, name) for name in dir(support) if name.endswith("_")})
    return ns


@given(expressions(), st.floats(0.5, 2), st.floats(-2, -0.5), st.booleans())
def test_printed_code_computes_the_sympy_value(expr, x, y, c):
    code = NumbaPrinter("float64").doprint(expr)
    got = eval(code, _namespace(), {"x": x, "y": y, "c": c})
    want = complex(expr.subs({X: x, Y: y, C: sp.true if c else sp.false}).evalf())
    assert abs(want.imag) < 1e-9
    assert math.isclose(float(got), want.real, rel_tol=1e-9, abs_tol=1e-9), (expr, code)


def test_negative_powers_in_a_product_are_parenthesised():
    code = NumbaPrinter("float64").doprint(-4 * X**-3 + 4 * X**-6)
    assert eval(code, _namespace(), {"x": 2.0}) == -4 / 8 + 4 / 64
