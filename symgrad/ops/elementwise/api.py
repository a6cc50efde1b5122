"""The public elementwise functions (``sg.sin``, ``sg.where``, ``sg.xlogy``, ``sg.cast``, ...).

Each one applies an op record of ``records.py``: on symbolic Tensors it builds a node, on
eager values (``sg.Variable``, numpy arrays) it computes at once.

>>> import symgrad as sg
>>> x = sg.placeholder("x", shape=(3,))
>>> y = sg.reduce_sum(sg.where(x > 0, sg.log(x), 0.0))
>>> y.shape, y.op.name
((), 'reduce_sum')
>>> x = sg.placeholder("x", shape=(2,))
>>> sg.evaluate([sg.xlogy(x, 2.0), x % 3.0, x // 3.0], {x: [0.0, -7.0]})
[array([ 0.        , -4.85203026]), array([0., 2.]), array([ 0., -3.])]
"""

from __future__ import annotations

from typing import Any, Optional, Sequence


from ...dtypes import as_dtype, is_bool
from ...errors import DTypeError
from ..checks import dtype_of
from ..functions import export
from ..opdef import OpDef
from ..registry import apply
from . import records as E

__all__ = [
    "negative", "add", "subtract", "multiply", "divide", "pow", "arctan2", "maximum", "minimum",
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh",
    "arccosh", "arctanh", "exp", "expm1", "log", "log1p", "sqrt", "square", "abs", "sign",
    "sigmoid", "softplus", "relu", "erf", "floor", "ceil", "round", "identity", "stop_gradient",
    "less", "less_equal", "greater", "greater_equal", "equal", "not_equal", "logical_and",
    "logical_or", "logical_not", "where", "cast", "reciprocal", "rsqrt", "cbrt", "log2",
    "log10", "exp2", "erfc", "erfinv", "lgamma", "digamma", "logaddexp", "hypot", "xlogy",
    "xlog1py", "xdivy", "div_no_nan", "mul_no_nan", "squared_difference", "floormod",
    "floordiv", "log_sigmoid", "softsign", "elu", "selu", "relu6", "silu", "gelu", "leaky_relu",
]


def _unary(op: OpDef, doc: str):
    def fn(x, name: Optional[str] = None):
        return apply(op, (x,), None, name)
    fn.__name__ = fn.__qualname__ = op.name
    fn.__doc__ = doc
    return fn


def _binary(op: OpDef, doc: str):
    def fn(x, y, name: Optional[str] = None):
        return apply(op, (x, y), None, name)
    fn.__name__ = fn.__qualname__ = op.name
    fn.__doc__ = doc
    return fn


# --- elementwise ----------------------------------------------------------------------------
negative = _unary(E.negative, "-x")
add = _binary(E.add, "x + y")
subtract = _binary(E.subtract, "x - y")
multiply = _binary(E.multiply, "x * y")
divide = _binary(E.divide, "x / y (true division, as numpy)")
pow = _binary(E.pow, "x ** y; d/dy is 0 where x <= 0 (TF's guarded log)")
arctan2 = _binary(E.arctan2, "arctan2(y, x), numpy's argument order")
maximum = _binary(E.maximum, "Elementwise max; at ties the gradient goes to x (TF)")
minimum = _binary(E.minimum, "Elementwise min; at ties the gradient goes to x (TF)")
sin = _unary(E.sin, "sin(x)")
cos = _unary(E.cos, "cos(x)")
tan = _unary(E.tan, "tan(x)")
arcsin = _unary(E.arcsin, "arcsin(x)")
arccos = _unary(E.arccos, "arccos(x)")
arctan = _unary(E.arctan, "arctan(x)")
sinh = _unary(E.sinh, "sinh(x)")
cosh = _unary(E.cosh, "cosh(x)")
tanh = _unary(E.tanh, "tanh(x)")
arcsinh = _unary(E.arcsinh, "arcsinh(x)")
arccosh = _unary(E.arccosh, "arccosh(x)")
arctanh = _unary(E.arctanh, "arctanh(x)")
exp = _unary(E.exp, "exp(x)")
expm1 = _unary(E.expm1, "exp(x) - 1, accurate near 0")
log = _unary(E.log, "natural log")
log1p = _unary(E.log1p, "log(1 + x), accurate near 0")
sqrt = _unary(E.sqrt, "square root")
square = _unary(E.square, "x * x")
abs = _unary(E.abs, "|x|; abs'(0) = 0 (TF)")
sign = _unary(E.sign, "sign(x); its gradient is zeros (TF)")
sigmoid = _unary(E.sigmoid, "1 / (1 + exp(-x)), stable")
softplus = _unary(E.softplus, "log(1 + exp(x)), stable; its derivative is sigmoid")
relu = _unary(E.relu, "max(x, 0); relu'(0) = 0 (TF)")
erf = _unary(E.erf, "error function")
floor = _unary(E.floor, "floor(x); not differentiable: gradients through it are None (TF)")
ceil = _unary(E.ceil, "ceil(x); not differentiable (TF)")
round = _unary(E.round, "round half to even; not differentiable (TF)")
identity = _unary(E.identity, "x, as a new node")
stop_gradient = _unary(E.stop_gradient, "x, treated as a constant by gradients")
less = _binary(E.less, "x < y (bool)")
less_equal = _binary(E.less_equal, "x <= y (bool)")
greater = _binary(E.greater, "x > y (bool)")
greater_equal = _binary(E.greater_equal, "x >= y (bool)")
equal = _binary(E.equal, "x == y (bool)")
not_equal = _binary(E.not_equal, "x != y (bool)")
logical_and = _binary(E.logical_and, "x and y (bool)")
logical_or = _binary(E.logical_or, "x or y (bool)")
logical_not = _unary(E.logical_not, "not x (bool)")
zeros_like = _unary(E.zeros_like, "zeros shaped like x (not differentiable)")
ones_like = _unary(E.ones_like, "ones shaped like x (not differentiable)")


def where(condition, x, y, name: Optional[str] = None):
    """x where condition else y, broadcast like numpy.

    The branch that was not selected contributes exactly 0 to gradients (TF can leak
    ``0 * inf = nan`` from it; symgrad does not).
    """
    if not isinstance(condition, bool) and not is_bool(dtype_of(condition)):
        raise DTypeError(f"where: condition must be bool, got {dtype_of(condition).name}; "
                         "compare first, e.g. sg.where(x > 0, a, b)")
    return apply(E.where, (condition, x, y), None, name)


def cast(x, dtype: Any, name: Optional[str] = None):
    """Convert to ``dtype``; gradients pass only between floating dtypes (TF)."""
    return apply(E.cast, (x,), {"dtype": as_dtype(dtype, "cast")}, name)


def expr(inputs: Sequence[Any], expression, dtype: Any, name: Optional[str] = None):
    """A node computing a sympy ``expression`` of positional symbols over ``inputs``."""
    return apply(E.expr, tuple(inputs), {"expr": expression, "dtype": as_dtype(dtype)}, name)


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


export(globals())
