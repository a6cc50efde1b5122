"""The public functions of the v2 elementwise ops (``sg.reciprocal``, ``sg.xlogy``, ...).

Each applies a record of ``elementwise_v2``: a graph node on symbolic Tensors, a value at
once on eager ones. Python's ``%`` and ``//`` on tensors are ``floormod`` and ``floordiv``.

>>> import symgrad as sg
>>> x = sg.placeholder("x", shape=(2,))
>>> sg.evaluate([sg.xlogy(x, 2.0), x % 3.0, x // 3.0], {x: [0.0, -7.0]})
[array([ 0.        , -4.85203026]), array([0., 2.]), array([ 0., -3.])]
"""

from __future__ import annotations

from typing import Optional

from . import elementwise_v2 as E
from .api import _binary, _unary
from .registry import apply

reciprocal = _unary(E.reciprocal, "1 / x")
rsqrt = _unary(E.rsqrt, "1 / sqrt(x)")
cbrt = _unary(E.cbrt, "Real cube root; cbrt'(0) = +inf")
log2 = _unary(E.log2, "Base-2 logarithm")
log10 = _unary(E.log10, "Base-10 logarithm")
exp2 = _unary(E.exp2, "2 ** x")
erfc = _unary(E.erfc, "1 - erf(x), accurate for large x")
erfinv = _unary(E.erfinv, "Inverse error function on (-1, 1)")
lgamma = _unary(E.lgamma, "log|Gamma(x)|; its derivative is digamma")
digamma = _unary(E.digamma, "psi(x), the derivative of lgamma; nan at 0, -1, -2, ...")
logaddexp = _binary(E.logaddexp, "log(exp(x) + exp(y)), stable; a tie gives (1/2, 1/2)")
hypot = _binary(E.hypot, "sqrt(x**2 + y**2) without overflow; gradient (0, 0) at (0, 0)")
xlogy = _binary(E.xlogy, "x * log(y), and 0 where x == 0 (TF)")
xlog1py = _binary(E.xlog1py, "x * log1p(y), and 0 where x == 0 (TF)")
xdivy = _binary(E.xdivy, "x / y, and 0 where x == 0 (TF)")
div_no_nan = _binary(E.div_no_nan, "x / y, and 0 where y == 0 (TF)")
mul_no_nan = _binary(E.mul_no_nan, "x * y, and 0 where y == 0 even if x is inf or nan (TF)")
squared_difference = _binary(E.squared_difference, "(x - y) ** 2")
floormod = _binary(E.floormod, "x % y with y's sign; gradients 1 and -floor(x / y) (TF)")
floordiv = _binary(E.floordiv, "floor(x / y) (x // y); not differentiable (TF)")
log_sigmoid = _unary(E.log_sigmoid, "log(sigmoid(x)) = -softplus(-x), stable")
softsign = _unary(E.softsign, "x / (1 + |x|); differentiable to any order")
elu = _unary(E.elu, "x if x > 0 else exp(x) - 1; elu'(0) = 1 (TF)")
selu = _unary(E.selu, "scale * elu with alpha; selu'(0) = scale * alpha (TF)")
relu6 = _unary(E.relu6, "min(max(x, 0), 6); relu6'(0) = relu6'(6) = 0 (TF)")
silu = _unary(E.silu, "x * sigmoid(x) (swish)")


def gelu(x, approximate: bool = False, name: Optional[str] = None):
    """x * Phi(x) (the normal CDF), or TF's tanh approximation when ``approximate``.

    >>> import symgrad as sg
    >>> float(sg.gelu(sg.Variable(1.0)).numpy()), float(sg.gelu(sg.Variable(1.0), True))
    (0.8413447460685429, 0.8411919906082768)
    """
    return apply(E.gelu_tanh if approximate else E.gelu, (x,), None, name)


def leaky_relu(x, alpha: float = 0.2, name: Optional[str] = None):
    """x if x > 0 else alpha * x; leaky_relu'(0) = alpha (TF)."""
    return apply(E.leaky_relu, (x, alpha), None, name)
