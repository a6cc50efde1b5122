"""``sg.linalg.svd``, ``expm``, ``lu``, ``lu_solve`` and ``pinv`` (TF's names and
conventions, batched over leading axes; records in ``decompositions_v5.py``). ``lu_solve``
and ``pinv`` are composites (a permutation, two triangular solves; an SVD), so their
gradients are the chain rule's.

>>> import numpy as np
>>> import symgrad as sg
>>> a = np.array([[3.0, 0.0], [0.0, -2.0]])
>>> s, u, v = sg.linalg.svd(a)
>>> s.numpy()
array([3., 2.])
>>> np.allclose(sg.linalg.expm(np.zeros((2, 2))).numpy(), np.eye(2))
True
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ...errors import ShapeError
from ...graph.tensor import Tensor
from ...shapes import format_shape
from ..functions import F
from ..registry import apply, as_tensors
from . import decompositions_v5 as D
from .api import triangular_solve

__all__ = ["svd", "expm", "lu", "lu_solve", "pinv"]


def svd(a, full_matrices: bool = False, compute_uv: bool = True, name: Optional[str] = None):
    """TF's ``tf.linalg.svd``: ``(s, u, v)`` with ``a = u diag(s) v^T`` (``v``, not
    ``v^H``; ``s`` descending), or ``s`` alone when ``compute_uv=False``. The gradient is
    TF's (static matrix dims); at repeated singular values the u/v part uses the safe
    reciprocal of ``eigh`` (finite, where TF's is inf/NaN)."""
    attrs = {"full_matrices": bool(full_matrices), "compute_uv": bool(compute_uv)}
    if not compute_uv:
        return apply(D.svd, (a,), {**attrs, "full_matrices": False, "index": 0}, name)
    return tuple(apply(D.svd, (a,), {**attrs, "index": k}, name) for k in range(3))


def expm(a, name: Optional[str] = None):
    """The matrix exponential of a (batch of) square matrices (``tf.linalg.expm``; Padé
    scaling-and-squaring as scipy's). Gradient: the Fréchet derivative ``L(a^T, g)``."""
    return apply(D.expm, (a,), None, name)


def lu(a, name: Optional[str] = None) -> tuple:
    """TF's ``tf.linalg.lu``: ``(lu, p)``, the packed factors (unit lower ``L`` strictly
    below the diagonal, ``U`` on and above) and the int32 permutation with
    ``a[..., p, :] = L @ U``. The gradient of ``lu`` is TF's ``_LuGrad``."""
    return apply(D.lu, (a,), {"index": 0}, name), apply(D.lu, (a,), {"index": 1}, name)


def _matrix_dim(x, op: str, axis: int = -1):
    shape = tuple(getattr(x, "shape", np.shape(x)))
    if len(shape) < 2:
        raise ShapeError(f"sg.linalg.{op}: expected a (batch of) matrices of rank >= 2, got "
                         f"shape {format_shape(shape)}")
    return shape[axis]


def lu_solve(lower_upper, perm, rhs, name: Optional[str] = None):
    """TF's ``tf.linalg.lu_solve``: ``x`` with ``a x = rhs`` from ``lu(a)``: the rows of
    ``rhs`` permuted, then two triangular solves (the unit lower, the upper factor)."""
    n = _matrix_dim(lower_upper, "lu_solve")
    if n is None:
        raise ShapeError("sg.linalg.lu_solve: the matrix dims must be static (the "
                         f"permutation's depth), got {format_shape(lower_upper.shape)}")
    if any(isinstance(x, Tensor) for x in (lower_upper, perm, rhs)):   # one symbolic: all
        lower_upper, perm, rhs = as_tensors(D.lu, (lower_upper, perm, rhs))
    l, _ = D.unpack(lower_upper)
    p = D.permutation_matrix(perm, n, lower_upper.dtype)
    y = triangular_solve(l, F.matmul(p, rhs), lower=True)
    return triangular_solve(lower_upper, y, lower=False, name=name)


def pinv(a, rcond=None, name: Optional[str] = None):
    """TF's ``tf.linalg.pinv``: the Moore-Penrose pseudo-inverse by an SVD; singular values
    at most ``rcond * max(s)`` count as zero (default ``rcond`` ``10 * max(m, n) * eps``)."""
    m, n = _matrix_dim(a, "pinv", -2), _matrix_dim(a, "pinv", -1)
    if rcond is None:
        if m is None or n is None:
            raise ShapeError("sg.linalg.pinv: the default rcond needs static matrix dims, got "
                             f"{format_shape(a.shape)}; pass rcond")
        dtype = np.dtype(a.dtype if hasattr(a, "dtype") else np.asarray(a).dtype)
        rcond = 10.0 * max(m, n) * float(np.finfo(dtype if dtype.kind == "f"
                                                  else np.float64).eps)
    s, u, v = svd(a, full_matrices=False)
    cutoff = rcond * F.reduce_max(s, axis=-1, keepdims=True)
    kept = F.where(s > cutoff, s, F.ones_like(s) * np.inf)
    return F.matmul(v / F.expand_dims(kept, (kept.ndim - 1,)), F.matrix_transpose(u),
                    name=name)
