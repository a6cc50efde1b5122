"""Every deliberate error class of symgrad, each a subclass of the builtin the API promises."""

from __future__ import annotations

from numpy import linalg as _np_linalg


class SymgradError(Exception):
    """Base class of symgrad's own errors."""


class ShapeError(SymgradError, ValueError):
    """Incompatible shapes when a graph is built, fed or called."""


class DTypeError(SymgradError, TypeError):
    """An unsupported dtype or a dtype that does not match what was expected."""


class FeedError(SymgradError, ValueError):
    """A placeholder is missing from a feed, or fed a value of the wrong shape or dtype."""


class GraphError(SymgradError, ValueError):
    """A malformed graph: duplicate placeholder names, mixed symbolic and eager values."""


class UnconnectedGradientError(SymgradError, ValueError):
    """Raised by ``unconnected_gradients='raise'`` when an x does not influence any y."""


class NoGradientError(SymgradError, LookupError):
    """An op on the path from ys to xs has no derivative."""


class CompileError(SymgradError, RuntimeError):
    """numba could not compile generated code (shows the generated line and its op)."""


class TapeError(SymgradError, RuntimeError):
    """Misuse of a GradientTape (for example a second call on a non-persistent tape)."""


class EagerMixError(SymgradError, TypeError):
    """An eager value (Variable, eager tensor) was mixed with a symbolic Tensor."""


class IndexRangeError(SymgradError, IndexError):
    """Integer-array indexing ``x[idx]`` with an index out of bounds (numpy's IndexError)."""


class LinAlgError(SymgradError, _np_linalg.LinAlgError):
    """A linear-algebra op met a matrix it cannot factor: not positive definite
    (``sg.linalg.cholesky``) or singular (``solve``, ``inv``, ``triangular_solve``). Also a
    ``numpy.linalg.LinAlgError`` (so a ValueError), as numpy and TF's
    InvalidArgumentError are caught by callers."""


class GatherIndexError(SymgradError, ValueError):
    """``sg.gather`` with an index outside ``[0, n)`` (TF's InvalidArgumentError)."""


class CacheWarning(UserWarning):
    """The module cache could not be used as asked (unwritable, unsafe, corrupted): symgrad
    compiled in memory or without numba's cache, and the result is still right."""


# --- dask (symgrad.distributed) ----------------------------------------------------------
class ChunkError(SymgradError, ValueError):
    """A compiled function cannot run chunk by chunk on dask arrays (a node needs the whole
    batch axis at once, or the batch inputs are chunked differently)."""


# --- introspection and interop (issue 20) -------------------------------------------------
class NoFormulaError(SymgradError, ValueError):
    """``sg.to_sympy`` of a tensor that depends on an op with no index formula (matmul,
    gather, a non-scalar constant, ...): its element is not a formula of placeholder
    elements that symgrad can write, so none is shown."""


class FallbackWarning(UserWarning):
    """A compiled function ran a call with the numpy reference interpreter instead of its
    kernels (slower, same values); the message says why. Warned once per function."""


class ArgumentError(SymgradError, TypeError):
    """A compiled function called with the wrong number of arguments or an unknown
    keyword, or a placeholder fed a value that is not array data (None, a dict, a
    string). Wrong dtypes and shapes of array data are ``FeedError`` (ValueError)."""


# --- assembly (symgrad/ops/assembly) ------------------------------------------------------
class SegmentIdError(SymgradError, ValueError):
    """A segment id or a scatter/gather index outside the output (TF's InvalidArgumentError):
    raised before anything is written, on every engine."""


# --- solvers (symgrad/solvers) ------------------------------------------------------------
class ConvergenceError(SymgradError, RuntimeError):
    """An iterative solve (``sg.root``) stopped without meeting its tolerance: the message
    names the API, the residual norm, the tolerance and the iterations taken."""
