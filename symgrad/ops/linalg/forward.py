"""The forward computations of the linear-algebra records, written once for an array module
``xp`` (numpy on the host: LAPACK through numpy/scipy; CuPy on a GPU: cuSOLVER), so the
reference engine, the tape, the compiled cpu steps and the cuda steps run the same code.

A matrix LAPACK cannot factor raises ``sg.LinAlgError`` naming the op (numpy's and
scipy's ``LinAlgError``, and CuPy's under ``cupyx.errstate(linalg="raise")``, which the cuda
steps set).

>>> import numpy as np
>>> cholesky(np, np.array([[4.0, 2.0], [2.0, 5.0]]))
array([[2., 0.],
       [1., 2.]])
>>> triangular_solve(np, np.array([[2.0, 0.0], [1.0, 1.0]]), np.array([[2.0], [3.0]]),
...                  lower=True, adjoint=False)
array([[1.],
       [2.]])
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from ...errors import LinAlgError

__all__ = ["FORWARDS", "cholesky", "triangular_solve", "solve", "inv", "det", "slogdet",
           "eigh", "qr", "adjugate", "adjoint"]


@contextmanager
def lapack_errors(op: str, what: str):
    """numpy's and scipy's LinAlgError as ``sg.LinAlgError`` naming ``sg.linalg.<op>``."""
    try:
        yield
    except np.linalg.LinAlgError as exc:
        raise LinAlgError(f"sg.linalg.{op}: the input matrix is {what} "
                          f"(LAPACK: {exc})") from None


def adjoint(xp, a):
    return xp.swapaxes(a, -1, -2)


def cholesky(xp, a):
    """The lower factor ``L`` with ``L L^T = a`` (only the lower triangle of ``a`` is
    read, as TF and LAPACK do)."""
    with lapack_errors("cholesky", "not positive definite"):
        return xp.linalg.cholesky(a)


def _triangular_host(a, b, lower, adjoint_):
    import scipy.linalg   # LAPACK trtrs; imported on first use (import symgrad stays light)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = np.broadcast_to(a, batch + a.shape[-2:])
    b = np.broadcast_to(b, batch + b.shape[-2:])
    dtype = np.result_type(a.dtype, b.dtype)
    out = np.empty(batch + b.shape[-2:], dtype=dtype)
    for index in np.ndindex(*batch):
        out[index] = scipy.linalg.solve_triangular(
            a[index], b[index], lower=lower, trans="T" if adjoint_ else "N",
            check_finite=False)
    return out


def triangular_solve(xp, a, b, lower, adjoint):
    """``x`` with ``a x = b`` (``a^T x = b`` when ``adjoint``); ``a`` lower (or upper)
    triangular: the other triangle is never read (TF's MatrixTriangularSolve)."""
    with lapack_errors("triangular_solve", "singular (a zero on its diagonal)"):
        if xp is np:
            return _triangular_host(np.asarray(a), np.asarray(b), lower, adjoint)
        t = xp.tril(a) if lower else xp.triu(a)
        return _solve(xp, t, b, adjoint)


def _solve(xp, a, b, adjoint):
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = xp.broadcast_to(a, batch + a.shape[-2:])
    b = xp.broadcast_to(b, batch + b.shape[-2:])
    return xp.linalg.solve(xp.swapaxes(a, -1, -2) if adjoint else a, b)


def solve(xp, a, b, adjoint):
    """``x`` with ``a x = b`` (``a^T x = b`` when ``adjoint``); rhs ``(..., n, k)``."""
    with lapack_errors("solve", "singular"):
        return _solve(xp, a, b, adjoint)


def inv(xp, a):
    with lapack_errors("inv", "singular"):
        return xp.linalg.inv(a)


def det(xp, a):
    return xp.linalg.det(a)


def adjugate(xp, a):
    """The adjugate ``adj(a)`` (``det(a) inv(a)`` where ``a`` is invertible), continuous at
    singular matrices: from the SVD ``a = u diag(s) vh``,
    ``adj(a) = det(u) det(vh) vh^T diag(prod_{j != i} s_j) u^T`` (TF's and JAX's det
    gradient at a singular matrix).

    >>> import numpy as np
    >>> adjugate(np, np.array([[1.0, 2.0], [2.0, 4.0]]))
    array([[ 4., -2.],
           [-2.,  1.]])
    """
    n = a.shape[-1]
    if n == 0:
        return xp.zeros_like(a)
    u, s, vh = xp.linalg.svd(a)
    eye = xp.eye(n, dtype=bool)
    others = xp.where(eye, xp.ones_like(s)[..., None, :], s[..., None, :])   # row i: s, s_i=1
    cof = xp.prod(others, axis=-1)                                          # prod_{j != i}
    sign = xp.linalg.det(u) * xp.linalg.det(vh)
    out = xp.matmul(adjoint(xp, vh) * cof[..., None, :], adjoint(xp, u))
    return (out * sign[..., None, None]).astype(a.dtype, copy=False)


def slogdet(xp, a, index):
    """``(sign, log|det|)[index]``: a singular matrix gives ``(0, -inf)``, as numpy and TF."""
    return xp.linalg.slogdet(a)[index]


def eigh(xp, a, index):
    """``(eigenvalues ascending, eigenvectors as columns)[index]`` of the symmetric matrix
    whose lower triangle ``a`` holds."""
    with lapack_errors("eigh", "not diagonalizable (LAPACK did not converge)"):
        return xp.linalg.eigh(a)[index]


def qr(xp, a, full_matrices, index):
    with lapack_errors("qr", "not factorable (LAPACK failed)"):
        return xp.linalg.qr(a, mode="complete" if full_matrices else "reduced")[index]


FORWARDS = {"cholesky": cholesky, "triangular_solve": triangular_solve, "solve": solve,
            "inv": inv, "det": det, "adjugate": adjugate, "slogdet": slogdet, "eigh": eigh,
            "qr": qr}
"""Each record's forward ``fn(xp, *inputs, **attrs)`` by record name (the records bind the
host form; ``compile/cuda/steps.py`` reads ``records.DEVICE_FORWARDS``, keyed by record)."""
