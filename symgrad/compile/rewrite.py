"""Rewrites of the folded graph that let more of it fuse and compute nothing twice.

* ``outer_product``: ``matmul(a, b)`` of 2-D operands with inner length 1 is the
  broadcast product ``a * b`` (``(n, 1) @ (1, m)``); as an elementwise node it fuses into
  the region that consumes it instead of materialising an ``n x m`` array.
* ``reuse_values``: the partials of ``sigmoid``, ``exp``, ... are written in terms of the
  op's input (``sigmoid(x) (1 - sigmoid(x))``); where the graph already computes
  ``s = sigmoid(x)``, a gradient node reading ``x`` reads ``s`` instead (``s (1 - s)``):
  the function is not evaluated a second time, and ``x`` often need not be stored at all.

>>> import symgrad as sg
>>> from symgrad.compile.fold import fold_graph
>>> x = sg.placeholder("x", shape=(3,))
>>> y = sg.reduce_sum(sg.sigmoid(x))
>>> g = fold_graph([y] + sg.gradients(y, x), [x])
>>> node = g.outputs[1]
>>> [i.op.name for i in node.inputs], node.attrs["expr"]
(['sigmoid'], _0*(1 - _0))
"""

from __future__ import annotations

from typing import Optional

import sympy as sp

from ..ops.symbols import dtype_kind, input_symbol
from .oprules import CHEAP_VIEWS, PLACEHOLDER, E, S
from .printer import number


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


def _formula(node, symbols: list) -> sp.Expr:
    """The node's sympy form over ``symbols`` (uniform constant inputs inlined)."""
    args = [number(i.uniform) if i.is_const and i.uniform is not None else s
            for i, s in zip(node.inputs, symbols)]
    positional = tuple(input_symbol(k, dtype_kind(i.dtype)) for k, i in enumerate(node.inputs))
    return sp.sympify(node.op.formula(positional, node.attrs)).xreplace(
        dict(zip(positional, args)))


def _expensive(expr: sp.Expr) -> bool:
    """Worth reading from memory rather than recomputing: a function call, not a power
    or product (reading a stored ``x**2`` costs more than squaring)."""
    return bool(expr.atoms(sp.Function)) and not expr.has(sp.Piecewise)


def _unary_consumers(node, consumers: dict) -> list:
    """Elementwise consumers of ``node`` that read nothing else (but uniform constants)."""
    out = []
    for c in consumers.get(id(node), ()):
        if c.kind != "elementwise" or c.is_const or c.dtype != node.dtype or \
                c.dims != node.dims:
            continue
        if all(i is node or (i.is_const and i.uniform is not None) for i in c.inputs):
            out.append(c)
    return out


_SLOTS: list = []


def _slot(k: int) -> sp.Dummy:
    """The k-th input symbol of every formula ``reuse_values`` compares: one shared family,
    so a consumer's pattern is built once and matched by hashing."""
    while len(_SLOTS) <= k:
        _SLOTS.append(sp.Dummy(f"s{len(_SLOTS)}", real=True))
    return _SLOTS[k]


def _pattern_table(i, k: int, consumers: dict) -> dict:
    """{formula over slot k: [(position, consumer)]} of the unary consumers of ``i``
    worth reading back (see ``_expensive``)."""
    table: dict = {}
    for pos, t in enumerate(_unary_consumers(i, consumers)):
        pattern = _formula(t, [_slot(k) for _ in t.inputs])
        if _expensive(pattern):
            table.setdefault(pattern, []).append((pos, t))
    return table


def reuse_values(order: list, consumers: dict, expr_op) -> int:
    """Rewrite elementwise nodes in place to read computed ``f(x)`` instead of
    recomputing it; returns how many nodes changed (the caller re-sorts the graph).

    Linear in the graph: the patterns of an input's consumers are built once per input
    slot, and a node looks its formula's subexpressions up in them."""
    changed = 0
    tables: dict = {}     # id(i) -> {k: _pattern_table(i, k)}
    for node in order:
        if node.kind != "elementwise" or node.is_const or node.dtype.kind != "f":
            continue
        inputs = list(node.inputs)
        symbols = [_slot(k) for k in range(len(inputs))]
        formula = _formula(node, symbols)
        inside = set(sp.preorder_traversal(formula))
        matches, seen = [], {id(node)}
        for k, i in enumerate(node.inputs):
            by_slot = tables.setdefault(id(i), {})
            if k not in by_slot:
                by_slot[k] = _pattern_table(i, k, consumers)
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
