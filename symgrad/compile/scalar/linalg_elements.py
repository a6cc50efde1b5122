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


# --- forms bound once per pattern of their atoms ------------------------------------------
def _atom_key(atoms: tuple):
    """A key of what sympy's evaluation of a form over ``atoms`` depends on: which atoms
    are the same symbol (by identity: one object per name, ``elements._symbol``), their
    kinds, the order of their names (sympy sorts the arguments of ``Add`` and ``Mul`` by
    name) and the numbers (``ZERO`` among them); None where an atom is not an atom."""
    slots: dict = {}
    symbols: list = []
    pattern = []
    for a in atoms:
        if a.is_Symbol and a is not ZERO:
            k = slots.get(id(a))
            if k is None:
                k = slots[id(a)] = len(symbols)
                symbols.append(a)
            pattern.append((k, "f" if a.is_real else "i" if a.is_integer else "b"))
        elif a.is_Atom:
            pattern.append((type(a), a))
        else:
            return None
    order = tuple(sorted(range(len(symbols)), key=lambda k: symbols[k].name))
    return tuple(pattern), order


def _bind_form(code, tag: str, build, atoms: tuple, dtype):
    """``code.bind(build(*atoms), dtype)``, with sympy's evaluation of ``build`` run once
    per pattern of the atoms (``_atom_key``): later the statement is emitted directly
    (an LU of n x n with m right-hand sides binds ~n^2 (n + m) forms of a few kinds; sympy's
    arithmetic on each was most of a pendulum's element rules)."""
    found = _atom_key(atoms)
    if found is None:
        return code.bind(build(*atoms), dtype)
    key = ("linalg form", tag, dtype, found)
    recipe = code.templates.get(key)
    if recipe is not None:
        template, positions = recipe
        if template is None:                       # an atom: one of ``atoms`` or a number
            return positions if not isinstance(positions, int) else atoms[positions]
        return code.emit(template, tuple(atoms[p] for p in positions), dtype)
    result = code.bind(build(*atoms), dtype)
    recipe = _recipe(code, result, atoms)
    if recipe is not None:
        code.templates[key] = recipe
    return result


def _recipe(code, result, atoms: tuple) -> Optional[tuple]:
    """(template, positions in ``atoms`` of its arguments) of the statement ``result``,
    (None, position) where it is one of the atoms, (None, number) for a number; None
    where it is none of these (the form is then evaluated at every use)."""
    ids = {id(a): k for k, a in reversed(list(enumerate(atoms)))}
    if id(result) in ids:
        return None, ids[id(result)]
    statement = None
    if result.is_Symbol and result.name[1:].isdigit():
        k = int(result.name[1:])
        if k < len(code.statements) and code.statements[k].symbol is result:
            statement = code.statements[k]
    if statement is None:
        return (None, result) if result.is_Number or result is ZERO else None
    if any(id(a) not in ids for a in statement.args):
        return None
    return statement.template, tuple(ids[id(a)] for a in statement.args)


# --- LU with partial pivoting as selects ---------------------------------------------------
def _pivot_rows(code, a: list, rhs: list, sign, k: int, dtype):
    """Rows ``k..n-1`` conditionally swapped so that row ``k`` holds the first largest
    ``|a_ik|`` (LAPACK's idamax); returns the new sign of the permutation (or None)."""
    n = len(a)
    big = _bind_form(code, "abs", sp.Abs, (a[k][k],), dtype)
    for i in range(k + 1, n):
        size = _bind_form(code, "abs", sp.Abs, (a[i][k],), dtype)
        for rows in (a, rhs):
            lo = k if rows is a else 0
            for j in range(lo, len(rows[k])):
                top, low = rows[k][j], rows[i][j]
                if top == low:
                    continue
                rows[k][j] = _bind_form(code, "swap", _swap, (low, top, size, big), dtype)
                rows[i][j] = _bind_form(code, "swap", _swap, (top, low, size, big), dtype)
        new_big = _bind_form(code, "swap", _swap, (size, big, size, big), dtype)
        if sign is not None:
            sign = _bind_form(code, "sign", _sign, (sign, size, big), dtype)
        big = new_big
    return sign


def _greater(size, big):
    """``size > big``: two distinct real symbols never compare when built (sympy's try
    costs ~1 ms)."""
    return sp.StrictGreaterThan(size, big, evaluate=not (
        size.is_Symbol and big.is_Symbol and size is not big and ZERO not in (size, big)))


def _swap(first, other, size, big):
    """``first`` where ``size > big``, else ``other``."""
    return _select((first, _greater(size, big)), (other, True))


def _sign(sign, size, big):
    return _select((-sign, _greater(size, big)), (sign, True))


def _multiplier(x, p):
    """``x / p``, 0 where ``p`` is 0 (getrf's multipliers without a check)."""
    return _select((x / p, sp.Ne(p, 0)), (_ZERO_INT, True))


def _update(x, m, y):
    return x - m * y


def _divided(x, p):
    return x / p


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
                m = _bind_form(code, "multiplier", _multiplier, (a[i][k], p), dtype)
            else:
                m = _bind_form(code, "divided", _divided, (a[i][k], p), dtype)
            for j in range(k + 1, n):
                a[i][j] = _bind_form(code, "update", _update, (a[i][j], m, a[k][j]), dtype)
            for j in range(len(rhs[i])):
                rhs[i][j] = _bind_form(code, "update", _update, (rhs[i][j], m, rhs[k][j]),
                                       dtype)
    return sign


def _back(code, u: list, rhs: list, dtype, upper: bool = True) -> list:
    """``x`` with ``u x = rhs`` for triangular ``u`` (upper: back, lower: forward)."""
    n, m = len(u), len(rhs[0]) if rhs else 0
    x = [[None] * m for _ in range(n)]
    order = range(n - 1, -1, -1) if upper else range(n)
    for j in range(m):
        done: list = []
        for i in order:
            atoms = (rhs[i][j], u[i][i], *[v for c in done for v in (u[i][c], x[c][j])])
            x[i][j] = _bind_form(code, "back", _back_form, atoms, dtype)
            done.append(i)
    return x


def _back_form(r, d, *pairs):
    """``(r - sum(u_c x_c)) / d`` over the pairs (u_c, x_c) in order."""
    return (r - sp.Add(*[pairs[c] * pairs[c + 1] for c in range(0, len(pairs), 2)])) / d


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
