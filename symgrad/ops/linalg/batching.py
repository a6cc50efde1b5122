"""Batching rules of the linear-algebra records (``symgrad/batching.py``'s ``BATCH_RULES``
merges ``LINALG_RULES``): a vmap batch axis becomes one more leading batch dim, which
every record already takes, so a Jacobian through ``solve`` is one call, not one per
column.

* one-matrix records (``cholesky``, ``inv``, ``det``, ``slogdet``, ``eigh``, ``qr``,
  ``adjugate``, ``svd``, ``expm``, ``lu``): the batch axis is a leading axis of the matrix; the op applies as it is.
* ``solve`` and ``triangular_solve``: when only the rhs is batched (a Jacobian or a
  batched gradient through a fixed matrix), the batch axis is folded into the rhs
  columns: ``(k, ..., n, m)`` becomes ``(..., n, k*m)``, so the matrix is factorised once
  and solved with ``k*m`` right-hand sides; otherwise both operands are aligned so the
  batch axis broadcasts as a leading batch dim (one batched LAPACK call).

>>> import numpy as np
>>> import symgrad as sg
>>> a = sg.placeholder("a", (3, 3))
>>> b = sg.placeholder("b", (3, 1))
>>> j = sg.jacobian(sg.linalg.solve(a, b), b)
>>> m = np.diag([1.0, 2.0, 4.0])
>>> np.allclose(sg.evaluate(j, {a: m, b: np.ones((3, 1))}).reshape(3, 3), np.linalg.inv(m))
True
"""

from __future__ import annotations

from ...graph.tensor import Tensor
from ...shapes import is_fully_known
from ..functions import F
from ..registry import apply
from . import decompositions_v5 as D5
from . import records as R

__all__ = ["LINALG_RULES"]


def _same(node: Tensor, args: list) -> Tensor:
    return apply(node.op, tuple(args), dict(node.attrs))


def _leading(node, args, batched, k):
    """One-matrix records: the batch axis is one more leading batch dim."""
    return _same(node, args)


def _align(x: Tensor, was_batched: bool, rank: int) -> Tensor:
    """x with a leading batch axis (length 1 if unbatched) and size-1 axes after it up to
    ``rank`` unbatched dims, so numpy broadcasting lines the operands up."""
    if not was_batched:
        x = F.expand_dims(x, (0,))
    missing = rank - (x.ndim - 1)
    return F.expand_dims(x, tuple(range(1, 1 + missing))) if missing > 0 else x


def _fold_rhs(node, a: Tensor, b: Tensor, k: int):
    """solve(a, b_j) for the k batched b_j as one solve with k*m columns; None where the
    shapes are not static enough to fold."""
    lead = tuple(b.shape[1:-1])          # b's batch dims and n
    out_lead = tuple(node.shape[:-1])
    if not (is_fully_known(lead) and is_fully_known(out_lead)):
        return None
    r = b.ndim
    perm = tuple(range(1, r - 2)) + (r - 2, 0, r - 1)     # (..., n, k, m)
    m = node.shape[-1]
    cols = F.reshape(F.transpose(b, perm), lead + (-1,))
    x = _same(node, [a, cols])
    x = F.reshape(x, out_lead + (k, -1 if m is None else m))
    s = x.ndim
    back = (s - 2,) + tuple(range(0, s - 3)) + (s - 3, s - 1)  # (k, ..., n, m)
    return F.transpose(x, back)


def _solve(node, args, batched, k):
    """solve, triangular_solve: a fixed matrix factorised once for every batched rhs."""
    a, b = args
    if not batched[0]:
        folded = _fold_rhs(node, a, b, k)
        if folded is not None:
            return folded
    rank = node.ndim
    return _same(node, [_align(a, batched[0], rank), _align(b, batched[1], rank)])


LINALG_RULES: dict = {
    **{op: _leading for op in (R.cholesky, R.inv, R.det, R.slogdet, R.eigh, R.qr,
                               R.adjugate, D5.svd, D5.expm, D5.lu)},
    R.solve_op: _solve, R.triangular: _solve,
}
"""{linalg record: batching rule(node, args, batched flags, k)}."""
