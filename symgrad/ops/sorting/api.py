"""The public sorting functions (TF semantics; records in ``records.py``): ``sg.sort``,
``sg.argsort``, ``sg.math.top_k``, ``sg.searchsorted``, and ``sg.interp`` (``interp.py``).

>>> import numpy as np
>>> import symgrad as sg
>>> x = np.array([3.0, 1.0, 3.0, 2.0])
>>> sg.sort(x, direction="DESCENDING").numpy(), sg.argsort(x).numpy()
(array([3., 3., 2., 1.]), array([1, 3, 0, 2], dtype=int32))
>>> values, indices = sg.math.top_k(x, k=2)       # ties: the lower index first (TF)
>>> values.numpy(), indices.numpy()
(array([3., 3.]), array([0, 2], dtype=int32))
>>> sg.searchsorted(np.array([1.0, 2.0, 3.0]), np.array([2.0, 0.5]), side="right").numpy()
array([2, 0], dtype=int32)
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any, Optional

import numpy as np

from ...dtypes import as_dtype
from ..checks import rank_of, single_axis
from ..functions import export
from ..registry import apply
from . import records as S
from .interp import interp

__all__ = ["sort", "argsort", "searchsorted", "interp"]   # top_k: sg.math.top_k

TopK = namedtuple("TopK", ["values", "indices"])
_DIRECTIONS = {"ASCENDING": False, "DESCENDING": True}


def _descending(direction: Any, op: str) -> bool:
    if direction not in _DIRECTIONS:
        raise ValueError(f"sg.{op}: direction must be 'ASCENDING' or 'DESCENDING', got "
                         f"{direction!r}")
    return _DIRECTIONS[direction]


def _axis(values, axis: Any, op: str) -> int:
    rank = rank_of(values)
    if rank == 0:
        what = f" '{values.name}'" if hasattr(values, "name") else ""
        raise ValueError(f"sg.{op}: values{what} must have at least one dimension, got a "
                         "scalar")
    return single_axis(axis, rank, f"sg.{op}")


def sort(values, axis: int = -1, direction: str = "ASCENDING", name: Optional[str] = None):
    """TF's ``tf.sort``: ``values`` sorted along ``axis``. The gradient goes back to where
    each entry came from (ties: the stable order's assignment, as TF's top_k gives)."""
    descending = _descending(direction, "sort")
    return apply(S.sort, (values,), {"axis": _axis(values, axis, "sort"),
                                     "descending": descending}, name)


def argsort(values, axis: int = -1, direction: str = "ASCENDING", stable: bool = False,
            name: Optional[str] = None):
    """TF's ``tf.argsort``: int32 indices that sort ``values`` along ``axis``. Always stable
    (equal entries keep their order; TF's ``stable=False`` allows any). No gradient."""
    descending = _descending(direction, "argsort")
    if not isinstance(stable, (bool, np.bool_)):
        raise TypeError(f"sg.argsort: stable must be a bool, got {stable!r}")
    return apply(S.argsort, (values,), {"axis": _axis(values, axis, "argsort"),
                                        "descending": descending, "k": None}, name)


def top_k(input, k: int = 1, sorted: bool = True, name: Optional[str] = None) -> TopK:
    """TF's ``tf.math.top_k`` (TopKV2): the ``k`` largest entries along the last axis and
    their int32 indices, largest first (ties: lower index first). The gradient of
    ``values`` goes to the indices; ``k`` larger than the axis raises a ShapeError.

    >>> import symgrad as sg
    >>> sg.math.top_k(np.array([[1.0, 5.0, 2.0]]), k=2).indices.numpy()
    array([[1, 2]], dtype=int32)
    """
    if isinstance(k, np.ndarray) and k.ndim == 0:
        k = k.item()
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 0:
        raise ValueError(f"sg.math.top_k: k must be a non-negative Python int, got {k!r}")
    axis = _axis(input, -1, "math.top_k")
    idx = apply(S.argsort, (input,), {"axis": axis, "descending": True, "k": int(k)},
                None if name is None else f"{name}_indices")
    return TopK(take_along_axis(input, idx, axis, name), idx)


def searchsorted(sorted_sequence, values, side: str = "left", out_type: Any = "int32",
                 name: Optional[str] = None):
    """TF's ``tf.searchsorted`` on the last axis: where each of ``values`` would go in
    ``sorted_sequence`` (leading dims equal, TF; or a 1-D sequence for values of any
    shape, numpy's rule). ``side="left"``: before equal entries; ``"right"``: after. No
    gradient."""
    if side not in ("left", "right"):
        raise ValueError(f"sg.searchsorted: side must be 'left' or 'right', got {side!r}")
    dtype = as_dtype(out_type, "searchsorted")
    if dtype not in (np.dtype(np.int32), np.dtype(np.int64)):
        raise ValueError(f"sg.searchsorted: out_type must be int32 or int64, got {dtype.name}")
    return apply(S.searchsorted, (sorted_sequence, values), {"side": side, "out_type": dtype},
                 name)


def take_along_axis(x, idx, axis: int, name: Optional[str] = None):
    return apply(S.take_along_axis, (x, idx), {"axis": axis}, name)


def put_along_axis(g, idx, like, axis: int, name: Optional[str] = None):
    return apply(S.put_along_axis, (g, idx, like), {"axis": axis}, name)


export(globals())
