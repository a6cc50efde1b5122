"""Element rules of the small linear algebra (issue 29, item 3): ``solve``, ``inv``,
``det``, ``slogdet``, ``adjugate`` by LU with partial pivoting, ``cholesky`` by its
formula, ``triangular_solve`` by substitution, and the band ops their gradients use
(``tril``, ``triu``, ``diag``, ``diag_part``, ``diag_fill``, ``trace``), so a small static
matrix's solve and its gradient are straight-line code inside a scalar kernel
(docs/scalar_code.md) instead of LAPACK steps between kernels.

Each rule binds every intermediate value (``ElementCode.bind``): the code is one statement
per LU update, never an expanded tree. Partial pivoting is written with selects: at step
``k`` each row ``i > k`` in turn swaps with row ``k`` where ``|a_ik| > |a_kk|`` (both arms
of every ``Piecewise`` are plain values, printed as conditional expressions), which leaves
LAPACK's pivot (the first largest) in row ``k`` and eliminates the other rows with the same
arithmetic as LAPACK's getrf. Where the numpy path raises ``sg.LinAlgError`` (a zero pivot
of ``solve``/``inv``, a zero diagonal of ``triangular_solve``, a non-positive ``cholesky``
pivot) the pivot passes through a check (``kernel_lib/linalg_checks.py``) that raises the
same error. ``det``/``slogdet`` never raise: a zero pivot's multipliers are 0, as getrf's,
so a singular matrix's ``det`` is 0 and its ``slogdet`` ``(0, -inf)``.

``statements(node)`` estimates a rule's statement count (for the scalar pass's cost model):
``None`` where the matrix is larger than ``MAX_N`` (LAPACK is the better code there).

>>> import numpy as np, sympy as sp
>>> from symgrad.compile.scalar.elements import ElementCode
>>> code = ElementCode()
>>> a = np.array(sp.symbols("a0:4", real=True), dtype=object).reshape(2, 2)
>>> d = lu_det(code, [list(r) for r in a], np.dtype("float64"))
>>> len(code.statements) > 0, d.is_Symbol
(True, True)
"""

from __future__ import annotations

from math import comb
from typing import Optional

import numpy as np
import sympy as sp

from ...ops.layout import band as B
from ...ops.linalg import records as R
from ..printing.printer import ZERO

__all__ = ["LINALG_RULES", "statements", "MAX_N"]

MAX_N = 16
"""The largest matrix (n x n) worth straight-line code; beyond, LAPACK steps."""

_CHECKS = "symgrad.compile.kernel_lib.linalg_checks:"


def _check(helper: str) -> type:
    """A sympy function printed as a call of the njit check ``helper`` (value through)."""
    return type(helper.title().replace("_", ""), (sp.Function,),
                {"numba_helper": _CHECKS + helper, "is_real": True,
                 "numpy_form": staticmethod(lambda x: x)})


SolvePivot = _check("solve_pivot_")
InvPivot = _check("inv_pivot_")
TriangularPivot = _check("triangular_pivot_")
CholeskyPivot = _check("cholesky_pivot_")
_ONE, _ZERO_INT = sp.Integer(1), sp.Integer(0)


def _select(*pairs) -> sp.Piecewise:
    """A ``Piecewise`` over atoms, unevaluated (sympy's evaluation of one costs ~1 ms)."""
    return sp.Piecewise(*pairs, evaluate=False)


# --- LU with partial pivoting as selects ---------------------------------------------------
def _pivot_rows(code, a: list, rhs: list, sign, k: int, dtype):
    """Rows ``k..n-1`` conditionally swapped so that row ``k`` holds the first largest
    ``|a_ik|`` (LAPACK's idamax); returns the new sign of the permutation (or None)."""
    n = len(a)
    big = code.bind(sp.Abs(a[k][k]), dtype)
    for i in range(k + 1, n):
        size = code.bind(sp.Abs(a[i][k]), dtype)
        # two distinct real symbols never compare when built (sympy's try costs ~1 ms)
        cond = sp.StrictGreaterThan(size, big, evaluate=not (
            size.is_Symbol and big.is_Symbol and size is not big and ZERO not in (size, big)))
        for rows in (a, rhs):
            lo = k if rows is a else 0
            for j in range(lo, len(rows[k])):
                top, low = rows[k][j], rows[i][j]
                if top == low:
                    continue
                rows[k][j] = code.bind(_select((low, cond), (top, True)), dtype)
                rows[i][j] = code.bind(_select((top, cond), (low, True)), dtype)
        big = code.bind(_select((size, cond), (big, True)), dtype)
        if sign is not None:
            sign = code.bind(_select((-sign, cond), (sign, True)), dtype)
    return sign


