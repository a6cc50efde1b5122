"""Rewrites of the folded graph that let more of it fuse and compute nothing twice.

* ``outer_product``: ``matmul(a, b)`` of 2-D operands with inner length 1 is the
  broadcast product ``a * b`` (``(n, 1) @ (1, m)``); as an elementwise node it fuses into
  the region that consumes it instead of materialising an ``n x m`` array.
* ``reuse_values``: the partials of ``sigmoid``, ``exp``, ... are written in terms of the
  op's input (``sigmoid(x) (1 - sigmoid(x))``); where the graph already computes
  ``s = sigmoid(x)``, a gradient node reading ``x`` reads ``s`` instead (``s (1 - s)``):
  the function is not evaluated a second time, and ``x`` often need not be stored at all.

>>> import symgrad as sg
>>> from symgrad.compile.plan.fold import fold_graph
>>> x = sg.placeholder("x", shape=(3,))
>>> y = sg.reduce_sum(sg.sigmoid(x))
>>> g = fold_graph([y] + sg.gradients(y, x), [x])
>>> node = g.outputs[1]
>>> [i.op.name for i in node.inputs], node.attrs["expr"]
(['sigmoid'], _0*(1 - _0))
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import sympy as sp

from ...ops.symbols import dtype_kind, input_symbol
from .oprules import CHEAP_VIEWS, PLACEHOLDER, E, S
from ..printing.printer import number


def outer_product(tensor, inputs: list, make) -> Optional[object]:
    """The elementwise ``a * b`` standing for ``matmul(a, b)`` when the inner length is 1
    (``make(op, inputs)`` builds the LNode), else None."""
    if tensor.op is not S.matmul or len(inputs) != 2:
        return None
    a, b = inputs
    if len(a.shape) != 2 or len(b.shape) != 2 or a.shape[1] != 1 or b.shape[0] != 1:
        return None
    if not (a.dtype == b.dtype == tensor.dtype) or tensor.dtype.kind != "f":
        return None
    return make(E.multiply, [a, b])


FORMULA_MEMO = 1 << 16   # entries kept by ``_formula``'s memo before it starts afresh
_FORMULAS: dict = {}
_POSITIONAL: dict = {}
_DERIVED: dict = {}      # (what, formula) -> _expensive / subexpression set, per formula
STATS = {"formulas": 0, "memo hits": 0}
"""``_formula`` calls that built a sympy tree, and those answered from the memo."""


def _positional(k: int, kind: str) -> sp.Symbol:
    """``input_symbol(k, kind)``, kept: sympy's own cache (1,000 entries) overflows on
    large graphs and rebuilds the symbol's assumptions each time."""
    sym = _POSITIONAL.get((k, kind))
    if sym is None:
        sym = _POSITIONAL[(k, kind)] = input_symbol(k, kind)
    return sym


def _attr_key(value):
    """A hashable stand-in for one attribute that equals another only where the formulas
    are the same (types kept: 2 and 2.0 differ); None for an array (not memoised)."""
    if isinstance(value, (sp.Basic, np.dtype)):
        return value
    if type(value) in (int, str, bool, type(None)):
        return (type(value), value)
    if isinstance(value, np.ndarray):
        return None
    return (type(value).__name__, repr(value))


def _formula_key(node, symbols: list):
    """What ``_formula(node, symbols)`` is a function of, or None (not memoised)."""
    attrs = []
    for name in sorted(node.attrs):
        value = _attr_key(node.attrs[name])
        if value is None:
            return None
        attrs.append((name, value))
    ins, used = [], []
    for i, s in zip(node.inputs, symbols):
        inlined = i.is_const and i.uniform is not None
        ins.append((i.dtype, (type(i.uniform).__name__, repr(i.uniform)) if inlined else None))
        used.append(None if inlined else s)       # an inlined input's symbol is not read
    return (node.op, tuple(attrs), tuple(ins), tuple(used))


