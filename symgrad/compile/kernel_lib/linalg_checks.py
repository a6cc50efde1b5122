"""The checks a scalar kernel's small linear algebra makes (``compile/scalar/
linalg_elements.py``): each passes its value through, or raises ``sg.LinAlgError`` with the
message of the numpy path (``ops/linalg/forward.py``), as LAPACK would refuse the matrix.

Only generated scalar kernels import this module (numba is imported here, not by
``import symgrad``); ``compile/cache/helpers.py`` gives the checks numba's sealed cache.
"""

from __future__ import annotations

import numba

from ...errors import LinAlgError

SOLVE = "sg.linalg.solve: the input matrix is singular (a zero pivot)"
INV = "sg.linalg.inv: the input matrix is singular (a zero pivot)"
TRIANGULAR = "sg.linalg.triangular_solve: the input matrix is singular (a zero on its diagonal)"
CHOLESKY = "sg.linalg.cholesky: the input matrix is not positive definite"
MESSAGES = {"solve_pivot_": SOLVE, "inv_pivot_": INV, "triangular_pivot_": TRIANGULAR,
            "cholesky_pivot_": CHOLESKY}
"""Each check's message (a scalar body written as LLVM IR raises it: ``codegen/llvm``)."""


@numba.njit(cache=False, error_model="numpy", nogil=True)
def solve_pivot_(p):
    """A pivot of ``solve``'s LU (after partial pivoting): 0 means singular (LAPACK getrf)."""
    if p == 0.0:
        raise LinAlgError(SOLVE)
    return p


@numba.njit(cache=False, error_model="numpy", nogil=True)
def inv_pivot_(p):
    if p == 0.0:
        raise LinAlgError(INV)
    return p


@numba.njit(cache=False, error_model="numpy", nogil=True)
def triangular_pivot_(p):
    if p == 0.0:
        raise LinAlgError(TRIANGULAR)
    return p


@numba.njit(cache=False, error_model="numpy", nogil=True)
def cholesky_pivot_(d):
    """``d = a_jj - sum_k L_jk^2`` before its square root: not positive (or NaN) is not
    positive definite (LAPACK potrf)."""
    if not d > 0.0:
        raise LinAlgError(CHOLESKY)
    return d
