"""Linear-algebra op records (``tf.linalg``): cholesky, triangular_solve, solve, inv, det,
slogdet, eigh and qr, batched over leading axes, with TensorFlow's gradients
(``tensorflow/python/ops/linalg_grad.py``) written with symgrad's own ops, so they are
graphs (second order works) and run eagerly on the tape.

Each gradient uses solves where TF's uses an inverse it does not need (Cholesky's backward
is two triangular solves). Multi-output ops (slogdet, eigh, qr) are one node per output
with an ``index`` attribute, as ``unstack`` and ``split`` are; each node's vjp is TF's rule
with the other output's gradient zero (the rules are linear in the output gradients, so the
sweep's sum is TF's rule).

>>> import numpy as np
>>> import symgrad as sg
>>> a = sg.placeholder("a", shape=(3, 3))
>>> (g,) = sg.gradients(sg.reduce_sum(sg.linalg.inv(a)), [a])
>>> x = np.diag([1.0, 2.0, 4.0])
>>> np.allclose(sg.evaluate(g, {a: x}), -np.linalg.inv(x).T @ np.ones((3, 3)) @ np.linalg.inv(x).T)
True
"""

from __future__ import annotations

from functools import partial

import numpy as np

from ...errors import DTypeError, NoGradientError, ShapeError
from ...shapes import broadcast_shapes, format_shape
from ..functions import F
from ..opdef import structural
from ..registry import apply
from . import forward as fw


# --- shape and dtype rules -----------------------------------------------------------------
def _float(op: str, *tensors) -> np.dtype:
    for t in tensors:
        if np.dtype(t.dtype).kind != "f":
            raise DTypeError(f"sg.linalg.{op}: '{t.name}' has dtype {np.dtype(t.dtype).name}; "
                             "expected float32 or float64 (cast it with sg.cast)")
    return np.result_type(*[t.dtype for t in tensors])


def _matrix(op: str, x, square: bool = True) -> None:
    if x.ndim < 2:
        raise ShapeError(f"sg.linalg.{op}: '{x.name}' must be a (batch of) matrices of rank "
                         f">= 2, got shape {format_shape(x.shape)}")
    n, m = x.shape[-2:]
    if square and n is not None and m is not None and n != m:
        raise ShapeError(f"sg.linalg.{op}: '{x.name}' must be square in its last two axes, "
                         f"got shape {format_shape(x.shape)}")


def _square_infer(op: str):
    def infer(a, **attrs):
        _matrix(op, a)
        return a.shape, _float(op, a)
    return infer


def _solve_infer(op: str):
    def infer(a, b, **attrs):
        _matrix(op, a)
        _matrix(op, b, square=False)
        n, k = a.shape[-1], b.shape[-2]
        if n is not None and k is not None and n != k:
            raise ShapeError(f"sg.linalg.{op}: matrix '{a.name}' {format_shape(a.shape)} and "
                             f"rhs '{b.name}' {format_shape(b.shape)} differ in the solved "
                             f"axis ({n} != {k})")
        batch = broadcast_shapes([a.shape[:-2], b.shape[:-2]], op=f"sg.linalg.{op}",
                                 names=[a.name, b.name])
        return batch + b.shape[-2:], _float(op, a, b)
    return infer


def _transpose(x):
    return F.matrix_transpose(x)


def _unbroadcast(g, like):
    return F.reshape_like(F.unbroadcast(g, like), like) if g.shape != like.shape else g


def _half_diagonal(m):
    """``m`` with its diagonal halved (TF's ``matrix_set_diag(m, 0.5 * diag_part(m))``)."""
    return m - 0.5 * F.diag(F.diag_part(m))


# --- cholesky ------------------------------------------------------------------------------
def _cholesky_vjp(g, out, a):
    """TF's _CholeskyGrad, ``L^{-T} Phi(L^T g) L^{-1}`` symmetrized, by two solves."""
    phi = _half_diagonal(F.tril(F.matmul(_transpose(out), g), 0))
    x = triangular_solve(out, phi, lower=True, adjoint=True)                 # L^-T phi
    y = _transpose(triangular_solve(out, _transpose(x), lower=True, adjoint=True))
    return (0.5 * (y + _transpose(y)),)


