"""The numba printer of scalar sympy expressions (shared by every loop template).

A small table-driven printer: a function prints from its class's ``numba_template`` /
``numba_helper`` (symgrad's scalar functions, see ``ops/elementwise/scalar.py``) or from
``BASE_FUNCTIONS`` (plain sympy functions, by class); the rest
is arithmetic, comparisons, booleans and ``Piecewise`` printed as a lazy conditional
expression ``(a if c else b)``, so the branch that was not selected is never evaluated.
Numbers are typed: in a float32 kernel a literal is printed as ``f32(2.0)``, so numba
keeps the arithmetic in float32 (a bare ``2.0`` is a float64 and promotes).

>>> import sympy as sp
>>> x = sp.Symbol("x", real=True)
>>> NumbaPrinter("float64").doprint(sp.Piecewise((sp.log(x), x > 0), (0, True)) + x**2)
'x*x + (math.log(x) if (x > 0.0) else 0.0)'
>>> NumbaPrinter("float32").doprint(2*sp.sin(x))
'f32(2.0)*math.sin(x)'
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np
import sympy as sp

from sympy.codegen.cfunctions import expm1, log1p

from ...ops.elementwise.scalar import Sigmoid, Softplus, Tanh, TanhPrime

SUPPORT = "symgrad.compile.kernel_lib.support:"

ZERO = sp.Symbol("0.0", real=True)
"""A float constant 0 inlined into a kernel formula (see ``lower.number``). sympy folds
``0*e`` to 0 even where ``e`` is infinite or NaN (``0*x**-1`` at ``x = 0``), which IEEE
arithmetic, numpy and TensorFlow do not; as a symbol it is never folded away and prints
as the typed literal ``0.0``."""


def number(value, keep_zero: bool = True) -> sp.Basic:
    """A uniform constant as a sympy number (exact integers where the value is one).

    Exact folding may never drop a NaN: a float 0 becomes the symbol ``ZERO`` (printed
    ``0.0``), so sympy cannot fold ``0*x**-1`` to 0 (IEEE: NaN at ``x = 0``). Integers have
    no NaN and stay exact; ``keep_zero=False`` is for formulas over numbers only, where
    sympy's own arithmetic keeps ``0*oo`` NaN."""
    if isinstance(value, (bool, np.bool_)):
        return sp.true if value else sp.false
    if isinstance(value, (int, np.integer)):
        return sp.Integer(int(value))
    value = float(value)
    if value == 0.0 and keep_zero:
        return ZERO
    if value.is_integer() and abs(value) < 2**53:
        return sp.Integer(int(value))
    if np.isnan(value):
        return sp.nan
    if np.isinf(value):
        return sp.oo if value > 0 else -sp.oo
    return sp.Float(value)


@dataclass(frozen=True)
class NumbaForm:
    """How one function prints: a format ``template`` over the printed arguments
    (``{0}``, ``{1}``, ... and the typed literals ``{one}``, ``{zero}``), or a call of the
    njit scalar ``helper`` ("package.module:function") with the printed arguments followed
    by the typed ``constants``."""

    template: Optional[str] = None
    helper: Optional[str] = None
    constants: tuple = ()

    def format(self, args: list, one: str, zero: str) -> str:
        literals = {"one": one, "zero": zero}
        if self.helper is not None:
            texts = list(args) + [literals[c] for c in self.constants]
            return f"{helper_alias(self.helper)}({', '.join(texts)})"
        return self.template.format(*args, **literals)


def _t(template: str) -> NumbaForm:
    return NumbaForm(template=template)


# Plain sympy functions (one base table, keyed by class). symgrad's own scalar functions
# carry their numba form on their class (ops/elementwise/scalar.py) and are not listed here.
def _math(cls) -> NumbaForm:
    return _t(f"math.{cls.__name__}({{0}})")


BASE_FUNCTIONS = {
    **{cls: _math(cls) for cls in (
        sp.sin, sp.cos, sp.tan, sp.asin, sp.acos, sp.atan, sp.sinh, sp.cosh, sp.tanh,
        sp.asinh, sp.acosh, sp.atanh, sp.exp, sp.log, expm1, log1p, sp.erf)},
    sp.atan2: _t("math.atan2({0}, {1})"), sp.floor: _t("np.floor({0})"),
    sp.ceiling: _t("np.ceil({0})"), sp.Abs: _t("abs({0})"),
    sp.sign: NumbaForm(helper=SUPPORT + "sign_", constants=("one",)),
    sp.Max: NumbaForm(helper=SUPPORT + "max_"), sp.Min: NumbaForm(helper=SUPPORT + "min_"),
}

