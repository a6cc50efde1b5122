"""sympy functions whose derivatives follow TensorFlow's conventions at kinks.

sympy's own ``Abs``, ``sign``, ``Max`` differentiate to ``sign``, ``DiracDelta`` and
``Heaviside`` (with ``Heaviside(0) = 1/2``). These replacements make plain ``sympy.diff``
give TF's numbers at every order: ``abs'(0) = sign(0) = 0``, ``sign' = 0``,
``relu'(0) = 0``, maximum ties go to the first argument, softplus' is sigmoid, and
``d/dy x**y`` is 0 where ``x <= 0``.

>>> import sympy as sp
>>> x = sp.Symbol("x", real=True)
>>> sp.diff(Relu(x), x)
Step(x)
>>> sp.diff(TfAbs(x), x, 2)
0
"""

from __future__ import annotations

import sympy as sp
from sympy.codegen.cfunctions import expm1, log1p

__all__ = ["TfAbs", "TfSign", "Relu", "Sigmoid", "Softplus", "TfMax", "TfMin", "TfPow",
           "TfRound", "Step", "expm1", "log1p", "TF_FUNCTIONS"]


class _TfFunction(sp.Function):
    """Base: numeric evaluation through the equivalent plain sympy expression."""

    def standard(self) -> sp.Expr:
        raise NotImplementedError

    def _eval_evalf(self, prec):
        if not all(a.is_number for a in self.args):
            return None
        return self.standard().evalf(prec_to_dps(prec))


def prec_to_dps(prec: int) -> int:
    return max(1, int(round((prec - 1) * 0.30103)))


class Step(_TfFunction):
    """1 where x > 0 else 0: relu's derivative. Its own derivative is 0 (TF's ReluGrad has
    a zero gradient with respect to x), so relu'' is zeros, not None."""

    @classmethod
    def eval(cls, x):
        if x.is_Number:
            return sp.S.One if x > 0 else sp.S.Zero

    def fdiff(self, argindex=1):
        return sp.S.Zero

    def standard(self):
        return sp.Piecewise((sp.S.One, self.args[0] > 0), (sp.S.Zero, True))

    def _latex(self, printer):
        return r"\theta{\left(%s \right)}" % printer._print(self.args[0])


class TfSign(_TfFunction):
    """sign(x) with derivative 0 everywhere (TF)."""

    def standard(self):
        return sp.sign(self.args[0])

    @classmethod
    def eval(cls, x):
        if x.is_Number:
            return sp.sign(x)

    def fdiff(self, argindex=1):
        return sp.S.Zero

    def _latex(self, printer):
        return r"\operatorname{sign}{\left(%s \right)}" % printer._print(self.args[0])


class TfAbs(_TfFunction):
    """|x| with derivative sign(x), so abs'(0) = 0 (TF)."""

    def standard(self):
        return sp.Abs(self.args[0])

    @classmethod
    def eval(cls, x):
        if x.is_Number:
            return sp.Abs(x)

    def fdiff(self, argindex=1):
        return TfSign(self.args[0])

    def _latex(self, printer):
        return r"\left|{%s}\right|" % printer._print(self.args[0])


class Relu(_TfFunction):
    """max(x, 0) with relu'(0) = 0 (TF)."""

    def standard(self):
        return sp.Max(self.args[0], 0)

    @classmethod
    def eval(cls, x):
        if x.is_Number:
            return sp.Max(x, 0)

    def fdiff(self, argindex=1):
        return Step(self.args[0])

    def _latex(self, printer):
        return r"\operatorname{relu}{\left(%s \right)}" % printer._print(self.args[0])


class Sigmoid(_TfFunction):
    """1 / (1 + exp(-x)), evaluated stably by every backend."""

    def standard(self):
        return 1 / (1 + sp.exp(-self.args[0]))

    @classmethod
    def eval(cls, x):
        if x.is_Number and x.is_zero:
            return sp.Rational(1, 2)

    def fdiff(self, argindex=1):
        return self * (1 - self)

    def _latex(self, printer):
        return r"\sigma{\left(%s \right)}" % printer._print(self.args[0])


class Softplus(_TfFunction):
    """log(1 + exp(x)); its derivative is Sigmoid (stable for large x)."""

    def standard(self):
        return sp.log(1 + sp.exp(self.args[0]))

    def fdiff(self, argindex=1):
        return Sigmoid(self.args[0])

    def _latex(self, printer):
        return r"\operatorname{softplus}{\left(%s \right)}" % printer._print(self.args[0])


class TfMax(_TfFunction):
    """max(x, y); at ties the whole gradient goes to x (TF)."""

    def standard(self):
        return sp.Max(*self.args)

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


class TfMin(_TfFunction):
    """min(x, y); at ties the whole gradient goes to x (TF)."""

    def standard(self):
        return sp.Min(*self.args)

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


class TfPow(_TfFunction):
    """x**y with TF's guarded log: d/dy is x**y * (log(x) where x > 0, else 0).

    With a numeric exponent it is sympy's own power (no log is ever needed then).
    """

    def standard(self):
        return sp.Pow(*self.args)

    nargs = 2

    @classmethod
    def eval(cls, x, y):
        if y.is_Number:
            return sp.Pow(x, y)

    def fdiff(self, argindex=1):
        x, y = self.args
        if argindex == 1:
            return y * TfPow(x, y - 1)
        return self * sp.Piecewise((sp.log(x), x > 0), (sp.S.Zero, True))  # TF: z * log_x

    def _latex(self, printer):
        x, y = (printer._print(a) for a in self.args)
        return r"{\left(%s\right)}^{%s}" % (x, y)


class TfRound(_TfFunction):
    """Round half to even (numpy and TF); not differentiable."""

    def standard(self):
        return sp.Integer(round(float(self.args[0])))

    @classmethod
    def eval(cls, x):
        if x.is_Number:
            return sp.Integer(round(float(x)))


# Every custom function, by name: printers map these names to backend code. The names
# differ from sympy's (Abs, Pow, ...) because sympy's printers dispatch on class names.
TF_FUNCTIONS = {cls.__name__: cls for cls in
                (TfAbs, TfSign, Relu, Step, Sigmoid, Softplus, TfMax, TfMin, TfPow, TfRound)}