cholesky = structural("cholesky", partial(fw.cholesky, np), _square_infer("cholesky"),
                      vjp=_cholesky_vjp)


# --- triangular_solve, solve ----------------------------------------------------------------
def _triangular_vjp(g, out, a, b, lower, adjoint):
    grad_b = triangular_solve(a, g, lower=lower, adjoint=not adjoint)
    grad_a = -(F.matmul(out, _transpose(grad_b)) if adjoint
               else F.matmul(grad_b, _transpose(out)))
    grad_a = F.tril(grad_a, 0) if lower else F.triu(grad_a, 0)
    return _unbroadcast(grad_a, a), _unbroadcast(grad_b, b)


triangular = structural("triangular_solve", partial(fw.triangular_solve, np),
                        _solve_infer("triangular_solve"), vjp=_triangular_vjp)


def _solve_vjp(g, out, a, b, adjoint):
    grad_b = solve(a, g, adjoint=not adjoint)
    grad_a = -(F.matmul(out, _transpose(grad_b)) if adjoint
               else F.matmul(grad_b, _transpose(out)))
    return _unbroadcast(grad_a, a), _unbroadcast(grad_b, b)


solve_op = structural("solve", partial(fw.solve, np), _solve_infer("solve"), vjp=_solve_vjp)


def triangular_solve(a, b, lower: bool = True, adjoint: bool = False):
    return apply(triangular, (a, b), {"lower": bool(lower), "adjoint": bool(adjoint)})


def solve(a, b, adjoint: bool = False):
    return apply(solve_op, (a, b), {"adjoint": bool(adjoint)})


# --- inv, det, slogdet ----------------------------------------------------------------------
def _inv_vjp(g, out, a):  # TF's _MatrixInverseGrad: -inv^T g inv^T
    t = _transpose(out)
    return (-F.matmul(t, F.matmul(g, t)),)


inv = structural("inv", partial(fw.inv, np), _square_infer("inv"), vjp=_inv_vjp)


def _scalar_infer(op: str):
    def infer(a, **attrs):
        _matrix(op, a)
        return a.shape[:-2], _float(op, a)
    return infer


def _per_matrix(s):
    return F.expand_dims(s, (s.ndim, s.ndim + 1))


def _adjugate_vjp(g, out, a):
    """``tr(g^T adj) a^{-T} - a^{-T} g adj^T`` (d adj = adj tr(a^{-1} da) - a^{-1} da adj):
    through ``inv``, so a second derivative of ``det`` at a singular matrix raises."""
    it = _transpose(apply(inv, (a,)))
    scale = F.reduce_sum(g * out, (-2, -1))
    return (_per_matrix(scale) * it - F.matmul(it, F.matmul(g, _transpose(out))),)


adjugate = structural("adjugate", partial(fw.adjugate, np), _square_infer("adjugate"),
                      vjp=_adjugate_vjp)
"""``adj(a)``, the transposed cofactor matrix (not public: ``det``'s gradient)."""


def _det_vjp(g, out, a):
    """``g adj(a)^T`` (TF's ``g det inv(a)^T`` where ``a`` is invertible; the adjugate is
    also the gradient at a singular matrix, as TF's SVD form and JAX give)."""
    return (_per_matrix(g) * _transpose(apply(adjugate, (a,))),)


det = structural("det", partial(fw.det, np), _scalar_infer("det"), vjp=_det_vjp)


def _slogdet_vjp(g, out, a, index):  # TF's _LogMatrixDeterminantGrad; sign: zeros
    if index == 0:
        return (F.zeros_like(a),)
    return (_per_matrix(g) * _transpose(apply(inv, (a,))),)


slogdet = structural("slogdet", partial(fw.slogdet, np), _scalar_infer("slogdet"),
                     vjp=_slogdet_vjp)