def _lu(code, a: list, rhs: list, dtype, check: Optional[type], sign=None):
    """Eliminate ``a`` (rows of atoms, changed in place to U) and ``rhs`` alongside;
    returns the permutation's sign (when ``sign`` is given). ``check`` wraps each pivot
    (raising on 0); without one a zero pivot's multipliers are 0 (getrf's)."""
    n = len(a)
    for k in range(n):
        sign = _pivot_rows(code, a, rhs, sign, k, dtype)
        p = a[k][k] if check is None else code.bind(check(a[k][k]), dtype)
        a[k][k] = p
        for i in range(k + 1, n):
            if check is None:
                m = code.bind(_select((a[i][k] / p, sp.Ne(p, 0)), (_ZERO_INT, True)),
                              dtype)
            else:
                m = code.bind(a[i][k] / p, dtype)
            for j in range(k + 1, n):
                a[i][j] = code.bind(a[i][j] - m * a[k][j], dtype)
            for j in range(len(rhs[i])):
                rhs[i][j] = code.bind(rhs[i][j] - m * rhs[k][j], dtype)
    return sign


def _back(code, u: list, rhs: list, dtype, upper: bool = True) -> list:
    """``x`` with ``u x = rhs`` for triangular ``u`` (upper: back, lower: forward)."""
    n, m = len(u), len(rhs[0]) if rhs else 0
    x = [[None] * m for _ in range(n)]
    order = range(n - 1, -1, -1) if upper else range(n)
    for j in range(m):
        done: list = []
        for i in order:
            if any(v.is_Number for v in [rhs[i][j], u[i][i]] + [u[i][c] for c in done] +
                   [x[c][j] for c in done]):       # sympy folds numbers: evaluated here
                total = rhs[i][j] - sp.Add(*[u[i][c] * x[c][j] for c in done])
                x[i][j] = code.bind(total / u[i][i], dtype)
                done.append(i)
                continue
            products = [_unevaluated(sp.Mul, (_MINUS, u[i][c], x[c][j])) for c in done]
            total = _unevaluated(sp.Add, [rhs[i][j]] + products)
            x[i][j] = code.bind(_unevaluated(sp.Mul, (total, _unevaluated(
                sp.Pow, (u[i][i], _MINUS)))), dtype)
            done.append(i)
    return x


_MINUS = sp.Integer(-1)


def _unevaluated(func, args) -> sp.Basic:
    """``func(*args)`` left unevaluated: ``ElementCode.bind`` evaluates each distinct form
    once, on slots (sympy's evaluation of the same sum over atoms, once per column of the
    right-hand side, was most of a triangular solve's build)."""
    if func is sp.Add and len(args) == 1:
        return args[0]
    if func is sp.Pow:
        return sp.Pow(*args, evaluate=False)
    return func._from_args(tuple(args), is_commutative=True)    # real scalars


def lu_solve(code, a: list, b: list, dtype, check=SolvePivot) -> list:
    a, b = [list(r) for r in a], [list(r) for r in b]
    _lu(code, a, b, dtype, check)
    return _back(code, a, b, dtype)


def lu_det(code, a: list, dtype):
    """``det(a)``: the permutation's sign times the pivots' product."""
    a = [list(r) for r in a]
    sign = _lu(code, a, [[] for _ in a], dtype, None, sign=_ONE)
    return code.bind(sign * sp.Mul(*[a[i][i] for i in range(len(a))]), dtype)


