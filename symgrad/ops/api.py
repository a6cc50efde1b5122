"""The public op functions (``sg.sin``, ``sg.reduce_sum``, ...).

Each one applies an op record: on symbolic Tensors it builds a node, on eager values
(``sg.Variable``, numpy arrays) it computes at once.

>>> import symgrad as sg
>>> x = sg.placeholder("x", shape=(3,))
>>> y = sg.reduce_sum(sg.where(x > 0, sg.log(x), 0.0))
>>> y.shape, y.op.name
((), 'reduce_sum')
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from ..dtypes import as_dtype, is_bool
from ..errors import DTypeError, ShapeError
from ..shapes import normalize_axes
from . import elementwise as E
from . import contraction as C
from . import indexing as I
from . import scan as SC
from . import structural as S
from .registry import OpDef, apply


def _rank(x: Any) -> int:
    shape = getattr(x, "shape", None)
    return len(shape) if shape is not None else np.ndim(x)


def _dtype(x: Any) -> np.dtype:
    dt = getattr(x, "dtype", None)
    return np.dtype(dt) if dt is not None else np.asarray(x).dtype


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
    if not isinstance(condition, bool) and not is_bool(_dtype(condition)):
        raise DTypeError(f"where: condition must be bool, got {_dtype(condition).name}; "
                         "compare first, e.g. sg.where(x > 0, a, b)")
    return apply(E.where, (condition, x, y), None, name)


# --- reductions -----------------------------------------------------------------------------
def _reduction(op: OpDef, doc: str):
    def fn(x, axis: int | Sequence[int] | None = None, keepdims: bool = False,
           name: Optional[str] = None):
        axes = normalize_axes(axis, _rank(x), op.name)
        return apply(op, (x,), {"axes": axes, "keepdims": bool(keepdims)}, name)
    fn.__name__ = fn.__qualname__ = op.name
    fn.__doc__ = doc
    return fn


reduce_sum = _reduction(S.reduce_sum, "Sum over ``axis`` (None: all axes).")
reduce_mean = _reduction(S.reduce_mean, "Mean over ``axis`` (None: all axes).")
reduce_prod = _reduction(S.reduce_prod, "Product over ``axis``; exact gradient at zeros.")
reduce_max = _reduction(S.reduce_max, "Max over ``axis``; ties share the gradient evenly.")
reduce_min = _reduction(S.reduce_min, "Min over ``axis``; ties share the gradient evenly.")


# --- structure --------------------------------------------------------------------------------
def matmul(a, b, name: Optional[str] = None):
    """Matrix product with ``np.matmul`` semantics (1-D operands, broadcast batch dims)."""
    return apply(S.matmul, (a, b), None, name)


def transpose(x, perm: Optional[Sequence[int]] = None, name: Optional[str] = None):
    """Permute axes; the default reverses them."""
    rank = _rank(x)
    if perm is None:
        perm = tuple(reversed(range(rank)))
    else:
        perm = tuple(int(p) % max(rank, 1) for p in perm)
    if sorted(perm) != list(range(rank)):
        raise ShapeError(f"transpose: perm {perm} is not a permutation of {rank} axes")
    return apply(S.transpose, (x,), {"perm": perm}, name)


def matrix_transpose(x, name: Optional[str] = None):
    """Swap the last two axes."""
    return transpose(x, S.matrix_transpose_perm(_rank(x)), name)


def reshape(x, shape: Sequence[int], name: Optional[str] = None):
    """Reshape; one entry may be -1."""
    shape = (int(shape),) if isinstance(shape, int) else tuple(int(d) for d in shape)
    return apply(S.reshape, (x,), {"shape": shape}, name)


def cast(x, dtype: Any, name: Optional[str] = None):
    """Convert to ``dtype``; gradients pass only between floating dtypes (TF)."""
    return apply(S.cast, (x,), {"dtype": as_dtype(dtype, "cast")}, name)


def expand_dims(x, axis: int | Sequence[int], name: Optional[str] = None):
    """Insert a length-1 axis at ``axis`` (in ``[-rank-1, rank]``; a sequence inserts
    several, as positions in the result).

    >>> import symgrad as sg
    >>> sg.expand_dims(sg.placeholder("x", (2, None)), -1).shape
    (2, None, 1)
    """
    if isinstance(axis, (int, np.integer)) and not isinstance(axis, bool):
        axis = (int(axis),)
    elif not isinstance(axis, (list, tuple)) or \
            not all(isinstance(a, (int, np.integer)) for a in axis):
        raise TypeError(f"expand_dims: axis must be an int, got {axis!r}")
    rank = _rank(x) + len(axis)
    if any(not -rank <= a < rank for a in axis):
        raise ShapeError(f"expand_dims: axis {tuple(axis)} is out of range [{-rank}, "
                         f"{rank - 1}] for an input of rank {_rank(x)}")
    return apply(S.expand_dims, (x,), {"axes": tuple(sorted(int(a) % rank for a in axis))},
                 name)


def broadcast_like(x, like, name: Optional[str] = None):
    return apply(S.broadcast_like, (x, like), None, name)


def unbroadcast(g, like, name: Optional[str] = None):
    return apply(S.unbroadcast, (g, like), None, name)


def unbroadcast_any(mask, g, like, name: Optional[str] = None):
    return apply(S.unbroadcast_any, (mask, g, like), None, name)


def reshape_like(x, like, name: Optional[str] = None):
    return apply(S.reshape_like, (x, like), None, name)


def axis_size(x, axes, dtype, name: Optional[str] = None):
    return apply(S.axis_size, (x,), {"axes": tuple(axes), "dtype": as_dtype(dtype)}, name)


def prod_others(x, axes, name: Optional[str] = None):
    return apply(S.prod_others, (x,), {"axes": tuple(axes)}, name)


def getitem_grad(g, like, key, name: Optional[str] = None):
    return apply(S.getitem_grad, (g, like), {"key": key}, name)


def normalize_key(key: Any) -> tuple:
    """A basic-indexing key as a tuple of ints, slices, None and Ellipsis."""
    items = key if isinstance(key, tuple) else (key,)
    out = []
    for k in items:
        if k is None or k is Ellipsis:
            out.append(k)
        elif isinstance(k, slice):
            parts = (k.start, k.stop, k.step)
            if not all(p is None or isinstance(p, (int, np.integer)) for p in parts):
                raise TypeError(f"getitem: slice {k} must have int or None bounds")
            if k.step == 0:
                raise ValueError("getitem: slice step cannot be zero")
            out.append(slice(*(None if p is None else int(p) for p in parts)))
        elif isinstance(k, (int, np.integer)) and not isinstance(k, bool):
            out.append(int(k))
        else:
            raise TypeError(f"getitem: only basic indexing (ints, slices, None, ...) is "
                            f"supported, got {type(k).__name__}")
    if sum(k is Ellipsis for k in out) > 1:
        raise ValueError("getitem: an index can only have a single ellipsis ('...')")
    return tuple(out)


def getitem(x, key, name: Optional[str] = None):
    """Basic indexing (``x[1:]``, ``x[:, 0]``, ``P[:, None, :]``) and one integer array
    (``x[idx]``, ``x[:, idx]``: numpy's rules, negative indices wrap)."""
    items = key if isinstance(key, tuple) else (key,)
    split = I.split_array_key(items, _rank(x))
    if split is None:
        return apply(S.getitem, (x,), {"key": normalize_key(key)}, name)
    basic, position, index = split
    basic = normalize_key(basic)
    if any(not (k is Ellipsis or k == slice(None)) for k in basic):
        x = apply(S.getitem, (x,), {"key": basic})
    I.check_constant_index(index, getattr(x, "shape", np.shape(x))[position], position)
    return apply(I.gather, (x, index), {"axis": position, "wrap": True}, name)


def expr(inputs: Sequence[Any], expression, dtype: Any, name: Optional[str] = None):
    """A node computing a sympy ``expression`` of positional symbols over ``inputs``."""
    return apply(E.expr, tuple(inputs), {"expr": expression, "dtype": as_dtype(dtype)}, name)


# --- index, scan and contraction ops (symgrad/ops/indexing.py, scan.py, contraction.py) ------
def _axis(axis, rank: int, op: str) -> int:
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"{op}: axis must be an int, got {type(axis).__name__}")
    return normalize_axes(int(axis), rank, op)[0]


