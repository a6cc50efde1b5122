"""Rewrites of the folded graph that let more of it fuse and compute nothing twice.

* ``outer_product``: ``matmul(a, b)`` of 2-D operands with inner length 1 is the
  broadcast product ``a * b`` (``(n, 1) @ (1, m)``); as an elementwise node it fuses into
  the region that consumes it instead of materialising an ``n x m`` array.
* ``reuse_values``: the partials of ``tanh``, ``exp``, ``sigmoid``, ... are written in
  terms of the op's input (``1 - tanh(x)**2``); where the graph already computes
  ``t = tanh(x)``, a gradient node reading ``x`` reads ``t`` instead (``1 - t**2``): the
  function is not evaluated a second time, and ``x`` often need not be stored at all.

>>> import symgrad as sg
>>> from symgrad.compile.fold import fold_graph
>>> x = sg.placeholder("x", shape=(3,))
>>> y = sg.reduce_sum(sg.tanh(x))
>>> g = fold_graph([y] + sg.gradients(y, x), [x])
>>> node = g.outputs[1]
>>> [i.op.name for i in node.inputs], node.attrs["expr"]
(['tanh'], 1 - _0**2)
"""

from __future__ import annotations

from typing import Optional

import sympy as sp

from ..ops.symbols import dtype_kind, input_symbol


def outer_product(tensor, inputs: list, make) -> Optional[object]:
    """The elementwise ``a * b`` standing for ``matmul(a, b)`` when the inner length is 1
    (``make(op, inputs)`` builds the LNode), else None."""
    if tensor.op.name != "matmul" or len(inputs) != 2:
        return None
    a, b = inputs
    if len(a.shape) != 2 or len(b.shape) != 2 or a.shape[1] != 1 or b.shape[0] != 1:
        return None
    if not (a.dtype == b.dtype == tensor.dtype) or tensor.dtype.kind != "f":
        return None
    from ..ops.elementwise import multiply
    return make(multiply, [a, b])


def _formula(node, symbols: list) -> sp.Expr:
    """The node's sympy form over ``symbols`` (uniform constant inputs inlined)."""
    from .lower import number
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


def reuse_values(order: list, consumers: dict, expr_op) -> int:
    """Rewrite elementwise nodes in place to read computed ``f(x)`` instead of
    recomputing it; returns how many nodes changed (the caller re-sorts the graph).

    Linear in the graph: each candidate's pattern is built once per input slot, and a
    node's formula is searched through the set of its subexpressions."""
    changed, unary = 0, {}   # unary: id(input) -> its unary consumers (wide fan-outs)
    patterns: dict = {}   # (id(t), k) -> t's formula over slot k, or None if not worth it
    for node in order:
        if node.kind != "elementwise" or node.is_const or node.dtype.kind != "f":
            continue
        inputs = list(node.inputs)
        candidates, seen = [], {id(node)}
        for k, i in enumerate(inputs):
            if id(i) not in unary:
                unary[id(i)] = _unary_consumers(i, consumers)
            for t in unary[id(i)]:
                if id(t) not in seen and t.dtype == node.dtype:
                    seen.add(id(t))
                    candidates.append((t, k))
        if not candidates:
            continue
        symbols = [_slot(k) for k in range(len(inputs))]
        formula = _formula(node, symbols)
        inside = set(sp.preorder_traversal(formula))
        for t, k in candidates:
            key = (id(t), k)
            if key not in patterns:
                pattern = _formula(t, [_slot(k) for _ in t.inputs])
                patterns[key] = pattern if _expensive(pattern) else None
            pattern = patterns[key]
            if pattern is None or pattern not in inside:
                continue
            symbols.append(_slot(len(inputs)))
            inputs.append(t)
            formula = formula.xreplace({pattern: symbols[-1]})
            inside = set(sp.preorder_traversal(formula))
        if len(inputs) == len(node.inputs):
            continue
        for i in node.inputs:   # node is no longer a unary consumer of its old inputs
            unary.pop(id(i), None)
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


_VIEWS = ("getitem", "expand_dims", "transpose", "reshape")
CHEAP_OPS = 4   # at most this many arithmetic operations make a node cheap to recompute


def _cheap_read(node) -> bool:
    """A placeholder, a constant, or a numpy view of a placeholder (small to read)."""
    while node.op.name in _VIEWS:
        node = node.inputs[0]
    return node.op.name == "placeholder" or node.is_const


def _expands(node, i) -> bool:
    """Whether ``node`` broadcasts input ``i`` up: it is larger than what it reads."""
    dims = (1,) * (len(node.dims) - len(i.dims)) + tuple(i.dims)
    return any(d == 1 and n != 1 for d, n in zip(dims, node.dims))


def clone_cheap(order: list, consumers: dict, make) -> int:
    """Give every consumer but the first its own copy of a cheap elementwise node that
    broadcasts placeholders up (``P[:, None] - P[None]``): a consumer in another kernel then recomputes
    it from the small inputs instead of the first kernel storing a large array (copies in
    one kernel are merged again by cse). ``make(node)`` copies a node."""
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
