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


def reuse_values(order: list, consumers: dict, expr_op) -> int:
    """Rewrite elementwise nodes in place to read computed ``f(x)`` instead of
    recomputing it; returns how many nodes changed (the caller re-sorts the graph)."""
    # caches (wide graphs have nodes with thousands of consumers: no work per pair):
    # each consumer's pattern, each input's reusable consumers, one Dummy per input node
    changed, patterns, unary, dummies = 0, {}, {}, {}

    def dummy(i) -> sp.Dummy:
        return dummies.setdefault(id(i), sp.Dummy("s", real=True))

    for node in order:
        if node.kind != "elementwise" or node.is_const or node.dtype.kind != "f":
            continue
        candidates = {}
        for i in node.inputs:
            if id(i) not in unary:   # only consumers whose formula is worth reusing
                unary[id(i)] = [t for t in _unary_consumers(i, consumers)
                                if _pattern(t, patterns, dummy) is not None]
            candidates.update((id(t), t) for t in unary[id(i)]
                              if t is not node and t.dtype == node.dtype)
        if not candidates:
            continue
        inputs = list(node.inputs)
        symbols = [dummy(i) if inputs.index(i) == k else sp.Dummy(f"s{k}", real=True)
                   for k, i in enumerate(inputs)]
        formula = _formula(node, symbols)
        for t in candidates.values():
            pattern = _pattern(t, patterns, dummy)
            if pattern is None or not formula.has(pattern):
                continue
            symbols.append(sp.Dummy(f"s{len(inputs)}", real=True))
            inputs.append(t)
            formula = formula.xreplace({pattern: symbols[-1]})
        if len(inputs) == len(node.inputs):
            continue
        for i in node.inputs:   # node is no longer a unary consumer of its old inputs
            unary.pop(id(i), None)
        _set_expr(node, inputs, symbols, formula, expr_op)
        changed += 1
    return changed


def _pattern(t, cache: dict, dummy) -> Optional[sp.Expr]:
    """The formula of the unary consumer ``t`` over ``dummy(its input)`` when it is
    expensive, else None; computed once per version of ``t``."""
    key = (id(t), t.op, t.inputs)
    if key not in cache:
        uniform = [i.is_const and i.uniform is not None for i in t.inputs]
        pattern = _formula(t, [None if c else dummy(i) for i, c in zip(t.inputs, uniform)])
        cache[key] = pattern if _expensive(pattern) else None
    return cache[key]


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
