"""Symbolic views: ``sg.to_sympy`` and ``sg.latex`` of a Tensor, in terms of placeholders.

The formula is of one element of the tensor, at index ``(i, j, ...)``. When every
placeholder is read at that same element (an elementwise graph, with numpy broadcasting),
placeholders are plain symbols named like them. When the graph moves data (slices, their
gradients, sums, broadcasts, transposes), rank >= 1 placeholders are indexed symbols
(``x[i + 1]``), sums are ``Sum`` forms, slice gradients ``Piecewise`` forms, and unknown
lengths are symbols named ``x.shape[0]``. A graph holding an op with no index formula
(matmul, gather, a non-scalar constant, ...) raises ``NoFormulaError`` (a ValueError) naming
it: the formula is never silently partial.

>>> import symgrad as sg
>>> x = sg.placeholder("x")
>>> sg.to_sympy(sg.gradients(sg.sin(x) * x, x)[0])
x*cos(x) + sin(x)
>>> v = sg.placeholder("v", shape=(None,))
>>> sg.to_sympy(sg.reduce_sum(v[1:] * v[:-1]))
Sum(v[r0 + 1]*v[r0], (r0, 0, v.shape[0] - 2))
"""

from __future__ import annotations

import sys
from typing import Callable, Optional

import sympy as sp

from .errors import NoFormulaError
from .graph.tensor import Tensor
from .graph.traversal import topological_order
from .ops.elementwise import records as E
from .ops.indexing import records as I
from .ops.layout import records as L
from .ops.reductions import records as R
from .ops.sources import CONSTANT, PLACEHOLDER
from .ops.symbols import dtype_kind, input_symbol

_NAMES = "ijkl"


def index_symbols(rank: int) -> tuple:
    """The index of one element: ``i`` (rank 1), ``i, j`` ... (``i0, i1, ...`` past 4)."""
    names = _NAMES[:rank] if rank <= len(_NAMES) else [f"i{a}" for a in range(rank)]
    return tuple(sp.Symbol(n, integer=True, nonnegative=True) for n in names)


class _Builder:
    """Formulas of nodes at given indices, memoised by (node, index)."""

    def __init__(self):
        self.memo: dict = {}
        self.count = 0

    def dummy(self) -> sp.Symbol:
        self.count += 1
        return sp.Symbol(f"r{self.count - 1}", integer=True, nonnegative=True)

    def length(self, node: Tensor, axis: int) -> sp.Expr:
        """Length of ``node``'s ``axis``: a number, or traced to a placeholder's unknown
        length (``x.shape[0]``, ``x.shape[0] - 1`` for ``x[1:]``)."""
        d = node.shape[axis]
        if d is not None:
            return sp.Integer(d)
        if node.op.kind == "elementwise":
            for i in node.inputs:
                a = axis - (len(node.shape) - len(i.shape))
                if a >= 0 and i.shape[a] != 1:
                    return self.length(i, a)
        rule = LENGTH_RULES.get(node.op)
        found = rule(self, node, axis) if rule is not None else None
        if found is not None:
            return found
        return sp.Symbol(f"{node.name}.shape[{axis}]", integer=True, positive=True)

    def at(self, node: Tensor, idx: tuple) -> sp.Expr:
        key = (id(node), idx)
        if key not in self.memo:
            self.memo[key] = self.build(node, idx)
        return self.memo[key]

    def build(self, node: Tensor, idx: tuple) -> sp.Expr:
        if node.op is PLACEHOLDER:
            return _symbol(node, idx)
        if node.op is CONSTANT:
            return _constant(node)
        if node.op.kind == "elementwise":
            return self.elementwise(node, idx)
        rule = INDEX_RULES.get(node.op)
        if rule is None:
            raise NoFormulaError(
                f"sg.to_sympy: tensor '{node.name}' (op {node.op.name}) is not elementwise and "
                "has no index formula; inspect its inputs with sg.to_sympy, or its value with "
                "sg.evaluate")
        return rule(self, node, idx)

    def elementwise(self, node: Tensor, idx: tuple) -> sp.Expr:
        symbols = tuple(input_symbol(k, dtype_kind(i.dtype)) for k, i in enumerate(node.inputs))
        formula = node.op.formula(symbols, node.attrs)
        used = formula.free_symbols
        return formula.xreplace({s: self.at(i, self.broadcast(i, node, idx))
                                 for s, i in zip(symbols, node.inputs) if s in used})

    def broadcast(self, source: Tensor, shape_of: Tensor, idx: tuple) -> tuple:
        """The index into ``source`` of element ``idx`` of its numpy broadcast to
        ``shape_of``'s shape (trailing axes aligned, known length-1 axes at 0)."""
        lead = len(idx) - len(source.shape)
        return tuple(sp.Integer(0) if d == 1 and shape_of.shape[lead + a] != 1 else idx[lead + a]
                     for a, d in enumerate(source.shape))


