"""Loop-invariant hoisting across broadcast axes: a subexpression of an elementwise node
that reads only operands broadcast along some of the node's axes is computed once per
element of the smaller shape, not once per element of the node.

The batched Jacobian of ``y = sin(x[1:]) * x[:-1]**2 + exp(-x[1:])`` is a ``(k, n)``
kernel whose entries are ``seed[i, j] * cos(x[j]) * ...``: ``cos`` and ``exp`` read only
``(n,)`` operands, broadcast along the ``k`` rows. Here each maximal such subexpression
that costs something (a function call, a division, a root: see ``_costly``) becomes an
``expr`` node of the smaller shape, and the node reads it instead. The planner then fuses
the new node into a kernel of that shape (``regions.merge_siblings``), so every loop
template (flat, gather, nest, parallel, cuda) reads a precomputed temporary of length n
instead of calling ``cos`` k times per column: no template knows about hoisting.

Only whole subtrees of a node's sympy form are hoisted (a product's factors are not
regrouped), every operand of a hoisted tree has the node's float dtype, and the tree is
the same sympy expression the kernel would have evaluated: values, NaN and inf are those
of the unhoisted kernel. A hoist that would need a kernel of its own (no elementwise node
of the smaller shape exists) is made only for nodes of at least ``NEW_KERNEL_MIN``
elements (or unknown length), where the saved work pays for a kernel's compile.

>>> import symgrad as sg
>>> from symgrad.compile.plan.fold import fold_graph
>>> x = sg.placeholder("x", shape=(128,))
>>> w = sg.placeholder("w", shape=(256, 128))
>>> g, hoisted = hoist_invariants(fold_graph([sg.xlogy(w, x)], [x, w]))   # w * log(x)
>>> [(h.node.attrs["expr"], h.node.shape, h.consumer.shape) for h in hoisted]
[(log(_0), (128,), (256, 128))]
>>> g.outputs[0].attrs["expr"]
Piecewise((0, Eq(_0, 0)), (_0*_1, True))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import sympy as sp

from ...graph.tensor import Tensor
from ...ops.symbols import input_symbol
from .fold import FoldedGraph, LNode, _order
from .oprules import E
from .rewrite import _formula, _set_expr, _slot

NEW_KERNEL_MIN = 1 << 15   # elements: a hoist that makes a new kernel pays from here
ENABLED = True             # tests compare against the unhoisted kernels (set False)


@dataclass(frozen=True)
class Hoisted:
    """``node`` (new, of the smaller shape) is computed once for ``consumer``'s loop."""

    node: LNode
    consumer: LNode


def _broadcast_axes(node: LNode, i: LNode) -> frozenset:
    """The axes of ``node`` along which input ``i`` is broadcast (length 1 or missing)."""
    pad = len(node.dims) - len(i.dims)
    dims = (1,) * pad + tuple(i.dims)
    return frozenset(a for a, (d, n) in enumerate(zip(dims, node.dims)) if d == 1 and n != 1)


def _costly(expr: sp.Expr) -> bool:
    """Worth computing once: a function call (exp, cos, Piecewise, ..) or a power that is
    not a small positive integer (a division, a root)."""
    for e in sp.preorder_traversal(expr):
        if isinstance(e, sp.core.function.Application):
            return True
        if e.is_Pow and not (e.exp.is_Integer and 0 < e.exp <= 4):
            return True
    return False


def _denominator(factor: sp.Expr) -> bool:
    """A factor of a product that ``NumbaPrinter`` prints as a divisor (``x**-2``): it is
    never hoisted as a reciprocal (``a*(1/b)`` is not ``a/b`` to the last bit); the divisor
    ``x**2`` (or a part of it) may be."""
    return factor.is_Pow and factor.exp.is_Number and factor.exp < 0 and \
        not factor.base.is_Number


def _shape_of(inputs: list, attr: str) -> tuple:
    """numpy broadcasting of the inputs' ``shape`` or ``dims`` (1 broadcasts)."""
    shapes = [tuple(getattr(i, attr)) for i in inputs]
    rank = max(len(s) for s in shapes)
    out = []
    for a in range(rank):
        col = [s[a - rank + len(s)] for s in shapes if a - rank + len(s) >= 0]
        out.append(next((d for d in col if d != 1), 1))
    return tuple(out)


def _size(dims: tuple) -> Optional[int]:
    size = 1
    for d in dims:
        if not isinstance(d, int):
            return None
        size *= d
    return size