def lu_slogdet(code, a: list, dtype) -> tuple:
    a = [list(r) for r in a]
    sign = _lu(code, a, [[] for _ in a], dtype, None, sign=_ONE)
    for i in range(len(a)):
        d = a[i][i]
        s = _select((_ONE, d > 0), (-_ONE, d < 0), (_ZERO_INT, True))
        sign = code.bind(sign * s, dtype)
    logs = sp.Add(*[code.bind(sp.log(code.bind(sp.Abs(a[i][i]), dtype)), dtype)
                    for i in range(len(a))])
    return sign, code.bind(logs, dtype) if len(a) else _ZERO_INT


def _identity(n: int) -> list:
    return [[_ONE if i == j else _ZERO_INT for j in range(n)] for i in range(n)]


def _minors(code, a: list, dtype, n: int) -> dict:
    """Every minor of ``a`` (keyed by (rows, cols) tuples), by Laplace expansion along the
    first row of each, each minor bound once."""
    memo: dict = {}

    def minor(rows: tuple, cols: tuple):
        if not rows:
            return _ONE
        key = (rows, cols)
        if key not in memo:
            terms = [(-1) ** c * a[rows[0]][cols[c]] * minor(rows[1:], cols[:c] + cols[c + 1:])
                     for c in range(len(cols))]
            memo[key] = code.bind(sp.Add(*terms), dtype)
        return memo[key]
    return minor


def adjugate(code, a: list, dtype) -> list:
    """``adj(a)``: cofactors (exact at singular matrices, as the numpy path's SVD form) for
    n <= 5; beyond, ``det(a) inv(a)`` by LU (NaN at a singular matrix)."""
    n = len(a)
    if n <= 5:
        minor = _minors(code, a, dtype, n)
        every = tuple(range(n))
        return [[code.bind((-1) ** (i + j) * minor(every[:j] + every[j + 1:],
                                                   every[:i] + every[i + 1:]), dtype)
                 for j in range(n)] for i in range(n)]
    det = lu_det(code, a, dtype)
    x = lu_solve(code, a, _identity(n), dtype, check=None)
    return [[code.bind(det * v, dtype) for v in row] for row in x]


def cholesky(code, a: list, dtype) -> list:
    """The lower factor, reading ``a``'s lower triangle; zeros above the diagonal."""
    n = len(a)
    low = [[ZERO] * n for _ in range(n)]
    for j in range(n):
        d = a[j][j] - sp.Add(*[low[j][c] ** 2 for c in range(j)])
        d = code.bind(CholeskyPivot(code.bind(d, dtype)), dtype)
        low[j][j] = code.bind(sp.sqrt(d), dtype)
        for i in range(j + 1, n):
            s = a[i][j] - sp.Add(*[low[i][c] * low[j][c] for c in range(j)])
            low[i][j] = code.bind(s / low[j][j], dtype)
    return low


def triangular(code, a: list, b: list, lower: bool, adjoint: bool, dtype) -> list:
    n = len(a)
    t = [[a[i][j] if (j <= i if lower else j >= i) else ZERO for j in range(n)]
         for i in range(n)]
    if adjoint:
        t = [list(col) for col in zip(*t)]
    for i in range(n):
        t[i][i] = code.bind(TriangularPivot(t[i][i]), dtype)
    return _back(code, t, [list(r) for r in b], dtype, upper=(lower == adjoint))


# --- rules over batches of matrices --------------------------------------------------------
def _rows(m: np.ndarray) -> list:
    return [list(r) for r in m]


def _per_matrix(node, arrays: list, fn, out_shape: tuple) -> np.ndarray:
    """``fn(*matrices)`` for every batch index of the broadcast ``arrays`` (batch dims
    broadcast as the records' forwards do)."""
    batch = np.broadcast_shapes(*[np.shape(x)[:-2] for x in arrays])
    arrays = [np.broadcast_to(x, batch + np.shape(x)[-2:]) for x in arrays]
    out = np.empty(batch + out_shape, dtype=object)
    for index in np.ndindex(*batch):
        out[index] = fn(*[_rows(x[index]) for x in arrays])  # 0-d: the expression itself
    return out