# --- eigh ----------------------------------------------------------------------------------
def _eigh_infer(a, index):
    _matrix("eigh", a)
    return (a.shape[:-1] if index == 0 else a.shape), _float("eigh", a)


def _safe_reciprocal(x, epsilon=1e-20):  # TF's Lorentz broadening
    return x / (x * x + epsilon)


def _eigh_vjp(g, out, a, index):
    """TF's _SelfAdjointEigV2Grad: ``v (diag(ge) + f * v^T gv) v^T``, then the lower
    triangle of its symmetrization with the diagonal halved."""
    v = out if index == 1 else apply(eigh, (a,), {"index": 1})
    if index == 0:
        mid = F.diag(g)
    else:
        e = apply(eigh, (a,), {"index": 0})
        diff = F.expand_dims(e, (e.ndim - 1,)) - F.expand_dims(e, (e.ndim,))
        f = _safe_reciprocal(diff)
        f = f - F.diag(F.diag_part(f))
        mid = f * F.matmul(_transpose(v), g)
    grad = F.matmul(v, F.matmul(mid, _transpose(v)))
    return (_half_diagonal(F.tril(grad + _transpose(grad), 0)),)


eigh = structural("eigh", partial(fw.eigh, np), _eigh_infer, vjp=_eigh_vjp)


# --- qr ------------------------------------------------------------------------------------
def _qr_infer(a, full_matrices, index):
    _matrix("qr", a, square=False)
    m, n = a.shape[-2:]
    k = None if m is None or n is None else min(m, n)
    rows = m if full_matrices else k
    shape = a.shape[:-2] + ((m, rows) if index == 0 else (rows, n))
    return shape, _float("qr", a)


def _upper_solve(x, r):
    """``x r^{-T}`` for upper-triangular ``r`` (TF's _TriangularSolve in _QrGrad)."""
    return _transpose(triangular_solve(r, _transpose(x), lower=False, adjoint=False))


def _qr_square_deep(q, r, dq, dr):
    qdq = F.matmul(_transpose(q), dq)
    rdr = F.matmul(r, _transpose(dr))
    low = F.tril(qdq - _transpose(qdq) + rdr - _transpose(rdr), 0)
    grad_a = F.matmul(q, dr + _upper_solve(low, r))
    return grad_a + _upper_solve(dq - F.matmul(q, qdq), r)


def _qr_vjp(g, out, a, full_matrices, index):
    """TF's _QrGrad (real, static shapes; not for full_matrices with more rows than
    columns, where TF raises too)."""
    m, n = a.shape[-2:]
    if m is None or n is None:
        raise NoGradientError("sg.linalg.qr: the gradient needs static matrix dims (TF's "
                              "QrGrad), got shape " + format_shape(a.shape))
    if full_matrices and m > n:
        raise NoGradientError("sg.linalg.qr: no gradient for full_matrices=True with more "
                              "rows than columns (TF's QrGrad does not define it)")
    attrs = {"full_matrices": full_matrices}
    q = out if index == 0 else apply(qr, (a,), {**attrs, "index": 0})
    r = out if index == 1 else apply(qr, (a,), {**attrs, "index": 1})
    dq = g if index == 0 else F.zeros_like(q)
    dr = g if index == 1 else F.zeros_like(r)
    if m >= n:
        return (_qr_square_deep(q, r, dq, dr),)
    y = a[..., :, m:]
    u, dv, du = r[..., :, :m], dr[..., :, m:], dr[..., :, :m]
    dx = _qr_square_deep(q, u, dq + F.matmul(y, _transpose(dv)), du)
    return (F.concat([dx, F.matmul(q, dv)], -1),)


qr = structural("qr", partial(fw.qr, np), _qr_infer, vjp=_qr_vjp)

RECORDS = (cholesky, triangular, solve_op, inv, adjugate, det, slogdet, eigh, qr)

DEVICE_FORWARDS = {op: fw.FORWARDS[op.name] for op in RECORDS}
"""Each record's forward ``fn(xp, *inputs, **attrs)`` for the cuda steps (CuPy on a GPU)."""

