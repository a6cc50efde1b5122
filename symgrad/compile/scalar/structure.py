"""Which elements of each value a scalar kernel would make the same, a number or an exact
zero, and so the statements (terms) each node's element rule emits: the cost model's
count (``cost.statements``), not the dense one.

The element rules (``elements.py``) bind each distinct element expression once
(hash-consing), fold numbers, drop exact-zero terms of a sum (``0.0 + x`` is ``x``) and
keep a zero factor (``0.0*x``). A Jacobian's rows are mostly exact zeros (a
``getitem_grad`` writes its cotangent into zeros), a seed times a broadcast scalar has two
distinct elements: counted densely, a 100-species network's Jacobian was 131,000 statements
for 2,616 real ones. Here every value is an integer array of element *classes* (one pass in
graph order, numpy work per node, no sympy per element): ``0`` an exact zero, equal
classes equal elements, with a mask of the classes that are numbers. Records that move
entries (and ``getitem_grad``) run their own numpy forward on the classes; an elementwise
node makes one class per distinct row of its inputs' classes, and what each row gives is
its formula on a pattern of zeros, numbers and symbols (sympy once per node and pattern:
an atom is free, an input passed through keeps its class); a sum counts its non-zero
terms per element; a contraction its products that are not all numbers; a rule that
counts its own statements (small linear algebra) gives its count. A value computed outside
the scalar pass (a source, a node no rule covers) is all distinct symbols, kept as ``None``
(no array) while no structure meets it.

>>> import symgrad as sg
>>> from symgrad.compile.plan.fold import fold_graph
>>> x = sg.placeholder("x", shape=(100,))
>>> g = fold_graph(sg.gradients(sg.reduce_sum(x[3] * x[7]), [x]))
>>> k = structure(g)
>>> [(n.op.name, k[id(n)].terms) for n in g.order if not n.is_const][1:]
[('getitem', 0), ('expr', 1), ('getitem_grad', 0), ('getitem', 0), ('expr', 1), ('getitem_grad', 0), ('expr', 0)]

(a computed scalar is counted one statement; the sum of the two rows, each a non-zero in
zeros, is none: counted densely, 100).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
import sympy as sp

from ...ops.symbols import dtype_kind
from ..codegen.lower import _attrs_key, node_expression, node_formula
from ..plan.fold import FoldedGraph, LNode
from ..printing.printer import ZERO, number

__all__ = ["Classes", "structure", "READ"]

READ = -1
"""The terms of a value the scalar pass reads (computed outside it): not counted here."""

_ZERO, _NUMBER, _SYMBOL, _ONE = 0, 1, 2, 3
"""The states of an element in an elementwise row pattern (class 0 is an exact zero, class
1 an exact one: ``1*x`` is ``x``)."""


@dataclass
class Classes:
    """A node's element classes (``cls``: int64 array of its shape, 0 an exact zero; None
    for all distinct symbols), which of them are numbers (``num``; None: none), and the
    terms its rule emits (``terms``; ``READ`` for a value made outside the pass)."""

    cls: Optional[np.ndarray]
    num: Optional[np.ndarray]
    terms: int


class _Pass:
    """One pass over a graph: fresh class ids, the probes of formulas by pattern."""

    def __init__(self, counted, sums, contractions, classes=None):
        self.next = 2
        self.classes = classes or {}        # {record: its rule's classes(node, ins, fresh)}
        self.probes: dict = {}
        self.formulas: dict = {}
        self.counted, self.sums = counted, sums
        self.contractions = contractions    # {record: its dense products(node)}

    def fresh(self, shape) -> np.ndarray:
        n = _size(shape)
        out = np.arange(self.next, self.next + n, dtype=np.int64).reshape(shape)
        self.next += n
        return out

    def dense(self, info: Classes, shape) -> tuple:
        """(classes, number mask) of a value, made when structure first meets it."""
        if info.cls is None:
            info.cls = self.fresh(shape)
        return info.cls, (np.zeros(info.cls.shape, bool) if info.num is None else info.num)


def _static(node: LNode) -> bool:
    return all(isinstance(d, int) for d in node.shape) and node.dims == node.shape


def _size(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _constant(node: LNode, run: _Pass) -> Classes:
    value = np.asarray(node.value)
    if value.dtype.kind not in "fiub":
        return Classes(None, None, 0)
    uniq, inverse = np.unique(value.ravel(), return_inverse=True)
    ids = np.arange(run.next, run.next + len(uniq), dtype=np.int64)
    run.next += len(uniq)
    ids[uniq == 0] = 0
    ids[uniq == 1] = 1
    cls = ids[inverse].reshape(value.shape)
    return Classes(cls, np.ones(value.shape, bool), 0)


def structure(graph: FoldedGraph, counted=None, sums=frozenset(),
              contractions=None, small=None, classes=None) -> dict:
    """{id(node): Classes} for every node of ``graph`` (cached on it). ``counted(node)``:
    the terms of a rule that counts its own (None otherwise); ``sums`` and
    ``contractions``: the records that sum their inputs, and {record: products(node)} of
    those that sum products (counted densely); ``small(node)``:
    whether the scalar pass may work the node per element (else its value is read; a
    constant: whether its classes may be made); ``classes``: {record: classes(node,
    [(classes, numbers) of each input], fresh) -> (classes, numbers, terms) or None} of
    rules that give their own (index ops with constant indices)."""
    found = getattr(graph, "scalar_structure", None)
    if found is not None:
        return found
    run = _Pass(counted, sums, contractions or {}, classes)
    out: dict = {}
    for node in graph.order:
        if node.is_const:      # a constant too large for ``small``: read, never unique'd
            out[id(node)] = _constant(node, run) if small is None or small(node) else \
                Classes(None, None, READ)
        elif node.kind == "source" or not (small(node) if small is not None else
                                           all(map(_static, (node,) + node.inputs))):
            out[id(node)] = Classes(None, None, READ)
        elif node.kind == "elementwise" and not node.shape:
            out[id(node)] = Classes(None, None, 1)   # a scalar: one statement, no pattern
        else:
            out[id(node)] = _node(node, [out[id(i)] for i in node.inputs], run)
    graph.scalar_structure = out
    return out


def _node(node: LNode, ins: list, run: _Pass) -> Classes:
    n = _size(node.shape)
    if node.kind == "elementwise":
        return _elementwise(node, ins, run)
    shaped = run.classes.get(node.op)
    if shaped is not None:
        found = shaped(node, [run.dense(i, x.shape) for i, x in zip(ins, node.inputs)],
                       run.fresh)
        if found is not None:
            return Classes(found[0].astype(np.int64), found[1].astype(bool), found[2])
    own = run.counted(node) if run.counted is not None else None
    if own is not None:
        return Classes(None, None, own)
    if node.op in run.sums:
        return _sum(node, ins, run)
    if node.op in run.contractions:
        return _contraction(node, ins, run)
    if all(i.cls is None for i in ins) and n <= _size(node.inputs[0].shape):
        return Classes(None, None, 0)   # a part of distinct symbols (a repeat counted apart)
    try:        # a move (or getitem_grad): its numpy forward on the classes
        arrays = [run.dense(i, x.shape) for i, x in zip(ins, node.inputs)]
        cls = np.asarray(node.op.numpy(*(a for a, _ in arrays), **node.attrs))
        num = np.asarray(node.op.numpy(*(m for _, m in arrays), **node.attrs))
    except Exception:       # noqa: BLE001 (no numpy forward on these: all distinct)
        return Classes(None, None, n)
    if cls.shape != tuple(node.shape) or cls.dtype.kind not in "iub":
        return Classes(None, None, n)
    return Classes(cls.astype(np.int64), num.astype(bool) | (cls == 0), 0)


def _states(cls: np.ndarray, num: Optional[np.ndarray]) -> np.ndarray:
    states = np.full(cls.shape, _SYMBOL, dtype=np.int64)
    if num is not None:
        states[num] = _NUMBER
    states[cls == 0] = _ZERO
    states[cls == 1] = _ONE
    return states


def _elementwise(node: LNode, ins: list, run: _Pass) -> Classes:
    shape = tuple(node.shape)
    n = _size(shape)
    sizes = [_size(x.shape) for x in node.inputs]
    if all(i.cls is None for i in ins) and n in sizes:   # all distinct symbols
        kind, slot = _probe(node, (_SYMBOL,) * len(ins), run)
        if kind == "slot" and sizes[slot] == n:
            return ins[slot]
        return Classes(None, None, n if kind == "statement" else 0)
    if len(ins) > 31:      # no pattern key: every element a statement
        return Classes(None, None, n)
    if n <= _SMALL and all(m in (1, n) for m in sizes):
        return _listed(node, ins, sizes, run)
    rows, states = [], []
    for i, x in zip(ins, node.inputs):
        cls, num = run.dense(i, x.shape)
        rows.append(np.broadcast_to(cls, shape).ravel())
        states.append(np.broadcast_to(_states(cls, num), shape).ravel())
    key = np.zeros(n, dtype=np.uint64)
    for r in rows:
        key = key * np.uint64(0x9E3779B97F4A7C15) ^ r.astype(np.uint64)
    pattern = np.zeros(n, dtype=np.int64)
    for k, s in enumerate(states):
        pattern += s * 4 ** k
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    cls = np.empty(len(first), dtype=np.int64)
    num = np.zeros(len(first), dtype=bool)
    terms = 0
    for p in np.unique(pattern[first]):
        at = np.flatnonzero(pattern[first] == p)
        kind, slot = _probe(node, tuple(int(p) // 4 ** k % 4 for k in range(len(ins))), run)
        if kind == "zero":
            cls[at] = 0
            num[at] = True
        elif kind == "slot":
            cls[at] = rows[slot][first[at]]
            num[at] = states[slot][first[at]] != _SYMBOL
        else:
            cls[at] = np.arange(run.next, run.next + len(at))
            run.next += len(at)
            num[at] = kind == "number"
            terms += len(at) if kind == "statement" else 0
    return Classes(cls[inverse].reshape(shape), num[inverse].reshape(shape), terms)


_SMALL = 128
"""Values of at most this many elements are worked in Python lists (numpy's calls cost
more than the elements there: the 100-species network's 1,299 elementwise nodes of 100
elements, 0.125 s in numpy, 0.09 s in lists; the classes found are the same)."""


def _listed(node: LNode, ins: list, sizes: list, run: _Pass) -> Classes:
    """``_elementwise`` on lists: inputs of one element or of the node's shape."""
    n = _size(node.shape)
    columns, states = [], []
    for i, x, m in zip(ins, node.inputs, sizes):
        cls, num = run.dense(i, x.shape)
        c, u = cls.ravel().tolist(), num.ravel().tolist()
        st = [_ZERO if a == 0 else _ONE if a == 1 else _NUMBER if b else _SYMBOL
              for a, b in zip(c, u)]
        columns.append(c * n if m == 1 else c)
        states.append(st * n if m == 1 else st)
    made: dict = {}
    out, num_out = [], []
    terms = 0
    for row, pattern in zip(zip(*columns), zip(*states)):
        found = made.get(row)
        if found is None:
            kind, slot = _probe(node, pattern, run)
            if kind == "slot":
                found = (row[slot], pattern[slot] != _SYMBOL)
            elif kind == "zero":
                found = (0, True)
            else:
                found = (run.next, kind == "number")
                run.next += 1
                terms += kind == "statement"
            made[row] = found
        out.append(found[0])
        num_out.append(found[1])
    return Classes(np.array(out, np.int64).reshape(node.shape),
                   np.array(num_out, bool).reshape(node.shape), terms)


