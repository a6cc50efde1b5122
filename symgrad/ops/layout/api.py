"""Public layout functions (``sg.transpose``, ``sg.reshape``, ``sg.concat``, ``sg.stack``,
``sg.pad``, ``sg.tril``, ...).

Each checks its arguments (errors name the op and the bad argument), normalises axes
(negative values allowed) and applies one record of ``records.py`` or ``band.py``.

>>> import numpy as np
>>> import symgrad as sg
>>> x = sg.placeholder("x", shape=(None, 2))
>>> sg.concat([x, sg.sin(x)], axis=-1).shape
(None, 4)
>>> [t.shape for t in sg.split(sg.placeholder("y", (6,)), [1, -1, 2])]
[(1,), (3,), (2,)]
>>> sg.pad(np.ones((1, 2)), [[0, 1], [1, 0]]).numpy()
array([[0., 1., 1.],
       [0., 0., 0.]])
"""


from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from ...errors import ShapeError
from ...shapes import format_shape, normalize_axes
from ..checks import rank_of
from ..functions import export
from ..registry import apply
from . import band as B
from . import records as R

__all__ = [
    "transpose", "reshape", "expand_dims", "concat", "stack", "unstack", "split", "squeeze",
    "broadcast_to", "tile", "pad", "reverse", "roll", "tril", "triu", "diag", "diag_part",
    "trace",
]


def transpose(x, perm: Optional[Sequence[int]] = None, name: Optional[str] = None):
    """Permute axes; the default reverses them."""
    rank = rank_of(x)
    if perm is None:
        perm = tuple(reversed(range(rank)))
    else:
        perm = tuple(int(p) % max(rank, 1) for p in perm)
    if sorted(perm) != list(range(rank)):
        raise ShapeError(f"transpose: perm {perm} is not a permutation of {rank} axes")
    return apply(R.transpose, (x,), {"perm": perm}, name)


def matrix_transpose(x, name: Optional[str] = None):
    """Swap the last two axes."""
    return transpose(x, R.matrix_transpose_perm(rank_of(x)), name)


def reshape(x, shape: Sequence[int], name: Optional[str] = None):
    """Reshape; one entry may be -1."""
    shape = (int(shape),) if isinstance(shape, int) else tuple(int(d) for d in shape)
    return apply(R.reshape, (x,), {"shape": shape}, name)


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
    rank = rank_of(x) + len(axis)
    if any(not -rank <= a < rank for a in axis):
        raise ShapeError(f"expand_dims: axis {tuple(axis)} is out of range [{-rank}, "
                         f"{rank - 1}] for an input of rank {rank_of(x)}")
    return apply(R.expand_dims, (x,), {"axes": tuple(sorted(int(a) % rank for a in axis))},
                 name)


def broadcast_like(x, like, name: Optional[str] = None):
    return apply(R.broadcast_like, (x, like), None, name)


def reshape_like(x, like, name: Optional[str] = None):
    return apply(R.reshape_like, (x, like), None, name)


def _shape(x: Any) -> tuple:
    shape = getattr(x, "shape", None)
    return tuple(shape) if shape is not None else np.shape(x)


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _int(value: Any, op: str, what: str) -> int:
    if not _is_int(value):
        raise TypeError(f"{op}: {what} must be an int, got {type(value).__name__} {value!r}")
    return int(value)


def _ints(value: Any, op: str, what: str) -> tuple:
    """An int or a sequence of ints, as a tuple."""
    if _is_int(value):
        return (int(value),)
    if isinstance(value, (list, tuple, np.ndarray)):
        return tuple(_int(v, op, what) for v in value)
    raise TypeError(f"{op}: {what} must be an int or a list of ints, got "
                    f"{type(value).__name__} {value!r}")


def _axis(axis: Any, rank: int, op: str) -> int:
    return normalize_axes(_int(axis, op, "axis"), rank, op)[0]