def _symbol(node: Tensor, idx: tuple) -> sp.Expr:
    kind = dtype_kind(node.dtype)
    assumptions = {"real": True} if kind == "f" else {"integer": True} if kind == "i" else {}
    if not idx:
        return sp.Symbol(node.name, **assumptions)
    return sp.IndexedBase(node.name, **assumptions)[idx]


def _constant(node: Tensor) -> sp.Expr:
    value = node.attrs["value"]
    if value.ndim != 0:
        raise NoFormulaError(f"sg.to_sympy: constant '{node.name}' of shape {value.shape} has no "
                             "scalar formula")
    value = value.item()
    if isinstance(value, bool):
        return sp.true if value else sp.false
    if float(value).is_integer() and abs(value) < 2**53:
        return sp.Integer(int(value))
    return sp.Float(value)


# --- index rules of structural ops, keyed by op record -------------------------------------
def _sum_over(b: _Builder, x: Tensor, idx_of: Callable, axes: tuple) -> sp.Expr:
    """Sum of ``x`` at ``idx_of(dummies)`` over ``axes`` (dummies: {axis: symbol})."""
    dummies = {a: b.dummy() for a in axes}
    expr = b.at(x, idx_of(dummies))
    for a in reversed(axes):
        expr = sp.Sum(expr, (dummies[a], 0, b.length(x, a) - 1))
    return expr


def _reduce(b: _Builder, node: Tensor, idx: tuple) -> sp.Expr:
    (x,), rank = node.inputs, len(node.inputs[0].shape)
    axes = tuple(sorted(a % rank for a in node.attrs["axes"]))
    keep = node.attrs["keepdims"]
    kept = iter(idx) if not keep else None

    def idx_of(dummies: dict) -> tuple:
        if keep:
            return tuple(dummies.get(a, idx[a]) for a in range(rank))
        return tuple(dummies[a] if a in dummies else next(kept) for a in range(rank))

    total = _sum_over(b, x, idx_of, axes)
    if node.op is R.reduce_mean:
        count = sp.Mul(*(b.length(x, a) for a in axes))
        return total / count
    return total


def _unbroadcast(b: _Builder, node: Tensor, idx: tuple) -> sp.Expr:
    g, like = node.inputs
    lead = len(g.shape) - len(like.shape)
    axes = tuple(range(lead)) + tuple(lead + a for a, d in enumerate(like.shape)
                                      if d == 1 and g.shape[lead + a] != 1)
    if not axes:
        return b.at(g, tuple(idx[a - lead] for a in range(len(g.shape))))
    return _sum_over(b, g, lambda dummies: tuple(
        dummies[a] if a in dummies else idx[a - lead] for a in range(len(g.shape))), axes)


def _broadcast_like(b: _Builder, node: Tensor, idx: tuple) -> sp.Expr:
    x = node.inputs[0]
    return b.at(x, b.broadcast(x, node, idx))


def _same_index(b: _Builder, node: Tensor, idx: tuple) -> sp.Expr:
    return b.at(node.inputs[0], idx)


def _transpose(b: _Builder, node: Tensor, idx: tuple) -> sp.Expr:
    perm = node.attrs["perm"]
    inner = [None] * len(perm)
    for k, p in enumerate(perm):
        inner[p] = idx[k]
    return b.at(node.inputs[0], tuple(inner))


def _expand_dims(b: _Builder, node: Tensor, idx: tuple) -> sp.Expr:
    rank = len(node.shape)
    axes = {a % rank for a in node.attrs["axes"]}
    return b.at(node.inputs[0], tuple(i for a, i in enumerate(idx) if a not in axes))