FAST = {
    sp.exp: ("exp_f64", "exp_f32"), expm1: ("expm1_f64", "expm1_f32"),
    sp.log: ("log_f64", "log_f32"), log1p: ("log1p_f64", "log1p_f32"),
    sp.sin: ("sin_f64", "sin_f32"), sp.cos: ("cos_f64", "cos_f32"),
    sp.tanh: ("tanh_f64", "tanh_f32"), Sigmoid: ("sigmoid_f64", "sigmoid_f32"),
    Tanh: ("tanh_f64", "tanh_f32"), TanhPrime: ("tanh_prime_f64", "tanh_prime_f32"),
    Softplus: ("softplus_f64", "softplus_f32"),
}
"""Function class -> the names of its (float64, float32) vectorisable forms in ``vecmath``,
printed in fast mode (names: printing never imports ``vecmath``, whose njit functions need
numba; ``tests/test_vecmath.py`` checks that each name is one of ``vecmath.FORMS``)."""
FAST_NAMES = tuple(sorted({name for pair in FAST.values() for name in pair}))
"""Every name of ``FAST``: what a generated module binds from ``vecmath``."""

MATH_MODES = ("fast", "libm")
"""Printer math modes. "fast" prints ``vecmath``'s vectorisable forms (``FAST``) for the
functions that have one; a function class may also override its form for one mode with a
``numba_forms = {mode: template-or-"pkg.mod:helper"}`` attribute; otherwise both modes
print ``numba_template``/``numba_helper``."""
TRIG = frozenset({sp.sin, sp.cos})
"""Classes whose fast form needs the kernel's range check (``vecmath.trig_in_range``)."""


def helper_alias(spec: str) -> str:
    """The name a generated module binds helper ``"pkg.mod:fn"`` to (``fn``, ending in
    ``_`` so it never collides with an input name)."""
    name = spec.rpartition(":")[2]
    return name if name.endswith("_") else name + "_"


def function_form(cls, math_mode: str = "libm") -> Optional[NumbaForm]:
    """The numba form of function class ``cls`` in ``math_mode``, or None."""
    override = (getattr(cls, "numba_forms", None) or {}).get(math_mode)
    if override is not None:
        return _form_of(override, getattr(cls, "numba_constants", ()))
    template = getattr(cls, "numba_template", None)
    helper = getattr(cls, "numba_helper", None)
    if template is not None or helper is not None:
        return NumbaForm(template=template, helper=helper,
                         constants=tuple(getattr(cls, "numba_constants", ())))
    return BASE_FUNCTIONS.get(cls)


def _form_of(text: str, constants) -> NumbaForm:
    if ":" in text and "(" not in text:
        return NumbaForm(helper=text, constants=tuple(constants))
    return NumbaForm(template=text)


def helpers_used(exprs, math_mode: str = "libm") -> list:
    """Sorted ``(alias, "pkg.mod:fn")`` of the njit helpers that printing ``exprs`` calls:
    what a generated module imports (CPU) or compiles as device functions (CUDA)."""
    found = {}
    for expr in exprs:
        if not isinstance(expr, sp.Basic):
            continue
        for f in expr.atoms(sp.Function):
            form = function_form(type(f), math_mode)
            if form is not None and form.helper is not None:
                alias = helper_alias(form.helper)
                if found.setdefault(alias, form.helper) != form.helper:
                    raise ValueError(f"symgrad.compile: helpers {found[alias]} and "
                                     f"{form.helper} share the name {alias}")
    return sorted(found.items())


_RELATIONS = {sp.StrictLessThan: "<", sp.LessThan: "<=", sp.StrictGreaterThan: ">",
              sp.GreaterThan: ">=", sp.Equality: "==", sp.Unequality: "!="}