def _formula(node, symbols: list) -> sp.Expr:
    """The node's sympy form over ``symbols`` (uniform constant inputs inlined).

    Memoised in symgrad's own dict on everything the formula depends on (op, attributes,
    input dtypes, inlined uniform values, symbols): a large graph builds each distinct
    formula once, where sympy's 1,000-entry cache would overflow and rebuild them."""
    key = _formula_key(node, symbols)
    found = _FORMULAS.get(key) if key is not None else None
    if found is not None:
        STATS["memo hits"] += 1
        return found
    STATS["formulas"] += 1
    args = [number(i.uniform) if i.is_const and i.uniform is not None else s
            for i, s in zip(node.inputs, symbols)]
    positional = tuple(_positional(k, dtype_kind(i.dtype)) for k, i in enumerate(node.inputs))
    formula = sp.sympify(node.op.formula(positional, node.attrs)).xreplace(
        dict(zip(positional, args)))
    if key is not None:
        if len(_FORMULAS) >= FORMULA_MEMO:
            _FORMULAS.clear()
            _DERIVED.clear()
        _FORMULAS[key] = formula
    return formula


def _expensive(expr: sp.Expr) -> bool:
    """Worth reading from memory rather than recomputing: a function call, not a power
    or product (reading a stored ``x**2`` costs more than squaring)."""
    found = _DERIVED.get(("expensive", expr))
    if found is None:
        found = _DERIVED[("expensive", expr)] = \
            bool(expr.atoms(sp.Function)) and not expr.has(sp.Piecewise)
    return found


def _may_be_expensive(node) -> bool:
    """Whether the op's formula over plain symbols calls a function: inlining numbers
    never adds one, so where it does not, no formula of the node is ``_expensive``."""
    key = _formula_key(node, [None] * len(node.inputs))
    if key is None:
        return True
    template_key = ("template", key[0], key[1], tuple(d for d, _ in key[2]))
    found = _DERIVED.get(template_key)
    if found is None:
        symbols = [_positional(k, dtype_kind(i.dtype)) for k, i in enumerate(node.inputs)]
        template = sp.sympify(node.op.formula(tuple(symbols), node.attrs))
        found = _DERIVED[template_key] = bool(template.atoms(sp.Function))
    return found


def _inside(expr: sp.Expr) -> frozenset:
    """The subexpressions of ``expr`` (itself included), once per distinct formula."""
    found = _DERIVED.get(("inside", expr))
    if found is None:
        found = _DERIVED[("inside", expr)] = frozenset(sp.preorder_traversal(expr))
    return found


def _unary_consumers(node, consumers: dict) -> list:
    """Elementwise consumers of ``node`` that read nothing else (but uniform constants)."""
    out = []
    dtype, dims = node.dtype, node.dims
    for c in consumers.get(id(node), ()):
        if c.op.kind != "elementwise" or c.value is not None or c.dtype != dtype or \
                c.dims != dims:
            continue
        for i in c.inputs:
            if i is not node and (i.value is None or i.uniform is None):
                break
        else:
            out.append(c)
    return out


_SLOTS: list = []


def _slot(k: int) -> sp.Dummy:
    """The k-th input symbol of every formula ``reuse_values`` compares: one shared family,
    so a consumer's pattern is built once and matched by hashing."""
    while len(_SLOTS) <= k:
        _SLOTS.append(sp.Dummy(f"s{len(_SLOTS)}", real=True))
    return _SLOTS[k]


def _candidates(i, consumers: dict) -> list:
    """[(position, consumer)] of the unary consumers of ``i`` whose formula may call a
    function (``_may_be_expensive``): the only ones a pattern table can hold."""
    return [(pos, t) for pos, t in enumerate(_unary_consumers(i, consumers))
            if _may_be_expensive(t)]


def _pattern_table(candidates: list, k: int) -> dict:
    """{formula over slot k: [(position, consumer)]} of ``candidates`` (an input's, from
    ``_candidates``) worth reading back (see ``_expensive``)."""
    table: dict = {}
    for pos, t in candidates:
        pattern = _formula(t, [_slot(k) for _ in t.inputs])
        if _expensive(pattern):
            table.setdefault(pattern, []).append((pos, t))
    return table


