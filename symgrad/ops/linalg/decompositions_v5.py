"""Records of ``svd``, ``expm`` and ``lu`` (``tf.linalg``), batched over leading axes, with
TensorFlow's gradients written with symgrad ops (so second order and the tape work), and
their forwards written once for an array module ``xp`` (numpy/scipy LAPACK on the host,
CuPy on a GPU; the cuda steps read ``DEVICE_FORWARDS``).

* ``svd``: one node per output (``index`` 0: s, 1: u, 2: v; v, not v^H, as TF). The vjp is
  TF's ``_SvdGrad``: the F-matrix ``1/(s_j^2 - s_i^2)`` through the same safe reciprocal as
  ``eigh``'s (TF's Lorentz broadening, ``x / (x^2 + 1e-20)``): at repeated singular values
  the u/v gradient stays finite (the ill-defined term is dropped) where TF's is inf/NaN.
* ``expm``: scipy's Padé scaling-and-squaring; the vjp is the Fréchet derivative
  ``L(A^T, G)``, the upper-right block of ``expm([[A^T, G], [0, A^T]])`` (exact).
* ``lu``: ``(lu, perm)``, the packed factors (unit lower L below the diagonal, U on and
  above) and the int32 row permutation with ``a[..., perm, :] = L U`` (TF's); the vjp is
  TF's ``_LuGrad`` (square matrices, as TF's ``Lu`` op).

>>> import numpy as np
>>> a = np.array([[1.0, 2.0], [3.0, 4.0]])
>>> packed, perm = lu_forward(np, a, 0), lu_forward(np, a, 1)
>>> perm
array([1, 0], dtype=int32)
>>> l, u = np.tril(packed, -1) + np.eye(2), np.triu(packed)
>>> np.allclose(l @ u, a[perm])
True
"""

from __future__ import annotations

import warnings
from functools import partial

import numpy as np

from ...errors import NoGradientError
from ...shapes import format_shape
from ..functions import F
from ..opdef import structural
from ..registry import apply
from .forward import adjoint, lapack_errors
from .records import _float, _matrix, _safe_reciprocal, _transpose, triangular_solve

__all__ = ["svd", "expm", "lu", "RECORDS", "DEVICE_FORWARDS"]


# --- forwards (xp: numpy or cupy) ------------------------------------------------------------
def svd_forward(xp, a, full_matrices, compute_uv, index):
    """``(s, u, v)[index]`` (s descending; v with the right singular vectors as columns)."""
    with lapack_errors("svd", "not decomposable (LAPACK did not converge)"):
        if not compute_uv:
            return xp.linalg.svd(a, compute_uv=False)
        u, s, vh = xp.linalg.svd(a, full_matrices=full_matrices)
    return (s, u, xp.ascontiguousarray(adjoint(xp, vh)))[index]


def expm_forward(xp, a):
    """The matrix exponential (scipy's Padé scaling-and-squaring)."""
    if xp is np:
        import scipy.linalg
        a = np.asarray(a)
        if a.size == 0:
            return a.copy()
        return np.asarray(scipy.linalg.expm(a), dtype=a.dtype)
    import cupyx.scipy.linalg
    batch = a.shape[:-2]
    flat = a.reshape((-1,) + a.shape[-2:])
    return xp.stack([cupyx.scipy.linalg.expm(m) for m in flat]).reshape(batch + a.shape[-2:])


def _perm_of(piv) -> np.ndarray:
    """LAPACK's row interchanges ``piv`` (row i swapped with piv[i], in order) as the
    permutation ``perm`` with ``a[perm] = L U``."""
    perm = np.arange(len(piv), dtype=np.int32)
    for i, p in enumerate(np.asarray(piv)):
        perm[i], perm[p] = perm[p], perm[i]
    return perm


def lu_forward(xp, a, index):
    """``(lu, perm)[index]``: getrf's packed factors and the int32 row permutation."""
    if xp is np:
        import scipy.linalg as sl
    else:
        import cupyx.scipy.linalg as sl
    n = a.shape[-1]
    flat = a.reshape((-1, n, n))
    packed, perms = [], []
    with warnings.catch_warnings():       # an exactly singular U: TF returns it too
        warnings.simplefilter("ignore")
        for m in flat:
            f, piv = sl.lu_factor(m, check_finite=False) if xp is np else sl.lu_factor(m)
            packed.append(f)
            perms.append(_perm_of(piv if xp is np else piv.get()))
    if index == 0:
        out = xp.stack(packed) if packed else xp.empty_like(flat)
        return out.reshape(a.shape).astype(a.dtype, copy=False)
    out = np.stack(perms) if perms else np.empty((0, n), np.int32)
    return xp.asarray(out.reshape(a.shape[:-1]))


FORWARDS = {"svd": svd_forward, "expm": expm_forward, "lu": lu_forward}


# --- svd -------------------------------------------------------------------------------------
def _svd_infer(a, full_matrices, compute_uv, index):
    _matrix("svd", a, square=False)
    m, n = a.shape[-2:]
    k = None if m is None or n is None else min(m, n)
    batch = a.shape[:-2]
    shape = (batch + (k,), batch + (m, m if full_matrices else k),
             batch + (n, n if full_matrices else k))[index]
    return shape, _float("svd", a)


def _static(a, op: str) -> tuple:
    m, n = a.shape[-2:]
    if m is None or n is None:
        raise NoGradientError(f"sg.linalg.{op}: the gradient needs static matrix dims (TF's "
                              f"{op} gradient), got shape {format_shape(a.shape)}")
    return m, n


