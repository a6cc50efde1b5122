"""``sg.interp``: numpy's ``interp`` (piecewise-linear interpolation of a table) and the
natural cubic spline, built from ``searchsorted``, ``gather``, ``where`` (and
``sg.linalg.solve``), so their gradients are the chain rule's.

The segment of a query is the number of interior knots ``xp[1:-1]`` at or below it (a
``searchsorted(..., side="right")``, always in ``[0, n-2]``), so no clipping and no static
length is needed. Inside ``[xp[0], xp[-1]]`` the value is ``fp[i] + t (fp[i+1] - fp[i])``;
outside it is ``left``/``right`` (default ``fp[0]``/``fp[-1]``), as numpy. Gradients: in
``x`` the slope of the segment (0 outside the table; at a knot the right segment's), in
``fp`` the two weights ``1 - t`` and ``t``, in ``xp`` the derivative of ``t``.

``method="cubic"`` is the natural cubic spline (second derivatives ``M`` zero at both ends,
the interior ones from the tridiagonal system of continuous first derivatives, solved by
``sg.linalg.solve``: dense, O(n^3) in the table length, differentiable in ``xp`` and ``fp``);
on segment ``i`` with ``a = hi - x``, ``b = x - lo``, ``h = hi - lo``:
``(M_i a^3 + M_{i+1} b^3) / 6h + (f_i - M_i h^2/6) a/h + (f_{i+1} - M_{i+1} h^2/6) b/h``.

>>> import numpy as np
>>> import symgrad as sg
>>> x = sg.placeholder("x", shape=(4,))
>>> y = sg.interp(x, np.array([0.0, 1.0, 3.0]), np.array([0.0, 2.0, 3.0]))
>>> (g,) = sg.gradients(sg.reduce_sum(y), [x])
>>> sg.evaluate([y, g], {x: [-1.0, 0.5, 2.0, 4.0]})
[array([0. , 1. , 2.5, 3. ]), array([0. , 2. , 0.5, 0. ])]
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ...errors import ShapeError
from ...graph.tensor import Tensor
from ..checks import rank_of
from ..functions import F
from ..sources import constant

__all__ = ["interp"]


def _operands(values: tuple) -> tuple:
    """numpy and Python inputs as constants when any input is a graph Tensor."""
    if not any(isinstance(v, Tensor) for v in values):
        return values
    return tuple(v if v is None or isinstance(v, Tensor) or not isinstance(
        v, (np.ndarray, list, tuple)) else constant(np.asarray(v, dtype=float)) for v in values)


def _check_table(xp, fp) -> None:
    for what, t in (("xp", xp), ("fp", fp)):
        if rank_of(t) != 1:
            raise ShapeError(f"sg.interp: {what} must be 1-D (the table), got shape "
                             f"{tuple(np.shape(t)) if not hasattr(t, 'shape') else t.shape}")
    n, m = xp.shape[0], fp.shape[0]
    if n is not None and m is not None and n != m:
        raise ShapeError(f"sg.interp: xp and fp must have the same length, got {n} and {m}")
    if n is not None and n < 2:
        raise ShapeError(f"sg.interp: the table needs at least 2 points, got xp of length {n}")


def interp(x, xp, fp, left: Any = None, right: Any = None, method: str = "linear",
           name: Optional[str] = None):
    """numpy's ``interp(x, xp, fp, left, right)``: ``xp`` strictly increasing; a query
    below ``xp[0]`` gives ``left`` (default ``fp[0]``), above ``xp[-1]`` ``right``
    (default ``fp[-1]``). Differentiable in ``x``, ``fp`` (and ``xp``, ``left``,
    ``right``). ``method="cubic"``: the natural cubic spline through the table (zero
    second derivative at both ends; the same rule outside)."""
    if method not in ("linear", "cubic"):
        raise ValueError(f"sg.interp: method must be 'linear' or 'cubic', got {method!r}")
    x, xp, fp, left, right = _operands((x, xp, fp, left, right))
    if not hasattr(xp, "shape") or not hasattr(fp, "shape"):
        xp, fp = np.asarray(xp, dtype=float), np.asarray(fp, dtype=float)
    _check_table(xp, fp)
    interior = F.getitem(xp, (slice(1, -1),))
    i = F.searchsorted(interior, x, side="right")
    lo, hi = F.gather(xp, i), F.gather(xp, i + 1)
    f_lo, f_hi = F.gather(fp, i), F.gather(fp, i + 1)
    if method == "cubic":
        m = _second_derivatives(xp, fp)
        inside = _cubic(x, lo, hi, f_lo, f_hi, F.gather(m, i), F.gather(m, i + 1))
    else:
        t = (x - lo) / (hi - lo)
        inside = f_lo + t * (f_hi - f_lo)
    first, last = F.getitem(xp, (0,)), F.getitem(xp, (-1,))
    left = F.getitem(fp, (0,)) if left is None else left
    right = F.getitem(fp, (-1,)) if right is None else right
    above = F.where(x > last, right, inside)
    return F.where(x < first, left, above, name=name)


def _second_derivatives(xp, fp):
    """The natural spline's second derivatives at the knots (zero at both ends)."""
    from ..linalg.api import solve
    n = xp.shape[0]
    if n == 2:
        return F.zeros_like(fp)
    h = F.getitem(xp, (slice(1, None),)) - F.getitem(xp, (slice(None, -1),))
    slope = (F.getitem(fp, (slice(1, None),)) - F.getitem(fp, (slice(None, -1),))) / h
    rhs = 6.0 * (F.getitem(slope, (slice(1, None),)) - F.getitem(slope, (slice(None, -1),)))
    h_lo, h_hi = F.getitem(h, (slice(None, -1),)), F.getitem(h, (slice(1, None),))
    matrix = F.diag(2.0 * (h_lo + h_hi))
    if n is None or n > 3:
        off = F.diag(F.getitem(h, (slice(1, -1),)))
        matrix = matrix + F.pad(off, [[0, 1], [1, 0]]) + F.pad(off, [[1, 0], [0, 1]])
    interior = F.getitem(solve(matrix, F.expand_dims(rhs, -1)), (slice(None), 0))
    return F.pad(interior, [[1, 1]])


def _cubic(x, lo, hi, f_lo, f_hi, m_lo, m_hi):
    h, a, b = hi - lo, hi - x, x - lo
    return ((m_lo * a ** 3 + m_hi * b ** 3) / (6.0 * h) + (f_lo - m_lo * h * h / 6.0) * a / h
            + (f_hi - m_hi * h * h / 6.0) * b / h)
