"""Scalar functions of elementwise ops that sympy lacks (special functions), or whose
derivative must follow TensorFlow's convention (see ``scalar.py`` for the pattern).

Each class carries its numpy form (the reference interpreter), its numba form (a template
or an njit helper of ``symgrad.compile.kernel_lib.support_v2``, whose body is in ``scalar_math``)
and its derivative (``fdiff``), so plain ``sympy.diff`` gives TF's partials at every
order.

>>> import sympy as sp
>>> x, y = sp.symbols("x y", real=True)
>>> sp.diff(Lgamma(x), x, 2)
Polygamma(x, 1)
>>> sp.diff(Logaddexp(x, y), x)
Sigmoid(x - y)
>>> sp.diff(FloorMod(x, y), y)
-FloorDiv(x, y)
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from . import scalar_math as S
from .scalar import ScalarFunction, Sigmoid

__all__ = ["Cbrt", "Erfc", "Erfinv", "Lgamma", "Digamma", "Polygamma", "Logaddexp", "Hypot",
           "MulNoNan", "FloorMod", "FloorDiv", "NormSqrt"]

_HELPERS = "symgrad.compile.kernel_lib.support_v2:"


def _latex_call(name: str, printer, args) -> str:
    return r"\operatorname{%s}{\left(%s \right)}" % (
        name, ", ".join(printer._print(a) for a in args))


class Cbrt(ScalarFunction):
    """Real cube root; cbrt'(x) = 1 / (3 cbrt(x)**2), +inf at 0."""

    numpy_form = staticmethod(np.cbrt)
    numba_helper = _HELPERS + "cbrt_"
    numba_constants = ("one",)

    def standard(self):
        x = self.args[0]
        return sp.sign(x) * sp.Abs(x) ** sp.Rational(1, 3)

    def fdiff(self, argindex=1):
        return 1 / (3 * Cbrt(self.args[0]) ** 2)

    def _latex(self, printer):
        return r"\sqrt[3]{%s}" % printer._print(self.args[0])


class Erfc(ScalarFunction):
    """1 - erf(x), accurate for large x."""

    numpy_form = staticmethod(S.vectorized(S.erfc))
    numba_helper = _HELPERS + "erfc_"
    numba_constants = ("one",)

    def standard(self):
        return sp.erfc(self.args[0])

    def fdiff(self, argindex=1):
        x = self.args[0]
        return -2 / sp.sqrt(sp.pi) * sp.exp(-x**2)

    def _latex(self, printer):
        return _latex_call("erfc", printer, self.args)


class Erfinv(ScalarFunction):
    """Inverse error function; erfinv'(x) = sqrt(pi)/2 exp(erfinv(x)**2) (TF)."""

    numpy_form = staticmethod(S.vectorized(S.erfinv))
    numba_helper = _HELPERS + "erfinv_"
    numba_constants = ("one",)

    def standard(self):
        return sp.erfinv(self.args[0])

    def fdiff(self, argindex=1):
        return sp.sqrt(sp.pi) / 2 * sp.exp(Erfinv(self.args[0]) ** 2)

    def _latex(self, printer):
        return _latex_call("erfinv", printer, self.args)


class Lgamma(ScalarFunction):
    """log|Gamma(x)|; its derivative is digamma (TF)."""

    numpy_form = staticmethod(S.vectorized(S.lgamma))
    numba_helper = _HELPERS + "lgamma_"
    numba_constants = ("one",)

    def standard(self):
        return sp.log(sp.Abs(sp.gamma(self.args[0])))

    def fdiff(self, argindex=1):
        return Digamma(self.args[0])

    def _latex(self, printer):
        return r"\log{\left|\Gamma{\left(%s \right)}\right|}" % printer._print(self.args[0])


class Digamma(ScalarFunction):
    """psi(x); its derivative is polygamma(1, x) (TF)."""

    numpy_form = staticmethod(S.vectorized(S.digamma))
    numba_helper = _HELPERS + "digamma_"
    numba_constants = ("one",)

    def standard(self):
        return sp.digamma(self.args[0])

    def fdiff(self, argindex=1):
        return Polygamma(self.args[0], sp.S.One)

    def _latex(self, printer):
        return r"\psi{\left(%s \right)}" % printer._print(self.args[0])


class Polygamma(ScalarFunction):
    """``Polygamma(x, n)``: the n-th derivative of digamma (n >= 1 an integer; x first, so
    that the printer types the helper's constants by x)."""

    nargs = 2
    numpy_form = staticmethod(S.vectorized(S.polygamma))
    numba_helper = _HELPERS + "polygamma_"
    numba_constants = ("one",)

    def standard(self):
        x, n = self.args
        return sp.polygamma(n, x)

    def fdiff(self, argindex=1):
        if argindex != 1:
            raise sp.ArgumentIndexError(self, argindex)  # the order is an integer
        x, n = self.args
        return Polygamma(x, n + 1)

    def _latex(self, printer):
        x, n = (printer._print(a) for a in self.args)
        return r"\psi^{(%s)}{\left(%s \right)}" % (n, x)


