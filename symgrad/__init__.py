"""symgrad: tf.gradients semantics with sympy derivatives, compiled to numba kernels.

>>> import symgrad as sg
>>> x = sg.placeholder("x", shape=(3,))
>>> y = sg.reduce_sum(sg.sin(x) * x)
>>> (dx,) = sg.gradients(y, [x])
>>> sg.evaluate(dx, {x: [0.0, 1.0, 2.0]}).round(4)
array([0.    , 1.3818, 0.077 ])
"""

from .compile import function
from .differentiate import UnconnectedGradients, gradients
from .errors import (CacheWarning, CompileError, DTypeError, FeedError, GraphError, NoGradientError,
                     ShapeError, SymgradError, TapeError, UnconnectedGradientError)
from .evaluate import evaluate
from .graph import Tensor
from .ops.api import (abs, add, arccos, arccosh, arcsin, arcsinh, arctan, arctan2, arctanh,
                      cast, ceil, cos, cosh, divide, equal, erf, exp, expm1, floor, getitem,
                      greater, greater_equal, identity, less, less_equal, log, log1p,
                      logical_and, logical_not, logical_or, matmul, maximum, minimum,
                      multiply, negative, not_equal, pow, reduce_max, reduce_mean, reduce_min,
                      reduce_prod, reduce_sum, relu, reshape, round, sigmoid, sign, sin, sinh,
                      softplus, sqrt, square, stop_gradient, subtract, tan, tanh, transpose,
                      where)
from .ops.sources import constant, placeholder
# index, scan and contraction ops (v2; symgrad/ops/indexing.py, scan.py, contraction.py)
from .ops.api import (argmax, argmin, cumprod, cumsum, einsum, gather, one_hot,
                      tensordot)
# layout ops (v2; symgrad/ops/layout.py, band.py, layout_api.py)
from .ops.api import expand_dims
from .ops.layout_api import (broadcast_to, concat, diag, diag_part, pad, reverse, roll, split,
                             squeeze, stack, tile, trace, tril, triu, unstack)
from .symbolic import latex, to_sympy
from .tape import EagerTensor, GradientTape, Variable, get_gradient
from . import testing  # noqa: E402  (sg.testing.check_gradients, check_vjp)

__version__ = "0.1.0"

__all__ = [
    "UnconnectedGradients", "gradients", "evaluate", "function", "Tensor", "constant", "placeholder",
    "latex", "to_sympy", "CacheWarning", "CompileError", "DTypeError", "FeedError", "GraphError",
    "NoGradientError", "ShapeError", "SymgradError", "TapeError", "UnconnectedGradientError",
    "abs", "add", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctan2", "arctanh",
    "cast", "ceil", "cos", "cosh", "divide", "equal", "erf", "exp", "expm1", "floor",
    "getitem", "greater", "greater_equal", "identity", "less", "less_equal", "log", "log1p",
    "logical_and", "logical_not", "logical_or", "matmul", "maximum", "minimum", "multiply",
    "negative", "not_equal", "pow", "reduce_max", "reduce_mean", "reduce_min", "reduce_prod",
    "reduce_sum", "relu", "reshape", "round", "sigmoid", "sign", "sin", "sinh", "softplus",
    "sqrt", "square", "stop_gradient", "subtract", "tan", "tanh", "transpose", "where",
]
# index, scan and contraction ops (v2)
__all__ += ["argmax", "argmin", "cumprod", "cumsum", "einsum", "gather", "one_hot", "tensordot"]
# layout ops (v2)
__all__ += ["broadcast_to", "concat", "diag", "diag_part", "expand_dims", "pad", "reverse",
            "roll", "split", "squeeze", "stack", "tile", "trace", "tril", "triu", "unstack"]
# dask: compiled functions called with dask arrays (symgrad/distributed, docs/dask.md)
from .errors import ChunkError  # noqa: E402
__all__ += ["ChunkError"]
