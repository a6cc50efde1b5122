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
# v2 elementwise (symgrad/ops/elementwise_v2.py, elementwise_v2_api.py)
from .ops.elementwise_v2_api import (cbrt, digamma, div_no_nan, elu, erfc, erfinv, exp2,  # noqa: E402
                                     floordiv, floormod, gelu, hypot, leaky_relu, lgamma,
                                     log10, log2, log_sigmoid, logaddexp, mul_no_nan,
                                     reciprocal, relu6, rsqrt, selu, silu, softsign,
                                     squared_difference, xdivy, xlog1py, xlogy)
__all__ += ["cbrt", "digamma", "div_no_nan", "elu", "erfc", "erfinv", "exp2", "floordiv",
            "floormod", "gelu", "hypot", "leaky_relu", "lgamma", "log10", "log2",
            "log_sigmoid", "logaddexp", "mul_no_nan", "reciprocal", "relu6", "rsqrt", "selu",
            "silu", "softsign", "squared_difference", "xdivy", "xlog1py", "xlogy"]
from .ops.reductions_v2 import (clip_by_value, log_softmax, norm, reduce_logsumexp,  # noqa: E402
                                reduce_std, reduce_variance, softmax)
__all__ += ["clip_by_value", "log_softmax", "norm", "reduce_logsumexp", "reduce_std",
            "reduce_variance", "softmax"]
# v2 gradients (symgrad/higher_order.py, differentiate/control.py, custom_gradient.py,
# define_op.py)
from .differentiate import AggregationMethod, prevent_gradient
from .higher_order import hessians, jacobian
__all__ += ["AggregationMethod", "hessians", "jacobian", "prevent_gradient"]
from .custom_gradient import custom_gradient
__all__ += ["custom_gradient"]
from .define_op import define_op
__all__ += ["define_op"]
# dask: compiled functions called with dask arrays (symgrad/distributed, docs/dask.md)
from .errors import ChunkError  # noqa: E402
__all__ += ["ChunkError"]
# forward mode (symgrad/forward.py, symgrad/ops/jvp.py, symgrad/tape/forward.py)
from .forward import hvp, jvp  # noqa: E402
__all__ += ["hvp", "jvp"]
from .tape.forward import ForwardAccumulator  # noqa: E402
__all__ += ["ForwardAccumulator"]
# v3 sparsity: exact patterns, colouring, compressed sparse Jacobians/Hessians (symgrad/sparse,
# docs/sparsity.md)
from . import sparse  # noqa: E402
from .sparse import SparseTensor, hessian_sparsity, sparsity  # noqa: E402
__all__ += ["SparseTensor", "hessian_sparsity", "sparsity"]