class Logaddexp(ScalarFunction):
    """log(exp(x) + exp(y)); the partials are sigmoid(x - y), sigmoid(y - x): (1/2, 1/2)
    at a tie."""

    nargs = 2
    numpy_form = staticmethod(np.logaddexp)
    numba_helper = _HELPERS + "logaddexp_"
    numba_constants = ("one",)

    def standard(self):
        x, y = self.args
        return sp.log(sp.exp(x) + sp.exp(y))

    def fdiff(self, argindex=1):
        x, y = self.args
        return Sigmoid(x - y) if argindex == 1 else Sigmoid(y - x)

    def _latex(self, printer):
        return _latex_call("logaddexp", printer, self.args)


class Hypot(ScalarFunction):
    """sqrt(x**2 + y**2) without overflow; the partials are x/hypot, y/hypot, and (0, 0)
    at the origin (the minimum-norm subgradient, like ``sg.norm``)."""

    nargs = 2
    numpy_form = staticmethod(np.hypot)
    numba_helper = _HELPERS + "hypot_"
    numba_constants = ("one",)

    def standard(self):
        x, y = self.args
        return sp.sqrt(x**2 + y**2)

    def fdiff(self, argindex=1):
        arg = self.args[argindex - 1]
        return sp.Piecewise((arg / self, self > 0), (sp.S.Zero, True))

    def _latex(self, printer):
        return _latex_call("hypot", printer, self.args)


def _mul_no_nan(x, y):
    x, y = np.asarray(x), np.asarray(y)
    with np.errstate(all="ignore"):
        return np.where(y == 0, np.zeros((), np.result_type(x, y)), x * y)


class MulNoNan(ScalarFunction):
    """x * y, but 0 where y == 0 (even for an infinite or nan x). TF's partials are
    mul_no_nan(grad, y) and mul_no_nan(x, grad): y and x."""

    nargs = 2
    numpy_form = staticmethod(_mul_no_nan)
    numba_template = "({zero} if ({1}) == {zero} else ({0})*({1}))"

    def standard(self):
        x, y = self.args
        return sp.Piecewise((sp.S.Zero, sp.Eq(y, 0)), (x * y, True))

    def fdiff(self, argindex=1):
        x, y = self.args
        return y if argindex == 1 else x

    def _latex(self, printer):
        return _latex_call("mul\\_no\\_nan", printer, self.args)


class FloorMod(ScalarFunction):
    """x - floor(x / y) * y, with y's sign (Python's % and TF's FloorMod). TF's partials:
    1 and -floor_div(x, y)."""

    nargs = 2
    numpy_form = staticmethod(np.mod)
    numba_template = "(({0}) % ({1}))"

    def standard(self):
        return sp.Mod(*self.args)

    def fdiff(self, argindex=1):
        x, y = self.args
        return sp.S.One if argindex == 1 else -FloorDiv(x, y)

    def _latex(self, printer):
        x, y = (printer._print(a) for a in self.args)
        return r"%s \bmod %s" % (x, y)


class FloorDiv(ScalarFunction):
    """floor(x / y) (Python's //); piecewise constant, its derivative is 0."""

    nargs = 2
    numpy_form = staticmethod(np.floor_divide)
    numba_template = "(({0}) // ({1}))"

    def standard(self):
        x, y = self.args
        return sp.floor(x / y)

    def fdiff(self, argindex=1):
        return sp.S.Zero

    def _latex(self, printer):
        x, y = (printer._print(a) for a in self.args)
        return r"\left\lfloor{%s / %s}\right\rfloor" % (x, y)


class NormSqrt(ScalarFunction):
    """sqrt(s) of a sum of squares (``sg.norm``); its derivative is 0 at s = 0 instead of
    inf, so the gradient of the norm at the zero vector is 0, the minimum-norm subgradient
    (TF's is 0/0 = nan)."""

    numpy_form = staticmethod(np.sqrt)
    numba_template = "math.sqrt({0})"

    def standard(self):
        return sp.sqrt(self.args[0])

    def fdiff(self, argindex=1):
        return sp.Piecewise((1 / (2 * self), self.args[0] > 0), (sp.S.Zero, True))

    def _latex(self, printer):
        return r"\sqrt{%s}" % printer._print(self.args[0])


def _register_numpy_forms() -> None:
    """Add these classes to the lambdify namespace (a snapshot taken before they existed)."""
    from ..symbols import NUMPY_FUNCTIONS, numpy_forms
    NUMPY_FUNCTIONS.update(numpy_forms([Cbrt, Erfc, Erfinv, Lgamma, Digamma, Polygamma,
                                        Logaddexp, Hypot, MulNoNan, FloorMod, FloorDiv,
                                        NormSqrt]))


_register_numpy_forms()
