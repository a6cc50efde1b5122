"""symgrad: tf.gradients semantics with sympy derivatives, compiled to numba kernels.

>>> import symgrad as sg
>>> x = sg.placeholder("x", shape=(3,))
>>> y = sg.reduce_sum(sg.sin(x) * x)
>>> (dx,) = sg.gradients(y, [x])
>>> sg.evaluate(dx, {x: [0.0, 1.0, 2.0]}).round(4)
array([0.    , 1.3818, 0.077 ])
"""

from .differentiate import AggregationMethod, UnconnectedGradients, gradients, prevent_gradient
from .errors import (CacheWarning, CompileError, DTypeError, FeedError, GraphError, NoGradientError,
                     ShapeError, SymgradError, TapeError, UnconnectedGradientError)
from .evaluate import evaluate
from .graph import Tensor
from .higher_order import hessians, jacobian
from .ops import FAMILIES as _FAMILIES
# the op functions, one family at a time (symgrad/ops/<family>/api.py)
from .ops.elementwise import *  # noqa: F401,F403
from .ops.reductions import *  # noqa: F401,F403
from .ops.layout import *  # noqa: F401,F403
from .ops.indexing import *  # noqa: F401,F403
from .ops.contraction import *  # noqa: F401,F403
from .ops.scans import *  # noqa: F401,F403
from .ops.sources import constant, placeholder
from .symbolic import latex, to_sympy
from . import numpy_interop  # noqa: F401  (numpy functions on Tensors build symgrad ops)
from .tape import EagerTensor, GradientTape, Variable, get_gradient
from . import testing  # noqa: E402  (sg.testing.check_gradients, check_vjp)

__version__ = "0.1.0"

__all__ = [
    "UnconnectedGradients", "gradients", "evaluate", "function", "Tensor", "constant", "placeholder",
    "latex", "to_sympy", "CacheWarning", "CompileError", "DTypeError", "FeedError", "GraphError",
    "NoGradientError", "ShapeError", "SymgradError", "TapeError", "UnconnectedGradientError",
    "AggregationMethod", "hessians", "jacobian", "prevent_gradient",
]
# the op functions: each family's __all__
__all__ += [name for family in _FAMILIES for name in family.__all__]
# custom gradients and ops (symgrad/custom_gradient.py, define_op.py)
from .custom_gradient import custom_gradient
__all__ += ["custom_gradient"]
from .define_op import define_op
__all__ += ["define_op"]
# dask: compiled functions called with dask arrays (symgrad/distributed, docs/dask.md)
from .errors import ChunkError  # noqa: E402
from . import distributed  # noqa: E402,F401  (dask calls and pickling; dask loads when used)
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
# sympy in: sympy expressions and matrices as Tensors (symgrad/interop, docs/from_sympy.md)
from .interop.sympy_in import from_sympy  # noqa: E402
__all__ += ["from_sympy"]

# linear algebra (sg.linalg, API v4)
from . import linalg  # noqa: E402
from .errors import LinAlgError  # noqa: E402
__all__ += ["linalg", "LinAlgError"]
# memory: what symgrad keeps between compiles, and how to drop it (symgrad/caches.py, docs/memory.md)
from .caches import cache_info, clear_caches  # noqa: E402
__all__ += ["cache_info", "clear_caches"]
# v4 assembly: segment reductions and scatters (symgrad/ops/assembly, docs/assembly.md)
from .ops.assembly import *  # noqa: E402,F401,F403
from .ops.assembly import __all__ as _ASSEMBLY  # noqa: E402
from .errors import SegmentIdError  # noqa: E402
__all__ += ["SegmentIdError"] + _ASSEMBLY
# v5 ops: sorting and searching, interpolation, sg.math.top_k, switch_case
# (symgrad/ops/sorting, symgrad/control/switch.py; docs/ops_indexing.md)
from .ops.sorting import *  # noqa: E402,F401,F403
from .ops.sorting import __all__ as _SORTING  # noqa: E402
from . import math  # noqa: E402
from .control.switch import switch_case  # noqa: E402
__all__ += _SORTING + ["math", "switch_case"]
# v4 control flow: loops and branches as single ops (symgrad/control, docs/control_flow.md)
from .control import cond, fori_loop, scan, while_loop  # noqa: E402
__all__ += ["cond", "fori_loop", "scan", "while_loop"]
# v5 batching: tf.vectorized_map, tf.map_fn (symgrad/vectorized_map.py, docs/vectorized_map.md)
from .vectorized_map import map_fn, vectorized_map  # noqa: E402
__all__ += ["map_fn", "vectorized_map"]
# v5 solvers: roots differentiated implicitly (symgrad/solvers, docs/solvers.md)
from .solvers import custom_root, odeint, root  # noqa: E402
from .errors import ConvergenceError  # noqa: E402
__all__ += ["custom_root", "root", "odeint", "ConvergenceError"]


def __getattr__(name: str):
    """``sg.function`` loads the compiler (numba among it) when first used: ``import symgrad``
    stays light (issue 29 item 5; tests/test_import_time.py)."""
    if name == "function":
        from .compile.function import function
        globals()["function"] = function
        return function
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