def _probe(node: LNode, pattern: tuple, run: _Pass) -> tuple:
    """What ``node``'s formula gives on inputs in states ``pattern``: ("zero"|"number"|
    "statement", None) or ("slot", k) (input k passed through), as the element rules
    bind it (an exact zero term of a sum dropped)."""
    key = (node.op, _attrs_key(node.attrs), tuple(i.dtype.str for i in node.inputs), pattern)
    found = run.probes.get(key)
    if found is None:
        found = run.probes[key] = _evaluate(node, pattern, run, key[:3])
    return found


def _evaluate(node: LNode, pattern: tuple, run: _Pass, fkey: tuple) -> tuple:
    try:
        formula = run.formulas.get(fkey)
        if formula is None:
            formula = run.formulas[fkey] = node_formula(node)
        positional = formula[0]
        args = [ZERO if s == _ZERO and dtype_kind(i.dtype) == "f" else
                number(0) if s == _ZERO else number(1) if s == _ONE else
                number(1.0 + 0.125 * (k + 1)) if
                s == _NUMBER and dtype_kind(i.dtype) == "f" else
                number(k + 2) if s == _NUMBER else positional[k]
                for k, (s, i) in enumerate(zip(pattern, node.inputs))]
        expr = node_expression(node, formula, args)
    except Exception:       # noqa: BLE001 (a form sympy refuses here: a statement)
        return ("statement", None)
    if expr.is_Add and ZERO in expr.args:
        terms = [a for a in expr.args if a is not ZERO]
        expr = sp.Add(*terms) if terms else ZERO
    if expr is ZERO or (expr.is_Number and expr == 0):
        return ("zero", None)
    if expr.is_Number or expr in (sp.true, sp.false):
        return ("number", None)
    if expr.is_Symbol and expr in positional:
        return ("slot", positional.index(expr))
    return ("statement", None)


