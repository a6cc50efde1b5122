"""sympy functions whose derivatives follow TensorFlow's conventions at kinks, each
defined once with its sympy, numpy and numba forms.

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

One definition per function
---------------------------
A scalar function is a sympy ``Function`` subclass that carries its backends' forms as
class attributes; printers, the reference interpreter's namespace, the generated modules'
imports and the CUDA device helpers are all derived from them:

* ``numpy_form``: a callable on numpy arrays (the reference interpreter's lambdify
  namespace maps the class name to it);
* ``numba_template``: a format string over the printed arguments ``{0}``, ``{1}``, ...
  and the typed literals ``{one}``, ``{zero}`` (``"math.lgamma({0})"``), or
* ``numba_helper``: ``"package.module:function"``, a ``numba.njit(cache=True)`` scalar
  function (plain scalar math, so that it also compiles as a CUDA device function),
  called with the printed arguments followed by the typed constants named in
  ``numba_constants`` (``("one",)``); its name should end with ``_``;
* optionally ``numba_forms``: ``{math_mode: template or helper}`` overriding the above
  for one printer math mode (a hook for vectorised fast math).

Subclasses of :class:`ScalarFunction` register themselves in ``SCALAR_FUNCTIONS``; any
other ``sympy.Function`` subclass with these attributes is printed the same way.

>>> Sigmoid.numba_helper, Sigmoid.numba_constants
('symgrad.compile.kernel_lib.support:sigmoid_', ('one',))
>>> sorted(n for n in SCALAR_FUNCTIONS if n in ('Relu', 'Sigmoid', 'Softplus'))
['Relu', 'Sigmoid', 'Softplus']
"""

from __future__ import annotations

import numpy as np
import sympy as sp
from sympy.codegen.cfunctions import expm1, log1p

from .scalar_math import tanh_prime_numpy

__all__ = ["TfAbs", "TfSign", "Relu", "Sigmoid", "Softplus", "TfMax", "TfMin", "TfPow",
           "TfRound", "Step", "Tanh", "TanhPrime", "expm1", "log1p", "ScalarFunction",
           "SCALAR_FUNCTIONS", "TF_FUNCTIONS"]

SCALAR_FUNCTIONS: dict = {}
"""Every :class:`ScalarFunction` subclass by class name (filled as classes are defined)."""

_SUPPORT = "symgrad.compile.kernel_lib.support:"


class ScalarFunction(sp.Function):
    """Base of the TF-style scalar functions: registers the subclass and evaluates it
    numerically through the equivalent plain sympy expression (``standard``)."""

    numpy_form = None
    numba_template = None
    numba_helper = None
    numba_constants: tuple = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        previous = SCALAR_FUNCTIONS.get(cls.__name__)
        if previous is not None and previous.__module__ != cls.__module__:
            raise TypeError(f"symgrad: scalar function name {cls.__name__!r} is defined in "
                            f"both {previous.__module__} and {cls.__module__}")
        SCALAR_FUNCTIONS[cls.__name__] = cls

    def standard(self) -> sp.Expr:
        raise NotImplementedError

    def _eval_evalf(self, prec):
        if not all(a.is_number for a in self.args):
            return None
        return self.standard().evalf(prec_to_dps(prec))


def _sigmoid(x):
    x = np.asarray(x)
    return np.exp(-np.logaddexp(0, -x)).astype(np.result_type(x, np.float32), copy=False)


def _softplus(x):
    x = np.asarray(x)
    return np.logaddexp(np.zeros((), np.result_type(x, np.float32)), x)


def _relu(x):
    return np.maximum(x, 0)


def _step(x):
    return (np.asarray(x) > 0).astype(np.result_type(x, np.float32))


def prec_to_dps(prec: int) -> int:
    return max(1, int(round((prec - 1) * 0.30103)))


class Step(ScalarFunction):
    """1 where x > 0 else 0: relu's derivative. Its own derivative is 0 (TF's ReluGrad has
    a zero gradient with respect to x), so relu'' is zeros, not None."""

    numpy_form = staticmethod(_step)
    numba_template = "({one} if ({0}) > 0 else {zero})"

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


class TfSign(ScalarFunction):
    """sign(x) with derivative 0 everywhere (TF)."""

    numpy_form = staticmethod(np.sign)
    numba_helper = _SUPPORT + "sign_"
    numba_constants = ("one",)

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


class TfAbs(ScalarFunction):
    """|x| with derivative sign(x), so abs'(0) = 0 (TF)."""

    numpy_form = staticmethod(np.abs)
    numba_template = "abs({0})"

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


class Relu(ScalarFunction):
    """max(x, 0) with relu'(0) = 0 (TF)."""

    numpy_form = staticmethod(_relu)
    numba_helper = _SUPPORT + "relu_"
    numba_constants = ("zero",)

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