class _Hoister:
    """One pass over the graph (see ``hoist_invariants``)."""

    def __init__(self, graph: FoldedGraph):
        self.graph = graph
        self.made: dict = {}      # (formula, input ids) -> the LNode computing it
        self.hoisted: list = []
        self.small_dims = {n.dims for n in graph.order
                           if n.kind == "elementwise" and not n.is_const}

    def allowed(self, node: LNode, dims: tuple) -> bool:
        if dims in self.small_dims:
            return True
        size = _size(node.dims)
        return size is None or size >= NEW_KERNEL_MIN

    def node_for(self, expr: sp.Expr, inputs: list, slot_of: dict, consumer: LNode) -> LNode:
        """The (shared) new node computing ``expr``, a tree over the slots of ``inputs``."""
        used = sorted((slot_of[s], s) for s in expr.free_symbols if s in slot_of)
        ins = [inputs[k] for k, _ in used]
        formula = expr.xreplace({s: input_symbol(j, "f") for j, (_, s) in enumerate(used)})
        key = (formula, tuple(id(i) for i in ins))
        found = self.made.get(key)
        if found is not None:
            return found
        shape, dims = _shape_of(ins, "shape"), _shape_of(ins, "dims")
        name = f"{consumer.name}/hoisted_{len(self.hoisted)}"
        attrs = {"expr": formula, "dtype": consumer.dtype}
        tensor = Tensor(E.expr, tuple(i.tensor for i in ins), attrs, shape, consumer.dtype,
                        name)
        new = LNode(tensor, E.expr, ins, dict(attrs))
        new.dims = dims
        self.made[key] = new
        self.small_dims.add(dims)
        self.hoisted.append(Hoisted(new, consumer))
        return new

    def rewrite(self, node: LNode) -> bool:
        """Hoist the invariant subtrees of one node; whether it changed."""
        if node.kind != "elementwise" or node.is_const or node.dtype.kind != "f" or \
                not node.dims:
            return False
        axes = [_broadcast_axes(node, i) if i.dtype == node.dtype else frozenset()
                for i in node.inputs]
        if not any(axes):
            return False
        inputs = list(node.inputs)
        symbols = [_slot(k) for k in range(len(inputs))]   # shared: memoised formulas
        slot_of = {s: k for k, s in enumerate(symbols)}
        new_symbol: dict = {}    # new LNode -> its symbol in the rewritten formula

        def hoistable(e) -> bool:
            """An invariant (all its slots broadcast along a common axis), costly tree."""
            if e.is_Atom or not isinstance(e, sp.Expr):
                return False
            slots = [slot_of.get(s) for s in e.free_symbols if s.is_Dummy]
            if not slots or None in slots or \
                    not frozenset.intersection(*(axes[k] for k in slots)):
                return False
            if not _costly(e):
                return False
            return self.allowed(node, _shape_of([inputs[k] for k in slots], "dims"))

        def visit(e):
            if hoistable(e):
                new = self.node_for(e, inputs, slot_of, node)
                return new_symbol.setdefault(new, sp.Dummy("n", real=True))
            if not e.args:
                return e
            if e.is_Mul:   # a divisor stays a divisor: a/sqrt(b) -> a/h, h = sqrt(b)
                args = [sp.Pow(visit(sp.Pow(a.base, -a.exp)), -1) if _denominator(a)
                        else visit(a) for a in e.args]
            else:
                args = [visit(a) for a in e.args]
            if all(a is b for a, b in zip(args, e.args)):
                return e
            return e.func(*args)

        rewritten = visit(_formula(node, symbols))
        if not new_symbol:
            return False
        _set_expr(node, inputs + list(new_symbol), symbols + list(new_symbol.values()),
                  rewritten, E.expr)
        return True


def hoist_invariants(graph: FoldedGraph) -> tuple:
    """(the graph with invariant subexpressions hoisted, the list of ``Hoisted``). The
    folded graph's nodes are rewritten in place; the returned graph is re-sorted."""
    if not ENABLED:
        return graph, []
    hoister = _Hoister(graph)
    changed = sum(hoister.rewrite(node) for node in list(graph.order))
    if not changed:
        return graph, []
    roots = list(graph.placeholders) + [o for o in graph.outputs if o is not None]
    return FoldedGraph(_order(roots), graph.outputs, graph.placeholders), hoister.hoisted


def hoist_lines(hoisted: list) -> list:
    """The explain section: per hoist, the node whose loop it leaves and what it computes
    (over the names of the values it reads)."""
    lines = []
    for h in hoisted:
        names = {input_symbol(k, "f"): sp.Symbol(i.name) for k, i in enumerate(h.node.inputs)}
        lines.append(f"  {h.consumer.name} {tuple(h.consumer.shape)}: "
                     f"{h.node.attrs['expr'].xreplace(names)} once per element of "
                     f"{tuple(h.node.shape)} ({h.node.name})")
    return lines
