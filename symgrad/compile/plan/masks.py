"""Constant boolean masks of pair shape read as index predicates.

A pair sum often guards its diagonal or keeps ``i < j`` with a constant mask built in
numpy: ``sg.constant(np.eye(n, dtype=bool))``, ``~np.eye(..)``,
``np.triu(np.ones((n, n), bool), 1)``, ``np.tril(..)``. Such a constant is a predicate on
the loop indices, ``i1 - i0 >= k`` and the like, so a loop need not read its ``n x n``
bytes: ``band`` recognises it (checked against the constant's value at compile time), and
``predicate`` prints the comparison a loop passes instead of the array read.

>>> import numpy as np
>>> band(np.triu(np.ones((4, 4), bool), 1)), band(~np.eye(3, dtype=bool))
(('>=', 1), ('!=', 0))
>>> predicate(band(np.tril(np.ones((5, 5), bool), -1)), "i0", "i1")
'i0 > i1'
>>> band(np.ones((3, 3), bool)) is None
True
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import sympy as sp

Band = tuple   # (op, k): the mask is ``(i1 - i0) op k`` for op in '==', '!=', '>=', '<='


def band(value) -> Optional[Band]:
    """``(op, k)`` when the 2-D bool array ``value`` is ``value[i0, i1] == ((i1 - i0) op
    k)`` for every element (eye, ~eye, triu, tril of any offset), else None. Masks that are
    all True or all False are left alone (nothing to gain)."""
    if not isinstance(value, np.ndarray) or value.dtype != np.bool_ or value.ndim != 2 \
            or 0 in value.shape:
        return None
    n0, n1 = value.shape
    if value.all() or not value.any():
        return None
    if n0 == n1 and np.array_equal(value, np.eye(n0, dtype=bool)):
        return ("==", 0)
    if n0 == n1 and not value.diagonal().any() and np.array_equal(~value, np.eye(n0, dtype=bool)):
        return ("!=", 0)
    row, col = value[0], value[:, 0]
    if row[-1]:    # triu: True from column k of row 0 on (k <= 0: rows 0..-k of column 0)
        k = int(np.argmax(row)) if not row[0] else -(int(np.argmin(col)) - 1 if not col.all()
                                                      else n0 - 1)
        if np.array_equal(value, np.triu(np.ones((n0, n1), bool), k)):
            return (">=", k)
    if col[-1] or row[0]:   # tril: True up to column k of row 0 (k < 0: from row -k down)
        k = (int(np.argmin(row)) - 1 if not row.all() else n1 - 1) if row[0] \
            else -int(np.argmax(col))
        if np.array_equal(value, np.tril(np.ones((n0, n1), bool), k)):
            return ("<=", k)
    return None


def complement(b: Band) -> Band:
    """The band where ``b`` does not hold.

    >>> complement((">=", 1)), complement(("==", 0))
    (('<=', 0), ('!=', 0))
    """
    op, k = b
    return {"==": ("!=", k), "!=": ("==", k), ">=": ("<=", k - 1), "<=": (">=", k + 1)}[op]


def predicate(b: Band, i: str, j: str) -> str:
    """The text of band ``b`` on loop indices ``i`` (rows) and ``j`` (columns)."""
    op, k = b
    if op in ("==", "!=") and k == 0:
        return f"{i} {op} {j}"
    if op == ">=" and k in (0, 1):
        return f"{i} {'<=' if k == 0 else '<'} {j}"
    if op == "<=" and k in (0, -1):
        return f"{i} {'>=' if k == 0 else '>'} {j}"
    return f"{j} - {i} {op} {k}"


FLOATS = (np.dtype(np.float64), np.dtype(np.float32))
"""The float dtypes of constants read as index predicates or outer products."""


def mask_band(node, index: str) -> Optional[tuple]:
    """``(band, a, b)`` when kernel input ``node``, read at ``[i0, i1]``, is a constant
    that is ``a`` where ``band`` holds and ``b`` elsewhere: a bool mask (``a`` True), or a
    float64 or float32 array of two finite values (a mask folded into a gradient's seed,
    ``where(mask, 1.0, 0.0)``; ``a`` and ``b`` keep the array's type: a float, or a
    ``np.float32`` that ``literal`` prints ``f32(..)``); else None.

    >>> class Seed:
    ...     value = np.where(np.eye(3, dtype=bool), 0.5, 0.0).astype(np.float32)
    >>> mb = mask_band(Seed, "[i0, i1]")
    >>> mb[0], literal(mb[1]), literal(mb[2])
    (('==', 0), 'f32(0.5)', 'f32(0.0)')
    """
    value = getattr(node, "value", None)
    if index != "[i0, i1]" or value is None:
        return None
    value = np.asarray(value)
    if value.dtype == np.bool_:
        b = band(value)
        return None if b is None else (b, True, False)
    if value.dtype not in FLOATS or value.ndim != 2 or value.size < 2:
        return None
    a = value[0, 0]
    where_a = value == a
    rest = value[~where_a]
    if not rest.size or not np.isfinite(a) or not np.isfinite(rest[0]) or \
            not (rest == rest[0]).all():
        return None
    b = band(where_a)
    if b is None:
        return None
    typed = np.float32 if value.dtype == np.float32 else float
    return b, typed(a), typed(rest[0])


def literal(v) -> str:
    """The source text of a value of ``mask_band``: ``True``, ``0.5``, or ``f32(0.5)`` for
    a float32 (a bare ``0.5`` is a float64 and would promote a float32 kernel's arithmetic;
    cpu and cuda modules define ``f32``)."""
    if isinstance(v, np.float32):
        return f"f32({float(v)!r})"
    return repr(v)


def read_text(mb: tuple, i: str, j: str, kept: Optional[Band] = None) -> str:
    """What a loop passes instead of reading the constant of ``mask_band`` ``mb``
    (``kept``: the band the loop visits only, where the constant is its first value)."""
    b, a, other = mb
    if b == kept:
        return literal(a)
    if complement(b) == kept:
        return literal(other)
    if a is True:
        return f"({predicate(b, i, j)})"
    return f"({literal(a)} if {predicate(b, i, j)} else {literal(other)})"


def vanishes(lowered, values: dict) -> list:
    """Whether each result of ``lowered`` (a LoweredKernel) is exactly 0 once its symbols
    take ``values`` (``cse`` replacements substituted in order)."""
    env = dict(values)
    for sym, expr in lowered.replacements:
        env[sym] = expr.subs(env)
    return [is_zero(sp.sympify(r).subs(env)) for r in lowered.results]


def is_zero(expr) -> bool:
    """Exactly 0, reading the lowering's literal symbols (``Symbol('0.0')``) as numbers."""
    literals = {}
    for s in expr.free_symbols:
        try:
            literals[s] = sp.Float(float(s.name))
        except ValueError:
            pass
    return bool(expr.xreplace(literals).is_zero)