class Tanh(sp.tanh):
    """sympy's tanh, whose derivative is ``TanhPrime`` (sech**2, accurate to a few ulp)
    instead of sympy's ``1 - tanh(x)**2``, which cancels where tanh' is small (24 ulp at
    |x| = 3, every digit once tanh rounds to 1).

    >>> x = sp.Symbol("x", real=True)
    >>> sp.diff(Tanh(x), x), sp.diff(Tanh(x), x, 2)
    (TanhPrime(x), -2*tanh(x)*TanhPrime(x))
    """

    numpy_form = staticmethod(np.tanh)
    numba_template = "math.tanh({0})"

    def fdiff(self, argindex=1):
        return TanhPrime(self.args[0])


SCALAR_FUNCTIONS["Tanh"] = Tanh     # not a ScalarFunction (sympy's tanh), but printed alike


class TanhPrime(ScalarFunction):
    """tanh'(x) = sech(x)**2, computed as 4 e / (1 + e)**2 with e = exp(-2|x|): no
    cancellation, no overflow (``scalar_math.tanh_prime``; the fast form is
    ``vecmath.tanh_prime_f64``). Its derivative is -2 tanh(x) sech(x)**2."""

    numba_helper = "symgrad.compile.kernel_lib.support_v2:tanh_prime_"
    numba_constants = ("one",)

    numpy_form = staticmethod(tanh_prime_numpy)

    @classmethod
    def eval(cls, x):
        if x.is_zero:
            return sp.S.One

    def standard(self):
        return sp.sech(self.args[0]) ** 2

    def fdiff(self, argindex=1):
        return -2 * sp.tanh(self.args[0]) * self

    def _latex(self, printer):
        return r"\operatorname{sech}^{2}{\left(%s \right)}" % printer._print(self.args[0])


class Sigmoid(ScalarFunction):
    """1 / (1 + exp(-x)), evaluated stably by every backend."""

    numpy_form = staticmethod(_sigmoid)
    numba_helper = _SUPPORT + "sigmoid_"
    numba_constants = ("one",)

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


class Softplus(ScalarFunction):
    """log(1 + exp(x)); its derivative is Sigmoid (stable for large x)."""

    numpy_form = staticmethod(_softplus)
    numba_helper = _SUPPORT + "softplus_"
    numba_constants = ("zero", "one")

    def standard(self):
        return sp.log(1 + sp.exp(self.args[0]))

    def fdiff(self, argindex=1):
        return Sigmoid(self.args[0])

    def _latex(self, printer):
        return r"\operatorname{softplus}{\left(%s \right)}" % printer._print(self.args[0])


class TfMax(ScalarFunction):
    """max(x, y); at ties the whole gradient goes to x (TF)."""

    numpy_form = staticmethod(np.maximum)
    numba_helper = _SUPPORT + "max_"

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


class TfMin(ScalarFunction):
    """min(x, y); at ties the whole gradient goes to x (TF)."""

    numpy_form = staticmethod(np.minimum)
    numba_helper = _SUPPORT + "min_"

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


class TfPow(ScalarFunction):
    """x**y with TF's guarded log: d/dy is x**y * (log(x) where x > 0, else 0).

    With a numeric exponent it is sympy's own power (no log is ever needed then).
    """

    numpy_form = staticmethod(np.power)
    numba_template = "({0})**({1})"

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


class TfRound(ScalarFunction):
    """Round half to even (numpy and TF); not differentiable."""

    numpy_form = staticmethod(np.round)
    numba_helper = _SUPPORT + "round_"
    numba_constants = ("one",)

    def standard(self):
        return sp.Integer(round(float(self.args[0])))

    @classmethod
    def eval(cls, x):
        if x.is_Number:
            return sp.Integer(round(float(x)))


# The names differ from sympy's (Abs, Pow, ...) because sympy's printers dispatch on class
# names. Kept as the historical name of the registry.
TF_FUNCTIONS = SCALAR_FUNCTIONS


class LogicalNot(sp.Not):
    """``not c`` that keeps a comparison whole: sympy's ``Not(x < y)`` becomes
    ``x >= y``, which is False where ``x`` is NaN while ``not (x < y)`` is True (numpy,
    TF). Other arguments evaluate as sympy's ``Not`` does; printers treat it as ``Not``.

    >>> x = sp.Symbol("x", real=True)
    >>> LogicalNot(x < 1), sp.Not(x < 1)
    (~(x < 1), x >= 1)
    >>> LogicalNot(sp.true)
    False
    """

    @classmethod
    def eval(cls, arg):
        if isinstance(arg, sp.core.relational.Relational):
            return None
        return sp.Not.eval(arg)