def _solve_rule(node, args, code):
    dt = node.dtype

    def fn(a, b):
        if node.attrs["adjoint"]:
            a = [list(c) for c in zip(*a)]
        return np.array(lu_solve(code, a, b, dt), dtype=object)
    return _per_matrix(node, args, fn, node.shape[-2:])


def _inv_rule(node, args, code):
    n = node.shape[-1]
    return _per_matrix(node, args, lambda a: np.array(
        lu_solve(code, a, _identity(n), node.dtype, check=InvPivot), dtype=object), (n, n))


def _det_rule(node, args, code):
    return _per_matrix(node, args, lambda a: lu_det(code, a, node.dtype), ())


def _slogdet_rule(node, args, code):
    index = node.attrs["index"]
    return _per_matrix(node, args, lambda a: lu_slogdet(code, a, node.dtype)[index], ())


def _adjugate_rule(node, args, code):
    return _per_matrix(node, args, lambda a: np.array(adjugate(code, a, node.dtype), object),
                       node.shape[-2:])


def _cholesky_rule(node, args, code):
    return _per_matrix(node, args, lambda a: np.array(cholesky(code, a, node.dtype), object),
                       node.shape[-2:])


def _triangular_rule(node, args, code):
    lower, adjoint = node.attrs["lower"], node.attrs["adjoint"]
    return _per_matrix(node, args, lambda a, b: np.array(
        triangular(code, a, b, lower, adjoint, node.dtype), object), node.shape[-2:])


def _band_rule(node, args, code):
    """tril, triu, diag, diag_part, diag_fill, trace: their numpy forwards move (and for
    trace add) the expressions of object arrays."""
    return np.asarray(node.op.numpy(*args, **node.attrs), dtype=object)


# --- statement estimates -------------------------------------------------------------------
def _lu_count(n: int, m: int) -> int:
    swaps = sum((n - 1 - k) * (2 * (n - k + m) + 3) for k in range(n))
    updates = sum((n - 1 - k) * (2 + (n - 1 - k) + m) for k in range(n))
    return swaps + updates


def _count(node) -> int:
    n = node.inputs[0].shape[-1]
    m = node.shape[-1] if len(node.shape) >= 2 else 0
    op = node.op
    if op is R.solve_op:
        return _lu_count(n, m) + n * m
    if op is R.inv:
        return _lu_count(n, n) + n * n
    if op in (R.det, R.slogdet):
        return _lu_count(n, 0) + 3 * n
    if op is R.adjugate:
        return comb(2 * n, n) + n * n if n <= 5 else _lu_count(n, n) + 2 * n * n
    if op is R.cholesky:
        return n * (n + 1) // 2 + 2 * n
    return n * m + n                       # triangular_solve


def statements(node) -> Optional[int]:
    """About how many statements ``node``'s element rule emits (band ops: one per
    element), or None where its matrices are larger than ``MAX_N`` or not static."""
    if node.op not in LINALG_RULES:
        return None
    if node.op in _BAND:
        return int(np.prod(node.shape, dtype=np.int64))
    shape = node.inputs[0].shape
    if any(d is None for d in shape) or shape[-1] > MAX_N:
        return None
    batch = int(np.prod(shape[:-2], dtype=np.int64)) if len(shape) > 2 else 1
    return batch * _count(node)


def _binds(rule):
    rule.binds = True        # node_elements passes the ElementCode (elements.py)
    rule.statements = statements
    return rule


_BAND = (B.tril, B.triu, B.diag, B.diag_part, B.diag_fill, B.trace)

LINALG_RULES: dict = {
    R.solve_op: _binds(_solve_rule), R.inv: _binds(_inv_rule), R.det: _binds(_det_rule),
    R.slogdet: _binds(_slogdet_rule), R.adjugate: _binds(_adjugate_rule),
    R.cholesky: _binds(_cholesky_rule), R.triangular: _binds(_triangular_rule),
    **{op: _binds(_band_rule) for op in _BAND},
}
"""{record: rule(node, input object arrays, ElementCode) -> object array}, merged into
``elements.ELEMENT_RULES``."""