def _basic_key(key: tuple, rank: int) -> list:
    """``key`` with Ellipsis expanded and full slices appended, or NoFormulaError."""
    real = sum(1 for k in key if k is not None and k is not Ellipsis)
    out: list = []
    for k in key:
        if k is Ellipsis:
            out.extend([slice(None)] * (rank - real))
        elif k is None or isinstance(k, slice) or isinstance(k, int) and not isinstance(k, bool):
            out.append(k)
        else:
            raise NoFormulaError("sg.to_sympy: indexing with arrays has no index formula")
    if Ellipsis not in key:
        out.extend([slice(None)] * (rank - real))
    return out


def _bounds(k: slice, n: sp.Expr) -> tuple:
    """(start, stop, step) of slice ``k`` on an axis of length ``n`` (an int or symbol)."""
    step = 1 if k.step is None else k.step
    if n.is_Integer:
        return range(*k.indices(int(n))).start, range(*k.indices(int(n))).stop, step
    def resolve(v, default):
        return default if v is None else (n + v if v < 0 else sp.Integer(v))
    if step > 0:
        return resolve(k.start, sp.Integer(0)), resolve(k.stop, n), step
    return resolve(k.start, n - 1), resolve(k.stop, sp.Integer(-1)), step


def _getitem(b: _Builder, node: Tensor, idx: tuple) -> sp.Expr:
    x = node.inputs[0]
    out = iter(idx)
    inner = []
    for k in _basic_key(node.attrs["key"], len(x.shape)):
        if k is None:
            next(out)
            continue
        axis = len(inner)
        if isinstance(k, slice):
            start, _, step = _bounds(k, b.length(x, axis))
            inner.append(start + step * next(out))
        else:
            inner.append(sp.Integer(k) if k >= 0 else b.length(x, axis) + k)
    return b.at(x, tuple(inner))


def _getitem_grad(b: _Builder, node: Tensor, idx: tuple) -> sp.Expr:
    """Zeros shaped like ``like`` with ``g`` added at ``key``: ``Piecewise`` of the range."""
    g, like = node.inputs
    axis, conds, inner = 0, [], []
    for k in _basic_key(node.attrs["key"], len(like.shape)):
        if k is None:
            inner.append(sp.Integer(0))
            continue
        i, n = idx[axis], b.length(like, axis)
        if isinstance(k, slice):
            start, stop, step = _bounds(k, n)
            if step > 0:
                offset = i - start
                conds += [i >= start] * (start != 0) + [i < stop] * (stop != n)
            else:
                offset = start - i
                conds += [i <= start] * (start != n - 1) + [i > stop] * (stop != -1)
            if abs(step) != 1:
                conds.append(sp.Eq(sp.Mod(offset, abs(step)), 0))
            inner.append(offset / abs(step) if abs(step) != 1 else offset)
        else:
            conds.append(sp.Eq(i, k if k >= 0 else n + k))
        axis += 1
    value = b.at(g, tuple(inner))
    return sp.Piecewise((value, sp.And(*conds)), (0, True)) if conds else value


def _getitem_length(b: _Builder, node: Tensor, axis: int):
    x, out = node.inputs[0], 0
    for k in _basic_key(node.attrs["key"], len(x.shape)):
        if out == axis:
            if not isinstance(k, slice):
                return None
            start, stop, step = _bounds(k, b.length(x, len(_real(node, axis))))
            return sp.ceiling((stop - start) / step)
        out += 1
    return None


def _real(node: Tensor, axis: int) -> list:
    """The input axes consumed by ``node``'s key before output ``axis``."""
    keys = _basic_key(node.attrs["key"], len(node.inputs[0].shape))
    out, consumed = 0, []
    for k in keys:
        if out == axis:
            break
        if k is not None:
            consumed.append(k)
        if k is None or isinstance(k, slice):
            out += 1
    return consumed


def _reduced_length(b: _Builder, node: Tensor, axis: int):
    x = node.inputs[0]
    axes = {a % len(x.shape) for a in node.attrs["axes"]}
    kept = list(range(len(x.shape))) if node.attrs["keepdims"] else \
        [a for a in range(len(x.shape)) if a not in axes]
    return b.length(x, kept[axis])


def _expanded_length(b: _Builder, node: Tensor, axis: int):
    axes = {a % len(node.shape) for a in node.attrs["axes"]}
    kept = [a for a in range(len(node.shape)) if a not in axes]
    return b.length(node.inputs[0], kept.index(axis))


def _like(b: _Builder, node: Tensor, axis: int):
    return b.length(node.inputs[1], axis)