def _cols(x, s):      # x @ diag(s)
    return x * F.expand_dims(s, (s.ndim - 1,))


def _rows(s, x):      # diag(s) @ x
    return F.expand_dims(s, (s.ndim,)) * x


def _svd_vjp(g, out, a, full_matrices, compute_uv, index):
    """TF's _SvdGrad (real; static matrix dims; full_matrices only for |m - n| <= 1)."""
    m, n = _static(a, "svd")
    if not compute_uv or index == 0:          # u diag(g) v^T with the reduced factors
        uv = {"full_matrices": False, "compute_uv": True}
        u = apply(svd, (a,), {**uv, "index": 1})
        v = apply(svd, (a,), {**uv, "index": 2})
        return (F.matmul(_cols(u, g), _transpose(v)),)
    if full_matrices and abs(m - n) > 1:
        raise NoGradientError("sg.linalg.svd: no gradient of u or v for full_matrices=True "
                              "with |m - n| > 1 (TF's SvdGrad does not define it)")
    attrs = {"full_matrices": full_matrices, "compute_uv": True}
    s, u, v = (out if index == k else apply(svd, (a,), {**attrs, "index": k}) for k in range(3))
    gu = g if index == 1 else F.zeros_like(u)
    gv = g if index == 2 else F.zeros_like(v)
    adjoint_ = m > n
    if adjoint_:                              # the gradient of a^T = v s u^T, transposed
        m, n, u, v, gu, gv = n, m, v, u, gv, gu
    s2 = s * s
    f = _safe_reciprocal(F.expand_dims(s2, (s2.ndim - 1,)) - F.expand_dims(s2, (s2.ndim,)))
    f = f - F.diag(F.diag_part(f))            # f[i, j] = 1 / (s_j^2 - s_i^2), zero diagonal
    v1, gv1 = (v[..., :, :m], gv[..., :, :m]) if full_matrices and n > m else (v, gv)
    fu = f * F.matmul(_transpose(u), gu)
    fv = f * F.matmul(_transpose(v1), gv1)
    mid = _cols(fu + _transpose(fu), s) + _rows(s, fv + _transpose(fv))
    grad = F.matmul(u, F.matmul(mid, _transpose(v1)))
    if m != n:
        gv1t = _transpose(gv1)
        rest = gv1t - F.matmul(F.matmul(gv1t, v1), _transpose(v1))
        if full_matrices:
            v2, gv2 = v[..., :, m:n], gv[..., :, m:n]
            rest = rest - F.matmul(F.matmul(_transpose(v1), gv2), _transpose(v2))
        grad = grad + F.matmul(_cols(u, _safe_reciprocal(s)), rest)
    return (_transpose(grad) if adjoint_ else grad,)


svd = structural("svd", partial(svd_forward, np), _svd_infer, vjp=_svd_vjp)


# --- expm ------------------------------------------------------------------------------------
def _expm_infer(a):
    _matrix("expm", a)
    return a.shape, _float("expm", a)


def _expm_vjp(g, out, a):
    """The Fréchet derivative ``L(A^T, g)``: upper-right block of expm([[A^T, g], [0, A^T]])."""
    at = _transpose(a)
    top = F.concat([at, g], -1)
    bottom = F.concat([F.zeros_like(at), at], -1)
    big = apply(expm, (F.concat([top, bottom], -2),))
    upper = F.split(big, 2, axis=-2)[0]
    return (F.split(upper, 2, axis=-1)[1],)


expm = structural("expm", partial(expm_forward, np), _expm_infer, vjp=_expm_vjp)


# --- lu --------------------------------------------------------------------------------------
def _lu_infer(a, index):
    _matrix("lu", a)
    if index == 0:
        return a.shape, _float("lu", a)
    _float("lu", a)
    return a.shape[:-1], np.dtype(np.int32)


def unpack(packed):
    """``(L, U)`` of a packed LU (L with its unit diagonal)."""
    eye = F.diag(F.ones_like(F.diag_part(packed)))
    return F.tril(packed, -1) + eye, F.triu(packed, 0)


def permutation_matrix(perm, n: int, dtype):
    """``P`` with ``P @ x = x[..., perm, :]`` (one one per row)."""
    return F.one_hot(perm, n, dtype=dtype)


def _lu_vjp(g, out, a, index):
    """TF's _LuGrad: ``P^T L^{-T} (stril(L^T dL) + triu(dU U^T)) U^{-T}``."""
    if index == 1:
        return (F.zeros_like(a),)
    n = _static(a, "lu")[1]
    l, u = unpack(out)
    perm = apply(lu, (a,), {"index": 1})
    middle = (F.tril(F.matmul(_transpose(l), F.tril(g, -1)), -1)
              + F.triu(F.matmul(F.triu(g, 0), _transpose(u)), 0))
    x = triangular_solve(l, middle, lower=True, adjoint=True)                  # L^-T middle
    y = _transpose(triangular_solve(u, _transpose(x), lower=False, adjoint=False))  # x U^-T
    p = permutation_matrix(perm, n, a.dtype)
    return (F.matmul(_transpose(p), y),)


lu = structural("lu", partial(lu_forward, np), _lu_infer, vjp=_lu_vjp)

RECORDS = (svd, expm, lu)

DEVICE_FORWARDS = {op: FORWARDS[op.name] for op in RECORDS}
"""Each record's forward ``fn(xp, *inputs, **attrs)`` for the cuda steps (CuPy on a GPU)."""