def _int_indices(indices):
    """Python ints and lists stay integers (a bare literal would take its partner's dtype)."""
    if isinstance(indices, (list, tuple, int, np.integer)) and not isinstance(indices, bool):
        array = np.asarray(indices)
        return array.astype(np.int64) if array.size == 0 else array
    return indices


def gather(params, indices, axis: int = 0, name: Optional[str] = None):
    """TF's gather: slices of ``params`` along ``axis`` at integer ``indices`` (any shape);
    the result's shape is ``params.shape[:axis] + indices.shape + params.shape[axis+1:]``.

    An index outside ``[0, n)`` (negative included) raises a ValueError naming it when the
    op runs. The gradient scatter-adds into params (duplicates accumulate).

    >>> import symgrad as sg
    >>> sg.gather(np.array([10.0, 20.0, 30.0]), [2, 0, 2]).numpy()
    array([30., 10., 30.])
    """
    axis = _axis(axis, _rank(params), "gather")
    return apply(I.gather, (params, _int_indices(indices)), {"axis": axis, "wrap": False}, name)


def gather_grad(g, indices, like, axis: int, wrap: bool, name: Optional[str] = None):
    return apply(I.gather_grad, (g, indices, like), {"axis": axis, "wrap": wrap}, name)


def _arg(op: OpDef, doc: str):
    def fn(x, axis: Optional[int] = None, name: Optional[str] = None):
        axis = _axis(0 if axis is None else axis, _rank(x), op.name)
        return apply(op, (x,), {"axis": axis}, name)
    fn.__name__ = fn.__qualname__ = op.name
    fn.__doc__ = doc
    return fn


