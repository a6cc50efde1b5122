"""Comparisons of a square root with a constant, as comparisons of its argument.

A cutoff ``where(r < rc, ..)`` with ``r = sqrt(r2)`` takes a square root of every pair,
where a hand loop compares ``r2`` with ``rc**2``. The two are not the same predicate in
floating point (``sqrt`` rounds the double just below ``rc**2`` up to ``rc``), so the
threshold is the exact one: the smallest ``T`` of the kernel's float type with
``sqrt(T) >= rc`` (found by stepping from ``rc*rc``; ``sqrt`` is correctly rounded, hence
monotone). Then, for every ``b`` including ``-0.0``, negatives, inf and NaN:

* ``sqrt(b) <  c``  is  ``0 <= b < T``    and  ``sqrt(b) >= c``  is  ``b >= T``;
* ``sqrt(b) <= c``  is  ``0 <= b < T'``   and  ``sqrt(b) >  c``  is  ``b >= T'``,

with ``T'`` the smallest value with ``sqrt(T') > c`` (``c > 0`` finite; other constants
are left alone).

>>> import numpy as np, sympy as sp
>>> b = sp.Symbol("b", real=True)
>>> root_comparisons(sp.sqrt(b) >= sp.Float(3.0), "float64")
b >= 9.0
>>> root_comparisons(sp.sqrt(b) > 3, "float32")      # the float32 just above 9
b >= 9.00000095367431640625
>>> bool(threshold(2.5, True, "float64") == np.nextafter(6.25, 0))   # sqrt rounds it up
True
"""

from __future__ import annotations

import numpy as np
import sympy as sp

_FLIP = {sp.StrictGreaterThan: sp.StrictLessThan, sp.GreaterThan: sp.LessThan,
         sp.StrictLessThan: sp.StrictGreaterThan, sp.LessThan: sp.GreaterThan}


def threshold(c: float, strict: bool, float_dtype: str):
    """The smallest value ``T`` of the float type with ``sqrt(T) >= c`` (``strict``) or
    ``sqrt(T) > c``."""
    ftype = np.float32 if float_dtype == "float32" else np.float64
    c = ftype(c)

    def reached(t) -> bool:
        r = np.sqrt(t)
        return bool(r >= c) if strict else bool(r > c)

    t = ftype(c * c)
    while t > 0 and reached(np.nextafter(t, ftype(0))):
        t = np.nextafter(t, ftype(0))
    while not reached(t):
        t = np.nextafter(t, ftype(np.inf))
    return t


def _rewrite(rel, float_dtype: str):
    lhs, rhs, kind = rel.lhs, rel.rhs, type(rel)
    if not (lhs.is_Pow and lhs.exp == sp.S.Half) and rhs.is_Pow and rhs.exp == sp.S.Half:
        lhs, rhs, kind = rhs, lhs, _FLIP.get(kind)
    if kind not in _FLIP or not (lhs.is_Pow and lhs.exp == sp.S.Half) or \
            not rhs.is_Number or not rhs.is_finite or not rhs > 0:
        return None
    base = lhs.base
    if base.is_Number or not base.is_real:
        return None
    strict_below = kind in (sp.StrictLessThan, sp.GreaterThan)   # sqrt(b) < c / >= c
    t = sp.Float(float(threshold(float(rhs), strict_below, float_dtype)), 53)
    if kind in (sp.StrictLessThan, sp.LessThan):
        return sp.And(sp.GreaterThan(base, 0), sp.StrictLessThan(base, t))
    return sp.GreaterThan(base, t)


def root_comparisons(expr, float_dtype: str):
    """``expr`` with each ``sqrt(b) <op> c`` (c > 0 a finite number) compared on ``b``."""
    if not isinstance(expr, sp.Basic) or not expr.has(sp.core.relational.Relational):
        return expr
    return expr.replace(
        lambda e: isinstance(e, sp.core.relational.Relational)
        and _rewrite(e, float_dtype) is not None,
        lambda e: _rewrite(e, float_dtype))
