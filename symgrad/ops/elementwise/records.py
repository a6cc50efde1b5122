"""Elementwise op records (``sg.sin``, ``sg.xlogy``, ``sg.gelu``, ``sg.cast``, ...): numpy
forward, scalar sympy form, hand-written tape vjp.

``sg.gradients`` never reads ``vjp`` for these ops: it differentiates the sympy form
(``sympy.diff``, with TF's conventions built into the functions of ``scalar.py`` and
``special.py``). The tape uses only ``vjp``, built of symgrad ops so that nested tapes give
higher orders; the vjps follow TF's ``math_grad.py`` / ``nn_grad.py`` (``xlogy``'s
``xlogy(x != 0, y)``, ``div_no_nan``'s ``div_no_nan(grad, y)``, ...). Two independent
derivations make "symbolic vs tape" a check.

vjp signature: ``vjp(g, out, *inputs) -> tuple`` (one entry per input, None = no gradient).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import sympy as sp

from ...dtypes import as_dtype, is_floating
from ..functions import F
from ..opdef import OpDef, elementwise, structural
from ..registry import apply
from ..symbols import NUMPY_FUNCTIONS, input_symbol, numpy_callable
from . import scalar as tf
from . import special as tf2


SQRT_PI = math.sqrt(math.pi)


def record(name, numpy, sympy, vjp=None, domain=(-2.0, 2.0), **kw):
    return elementwise(name, numpy, sympy, vjp=vjp, domain=domain, **kw)


# --- arithmetic ---------------------------------------------------------------------------
negative = record("negative", np.negative, lambda x: -x, lambda g, out, x: (-g,))
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
sin = record("sin", np.sin, sp.sin, lambda g, out, x: (g * F.cos(x),))
cos = record("cos", np.cos, sp.cos, lambda g, out, x: (-g * F.sin(x),))
tan = record("tan", np.tan, sp.tan, lambda g, out, x: (g / F.square(F.cos(x)),),
            domain=(-1.2, 1.2))
arcsin = record("arcsin", np.arcsin, sp.asin, lambda g, out, x: (g / F.sqrt(1.0 - x * x),),
               domain=(-0.9, 0.9))
arccos = record("arccos", np.arccos, sp.acos, lambda g, out, x: (-g / F.sqrt(1.0 - x * x),),
               domain=(-0.9, 0.9))
arctan = record("arctan", np.arctan, sp.atan, lambda g, out, x: (g / (1.0 + x * x),))
sinh = record("sinh", np.sinh, sp.sinh, lambda g, out, x: (g * F.cosh(x),))
cosh = record("cosh", np.cosh, sp.cosh, lambda g, out, x: (g * F.sinh(x),))
# tanh' = sech**2 (tf.TanhPrime: no cancellation where tanh' is small, unlike 1 - tanh**2);
# the tape multiplies by the internal op tanh_prime (its own vjp: -2 tanh sech**2)
tanh_prime = OpDef("tanh_prime", "elementwise", numpy=tf.TanhPrime.numpy_form,
                   sympy=tf.TanhPrime, public=False,
                   vjp=lambda g, out, x: (-2.0 * g * out * F.tanh(x),),
                   doc="tanh'(x) = sech(x)**2 (tanh's tape vjp; not registered)")
tanh = record("tanh", np.tanh, tf.Tanh, lambda g, out, x: (g * apply(tanh_prime, (x,)),))
arcsinh = record("arcsinh", np.arcsinh, sp.asinh,
                lambda g, out, x: (g / F.sqrt(x * x + 1.0),))
arccosh = record("arccosh", np.arccosh, sp.acosh,
                lambda g, out, x: (g / F.sqrt(x * x - 1.0),), domain=(1.1, 3.0))
arctanh = record("arctanh", np.arctanh, sp.atanh, lambda g, out, x: (g / (1.0 - x * x),),
                domain=(-0.9, 0.9))
exp = record("exp", np.exp, sp.exp, lambda g, out, x: (g * out,))
expm1 = record("expm1", np.expm1, tf.expm1, lambda g, out, x: (g * F.exp(x),))
log = record("log", np.log, sp.log, lambda g, out, x: (g / x,), domain=(0.2, 3.0))
log1p = record("log1p", np.log1p, tf.log1p, lambda g, out, x: (g / (1.0 + x),),
              domain=(-0.8, 3.0))
sqrt = record("sqrt", np.sqrt, sp.sqrt, lambda g, out, x: (g * 0.5 / out,), domain=(0.2, 3.0))
square = record("square", np.square, lambda x: x**2, lambda g, out, x: (g * 2.0 * x,))
sigmoid = record("sigmoid", tf.Sigmoid.numpy_form, tf.Sigmoid,
                lambda g, out, x: (g * out * (1.0 - out),), domain=(-4.0, 4.0))
softplus = record("softplus", tf.Softplus.numpy_form, tf.Softplus,
                 lambda g, out, x: (g * F.sigmoid(x),), domain=(-4.0, 4.0))
erf = record("erf", NUMPY_FUNCTIONS["erf"], sp.erf,
            lambda g, out, x: (g * (2.0 / SQRT_PI) * F.exp(-x * x),))

# --- kinks (TF's conventions) -------------------------------------------------------------
abs = record("abs", np.abs, tf.TfAbs, lambda g, out, x: (g * F.sign(x),))
sign = record("sign", np.sign, tf.TfSign, lambda g, out, x: (F.zeros_like(x),))
# sign(relu(x)) is 0 wherever it is selected, but keeps the result connected to x, as
# TF's ReluGrad(g, x) is: relu'' is zeros, not None (the symbolic partial uses x too).
relu = record("relu", tf.Relu.numpy_form, tf.Relu,
             lambda g, out, x: (F.where(x > 0, g, F.sign(F.relu(x))),))
floor = record("floor", np.floor, sp.floor, differentiable=False)
ceil = record("ceil", np.ceil, sp.ceiling, differentiable=False)
round = record("round", np.round, tf.TfRound, differentiable=False)

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
logical_not = elementwise("logical_not", np.logical_not, tf.LogicalNot, differentiable=False)
logical_and = elementwise("logical_and", np.logical_and, sp.And, differentiable=False)
logical_or = elementwise("logical_or", np.logical_or, sp.Or, differentiable=False)

# --- identity-like ------------------------------------------------------------------------
identity = record("identity", lambda x: np.array(x, copy=True), lambda x: x,
                 lambda g, out, x: (g,))
stop_gradient = record("stop_gradient", lambda x: np.array(x, copy=True), lambda x: x,
                      differentiable=False)
ones_like = record("ones_like", np.ones_like, lambda x: sp.S.One, differentiable=False,
                  public=False)
zeros_like = record("zeros_like", np.zeros_like, lambda x: sp.S.Zero, differentiable=False,
                   public=False)


# --- a node that holds any sympy expression of its inputs (gradients are built of these) ---
@lru_cache(maxsize=1024)
def _logical_symbols(expr) -> frozenset:
    """Symbols of ``expr`` read as truth values: a Piecewise condition, or an argument of
    And/Or/Not/Xor/ITE (a relation such as ``Eq(x, 0)`` reads numbers)."""
    found: set = set()

    def truth(value) -> None:
        if isinstance(value, sp.Symbol):
            found.add(value)
        elif isinstance(value, (sp.And, sp.Or, sp.Not, sp.Xor, sp.ITE)):
            for arg in value.args:
                truth(arg)

    for piecewise in expr.atoms(sp.Piecewise):
        for _, condition in piecewise.args:
            truth(condition)
    for logical in expr.atoms(sp.And, sp.Or, sp.Not, sp.Xor, sp.ITE):
        truth(logical)
    return frozenset(found)


def _expr_numpy(*arrays, expr, dtype):
    arrays = [np.asarray(a) for a in arrays]
    kinds = tuple("b" if a.dtype.kind == "b" else "i" if a.dtype.kind in "iu" else "f"
                  for a in arrays)
    if "b" in kinds and isinstance(expr, sp.Basic):
        # a bool input used only as a number (e.g. -b in a gradient) is a number, as numpy
        # casts bools in np.logaddexp(b, x): numpy refuses arithmetic negation of bools
        logical = _logical_symbols(expr)
        for k, kind in enumerate(kinds):
            if kind == "b" and input_symbol(k, "b") not in logical:
                arrays[k] = arrays[k].astype(np.dtype(dtype) if np.dtype(dtype).kind == "f"
                                             else np.int64)   # same symbols, numeric
    with np.errstate(all="ignore"):
        value = np.asarray(numpy_callable(expr, len(arrays), kinds)(*arrays))
    shape = np.broadcast_shapes(*[np.shape(a) for a in arrays])
    return np.array(np.broadcast_to(value, shape), dtype=dtype)


expr = elementwise("expr", _expr_numpy, lambda *symbols, expr, dtype: expr,
                   dtype_rule=lambda *dtypes, expr, dtype: dtype, public=False)


# --- more elementwise ops ---------------------------------------------------------------
LN2, LN10 = math.log(2.0), math.log(10.0)
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946
GELU_C = math.sqrt(2.0 / math.pi)   # tanh approximation: 0.5 x (1 + tanh(c (x + k x**3)))
GELU_K = 0.044715


def _call(op, *inputs):
    return apply(op, inputs)


def _nonzero(x):
    """1.0 where x != 0 else 0.0, in x's dtype (TF's ``cast(not_equal(x, 0))``)."""
    return F.cast(F.not_equal(x, 0.0), np.dtype(getattr(x, "dtype", np.float64)).name)


def _zero_where(cond, value, x):
    """numpy: 0 where cond else value, in the dtype of value."""
    value = np.asarray(value)
    return np.where(cond, np.zeros((), value.dtype), value)


def _erf_np(x):
    return NUMPY_FUNCTIONS["erf"](x)


# --- powers, logs and exponentials ------------------------------------------------------
reciprocal = record("reciprocal", np.reciprocal, lambda x: 1 / x,
                 lambda g, out, x: (-g * out * out,), domain=(0.5, 2.0))
rsqrt = record("rsqrt", lambda x: 1.0 / np.sqrt(x), lambda x: 1 / sp.sqrt(x),
            lambda g, out, x: (-0.5 * g * out * out * out,), domain=(0.2, 3.0))
cbrt = record("cbrt", tf2.Cbrt.numpy_form, tf2.Cbrt,
           lambda g, out, x: (g / (3.0 * out * out),), domain=(0.3, 3.0))
log2 = record("log2", np.log2, lambda x: sp.log(x) / sp.log(2),
           lambda g, out, x: (g / (x * LN2),), domain=(0.2, 3.0))
log10 = record("log10", np.log10, lambda x: sp.log(x) / sp.log(10),
            lambda g, out, x: (g / (x * LN10),), domain=(0.2, 3.0))
# a float base, so that an integer x prints as a float power (numba's 2**-1 is 0)
exp2 = record("exp2", np.exp2, lambda x: (sp.Float(2.0) if x.is_integer else sp.Integer(2))**x,
           lambda g, out, x: (g * out * LN2,))

# --- special functions ----------------------------------------------------------------------
erfc = record("erfc", tf2.Erfc.numpy_form, tf2.Erfc,
           lambda g, out, x: (-g * (2.0 / SQRT_PI) * F.exp(-x * x),))
erfinv = record("erfinv", tf2.Erfinv.numpy_form, tf2.Erfinv,
             lambda g, out, x: (g * (SQRT_PI / 2.0) * F.exp(out * out),), domain=(-0.9, 0.9))
lgamma = record("lgamma", tf2.Lgamma.numpy_form, tf2.Lgamma,
             lambda g, out, x: (g * _call(digamma, x),), domain=(0.2, 4.0))
digamma = record("digamma", tf2.Digamma.numpy_form, tf2.Digamma,
              lambda g, out, x: (g * _call(polygamma, x, np.int64(1)),), domain=(0.3, 4.0))
# polygamma(x, n): internal (the derivatives of digamma); n is an integer input
polygamma = record("polygamma", tf2.Polygamma.numpy_form, tf2.Polygamma,
                lambda g, out, x, n: (g * _call(polygamma, x, n + np.int64(1)), None),
                domain=(0.3, 4.0), public=False,
                dtype_rule=lambda x, n: x)

# --- two arguments ---------------------------------------------------------------------------
logaddexp = record("logaddexp", np.logaddexp, tf2.Logaddexp,
                lambda g, out, x, y: (g * F.sigmoid(x - y), g * F.sigmoid(y - x)))


def _hypot_vjp(g, out, x, y):
    positive = out > 0
    safe = F.where(positive, out, 1.0)
    return F.where(positive, g * x / safe, 0.0), F.where(positive, g * y / safe, 0.0)


hypot = record("hypot", np.hypot, tf2.Hypot, _hypot_vjp)


def _xlogy(x, y):
    with np.errstate(all="ignore"):
        return _zero_where(np.asarray(x) == 0, np.asarray(x) * np.log(y), x)


def _xlog1py(x, y):
    with np.errstate(all="ignore"):
        return _zero_where(np.asarray(x) == 0, np.asarray(x) * np.log1p(y), x)


def _xdivy(x, y):
    with np.errstate(all="ignore"):
        return _zero_where(np.asarray(x) == 0, np.asarray(x) / np.asarray(y), x)


def _div_no_nan(x, y):
    with np.errstate(all="ignore"):
        return _zero_where(np.asarray(y) == 0, np.asarray(x) / np.asarray(y), x)


def _zero_if(cond, value):
    return sp.Piecewise((sp.S.Zero, cond), (value, True))


xlogy = record("xlogy", _xlogy, lambda x, y: _zero_if(sp.Eq(x, 0), x * sp.log(y)),
            lambda g, out, x, y: (g * _call(xlogy, _nonzero(x), y), g * _call(xdivy, x, y)),
            domain=(0.5, 2.0))
xlog1py = record("xlog1py", _xlog1py, lambda x, y: _zero_if(sp.Eq(x, 0), x * tf.log1p(y)),
              lambda g, out, x, y: (g * _call(xlog1py, _nonzero(x), y),
                                    g * _call(xdivy, x, y + 1.0)),
              domain=(0.5, 2.0))
xdivy = record("xdivy", _xdivy, lambda x, y: _zero_if(sp.Eq(x, 0), x / y),
            lambda g, out, x, y: (g * _call(xdivy, _nonzero(x), y),
                                  -(g * _call(xdivy, x, y * y))),   # not -x: x may be bool
            domain=(0.5, 2.0))
div_no_nan = record("div_no_nan", _div_no_nan, lambda x, y: _zero_if(sp.Eq(y, 0), x / y),
                 lambda g, out, x, y: (_call(div_no_nan, g, y),
                                       -(g * _call(div_no_nan, _call(div_no_nan, x, y), y))),
                 # TF: div_no_nan(grad, y) for x (0 where y == 0, even for an infinite
                 # grad), grad * div_no_nan(div_no_nan(-x, y), y) for y (negated outside:
                 # x may be bool)
                 upstream_product=lambda g, partial, i: (sp.piecewise_fold(g * partial)
                                                         if i == 0 else g * partial),
                 domain=(0.5, 2.0))
mul_no_nan = record("mul_no_nan", tf2.MulNoNan.numpy_form, tf2.MulNoNan,
                 lambda g, out, x, y: (_call(mul_no_nan, g, y), _call(mul_no_nan, x, g)),
                 # TF: mul_no_nan(grad, y) and mul_no_nan(x, grad), so a zero y (for x) or a
                 # zero grad (for y) gives 0 even against an infinite or nan factor
                 upstream_product=lambda g, partial, i: (tf2.MulNoNan(g, partial) if i == 0
                                                         else tf2.MulNoNan(partial, g)))
squared_difference = record("squared_difference", lambda x, y: np.square(np.subtract(x, y)),
                         lambda x, y: (x - y) ** 2,
                         lambda g, out, x, y: (2.0 * g * (x - y), -2.0 * g * (x - y)))
floormod = record("floormod", np.mod, tf2.FloorMod,
               lambda g, out, x, y: (g, -g * _call(floordiv, x, y)), domain=(0.5, 2.0))
floordiv = record("floordiv", np.floor_divide, tf2.FloorDiv, None, differentiable=False)

# --- activations (nn_grad.py) ---------------------------------------------------------------
log_sigmoid = record("log_sigmoid", lambda x: -tf.Softplus.numpy_form(np.negative(x)),
                  lambda x: -tf.Softplus(-x), lambda g, out, x: (g * F.sigmoid(-x),),
                  domain=(-4.0, 4.0))
softsign = record("softsign", lambda x: np.asarray(x) / (1 + np.abs(x)),
               lambda x: x / (1 + tf.TfAbs(x)),
               lambda g, out, x: (g / F.square(1.0 + F.abs(x)),))


def _elu(x):
    with np.errstate(all="ignore"):
        return np.where(np.asarray(x) >= 0, x, np.expm1(x))


# elu'(0) = 1 and elu''(0) = 0 (TF's EluGrad and EluGradGrad): the x >= 0 piece owns 0
elu = record("elu", _elu, lambda x: sp.Piecewise((x, x >= 0), (tf.expm1(x), True)),
          lambda g, out, x: (F.where(x >= 0.0, g, g * F.exp(x)),))


def _selu(x):
    with np.errstate(all="ignore"):
        return SELU_SCALE * np.where(np.asarray(x) > 0, x, SELU_ALPHA * np.expm1(x))


def _selu_vjp(g, out, x):
    # TF's SeluGrad reads the output: out < 0 ? g (out + scale alpha) : g scale, i.e. the
    # x >= 0 branch owns 0; its gradient (SeluGradGrad) is zero there too
    return (F.where(x < 0.0, g * (SELU_SCALE * SELU_ALPHA) * F.exp(x), g * SELU_SCALE),)


def _exact(value: float) -> sp.Float:
    """A sympy Float that every printer writes with all of ``value``'s digits (lambdify
    writes a 53-bit Float with 15 digits: selu' came out as 1.05070098735548)."""
    return sp.Float(repr(value), 20)