LENGTH_RULES: dict = {
    R.unbroadcast: _like, L.broadcast_like: _like, I.getitem_grad: _like,
    E.cast: lambda b, node, axis: b.length(node.inputs[0], axis),
    L.transpose: lambda b, node, axis: b.length(node.inputs[0], node.attrs["perm"][axis]),
    L.expand_dims: _expanded_length, R.reduce_sum: _reduced_length,
    R.reduce_mean: _reduced_length, I.getitem: _getitem_length,
}
"""How an unknown length of a structural op's output follows from its inputs'."""


INDEX_RULES: dict = {
    R.reduce_sum: _reduce, R.reduce_mean: _reduce, R.unbroadcast: _unbroadcast,
    L.broadcast_like: _broadcast_like, E.cast: _same_index, L.transpose: _transpose,
    L.expand_dims: _expand_dims, I.getitem: _getitem, I.getitem_grad: _getitem_grad,
}
"""Structural ops whose element at an index is a formula of their inputs' elements."""


def _plain(expr: sp.Expr, idx: tuple) -> sp.Expr:
    """``expr`` with ``x[i, j]`` -> ``x`` when every placeholder element read is the output's
    own element (trailing axes aligned): then the formula is elementwise."""
    indexed = expr.atoms(sp.Indexed)
    if any(tuple(a.indices) != idx[len(idx) - len(a.indices):] for a in indexed):
        return expr
    if expr.has(sp.Sum):
        return expr
    return expr.xreplace({a: sp.Symbol(a.base.name, **a.base.assumptions0) for a in indexed})


def to_sympy(tensor: Tensor) -> sp.Basic:
    """The formula of one element of ``tensor`` in terms of placeholders (see the module
    docstring); ``NoFormulaError`` (a ValueError) when an op on the way has none."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"sg.to_sympy: expected a Tensor, got {type(tensor).__name__}")
    return formulas([tensor])[0]


def formulas(tensors: list) -> list:
    """``to_sympy`` of each tensor, sharing the work (``CompiledFunction.sympy``)."""
    builder = _Builder()
    out = []
    depth = len(topological_order([t for t in tensors]))
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 8 * depth + 1000))   # ``at`` recurses along the graph
    try:
        for t in tensors:
            idx = index_symbols(len(t.shape))
            _warm(builder, t, idx)
            out.append(_plain(builder.at(t, idx), idx))
    finally:
        sys.setrecursionlimit(limit)
    return out


def _warm(builder: _Builder, tensor: Tensor, idx: tuple) -> None:
    """Build elementwise chains at ``idx`` bottom-up so ``at`` recursion stays shallow."""
    same = {id(tensor)}
    for node in reversed(topological_order([tensor])):
        if id(node) in same and node.op.kind == "elementwise":
            same.update(id(i) for i in node.inputs if i.shape == tensor.shape)
    for node in topological_order([tensor]):
        if id(node) in same and node.shape == tensor.shape and node.op.kind == "elementwise":
            builder.at(node, idx)


def latex(tensor: Tensor, cse: bool | None = None) -> str:
    """LaTeX of ``tensor``; long expressions are shown with shared subexpressions named.

    >>> import symgrad as sg
    >>> x = sg.placeholder("x")
    >>> sg.latex(sg.gradients(sg.sin(x) * x, x)[0])
    'x \\\\cos{\\\\left(x \\\\right)} + \\\\sin{\\\\left(x \\\\right)}'
    """
    expr = to_sympy(tensor)
    if cse is None:
        cse = sp.count_ops(expr) > 40
    if not cse:
        return sp.latex(expr)
    replacements, (reduced,) = sp.cse(expr, symbols=sp.numbered_symbols("t"))
    if not replacements:
        return sp.latex(reduced)
    lines = [f"{sp.latex(s)} &= {sp.latex(e)}" for s, e in replacements]
    lines.append(f"{sp.latex(sp.Symbol(tensor.name))} &= {sp.latex(reduced)}")
    return "\\begin{aligned}" + " \\\\ ".join(lines) + "\\end{aligned}"


# --- notebook display (compiler topic), installed on the Tensor class --------------------
def _repr_latex_(self: Tensor) -> Optional[str]:
    """In a notebook an elementwise result shows its formula (``sg.latex``); other
    tensors, and formulas over more than 400 nodes, show their repr."""
    if self.op.kind != "elementwise":
        return None
    if len(topological_order([self])) > 400:
        return None
    return f"${latex(self)}$"


Tensor._repr_latex_ = _repr_latex_