class NumbaPrinter:
    """Prints one scalar sympy expression as numba-compatible Python source.

    ``math="fast"`` prints the vectorisable forms of ``vecmath`` for exp, log, sin, ...
    of float arguments (``trig=False`` keeps libm's sin/cos; otherwise each sin/cos
    argument is recorded in ``trig_args``, for the kernel's range check)."""

    def __init__(self, float_dtype: str = "float64", math: str = "libm", trig: bool = True):
        self.float32 = float_dtype == "float32"
        self.fast = math == "fast"
        self.trig = trig
        self.trig_args: list = []
        self.fast_sites = 0

    # --- literals ---------------------------------------------------------------------
    def float_literal(self, value: float) -> str:
        if math.isnan(value):
            text = "math.nan"
        elif math.isinf(value):
            text = "math.inf" if value > 0 else "-math.inf"
        else:
            text = repr(float(value))
        return f"f32({text})" if self.float32 else text

    def number(self, expr, integer: bool) -> str:
        if expr.is_Integer and integer:
            return str(int(expr))
        if expr is sp.nan or expr is sp.zoo:
            return self.float_literal(math.nan)
        return self.float_literal(float(expr))

    # --- dispatch ---------------------------------------------------------------------
    def doprint(self, expr) -> str:
        return self._print(expr)

    def _print(self, expr) -> str:
        if expr is ZERO:
            return self.float_literal(0.0)
        if expr.is_Symbol:
            return expr.name
        if expr is sp.true or expr is sp.false:
            return "True" if expr is sp.true else "False"
        if expr.is_Number or expr.is_NumberSymbol or expr in (sp.oo, -sp.oo, sp.nan, sp.zoo):
            return self.number(expr, integer=False)
        method = getattr(self, "_print_" + type(expr).__name__, None)
        if method is not None:
            return method(expr)
        if isinstance(expr, sp.core.relational.Relational):
            op = _RELATIONS[type(expr)]
            return f"({self._print(expr.lhs)} {op} {self._print(expr.rhs)})"
        if isinstance(expr, sp.Function):
            return self._print_function(expr)
        raise NotImplementedError(f"symgrad.compile: no numba form for {type(expr).__name__}"
                                  f" in {expr}")

    def _print_function(self, expr) -> str:
        cls = type(expr)
        fast = FAST.get(cls) if self.fast else None
        if fast is not None and not expr.args[0].is_integer and (self.trig or cls not in TRIG):
            arg = self._print(expr.args[0])
            if cls in TRIG:
                self.trig_args.append(arg)
            self.fast_sites += 1
            return f"{fast[1] if self.float32 else fast[0]}({arg})"
        form = function_form(type(expr), "fast" if self.fast else "libm")
        if form is None:
            raise NotImplementedError("symgrad.compile: no numba form for function "
                                      f"{type(expr).__name__} (give its class a "
                                      "numba_template or numba_helper)")
        integer = bool(expr.args[0].is_integer)
        one = "1" if integer else self.float_literal(1.0)
        zero = "0" if integer else self.float_literal(0.0)
        return form.format([self._print(a) for a in expr.args], one, zero)

    def _operand(self, expr, integer: bool) -> str:
        """An operand of * or /: numbers typed by context, sums in parentheses."""
        if expr.is_Number:
            text = self.number(expr, integer)
            return f"({text})" if text.startswith("-") else text
        text = self._print(expr)
        if expr.is_Add or (expr.is_Mul and text.startswith("-")):
            return f"({text})"
        return text

    def _print_Add(self, expr) -> str:
        integer = bool(expr.is_integer)
        terms = sorted(expr.args, key=lambda a: a.is_Number)  # numbers last, as sympy prints
        terms = [t for t in terms if t is not ZERO] or [ZERO]     # x + 0.0 is x
        out = ""
        for k, term in enumerate(terms):
            if term.is_Number:
                text = self.number(term, integer)
            else:
                text = self._print(term)
            if k == 0:
                out = text
            elif text.startswith("-"):
                out += " - " + text[1:]
            else:
                out += " + " + text
        return out

    def _print_Mul(self, expr) -> str:
        integer = bool(expr.is_integer)
        coeff, rest = expr.as_coeff_Mul()
        if coeff.is_Number and coeff < 0:
            inner = -coeff * rest
            text = self._print_Mul(inner) if inner.is_Mul else self._operand(inner, integer)
            return "-" + text
        numer, denom = [], []
        for factor in sp.Mul.make_args(expr):
            if factor.is_Pow and factor.exp.is_Number and factor.exp < 0 and \
                    not factor.base.is_Number:
                denom.append(sp.Pow(factor.base, -factor.exp, evaluate=False)
                             if factor.exp != -1 else factor.base)
            elif factor.is_Rational and not factor.is_Integer and factor.p == 1:
                denom.append(sp.Integer(factor.q))
            else:
                numer.append(factor)
        num = "*".join(self._operand(f, integer) for f in numer) if numer else \
            self.number(sp.S.One, False)
        if not denom:
            return num
        den = "*".join(self._operand(f, False) for f in denom)
        simple = len(denom) == 1 and (denom[0].is_Atom or denom[0].is_Add  # Add: has parens
                                      or isinstance(denom[0], sp.Function))
        return f"{num}/{den}" if simple else f"{num}/({den})"

    def _print_Pow(self, expr) -> str:
        base, exp = expr.args
        integer = bool(base.is_integer)
        if base.is_Symbol or isinstance(base, (sp.Function, sp.Piecewise)):
            b = self._print(base)
        elif base.is_Number:
            b = f"({self.number(base, integer)})"
        else:
            b = f"({self._print(base)})"
        if exp is ZERO:
            exp = sp.S.Zero                                         # x**0.0 is 1, NaN too
        if exp.is_Integer:
            n = int(exp)
            if n == 0:
                return self.number(sp.S.One, integer)
            if 0 < n <= 4:
                return "*".join([b] * n)
            if -4 <= n < 0:
                inv = "*".join([b] * -n)
                return f"{self.number(sp.S.One, False)}/({inv})" if -n > 1 else \
                    f"{self.number(sp.S.One, False)}/{b}"
            if n < 0:     # numba's float ** negative int raises ZeroDivisionError at 0
                return f"{self.number(sp.S.One, False)}/({b}**{-n})"
            return f"{b}**{n}"
        if exp == sp.S.Half:
            return f"math.sqrt({self._print(base)})"
        if exp == -sp.S.Half:
            return f"{self.number(sp.S.One, False)}/math.sqrt({self._print(base)})"
        if exp.is_Number and exp.is_finite and float(2 * exp).is_integer() and \
                abs(float(exp)) < 64:   # b**(k + 1/2) = b**k * sqrt(b): no pow call
            k = sp.Integer(int(abs(float(exp)) - 0.5))
            root = f"math.sqrt({self._print(base)})"
            whole = f"{self._print(sp.Pow(base, k, evaluate=False))}*{root}" if k else root
            return f"({whole})" if exp > 0 else f"({self.number(sp.S.One, False)}/({whole}))"
        if exp.is_Number:
            return f"{b}**{self.number(exp, False)}"
        e = self._print(exp)
        if not exp.is_Atom:
            e = f"({e})"
        return f"{b}**{e}"

    def _print_Piecewise(self, expr) -> str:
        out = None
        integer = all(v.is_integer for v, _ in expr.args)
        if self.float32 and all(v.is_Number for v, _ in expr.args):
            integer = False  # a selection of numbers in a float32 kernel: keep f32, not int
        for value, cond in reversed(expr.args):
            v = self.number(value, integer) if value.is_Number else self._print(value)
            if cond is sp.true:
                out = v
            elif out is None:
                out = f"({v} if {self._print(cond)} else {self.float_literal(math.nan)})"
            else:
                out = f"({v} if {self._print(cond)} else {out})"
        return out

    def _print_And(self, expr) -> str:
        return "(" + " and ".join(self._print(a) for a in expr.args) + ")"

    def _print_Or(self, expr) -> str:
        return "(" + " or ".join(self._print(a) for a in expr.args) + ")"

    def _print_Not(self, expr) -> str:
        return f"(not {self._print(expr.args[0])})"

    _print_LogicalNot = _print_Not     # NaN-safe ``not (x < y)`` (ops/elementwise/scalar.py)

    def _print_Xor(self, expr) -> str:
        return "(" + " != ".join(self._print(a) for a in expr.args) + ")"

    def _print_ITE(self, expr) -> str:
        """sympy's boolean if-then-else (``piecewise_fold`` builds it when a selection's
        condition meets another selection): a lazy conditional, as Piecewise."""
        c, a, b = (self._print(arg) for arg in expr.args)
        return f"({a} if {c} else {b})"

    def _print_Implies(self, expr) -> str:
        a, b = (self._print(arg) for arg in expr.args)
        return f"((not {a}) or {b})"

    def _print_Equivalent(self, expr) -> str:
        first, *rest = (self._print(arg) for arg in expr.args)
        return "(" + " and ".join(f"({first} == {r})" for r in rest) + ")"

    def _print_Nand(self, expr) -> str:
        return f"(not {self._print_And(expr)})"

    def _print_Nor(self, expr) -> str:
        return f"(not {self._print_Or(expr)})"

    def _print_BooleanTrue(self, expr) -> str:
        return "True"

    def _print_BooleanFalse(self, expr) -> str:
        return "False"