# selu'(0) = scale, selu''(0) = 0 (TF's SeluGrad and SeluGradGrad): as elu, the x >= 0
# piece owns 0
selu = record("selu", _selu, lambda x: _exact(SELU_SCALE) * sp.Piecewise(
    (_exact(SELU_ALPHA) * tf.expm1(x), x < 0), (x, True)), _selu_vjp)


def _gelu(x):
    x = np.asarray(x)
    return 0.5 * x * (1.0 + _erf_np(x / math.sqrt(2.0)))


def _gelu_vjp(g, out, x):
    cdf = 0.5 * (1.0 + F.erf(x * (1.0 / math.sqrt(2.0))))
    return (g * (cdf + x * F.exp(-0.5 * x * x) * (1.0 / math.sqrt(2.0 * math.pi))),)


gelu = record("gelu", _gelu, lambda x: x / 2 * (1 + sp.erf(x / sp.sqrt(2))), _gelu_vjp,
           domain=(-3.0, 3.0))


def _gelu_tanh(x):
    x = np.asarray(x)
    return 0.5 * x * (1.0 + np.tanh(GELU_C * (x + GELU_K * x**3)))


def _gelu_tanh_vjp(g, out, x):
    t = F.tanh(GELU_C * (x + GELU_K * x * x * x))
    inner = GELU_C * (1.0 + 3.0 * GELU_K * x * x)
    return (g * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * inner),)