def reuse_values(order: list, consumers: dict, expr_op) -> int:
    """Rewrite elementwise nodes in place to read computed ``f(x)`` instead of
    recomputing it; returns how many nodes changed (the caller re-sorts the graph).

    Linear in the graph: the patterns of an input's consumers are built once per input
    slot, and a node looks its formula's subexpressions up in them; a node none of whose
    inputs has such a consumer is passed over without building its formula."""
    changed = 0
    tables: dict = {}     # id(i) -> {None: _candidates(i), k: _pattern_table(i, k)}
    for node in order:
        if node.op.kind != "elementwise" or node.value is not None or \
                node.dtype.kind != "f":
            continue
        by_input = []
        for i in node.inputs:
            by_slot = tables.get(id(i))
            if by_slot is None:
                by_slot = tables[id(i)] = {None: _candidates(i, consumers)}
            by_input.append(by_slot)
        if not any(by_slot[None] for by_slot in by_input):
            continue                          # no table holds a pattern: nothing to match
        inputs = list(node.inputs)
        symbols = [_slot(k) for k in range(len(inputs))]
        formula = _formula(node, symbols)
        inside = _inside(formula)
        matches, seen = [], {id(node)}
        for k, by_slot in enumerate(by_input):
            if k not in by_slot:
                by_slot[k] = _pattern_table(by_slot[None], k)
            table = by_slot[k]
            for e in inside:
                for pos, t in table.get(e, ()):
                    if id(t) not in seen and t.dtype == node.dtype:
                        seen.add(id(t))
                        matches.append((k, pos, t, e))
        for _, _, t, pattern in sorted(matches, key=lambda m: m[:2]):
            if not formula.has(pattern):
                continue
            symbols.append(_slot(len(inputs)))
            inputs.append(t)
            formula = formula.xreplace({pattern: symbols[-1]})
        if len(inputs) == len(node.inputs):
            continue
        for i in node.inputs:   # node's pattern as a consumer of its old inputs is stale
            tables.pop(id(i), None)
        _set_expr(node, inputs, symbols, formula, expr_op)
        changed += 1
    return changed


def _set_expr(node, inputs: list, symbols: list, formula: sp.Expr, expr_op) -> None:
    """Make ``node`` an ``expr`` node over the inputs its formula still uses."""
    used = formula.free_symbols
    keep = [(i, s) for i, s in zip(inputs, symbols) if s in used]
    if not keep:   # a constant formula: keep one input to carry the shape
        keep = [(inputs[0], symbols[0])]
    positional = [input_symbol(k, dtype_kind(i.dtype)) for k, (i, _) in enumerate(keep)]
    node.op = expr_op
    node.inputs = tuple(i for i, _ in keep)
    node.attrs = {"expr": formula.xreplace({s: p for (_, s), p in zip(keep, positional)}),
                  "dtype": node.dtype}


CHEAP_OPS = 4   # at most this many arithmetic operations make a node cheap to recompute


def _cheap_read(node) -> bool:
    """A placeholder, a constant, or a numpy view of a placeholder (small to read)."""
    while node.op in CHEAP_VIEWS:
        node = node.inputs[0]
    return node.op is PLACEHOLDER or node.is_const


def _expands(node, i) -> bool:
    """Whether ``node`` broadcasts input ``i`` up: it is larger than what it reads."""
    dims = (1,) * (len(node.dims) - len(i.dims)) + tuple(i.dims)
    return any(d == 1 and n != 1 for d, n in zip(dims, node.dims))


def clone_cheap(order: list, consumers: dict, make) -> int:
    """Give every consumer but the first its own copy of a cheap elementwise node that
    broadcasts placeholders up (``P[:, None] - P[None]``): a consumer in another kernel
    then recomputes it from the small inputs instead of the first kernel storing a large
    array (copies in one kernel are merged again by cse). ``make(node)`` copies a node."""
    changed = 0
    for node in order:
        users = consumers.get(id(node), [])
        if node.kind != "elementwise" or node.is_const or len(users) < 2 or \
                not all(_cheap_read(i) and _expands(node, i) for i in node.inputs):
            continue
        symbols = [sp.Dummy(f"s{k}", real=True) for k in range(len(node.inputs))]
        formula = _formula(node, symbols)
        if formula.atoms(sp.Function) or sp.count_ops(formula) > CHEAP_OPS:
            continue
        for user in users[1:]:
            copy = make(node)
            user.inputs = tuple(copy if i is node else i for i in user.inputs)
            changed += 1
    return changed