def _values(values: Any, op: str) -> tuple:
    if not isinstance(values, (list, tuple)) or not values:
        raise TypeError(f"{op}: values must be a non-empty list of tensors, got "
                        f"{type(values).__name__}")
    return tuple(values)


# --- joining and splitting ---------------------------------------------------------------------
def concat(values: Sequence[Any], axis: int, name: Optional[str] = None):
    """Join ``values`` along an existing ``axis`` (TF's concat); the other dims must agree.
    The gradient of each input is its slice of the upstream gradient."""
    values = _values(values, "concat")
    rank = len(_shape(values[0]))
    if rank == 0:
        raise ShapeError("concat: cannot concatenate scalars (rank 0); use sg.stack")
    return apply(R.concat, values, {"axis": _axis(axis, rank, "concat")}, name)


def concat_part(g, values: Sequence[Any], axis: int, index: int, name: Optional[str] = None):
    return apply(R.concat_part, (g,) + tuple(values),
                 {"axis": axis, "index": index}, name)


def stack(values: Sequence[Any], axis: int = 0, name: Optional[str] = None):
    """Join ``values`` (equal shapes) along a new ``axis`` in ``[-rank-1, rank]``."""
    values = _values(values, "stack")
    rank = len(_shape(values[0])) + 1
    return apply(R.stack, values, {"axis": _axis(axis, rank, "stack")}, name)


def unstack(x, axis: int = 0, name: Optional[str] = None) -> list:
    """The slices of ``x`` along ``axis``, as a list; the length must be static."""
    shape = _shape(x)
    axis = _axis(axis, len(shape), "unstack")
    n = shape[axis]
    if n is None:
        raise ShapeError(f"unstack: cannot infer the number of pieces: axis {axis} of shape "
                         f"{format_shape(shape)} has an unknown length")
    return [apply(R.unstack, (x,), {"axis": axis, "index": k}, name)
            for k in range(n)]


def split(x, num_or_size_splits: Any, axis: int = 0, name: Optional[str] = None) -> list:
    """TF's split: an int n (n equal pieces) or a list of sizes (one may be -1)."""
    shape = _shape(x)
    axis = _axis(axis, len(shape), "split")
    if _is_int(num_or_size_splits):
        num, sizes, count = int(num_or_size_splits), None, int(num_or_size_splits)
        if num < 1:
            raise ValueError(f"split: num_or_size_splits must be >= 1, got {num}")
    else:
        num, sizes = None, _ints(num_or_size_splits, "split", "num_or_size_splits")
        count = len(sizes)
        if not sizes or sum(s == -1 for s in sizes) > 1 or min(sizes) < -1:
            raise ValueError(f"split: size_splits {sizes} must be non-negative sizes with at "
                             "most one -1")
    if shape[axis] is not None:
        R.split_bounds(shape[axis], num, sizes)  # ShapeError now, not when run
    return [apply(R.split, (x,), {"axis": axis, "num": num, "sizes": sizes,
                                          "index": k}, name) for k in range(count)]


# --- shape changes ------------------------------------------------------------------------------
def squeeze(x, axis: Any = None, name: Optional[str] = None):
    """Remove length-1 axes: all known ones (None), or those in ``axis`` (each must have
    length 1; an unknown length is checked when the op runs)."""
    shape = _shape(x)
    if axis is None:
        axes = tuple(a for a, d in enumerate(shape) if d == 1)
    else:
        axes = normalize_axes(_ints(axis, "squeeze", "axis"), len(shape), "squeeze")
        bad = [a for a in axes if shape[a] not in (1, None)]
        if bad:
            raise ShapeError(f"squeeze: axis {bad[0]} of shape {format_shape(shape)} has "
                             f"length {shape[bad[0]]}, not 1")
    return apply(R.squeeze, (x,), {"axes": axes}, name)


def broadcast_to(x, shape: Sequence[int], name: Optional[str] = None):
    """``x`` broadcast (numpy rules) to the static ``shape``; the gradient sums back."""
    shape = _ints(shape, "broadcast_to", "shape")
    if any(d < 0 for d in shape):
        raise ValueError(f"broadcast_to: shape {shape} has a negative dimension")
    return apply(R.broadcast_to, (x,), {"shape": shape}, name)


