"""The public linear-algebra functions, ``sg.linalg.*`` (TF's ``tf.linalg`` names and
conventions, batched over leading axes; records in ``records.py``).

>>> import numpy as np
>>> import symgrad as sg
>>> a = np.array([[4.0, 2.0], [2.0, 3.0]])
>>> b = np.array([[2.0], [1.0]])
>>> sg.linalg.cholesky_solve(sg.linalg.cholesky(a), b).numpy()
array([[0.5],
       [0. ]])
>>> sign, logdet = sg.linalg.slogdet(a)
>>> float(sign.numpy()), round(float(logdet.numpy()), 6)
(1.0, 2.079442)
"""

from __future__ import annotations

from typing import Optional

from ...errors import ShapeError
from ...shapes import format_shape
from ..checks import rank_of
from ..functions import F
from ...graph.tensor import Tensor
from ..registry import apply, as_tensors
from . import records as R

__all__ = ["cholesky", "cholesky_solve", "triangular_solve", "solve", "inv", "det",
           "slogdet", "eigh", "lstsq", "qr"]


def cholesky(a, name: Optional[str] = None):
    """The lower Cholesky factor ``L`` of a symmetric positive definite ``a`` (only its
    lower triangle is read). Not positive definite: ``sg.LinAlgError``.

    >>> import numpy as np
    >>> import symgrad as sg
    >>> sg.linalg.cholesky(np.array([[4.0, 2.0], [2.0, 5.0]])).numpy()
    array([[2., 0.],
           [1., 2.]])
    """
    return apply(R.cholesky, (a,), None, name)


def triangular_solve(matrix, rhs, lower: bool = True, adjoint: bool = False,
                     name: Optional[str] = None):
    """``x`` with ``matrix @ x = rhs`` (``matrix^T @ x = rhs`` when ``adjoint``) for a
    lower (``lower=True``) or upper triangular ``matrix``; the other triangle is never
    read. rhs ``(..., n, k)``; batch dims broadcast."""
    return apply(R.triangular, (matrix, rhs), {"lower": bool(lower), "adjoint": bool(adjoint)},
                 name)


def cholesky_solve(chol, rhs, name: Optional[str] = None):
    """``x`` with ``(L L^T) x = rhs`` given ``chol = L`` (``tf.linalg.cholesky_solve``): two
    triangular solves."""
    y = triangular_solve(chol, rhs, lower=True, adjoint=False)
    return triangular_solve(chol, y, lower=True, adjoint=True, name=name)


def solve(matrix, rhs, adjoint: bool = False, name: Optional[str] = None):
    """``x`` with ``matrix @ x = rhs`` (LU); singular: ``sg.LinAlgError``."""
    return apply(R.solve_op, (matrix, rhs), {"adjoint": bool(adjoint)}, name)


def inv(a, name: Optional[str] = None):
    """The inverse of a (batch of) square matrices; singular: ``sg.LinAlgError``."""
    return apply(R.inv, (a,), None, name)


def det(a, name: Optional[str] = None):
    """The determinant of a (batch of) square matrices, shape ``a.shape[:-2]``."""
    return apply(R.det, (a,), None, name)


def slogdet(a, name: Optional[str] = None) -> tuple:
    """``(sign, log_abs_det)`` of a (batch of) square matrices (TF's
    ``log_matrix_determinant``); only ``log_abs_det`` carries a gradient."""
    return (apply(R.slogdet, (a,), {"index": 0}, name),
            apply(R.slogdet, (a,), {"index": 1}, name))


def eigh(a, name: Optional[str] = None) -> tuple:
    """``(e, v)``: the eigenvalues (ascending) and eigenvectors (columns) of the symmetric
    matrix whose lower triangle ``a`` holds (``tf.linalg.eigh``). The gradient is TF's:
    only the lower triangle receives it; repeated eigenvalues make the eigenvector
    gradient ill-defined (TF's broadening keeps it finite)."""
    return (apply(R.eigh, (a,), {"index": 0}, name),
            apply(R.eigh, (a,), {"index": 1}, name))


def qr(a, full_matrices: bool = False, name: Optional[str] = None) -> tuple:
    """``(q, r)`` with ``a = q @ r`` (``tf.linalg.qr``; reduced unless
    ``full_matrices``)."""
    attrs = {"full_matrices": bool(full_matrices)}
    return (apply(R.qr, (a,), {**attrs, "index": 0}, name),
            apply(R.qr, (a,), {**attrs, "index": 1}, name))


def _static_dims(matrix, op: str) -> tuple:
    shape = getattr(matrix, "shape", None)
    if rank_of(matrix) < 2:
        raise ShapeError(f"sg.linalg.{op}: matrix must have rank >= 2, got shape "
                         f"{format_shape(tuple(shape or ()))}")
    m, n = tuple(shape)[-2:]
    if m is None or n is None:
        raise ShapeError(f"sg.linalg.{op}: the matrix dims must be static (the method, "
                         f"normal equations of the first or second kind, depends on them); "
                         f"got shape {format_shape(tuple(shape))}")
    return m, n


def lstsq(matrix, rhs, l2_regularizer: float = 0.0, name: Optional[str] = None):
    """Least squares ``argmin ||matrix x - rhs||^2 + l2 ||x||^2`` by the normal equations
    and a Cholesky factor (TF's ``lstsq`` with ``fast=True``): ``(A^T A + l2 I)^{-1} A^T b``
    when rows >= cols, else ``A^T (A A^T + l2 I)^{-1} b`` (the minimum-norm solution).
    The gradient follows the same graph (TF's _MatrixSolveLsGrad is that graph's)."""
    m, n = _static_dims(matrix, "lstsq")
    if isinstance(matrix, Tensor) or isinstance(rhs, Tensor):   # one symbolic: both graph
        matrix, rhs = as_tensors(R.solve_op, (matrix, rhs))
    at = F.matrix_transpose(matrix)
    gram = F.matmul(at, matrix) if m >= n else F.matmul(matrix, at)
    if l2_regularizer:
        gram = gram + F.diag(F.ones_like(F.diag_part(gram))) * float(l2_regularizer)
    chol = cholesky(gram)
    if m >= n:
        return cholesky_solve(chol, F.matmul(at, rhs), name=name)
    return F.matmul(at, cholesky_solve(chol, rhs), name=name)
