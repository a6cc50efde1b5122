"""The v2 elementwise op records (API.md "v2 additions", Elementwise).

As in ``elementwise``: ``sg.gradients`` differentiates the sympy form (TF's conventions
are in the form or in the ``sympy_functions_v2`` classes); the tape runs the hand-written
``vjp``, built of symgrad ops so that nested tapes give higher orders. The vjps follow
TF's ``math_grad.py`` / ``nn_grad.py`` (``xlogy``'s ``xlogy(x != 0, y)``, ``div_no_nan``'s
``div_no_nan(grad, y)``, ...); the ops TF lacks have their mathematical gradients.

>>> import symgrad as sg
>>> x = sg.placeholder("x", shape=(3,))
>>> g = sg.gradients(sg.relu6(x), x)[0]
>>> sg.evaluate(g, {x: [0.0, 3.0, 6.0]})
array([0., 1., 0.])
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

from . import api as F
from . import sympy_functions as tf
from . import sympy_functions_v2 as tf2
from .registry import apply, elementwise
from .symbols import NUMPY_FUNCTIONS

LN2, LN10 = math.log(2.0), math.log(10.0)
SQRT_PI = math.sqrt(math.pi)
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946
GELU_C = math.sqrt(2.0 / math.pi)   # tanh approximation: 0.5 x (1 + tanh(c (x + k x**3)))
GELU_K = 0.044715


def _ew(name, numpy, sympy, vjp, domain=(-2.0, 2.0), **kw):
    return elementwise(name, numpy, sympy, vjp=vjp, domain=domain, **kw)


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
reciprocal = _ew("reciprocal", np.reciprocal, lambda x: 1 / x,
                 lambda g, out, x: (-g * out * out,), domain=(0.5, 2.0))
rsqrt = _ew("rsqrt", lambda x: 1.0 / np.sqrt(x), lambda x: 1 / sp.sqrt(x),
            lambda g, out, x: (-0.5 * g * out * out * out,), domain=(0.2, 3.0))
cbrt = _ew("cbrt", tf2.Cbrt.numpy_form, tf2.Cbrt,
           lambda g, out, x: (g / (3.0 * out * out),), domain=(0.3, 3.0))
log2 = _ew("log2", np.log2, lambda x: sp.log(x) / sp.log(2),
           lambda g, out, x: (g / (x * LN2),), domain=(0.2, 3.0))
log10 = _ew("log10", np.log10, lambda x: sp.log(x) / sp.log(10),
            lambda g, out, x: (g / (x * LN10),), domain=(0.2, 3.0))
# a float base, so that an integer x prints as a float power (numba's 2**-1 is 0)
exp2 = _ew("exp2", np.exp2, lambda x: (sp.Float(2.0) if x.is_integer else sp.Integer(2))**x,
           lambda g, out, x: (g * out * LN2,))

# --- special functions ----------------------------------------------------------------------
erfc = _ew("erfc", tf2.Erfc.numpy_form, tf2.Erfc,
           lambda g, out, x: (-g * (2.0 / SQRT_PI) * F.exp(-x * x),))
erfinv = _ew("erfinv", tf2.Erfinv.numpy_form, tf2.Erfinv,
             lambda g, out, x: (g * (SQRT_PI / 2.0) * F.exp(out * out),), domain=(-0.9, 0.9))
lgamma = _ew("lgamma", tf2.Lgamma.numpy_form, tf2.Lgamma,
             lambda g, out, x: (g * _call(digamma, x),), domain=(0.2, 4.0))
digamma = _ew("digamma", tf2.Digamma.numpy_form, tf2.Digamma,
              lambda g, out, x: (g * _call(polygamma, x, np.int64(1)),), domain=(0.3, 4.0))
# polygamma(x, n): internal (the derivatives of digamma); n is an integer input
polygamma = _ew("polygamma", tf2.Polygamma.numpy_form, tf2.Polygamma,
                lambda g, out, x, n: (g * _call(polygamma, x, n + np.int64(1)), None),
                domain=(0.3, 4.0), public=False,
                dtype_rule=lambda x, n: x)

# --- two arguments ---------------------------------------------------------------------------
logaddexp = _ew("logaddexp", np.logaddexp, tf2.Logaddexp,
                lambda g, out, x, y: (g * F.sigmoid(x - y), g * F.sigmoid(y - x)))


def _hypot_vjp(g, out, x, y):
    positive = out > 0
    safe = F.where(positive, out, 1.0)
    return F.where(positive, g * x / safe, 0.0), F.where(positive, g * y / safe, 0.0)


hypot = _ew("hypot", np.hypot, tf2.Hypot, _hypot_vjp)


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


xlogy = _ew("xlogy", _xlogy, lambda x, y: _zero_if(sp.Eq(x, 0), x * sp.log(y)),
            lambda g, out, x, y: (g * _call(xlogy, _nonzero(x), y), g * _call(xdivy, x, y)),
            domain=(0.5, 2.0))
xlog1py = _ew("xlog1py", _xlog1py, lambda x, y: _zero_if(sp.Eq(x, 0), x * tf.log1p(y)),
              lambda g, out, x, y: (g * _call(xlog1py, _nonzero(x), y),
                                    g * _call(xdivy, x, y + 1.0)),
              domain=(0.5, 2.0))
xdivy = _ew("xdivy", _xdivy, lambda x, y: _zero_if(sp.Eq(x, 0), x / y),
            lambda g, out, x, y: (g * _call(xdivy, _nonzero(x), y),
                                  g * _call(xdivy, -x, y * y)),
            domain=(0.5, 2.0))
div_no_nan = _ew("div_no_nan", _div_no_nan, lambda x, y: _zero_if(sp.Eq(y, 0), x / y),
                 lambda g, out, x, y: (_call(div_no_nan, g, y),
                                       g * _call(div_no_nan, _call(div_no_nan, -x, y), y)),
                 # TF: div_no_nan(grad, y) for x (0 where y == 0, even for an infinite
                 # grad), grad * div_no_nan(div_no_nan(-x, y), y) for y
                 upstream_product=lambda g, partial, i: (sp.piecewise_fold(g * partial)
                                                         if i == 0 else g * partial),
                 domain=(0.5, 2.0))
mul_no_nan = _ew("mul_no_nan", tf2.MulNoNan.numpy_form, tf2.MulNoNan,
                 lambda g, out, x, y: (_call(mul_no_nan, g, y), _call(mul_no_nan, x, g)),
                 # TF: mul_no_nan(grad, y) and mul_no_nan(x, grad), so a zero y (for x) or a
                 # zero grad (for y) gives 0 even against an infinite or nan factor
                 upstream_product=lambda g, partial, i: (tf2.MulNoNan(g, partial) if i == 0
                                                         else tf2.MulNoNan(partial, g)))
squared_difference = _ew("squared_difference", lambda x, y: np.square(np.subtract(x, y)),
                         lambda x, y: (x - y) ** 2,
                         lambda g, out, x, y: (2.0 * g * (x - y), -2.0 * g * (x - y)))
floormod = _ew("floormod", np.mod, tf2.FloorMod,
               lambda g, out, x, y: (g, -g * _call(floordiv, x, y)), domain=(0.5, 2.0))
floordiv = _ew("floordiv", np.floor_divide, tf2.FloorDiv, None, differentiable=False)

# --- activations (nn_grad.py) ---------------------------------------------------------------
log_sigmoid = _ew("log_sigmoid", lambda x: -tf.Softplus.numpy_form(np.negative(x)),
                  lambda x: -tf.Softplus(-x), lambda g, out, x: (g * F.sigmoid(-x),),
                  domain=(-4.0, 4.0))
softsign = _ew("softsign", lambda x: np.asarray(x) / (1 + np.abs(x)),
               lambda x: x / (1 + tf.TfAbs(x)),
               lambda g, out, x: (g / F.square(1.0 + F.abs(x)),))


def _elu(x):
    with np.errstate(all="ignore"):
        return np.where(np.asarray(x) >= 0, x, np.expm1(x))


# elu'(0) = 1 and elu''(0) = 0 (TF's EluGrad and EluGradGrad): the x >= 0 piece owns 0
elu = _ew("elu", _elu, lambda x: sp.Piecewise((x, x >= 0), (tf.expm1(x), True)),
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
selu = _ew("selu", _selu, lambda x: _exact(SELU_SCALE) * sp.Piecewise(
    (_exact(SELU_ALPHA) * tf.expm1(x), x < 0), (x, True)), _selu_vjp)


def _gelu(x):
    x = np.asarray(x)
    return 0.5 * x * (1.0 + _erf_np(x / math.sqrt(2.0)))


def _gelu_vjp(g, out, x):
    cdf = 0.5 * (1.0 + F.erf(x * (1.0 / math.sqrt(2.0))))
    return (g * (cdf + x * F.exp(-0.5 * x * x) * (1.0 / math.sqrt(2.0 * math.pi))),)


gelu = _ew("gelu", _gelu, lambda x: x / 2 * (1 + sp.erf(x / sp.sqrt(2))), _gelu_vjp,
           domain=(-3.0, 3.0))


def _gelu_tanh(x):
    x = np.asarray(x)
    return 0.5 * x * (1.0 + np.tanh(GELU_C * (x + GELU_K * x**3)))


def _gelu_tanh_vjp(g, out, x):
    t = F.tanh(GELU_C * (x + GELU_K * x * x * x))
    inner = GELU_C * (1.0 + 3.0 * GELU_K * x * x)
    return (g * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * inner),)


# sg.gelu(x, approximate=True): TF's tanh approximation (composite in TF: its gradient)
gelu_tanh = _ew("gelu_tanh", _gelu_tanh, lambda x: x / 2 * (1 + sp.tanh(
    sp.Float(GELU_C) * (x + sp.Float(GELU_K) * x**3))), _gelu_tanh_vjp, domain=(-3.0, 3.0),
    public=False)


def _leaky_relu(x, alpha):
    return np.where(np.asarray(x) > 0, x, np.multiply(alpha, x))


# leaky_relu(x, alpha): alpha is an input (0.2 by default), so one record serves every
# alpha; leaky_relu'(0) = alpha (TF's LeakyReluGrad: x > 0 ? g : alpha g)
leaky_relu = _ew("leaky_relu", _leaky_relu,
                 lambda x, a: sp.Piecewise((x, x > 0), (a * x, True)),
                 lambda g, out, x, a: (F.where(x > 0.0, g, g * a),
                                       F.where(x > 0.0, 0.0 * g, g * x)))


def _relu6(x):
    return np.minimum(np.maximum(x, 0), 6)


# relu6'(0) = relu6'(6) = 0 (TF's Relu6Grad: 0 < x < 6); relu6'' is zeros, connected to x
relu6 = _ew("relu6", _relu6,
            lambda x: sp.Piecewise((0, x <= 0), (6, x >= 6), (x, True)),
            lambda g, out, x: (F.where(F.logical_and(x > 0.0, x < 6.0), g,
                                                  0.0 * F.sign(x)),),
            domain=(-1.0, 7.0))
silu = _ew("silu", lambda x: np.asarray(x) * tf.Sigmoid.numpy_form(x),
           lambda x: x * tf.Sigmoid(x),
           lambda g, out, x: (g * F.sigmoid(x) * (1.0 + x * (1.0 - F.sigmoid(x))),),
           domain=(-4.0, 4.0))
