"""``sg.linalg.norm`` (TF's ``tf.linalg.norm``) and ``sg.linalg.matrix_power`` (JAX's),
composites of existing ops, so their gradients are the chain rule's.

Vector norms (``axis`` None or an int): ``'euclidean'``/2 (``sg.norm``: gradient ``x/|x|``,
and 0 at the zero vector where TF gives nan), 1, ``np.inf`` and any ``p > 0`` (``(sum
|x|^p)^(1/p)``: nan gradient at 0, as TF). Matrix norms (``axis`` a pair): ``'fro'``/
``'euclidean'``, 1 (largest column sum), ``np.inf`` (largest row sum) and 2 (the largest
singular value, ``sqrt`` of the top eigenvalue of ``a^T a`` by ``eigh``: its gradient needs
that eigenvalue to be simple).

>>> import numpy as np
>>> import symgrad as sg
>>> a = np.array([[1.0, -2.0], [3.0, 4.0]])
>>> [float(sg.linalg.norm(a, ord=o, axis=(0, 1)).numpy()) for o in ("fro", 1, np.inf)]
[5.477225575051661, 6.0, 7.0]
>>> sg.linalg.matrix_power(a, 3).numpy()
array([[-35., -30.],
       [ 45.,  10.]])
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ...errors import ShapeError
from ...shapes import format_shape
from ..checks import rank_of
from ..functions import F
from .api import eigh, inv

__all__ = ["norm", "matrix_power"]


def _axes(tensor, axis: Any) -> Optional[tuple]:
    rank = rank_of(tensor)
    if axis is None:
        return None
    items = tuple(axis) if isinstance(axis, (list, tuple)) else (axis,)
    if len(items) not in (1, 2) or not all(
            isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in items):
        raise ValueError(f"sg.linalg.norm: axis must be None, an int or a pair of ints, got "
                         f"{axis!r}")
    out = tuple(int(a) + rank if a < 0 else int(a) for a in items)
    if any(not 0 <= a < rank for a in out) or len(set(out)) != len(out):
        raise ValueError(f"sg.linalg.norm: axis {axis!r} is invalid for a tensor of rank {rank}")
    return out


def _vector(x, ord: Any, axes: tuple):
    if ord in ("euclidean", 2, 2.0):
        return F.norm(x, axis=axes, keepdims=True)
    if ord == 1:
        return F.reduce_sum(F.abs(x), axis=axes, keepdims=True)
    if ord == np.inf:
        return F.reduce_max(F.abs(x), axis=axes, keepdims=True)
    if isinstance(ord, (int, float, np.number)) and not isinstance(ord, bool) and ord > 0:
        return F.reduce_sum(F.abs(x) ** float(ord), axis=axes, keepdims=True) ** (1.0 / ord)
    raise ValueError(f"sg.linalg.norm: ord must be a supported vector norm ('euclidean', 1, "
                     f"2, np.inf or a positive number), got {ord!r}")


def _matrix(x, ord: Any, axes: tuple):
    rows, cols = axes
    if ord in ("fro", "euclidean"):
        return F.norm(x, axis=axes, keepdims=True)
    if ord == 1:
        return F.reduce_max(F.reduce_sum(F.abs(x), axis=rows, keepdims=True), axis=cols,
                            keepdims=True)
    if ord == np.inf:
        return F.reduce_max(F.reduce_sum(F.abs(x), axis=cols, keepdims=True), axis=rows,
                            keepdims=True)
    if ord == 2:
        rank = rank_of(x)
        rest = [d for d in range(rank) if d not in axes]
        m = F.transpose(x, rest + [rows, cols])            # batch of (rows, cols) matrices
        gram = F.matmul(F.matrix_transpose(m), m)
        top = F.getitem(eigh(gram)[0], (Ellipsis, slice(-1, None), None))   # (..., 1, 1)
        inverse = list(np.argsort(rest + [rows, cols]))
        return F.transpose(F.sqrt(top), [int(p) for p in inverse])
    raise ValueError(f"sg.linalg.norm: ord must be a supported matrix norm ('fro', "
                     f"'euclidean', 1, 2 or np.inf), got {ord!r}")


def norm(tensor, ord: Any = "euclidean", axis: Any = None, keepdims: bool = False,
         name: Optional[str] = None):
    """TF's ``tf.linalg.norm``: a vector norm over all entries (``axis=None``) or along an
    int ``axis``, a matrix norm over a pair of axes."""
    axes = _axes(tensor, axis)
    rank = rank_of(tensor)
    if axes is None or len(axes) == 1:
        if ord == "fro":
            raise ValueError("sg.linalg.norm: ord='fro' is a matrix norm: give axis a pair of "
                             "ints (e.g. axis=(-2, -1))")
        axes = tuple(range(rank)) if axes is None else axes
        out = _vector(tensor, ord, axes)
    else:
        out = _matrix(tensor, ord, axes)
    return F.identity(out, name=name) if keepdims else F.squeeze(out, axis=list(axes),
                                                                  name=name)


def matrix_power(a, n: int, name: Optional[str] = None):
    """JAX's ``jnp.linalg.matrix_power``: ``a`` (..., m, m) to the integer power ``n`` by
    repeated squaring (``n = 0``: the identity; ``n < 0``: of ``inv(a)``)."""
    if isinstance(n, np.ndarray) and n.ndim == 0:
        n = n.item()
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(f"sg.linalg.matrix_power: n must be a Python int, got {n!r}")
    shape = tuple(getattr(a, "shape", np.shape(a)))
    if len(shape) < 2 or (shape[-1] is not None and shape[-2] is not None
                          and shape[-1] != shape[-2]):
        raise ShapeError(f"sg.linalg.matrix_power: a must be a (batch of) square matrices "
                         f"(..., m, m), got shape {format_shape(shape)}")
    n = int(n)
    if n == 0:
        return F.diag(F.ones_like(F.diag_part(a)), name=name)
    base, n = (inv(a), -n) if n < 0 else (a, n)
    result = None
    while n:
        if n & 1:
            result = base if result is None else F.matmul(result, base)
        n >>= 1
        if n:
            base = F.matmul(base, base)
    return F.identity(result, name=name)
