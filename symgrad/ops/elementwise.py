"""Elementwise op records: numpy forward, scalar sympy form, hand-written tape vjp.

``sg.gradients`` never reads ``vjp`` for these ops: it differentiates the sympy form
(``sympy.diff``, with TF's conventions built into the functions of ``sympy_functions``).
The tape uses only ``vjp``. Two independent derivations make "symbolic vs tape" a check.

vjp signature: ``vjp(g, out, *inputs) -> tuple`` (one entry per input, None = no gradient).
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

from . import api as F
from . import sympy_functions as tf
from .registry import OpDef, apply, elementwise
from .symbols import NUMPY_FUNCTIONS, numpy_callable

SQRT_PI = math.sqrt(math.pi)


def unary(name, numpy, sympy, vjp=None, domain=(-2.0, 2.0), **kw):
    return elementwise(name, numpy, sympy, vjp=vjp, domain=domain, **kw)


# --- arithmetic ---------------------------------------------------------------------------
negative = unary("negative", np.negative, lambda x: -x, lambda g, out, x: (-g,))
add = elementwise("add", np.add, lambda x, y: x + y, vjp=lambda g, out, x, y: (g, g))
subtract = elementwise("subtract", np.subtract, lambda x, y: x - y,
                       vjp=lambda g, out, x, y: (g, -g))
multiply = elementwise("multiply", np.multiply, lambda x, y: x * y,
                       vjp=lambda g, out, x, y: (g * y, g * x))
divide = elementwise("divide", np.true_divide, lambda x, y: x / y,
                     vjp=lambda g, out, x, y: (g / y, -g * x / (y * y)),
                     domain=(0.5, 2.0))


def _pow_vjp(g, out, x, y):
    positive = x > 0
    safe_x = F.where(positive, x, 1.0)
    return (g * y * F.pow(x, y - 1.0), g * out * F.where(positive, F.log(safe_x), 0.0))


pow = elementwise("pow", np.power, tf.TfPow, vjp=_pow_vjp, domain=(0.5, 2.0))
arctan2 = elementwise(
    "arctan2", np.arctan2, sp.atan2, domain=(0.5, 2.0),
    vjp=lambda g, out, y, x: (g * x / (x * x + y * y), -g * y / (x * x + y * y)))
maximum = elementwise(
    "maximum", np.maximum, tf.TfMax,
    vjp=lambda g, out, x, y: (F.where(x >= y, g, 0.0), F.where(x >= y, 0.0, g)))
minimum = elementwise(
    "minimum", np.minimum, tf.TfMin,
    vjp=lambda g, out, x, y: (F.where(x <= y, g, 0.0), F.where(x <= y, 0.0, g)))

# --- smooth unary functions ---------------------------------------------------------------
sin = unary("sin", np.sin, sp.sin, lambda g, out, x: (g * F.cos(x),))
cos = unary("cos", np.cos, sp.cos, lambda g, out, x: (-g * F.sin(x),))
tan = unary("tan", np.tan, sp.tan, lambda g, out, x: (g / F.square(F.cos(x)),),
            domain=(-1.2, 1.2))
arcsin = unary("arcsin", np.arcsin, sp.asin, lambda g, out, x: (g / F.sqrt(1.0 - x * x),),
               domain=(-0.9, 0.9))
arccos = unary("arccos", np.arccos, sp.acos, lambda g, out, x: (-g / F.sqrt(1.0 - x * x),),
               domain=(-0.9, 0.9))
arctan = unary("arctan", np.arctan, sp.atan, lambda g, out, x: (g / (1.0 + x * x),))
sinh = unary("sinh", np.sinh, sp.sinh, lambda g, out, x: (g * F.cosh(x),))
cosh = unary("cosh", np.cosh, sp.cosh, lambda g, out, x: (g * F.sinh(x),))
# tanh' = sech**2 (tf.TanhPrime: no cancellation where tanh' is small, unlike 1 - tanh**2);
# the tape multiplies by the internal op tanh_prime (its own vjp: -2 tanh sech**2)
tanh_prime = OpDef("tanh_prime", "elementwise", numpy=tf.TanhPrime.numpy_form,
                   sympy=tf.TanhPrime, public=False,
                   vjp=lambda g, out, x: (-2.0 * g * out * F.tanh(x),),
                   doc="tanh'(x) = sech(x)**2 (tanh's tape vjp; not registered)")
tanh = unary("tanh", np.tanh, tf.Tanh, lambda g, out, x: (g * apply(tanh_prime, (x,)),))
arcsinh = unary("arcsinh", np.arcsinh, sp.asinh,
                lambda g, out, x: (g / F.sqrt(x * x + 1.0),))
arccosh = unary("arccosh", np.arccosh, sp.acosh,
                lambda g, out, x: (g / F.sqrt(x * x - 1.0),), domain=(1.1, 3.0))
arctanh = unary("arctanh", np.arctanh, sp.atanh, lambda g, out, x: (g / (1.0 - x * x),),
                domain=(-0.9, 0.9))
exp = unary("exp", np.exp, sp.exp, lambda g, out, x: (g * out,))
expm1 = unary("expm1", np.expm1, tf.expm1, lambda g, out, x: (g * F.exp(x),))
log = unary("log", np.log, sp.log, lambda g, out, x: (g / x,), domain=(0.2, 3.0))
log1p = unary("log1p", np.log1p, tf.log1p, lambda g, out, x: (g / (1.0 + x),),
              domain=(-0.8, 3.0))
sqrt = unary("sqrt", np.sqrt, sp.sqrt, lambda g, out, x: (g * 0.5 / out,), domain=(0.2, 3.0))
square = unary("square", np.square, lambda x: x**2, lambda g, out, x: (g * 2.0 * x,))
sigmoid = unary("sigmoid", tf.Sigmoid.numpy_form, tf.Sigmoid,
                lambda g, out, x: (g * out * (1.0 - out),), domain=(-4.0, 4.0))
softplus = unary("softplus", tf.Softplus.numpy_form, tf.Softplus,
                 lambda g, out, x: (g * F.sigmoid(x),), domain=(-4.0, 4.0))
erf = unary("erf", NUMPY_FUNCTIONS["erf"], sp.erf,
            lambda g, out, x: (g * (2.0 / SQRT_PI) * F.exp(-x * x),))

# --- kinks (TF's conventions) -------------------------------------------------------------
abs = unary("abs", np.abs, tf.TfAbs, lambda g, out, x: (g * F.sign(x),))
sign = unary("sign", np.sign, tf.TfSign, lambda g, out, x: (F.zeros_like(x),))
# sign(relu(x)) is 0 wherever it is selected, but keeps the result connected to x, as
# TF's ReluGrad(g, x) is: relu'' is zeros, not None (the symbolic partial uses x too).
relu = unary("relu", tf.Relu.numpy_form, tf.Relu,
             lambda g, out, x: (F.where(x > 0, g, F.sign(F.relu(x))),))
floor = unary("floor", np.floor, sp.floor, differentiable=False)
ceil = unary("ceil", np.ceil, sp.ceiling, differentiable=False)
round = unary("round", np.round, tf.TfRound, differentiable=False)

# --- selection and comparison -------------------------------------------------------------
where = elementwise(
    "where", np.where, lambda c, a, b: sp.Piecewise((a, c), (b, True)),
    vjp=lambda g, out, c, a, b: (None, F.where(c, g, 0.0), F.where(c, 0.0, g)),
    grad_mask=lambda c, a, b: (None, c, F.logical_not(c)))
less = elementwise("less", np.less, sp.StrictLessThan, differentiable=False)
less_equal = elementwise("less_equal", np.less_equal, sp.LessThan, differentiable=False)
greater = elementwise("greater", np.greater, sp.StrictGreaterThan, differentiable=False)
greater_equal = elementwise("greater_equal", np.greater_equal, sp.GreaterThan,
                            differentiable=False)
equal = elementwise("equal", np.equal, sp.Eq, differentiable=False)
not_equal = elementwise("not_equal", np.not_equal, sp.Ne, differentiable=False)
logical_not = elementwise("logical_not", np.logical_not, sp.Not, differentiable=False)
logical_and = elementwise("logical_and", np.logical_and, sp.And, differentiable=False)
logical_or = elementwise("logical_or", np.logical_or, sp.Or, differentiable=False)

# --- identity-like ------------------------------------------------------------------------
identity = unary("identity", lambda x: np.array(x, copy=True), lambda x: x,
                 lambda g, out, x: (g,))
stop_gradient = unary("stop_gradient", lambda x: np.array(x, copy=True), lambda x: x,
                      differentiable=False)
ones_like = unary("ones_like", np.ones_like, lambda x: sp.S.One, differentiable=False,
                  public=False)
zeros_like = unary("zeros_like", np.zeros_like, lambda x: sp.S.Zero, differentiable=False,
                   public=False)


# --- a node that holds any sympy expression of its inputs (gradients are built of these) ---
def _expr_numpy(*arrays, expr, dtype):
    kinds = tuple("b" if a.dtype.kind == "b" else "i" if a.dtype.kind in "iu" else "f"
                  for a in map(np.asarray, arrays))
    with np.errstate(all="ignore"):
        value = np.asarray(numpy_callable(expr, len(arrays), kinds)(*arrays))
    shape = np.broadcast_shapes(*[np.shape(a) for a in arrays])
    return np.array(np.broadcast_to(value, shape), dtype=dtype)


expr = elementwise("expr", _expr_numpy, lambda *symbols, expr, dtype: expr,
                   dtype_rule=lambda *dtypes, expr, dtype: dtype, public=False)
