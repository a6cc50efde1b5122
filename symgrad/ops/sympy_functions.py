"""sympy functions whose derivatives follow TensorFlow's conventions at kinks.

sympy's own ``Abs``, ``sign``, ``Max`` differentiate to ``sign``, ``DiracDelta`` and
``Heaviside`` (with ``Heaviside(0) = 1/2``). These replacements make plain ``sympy.diff``
give TF's numbers at every order: ``abs'(0) = sign(0) = 0``, ``sign' = 0``,
``relu'(0) = 0``, maximum ties go to the first argument, softplus' is sigmoid, and
``d/dy x**y`` is 0 where ``x <= 0``.

>>> import sympy as sp
>>> x = sp.Symbol("x", real=True)
>>> sp.diff(Relu(x), x)
Piecewise((1, x > 0), (0, True))
>>> sp.diff(TfAbs(x), x, 2)
0
"""

from __future__ import annotations

import sympy as sp
from sympy.codegen.cfunctions import expm1, log1p

__all__ = ["TfAbs", "TfSign", "Relu", "Sigmoid", "Softplus", "TfMax", "TfMin", "TfPow",
           "TfRound", "expm1", "log1p", "TF_FUNCTIONS"]


def _step(x):
    return sp.Piecewise((sp.S.One, x > 0), (sp.S.Zero, True))


class TfSign(sp.Function):
    """sign(x) with derivative 0 everywhere (TF)."""

    @classmethod
    def eval(cls, x):
        if x.is_Number:
            return sp.sign(x)

    def fdiff(self, argindex=1):
        return sp.S.Zero

    def _latex(self, printer):
        return r"\operatorname{sign}{\left(%s \right)}" % printer._print(self.args[0])


class TfAbs(sp.Function):
    """|x| with derivative sign(x), so abs'(0) = 0 (TF)."""

    @classmethod
    def eval(cls, x):
        if x.is_Number:
            return sp.Abs(x)

    def fdiff(self, argindex=1):
        return TfSign(self.args[0])

    def _latex(self, printer):
        return r"\left|{%s}\right|" % printer._print(self.args[0])


class Relu(sp.Function):
    """max(x, 0) with relu'(0) = 0 (TF)."""

    @classmethod
    def eval(cls, x):
        if x.is_Number:
            return sp.Max(x, 0)

    def fdiff(self, argindex=1):
        return _step(self.args[0])

    def _latex(self, printer):
        return r"\operatorname{relu}{\left(%s \right)}" % printer._print(self.args[0])


class Sigmoid(sp.Function):
    """1 / (1 + exp(-x)), evaluated stably by every backend."""

    @classmethod
    def eval(cls, x):
        if x.is_Number and x.is_zero:
            return sp.Rational(1, 2)

    def fdiff(self, argindex=1):
        return self * (1 - self)

    def _latex(self, printer):
        return r"\sigma{\left(%s \right)}" % printer._print(self.args[0])


class Softplus(sp.Function):
    """log(1 + exp(x)); its derivative is Sigmoid (stable for large x)."""

    def fdiff(self, argindex=1):
        return Sigmoid(self.args[0])

    def _latex(self, printer):
        return r"\operatorname{softplus}{\left(%s \right)}" % printer._print(self.args[0])


class TfMax(sp.Function):
    """max(x, y); at ties the whole gradient goes to x (TF)."""

    nargs = 2

    @classmethod
    def eval(cls, x, y):
        if x.is_Number and y.is_Number:
            return sp.Max(x, y)

    def fdiff(self, argindex=1):
        x, y = self.args
        take_x = x >= y
        return sp.Piecewise((sp.S.One if argindex == 1 else sp.S.Zero, take_x),
                            (sp.S.Zero if argindex == 1 else sp.S.One, True))

    def _latex(self, printer):
        return r"\max\left(%s, %s\right)" % tuple(printer._print(a) for a in self.args)


class TfMin(sp.Function):
    """min(x, y); at ties the whole gradient goes to x (TF)."""

    nargs = 2

    @classmethod
    def eval(cls, x, y):
        if x.is_Number and y.is_Number:
            return sp.Min(x, y)

    def fdiff(self, argindex=1):
        x, y = self.args
        take_x = x <= y
        return sp.Piecewise((sp.S.One if argindex == 1 else sp.S.Zero, take_x),
                            (sp.S.Zero if argindex == 1 else sp.S.One, True))

    def _latex(self, printer):
        return r"\min\left(%s, %s\right)" % tuple(printer._print(a) for a in self.args)


class TfPow(sp.Function):
    """x**y with TF's guarded log: d/dy is x**y * log(x) where x > 0, else 0.

    With a numeric exponent it is sympy's own power (no log is ever needed then).
    """

    nargs = 2

    @classmethod
    def eval(cls, x, y):
        if y.is_Number:
            return sp.Pow(x, y)

    def fdiff(self, argindex=1):
        x, y = self.args
        if argindex == 1:
            return y * TfPow(x, y - 1)
        return sp.Piecewise((self * sp.log(x), x > 0), (sp.S.Zero, True))

    def _latex(self, printer):
        x, y = (printer._print(a) for a in self.args)
        return r"{\left(%s\right)}^{%s}" % (x, y)


class TfRound(sp.Function):
    """Round half to even (numpy and TF); not differentiable."""

    @classmethod
    def eval(cls, x):
        if x.is_Number:
            return sp.Integer(round(float(x)))


# Every custom function, by name: printers map these names to backend code. The names
# differ from sympy's (Abs, Pow, ...) because sympy's printers dispatch on class names.
TF_FUNCTIONS = {cls.__name__: cls for cls in
                (TfAbs, TfSign, Relu, Sigmoid, Softplus, TfMax, TfMin, TfPow, TfRound)}