# sg.gelu(x, approximate=True): TF's tanh approximation (composite in TF: its gradient)
gelu_tanh = record("gelu_tanh", _gelu_tanh, lambda x: x / 2 * (1 + sp.tanh(
    sp.Float(GELU_C) * (x + sp.Float(GELU_K) * x**3))), _gelu_tanh_vjp, domain=(-3.0, 3.0),
    public=False)


def _leaky_relu(x, alpha):
    return np.where(np.asarray(x) > 0, x, np.multiply(alpha, x))


# leaky_relu(x, alpha): alpha is an input (0.2 by default), so one record serves every
# alpha; leaky_relu'(0) = alpha (TF's LeakyReluGrad: x > 0 ? g : alpha g)
leaky_relu = record("leaky_relu", _leaky_relu,
                 lambda x, a: sp.Piecewise((x, x > 0), (a * x, True)),
                 lambda g, out, x, a: (F.where(x > 0.0, g, g * a),
                                       F.where(x > 0.0, 0.0 * g, g * x)))


def _relu6(x):
    return np.minimum(np.maximum(x, 0), 6)


# relu6'(0) = relu6'(6) = 0 (TF's Relu6Grad: 0 < x < 6); relu6'' is zeros, connected to x
relu6 = record("relu6", _relu6,
            lambda x: sp.Piecewise((0, x <= 0), (6, x >= 6), (x, True)),
            lambda g, out, x: (F.where(F.logical_and(x > 0.0, x < 6.0), g,
                                                  0.0 * F.sign(x)),),
            domain=(-1.0, 7.0))
silu = record("silu", lambda x: np.asarray(x) * tf.Sigmoid.numpy_form(x),
           lambda x: x * tf.Sigmoid(x),
           lambda g, out, x: (g * F.sigmoid(x) * (1.0 + x * (1.0 - F.sigmoid(x))),),
           domain=(-4.0, 4.0))


# --- dtype ------------------------------------------------------------------------------------
def _cast_vjp(g, out, x, dtype):
    if is_floating(x.dtype) and is_floating(dtype):
        return (F.cast(g, x.dtype),)
    return (None,)


cast = structural("cast", lambda x, dtype: np.asarray(x).astype(dtype),
                  lambda x, dtype: (x.shape, as_dtype(dtype)), vjp=_cast_vjp, symbolic_dims=True)


# The square root inside sg.norm: derivative 0 at 0 (TF: 0/0 = nan).
def _norm_sqrt_vjp(g, out, s):
    positive = out > 0
    return (F.where(positive, g * 0.5 / F.where(positive, out, 1.0), 0.0),)


norm_sqrt = elementwise("norm_sqrt", np.sqrt, tf2.NormSqrt, vjp=_norm_sqrt_vjp,
                        domain=(0.2, 3.0), public=False)