def tile(x, multiples: Sequence[int], name: Optional[str] = None):
    """Repeat ``x`` ``multiples[i]`` times along axis i (one multiple per axis, as TF)."""
    multiples = _ints(multiples, "tile", "multiples")
    rank = len(_shape(x))
    if len(multiples) != rank or any(m < 0 for m in multiples):
        raise ValueError(f"tile: multiples {multiples} must be {rank} non-negative ints (one "
                         f"per axis of shape {format_shape(_shape(x))})")
    return apply(R.tile, (x,), {"multiples": multiples}, name)


def tile_grad(g, like, multiples: tuple, name: Optional[str] = None):
    return apply(R.tile_grad, (g, like), {"multiples": multiples}, name)


def pad(x, paddings: Any, constant_values: Any = 0, name: Optional[str] = None):
    """Constant padding: ``paddings[i] = [before, after]`` for axis i."""
    rank = len(_shape(x))
    try:
        pairs = tuple((int(lo), int(hi)) for lo, hi in np.asarray(paddings).tolist())
    except (TypeError, ValueError):
        pairs = None
    if pairs is None or len(pairs) != rank or any(v < 0 for p in pairs for v in p):
        raise ValueError(f"pad: paddings must be {rank} pairs of non-negative ints (one per "
                         f"axis of shape {format_shape(_shape(x))}), got {paddings!r}")
    if not isinstance(constant_values, (int, float, np.number)) or \
            isinstance(constant_values, bool):
        raise TypeError(f"pad: constant_values must be a number, got {constant_values!r}")
    return apply(R.pad, (x,), {"paddings": pairs, "constant_values": constant_values},
                 name)


def reverse(x, axis: Any, name: Optional[str] = None):
    """Reverse the order of entries along ``axis`` (an int or a tuple)."""
    axes = normalize_axes(_ints(axis, "reverse", "axis"), len(_shape(x)), "reverse")
    return apply(R.reverse, (x,), {"axes": axes}, name)


def roll(x, shift: Any, axis: Any, name: Optional[str] = None):
    """``np.roll``: shift entries along ``axis`` (ints, or equal-length lists)."""
    shifts, axes = _ints(shift, "roll", "shift"), _ints(axis, "roll", "axis")
    if len(shifts) != len(axes):
        raise ValueError(f"roll: shift {shift!r} and axis {axis!r} must have the same length")
    rank = len(_shape(x))
    axes = tuple(normalize_axes(a, rank, "roll")[0] for a in axes)
    return apply(R.roll, (x,), {"shifts": shifts, "axes": axes}, name)


# --- matrices (last two axes) -------------------------------------------------------------------
def tril(x, k: int = 0, name: Optional[str] = None):
    """Zero the entries above the k-th diagonal of the last two axes."""
    return apply(B.tril, (x,), {"k": _int(k, "tril", "k")}, name)


def triu(x, k: int = 0, name: Optional[str] = None):
    """Zero the entries below the k-th diagonal of the last two axes."""
    return apply(B.triu, (x,), {"k": _int(k, "triu", "k")}, name)


def diag(v, name: Optional[str] = None):
    """``tf.linalg.diag``: a (batch of) vector(s) ``(..., n)`` to diagonal matrices
    ``(..., n, n)``."""
    return apply(B.diag, (v,), None, name)


def diag_part(x, name: Optional[str] = None):
    """``tf.linalg.diag_part``: the main diagonal of the last two axes (batched)."""
    return apply(B.diag_part, (x,), None, name)


def diag_fill(g, like, name: Optional[str] = None):
    return apply(B.diag_fill, (g, like), None, name)


def trace(x, name: Optional[str] = None):
    """Sum of the main diagonal of the last two axes (batched, ``tf.linalg.trace``)."""
    return apply(B.trace, (x,), None, name)


export(globals())