def row_range(b: Band, i: str, n: str) -> Optional[str]:
    """``range(..)`` arguments of the columns ``j < n`` where band ``b`` holds in row
    ``i``, or None when the band is not an interval of each row (``!=``)."""
    op, k = b
    lo = f"max({i} + {k}, 0)" if k else i
    if op == ">=":
        return f"{lo}, {n}"
    if op == "<=":
        return f"min({i} + {k + 1}, {n})"
    if op == "==":
        return f"{lo}, min({i} + {k + 1}, {n})"
    return None


def loop_masks(lowered, indexes: list, sums_only: bool) -> tuple:
    """For a flat rank-2 loop: ({input position: text read instead}, the band of the bool
    mask whose dropped pairs the loop skips, or None). ``indexes``: each input's subscript;
    ``sums_only``: every output is a sum (a skipped pair then adds nothing, when every
    result is 0 with the mask False)."""
    kernel = lowered.kernel
    if kernel.rank != 2:
        return {}, None
    found = {k: mb for k, (node, index) in enumerate(zip(kernel.inputs, indexes))
             if (mb := mask_band(node, index)) is not None}
    kept = None
    if sums_only:
        for k, (b, a, _) in found.items():
            if a is True and row_range(b, "i0", "n1") is not None and \
                    all(vanishes(lowered, {lowered.symbols[k]: sp.false})):
                kept = b
                break
    return {k: read_text(mb, "i0", "i1", kept) for k, mb in found.items()}, kept


def outer_factors(node, index: str) -> Optional[tuple]:
    """``(r, c)`` when kernel input ``node``, read at ``[i0, i1]``, is a 2-D float64 or
    float32 constant with ``value[r, c] == 1`` and ``value[i, j] == value[i, c] * value[r, j]``
    for every element (exactly: one multiplication, as the loop computes it): an outer
    product such as the folded charges ``q[:, None] * q[None, :]``. A loop then reads
    ``x[i0, c] * x[r, i1]``, a column and a row, instead of ``n x n`` values.

    >>> class Node:
    ...     value = np.multiply.outer([1.0, -1.0, 2.0], [1.0, 3.0, -1.0])
    >>> outer_factors(Node, "[i0, i1]")
    (0, 0)
    >>> Node.value = np.arange(9.0).reshape(3, 3)
    >>> outer_factors(Node, "[i0, i1]") is None
    True
    """
    value = getattr(node, "value", None)
    if index != "[i0, i1]" or not isinstance(value, np.ndarray) or \
            value.dtype not in FLOATS or value.ndim != 2 or value.size < 4:
        return None
    ones = np.argwhere(value == 1.0)
    if not len(ones):
        return None
    r, c = (int(k) for k in ones[0])
    with np.errstate(all="ignore"):
        same = np.array_equal(np.multiply.outer(value[:, c], value[r, :]), value)
    return (r, c) if same else None

