"""The public index functions: ``sg.getitem`` (``x[...]``), ``sg.gather``, ``sg.argmax``,
``sg.argmin`` and ``sg.one_hot`` (records in ``records.py``).

>>> import numpy as np
>>> import symgrad as sg
>>> sg.one_hot([2, 0], 3).numpy()
array([[0., 0., 1.],
       [1., 0., 0.]])
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ...dtypes import as_dtype
from ..checks import int_indices, rank_of, single_axis
from ..functions import export
from ..opdef import OpDef
from ..registry import apply
from . import records as I

__all__ = [
    "getitem", "gather", "argmax", "argmin", "one_hot",
]


def getitem_grad(g, like, key, name: Optional[str] = None):
    return apply(I.getitem_grad, (g, like), {"key": key}, name)


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
    split = I.split_array_key(items, rank_of(x))
    if split is None:
        return apply(I.getitem, (x,), {"key": normalize_key(key)}, name)
    basic, position, index = split
    basic = normalize_key(basic)
    if any(not (k is Ellipsis or k == slice(None)) for k in basic):
        x = apply(I.getitem, (x,), {"key": basic})
    I.check_constant_index(index, getattr(x, "shape", np.shape(x))[position], position)
    return apply(I.gather, (x, index), {"axis": position, "wrap": True}, name)


def gather(params, indices, axis: int = 0, name: Optional[str] = None):
    """TF's gather: slices of ``params`` along ``axis`` at integer ``indices`` (any shape);
    the result's shape is ``params.shape[:axis] + indices.shape + params.shape[axis+1:]``.

    An index outside ``[0, n)`` (negative included) raises a ValueError naming it when the
    op runs. The gradient scatter-adds into params (duplicates accumulate).

    >>> import symgrad as sg
    >>> sg.gather(np.array([10.0, 20.0, 30.0]), [2, 0, 2]).numpy()
    array([30., 10., 30.])
    """
    axis = single_axis(axis, rank_of(params), "gather")
    return apply(I.gather, (params, int_indices(indices)), {"axis": axis, "wrap": False}, name)


def gather_grad(g, indices, like, axis: int, wrap: bool, name: Optional[str] = None):
    return apply(I.gather_grad, (g, indices, like), {"axis": axis, "wrap": wrap}, name)


def _arg(op: OpDef, doc: str):
    def fn(x, axis: Optional[int] = None, name: Optional[str] = None):
        axis = single_axis(0 if axis is None else axis, rank_of(x), op.name)
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
    return apply(I.one_hot, (int_indices(indices),),
                 {"depth": int(depth), "dtype": as_dtype(dtype, "one_hot")}, name)


export(globals())