argmax = _arg(I.argmax, "Index (int64) of the largest entry along ``axis`` (None: 0, as TF); "
                        "never differentiated.")
argmin = _arg(I.argmin, "Index (int64) of the smallest entry along ``axis`` (None: 0, as TF); "
                        "never differentiated.")


def one_hot(indices, depth: int, dtype: Any = "float64", name: Optional[str] = None):
    """``indices[..., None] == arange(depth)`` as ``dtype``; an index outside
    ``[0, depth)`` gives a row of zeros (TF). Integer indices only (TypeError otherwise).

    >>> import symgrad as sg
    >>> sg.one_hot(np.array([2, 0]), 3).numpy()
    array([[0., 0., 1.],
           [1., 0., 0.]])
    """
    if not isinstance(depth, (int, np.integer)) or isinstance(depth, bool) or depth < 0:
        raise ValueError(f"one_hot: depth must be a non-negative int, got {depth!r}")
    return apply(I.one_hot, (_int_indices(indices),),
                 {"depth": int(depth), "dtype": as_dtype(dtype, "one_hot")}, name)


def _scan(op: OpDef, doc: str):
    def fn(x, axis: int = 0, exclusive: bool = False, reverse: bool = False,
           name: Optional[str] = None):
        attrs = {"axis": _axis(axis, _rank(x), op.name), "exclusive": bool(exclusive),
                 "reverse": bool(reverse)}
        return apply(op, (x,), attrs, name)
    fn.__name__ = fn.__qualname__ = op.name
    fn.__doc__ = doc
    return fn


cumsum = _scan(SC.cumsum, "Cumulative sum along ``axis`` (TF's exclusive/reverse options).")
cumprod = _scan(SC.cumprod, "Cumulative product along ``axis`` (TF's options); its gradient "
                            "is exact at entries equal to 0 (TF's gives 0 there).")


def shift(x, axis: int, step: int, name: Optional[str] = None):
    return apply(SC.shift, (x,), {"axis": axis, "step": int(step)}, name)


def linrec(a, b, axis: int, reverse: bool = False, name: Optional[str] = None):
    return apply(SC.linrec, (a, b), {"axis": axis, "reverse": bool(reverse)}, name)


def einsum(subscripts: str, *operands, name: Optional[str] = None):
    """Einstein summation over explicit subscripts (no ellipsis), numpy's rules.

    >>> import symgrad as sg
    >>> sg.einsum("ij,j->i", np.eye(2), np.array([3.0, 4.0])).numpy()
    array([3., 4.])
    """
    if not operands:
        raise ValueError("einsum: at least one operand is required")
    C.parse_subscripts(subscripts, [_rank(o) for o in operands])
    return apply(C.einsum, operands, {"subscripts": subscripts.replace(" ", "")}, name)


def einsum_mask(like, subscripts: str, name: Optional[str] = None):
    return apply(C.einsum_mask, (like,), {"subscripts": subscripts}, name)


def _tensordot_axes(axes, rank_a: int, rank_b: int) -> tuple:
    if isinstance(axes, (int, np.integer)) and not isinstance(axes, bool):
        n = int(axes)
        if not 0 <= n <= min(rank_a, rank_b):
            raise ValueError(f"tensordot: axes={n} must be in [0, {min(rank_a, rank_b)}] for "
                             f"operands of ranks {rank_a} and {rank_b}")
        return tuple(range(rank_a - n, rank_a)), tuple(range(n))
    try:
        a_axes, b_axes = axes
    except (TypeError, ValueError):
        raise ValueError(f"tensordot: axes must be an int or a pair of axis lists, "
                         f"got {axes!r}") from None
    a_axes = (a_axes,) if isinstance(a_axes, (int, np.integer)) else tuple(a_axes)
    b_axes = (b_axes,) if isinstance(b_axes, (int, np.integer)) else tuple(b_axes)
    if len(a_axes) != len(b_axes):
        raise ValueError(f"tensordot: axes {axes!r} name {len(a_axes)} axes of a but "
                         f"{len(b_axes)} of b")
    norm_a = [normalize_axes(int(a), rank_a, "tensordot")[0] for a in a_axes]
    norm_b = [normalize_axes(int(b), rank_b, "tensordot")[0] for b in b_axes]
    if len(set(norm_a)) != len(norm_a) or len(set(norm_b)) != len(norm_b):
        raise ValueError(f"tensordot: axes {axes!r} repeat an axis")
    return tuple(norm_a), tuple(norm_b)


def tensordot(a, b, axes, name: Optional[str] = None):
    """Sum of products over ``axes`` (an int n: the last n of a with the first n of b; or
    a pair of axis lists), ``np.tensordot``'s result layout.

    >>> import symgrad as sg
    >>> sg.tensordot(np.ones((2, 3)), np.ones((3, 4)), 1).shape
    (2, 4)
    """
    axes = _tensordot_axes(axes, _rank(a), _rank(b))
    return apply(C.tensordot, (a, b), {"axes": axes}, name)