def _sum(node: LNode, ins: list, run: _Pass) -> Classes:
    """A sum: per output element, its non-zero input terms (one term is the term
    itself, no statement)."""
    n = _size(node.shape)
    if ins[0].cls is None:
        return Classes(None, None, _size(node.inputs[0].shape))
    others = [np.zeros(x.shape) for x in node.inputs[1:]]
    nonzero = (ins[0].cls != 0).astype(np.float64)
    try:
        count = np.asarray(node.op.numpy(nonzero, *others, **node.attrs), np.float64)
        whole = np.asarray(node.op.numpy(np.ones_like(nonzero), *others, **node.attrs),
                           np.float64)
    except Exception:       # noqa: BLE001
        return Classes(None, None, _size(node.inputs[0].shape))
    group = _size(node.inputs[0].shape) / max(n, 1)
    count = np.rint(np.divide(count, whole, out=np.zeros_like(count), where=whole != 0)
                    * group).astype(np.int64).reshape(node.shape)
    cls = run.fresh(node.shape)
    cls[count == 0] = 0
    return Classes(cls, count == 0, int(count[count >= 2].sum()))


def _contraction(node: LNode, ins: list, run: _Pass) -> Classes:
    """A contraction: its products that are not all numbers (a zero factor of a symbol
    stays a term: ``0.0*x``)."""
    products = run.contractions[node.op]
    if all(i.cls is None for i in ins):
        return Classes(None, None, products(node))
    arrays = [run.dense(i, x.shape) for i, x in zip(ins, node.inputs)]
    try:
        whole = np.asarray(node.op.numpy(*(np.ones(a.shape) for a, _ in arrays),
                                         **node.attrs), np.float64)
        free = np.asarray(node.op.numpy(*((m | (a == 0)).astype(np.float64)
                                          for a, m in arrays), **node.attrs), np.float64)
    except Exception:       # noqa: BLE001
        return Classes(None, None, products(node))
    terms = np.rint(whole - free).astype(np.int64).reshape(node.shape)
    return Classes(run.fresh(node.shape), terms == 0, int(terms.sum()))
