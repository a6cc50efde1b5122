"""The cost model that chooses scalar kernels: run time and build size of a region in each
form (no element-count threshold).

A region worked per element is one call (``DISPATCH_NS``) running straight-line
statements (``STATEMENT_NS`` each). The same region left to the kernel planner is one
call per loop kernel and per structural step between them (``DISPATCH_NS`` each) running
the same element work in loops (``ELEMENT_NS`` per element of each op: vector code, no
spills). Statements are what the element rules emit (``elements.py``), counted on the
structure of the values (``structure.py``: exact zeros, ones, numbers and equal elements,
as a Jacobian's rows are mostly zeros): one per distinct element of an elementwise node
that is not an atom; a sum (reduction, ``unbroadcast``, ``tile_grad``) its non-zero terms;
a contraction its products that are not all numbers (densely n * m * k for a matmul; for
an einsum or tensordot, of any number of operands, the product of its letters' lengths);
a view or a move (getitem, stack, transpose, ``getitem_grad``, ...) none. A node joins a
region while its statements cost at most the calls the program's structural steps could
save (``admissible``, ``units``); the loop form's steps add their element work where
their rule declares it (``step_cost.py``: ``np.add.at`` scatters, gathers). The scalar
form is chosen where it costs less in total (run time over ``BUILD_CALLS`` calls plus
build time), and while the build time the program's scalar kernels add over the loops
they replace (``BUILD_*_US`` per statement, per element read or written and per node,
against ``BUILD_UNIT_US`` per loop kernel or step) fits together in a budget that grows with
the program (``BUILD_BASE_US`` and ``BUILD_PER_NODE_US`` per node; the regions saving
the most run time per build second first): a kernel may grow with the program it comes
from, never past a fixed size. A kernel of float64 and bool values is written as LLVM IR
(``BUILD_IR_*_US``, linear), one of other values passes numba's front end (the numba
constants, superlinear in its elements). All constants live in ``settings.py``.

>>> import symgrad as sg
>>> from symgrad.compile.plan.fold import fold_graph
>>> x = sg.placeholder("x", shape=(100,))
>>> g = fold_graph([sg.stack([x[i] * x[(i + 1) % 100] for i in range(100)])])
>>> e = estimate(g.order[1:], g)
>>> (e.statements, e.reads, e.writes, e.kernels, e.steps, e.faster)
(100, 100, 100, 1, 101, True)
>>> print(e.text().replace("; ", ";" + chr(10)))
scalar ~1.1 us (100 statements) vs loops ~102 us (1 kernel, 101 steps);
build ~0.047 s (200 elements read or written) vs ~5.1 s
>>> within_budget([e], budget_us(g)), budget_us(g) / 1e6
([True], 4.02)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ...ops.contraction import records as C
from ...ops.contraction.records import letter_sizes, parse_subscripts, tensordot_subscripts
from ...ops.indexing import records as I
from ...ops.layout import records as L
from ...ops.reductions import records as R
from ..plan.fold import FoldedGraph, LNode
from ..plan.oprules import FUSED_REDUCTIONS, S
from . import settings
from .elements import ELEMENT_RULES
from .step_cost import steps_ns
from .structure import READ, structure

__all__ = ["Estimate", "estimate", "statements", "known", "units", "splits", "size_of",
           "admissible", "budget_us", "within_budget"]

UNBOUNDED = 1 << 62
"""The statements of a rule that declines the node (a matrix above its size): never
admissible."""

_SUMS = frozenset({R.reduce_sum, R.reduce_mean, R.unbroadcast, L.tile_grad})
_CONTRACTIONS = frozenset({C.matmul, C.einsum, C.tensordot})
_PICKS = frozenset({I.getitem, L.unstack, L.split})
"""Records whose value is some elements of their input (a kernel reads only those)."""


def size_of(shape: tuple) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def statements(node: LNode, known: Optional[dict] = None) -> int:
    """Statements (terms) the element rule of ``node`` emits (see the module docstring):
    from ``known`` (``structure.structure``: exact zeros, numbers and equal elements
    counted once) where given, else dense.

    >>> import symgrad as sg
    >>> from symgrad.compile.plan.fold import fold_graph
    >>> a = sg.placeholder("a", shape=(64, 64))
    >>> [statements(n) for n in fold_graph([sg.tanh(sg.matmul(a, a))]).order[1:]]
    [262144, 4096]
    """
    found = known.get(id(node)) if known is not None else None
    if found is not None and found.terms != READ:
        return found.terms
    out = size_of(node.shape)
    if node.kind == "elementwise":
        return out
    counted = _counted(node)
    if counted is not None:          # rules that count their own (linalg_elements.py)
        return counted
    if node.op in _SUMS:
        return size_of(node.inputs[0].shape)
    if node.op in _CONTRACTIONS:
        return _products(node)
    return 0


def _counted(node: LNode) -> Optional[int]:
    """The statements of a rule that counts its own (small linalg), else None."""
    counted = getattr(ELEMENT_RULES.get(node.op), "statements", None)
    if counted is None:
        return None
    n = counted(node)
    return UNBOUNDED if n is None else n


_CLASSES = {op: rule.classes for op, rule in ELEMENT_RULES.items() if hasattr(rule, "classes")}
"""Rules that give their own element classes (``gather_elements.py``)."""


def known(graph: FoldedGraph, small=None) -> dict:
    """The structure of ``graph``'s values (``structure.structure``, cached on it), with
    ``small(node)`` the nodes a scalar kernel may make (others are read)."""
    return structure(graph, _counted, _SUMS, dict.fromkeys(_CONTRACTIONS, _products), small,
                     _CLASSES)


def _products(node: LNode) -> int:
    """The products a contraction sums: for an einsum (one operand or several: a trace,
    a diagonal, a transpose) and a tensordot, one per combination of its letters' values;
    for a matmul ``n * m * k`` (times the batch).

    >>> import symgrad as sg
    >>> from symgrad.compile.plan.fold import fold_graph
    >>> m = sg.placeholder("m", shape=(3, 3))
    >>> v = sg.placeholder("v", shape=(3,))
    >>> ys = [sg.einsum("ii->", m), sg.einsum("ij->ji", m), sg.einsum("ij,jk,k->i", m, m, v),
    ...       sg.tensordot(m, m, 1), sg.matmul(m, m)]
    >>> [_products(n) for n in fold_graph(ys).order if n.op in _CONTRACTIONS]
    [3, 9, 27, 27, 27]
    """
    if node.op is C.matmul:
        a, b = (size_of(i.shape) for i in node.inputs)
        return size_of(node.shape) * max(1, math.isqrt(a * b // max(size_of(node.shape), 1)))
    shapes = [i.shape for i in node.inputs]
    subscripts = node.attrs["subscripts"] if node.op is C.einsum else \
        tensordot_subscripts(*(len(s) for s in shapes), node.attrs["axes"])
    inputs, _ = parse_subscripts(subscripts, [len(s) for s in shapes])
    sizes = letter_sizes(inputs, shapes, subscripts)
    return size_of(tuple(sizes.values()))


def splits(node: LNode) -> bool:
    """A structural node the kernel planner would run as a step between kernels."""
    return node.kind != "elementwise" and node.op not in FUSED_REDUCTIONS and \
        node.op is not S.getitem_grad


def units(graph: FoldedGraph) -> int:
    """The most calls a scalar kernel of ``graph`` can save: one per structural step the
    planner would make, and one kernel."""
    return 1 + sum(splits(n) for n in graph.order if not n.is_const and n.kind != "source")


def admissible(node: LNode, known: Optional[dict] = None, saved: int = 1) -> bool:
    """A node whose statements cost at most ``saved`` calls more than its loop (worked
    per element it cannot lose more than a region of the program saves: ``units``), each
    element one statement of at most ``MAX_TERMS`` terms; small linear algebra within
    its rule's size (the region's estimate weighs its statements)."""
    work = statements(node, known)
    # a rule that counts its own statements (small linalg) emits many short ones, not one
    # sum, and bounds its own size (its loop form is a LAPACK call, not a fused loop)
    if getattr(ELEMENT_RULES.get(node.op), "statements", None) is not None:
        return work < UNBOUNDED
    if work * (settings.STATEMENT_NS - settings.ELEMENT_NS) > settings.DISPATCH_NS * saved:
        return False
    return work <= settings.MAX_TERMS * size_of(node.shape)


@dataclass(frozen=True)
class Estimate:
    """A region in both forms: the scalar kernel's ``statements``, ``reads`` and
    ``writes`` (elements); the loop plan's ``kernels`` and ``steps`` (the loops do the
    same element work)."""

    statements: int
    reads: int
    writes: int
    kernels: int
    steps: int
    ir: bool = True     # float64 and bool values: the kernel is written as LLVM IR
    scatters: tuple = (0, 0)  # (steps, elements): getitem_grads fed by its outputs
    step_ns: float = 0.0  # the loop form's per-element step work (step_cost.py)
    nodes: int = 0      # the region's nodes (their graph work, BUILD_IR_NODE_US each)


    @property
    def scalar_ns(self) -> float:
        """One call, its statements, and the getitem_grads outside it that it feeds: fused
        into the loop kernel that makes their input in the loop form, numpy steps (zeros
        and a scatter) after a scalar kernel."""
        steps, elements = self.scatters
        return settings.DISPATCH_NS * (1 + settings.SCATTER_CALLS * steps) + \
            settings.STATEMENT_NS * self.statements + settings.ELEMENT_NS * elements

    @property
    def loop_ns(self) -> float:
        return settings.DISPATCH_NS * (self.kernels + self.steps) + \
            settings.ELEMENT_NS * self.statements + self.step_ns

    @property
    def faster(self) -> bool:
        """The scalar form costs less in total: run time over ``BUILD_CALLS`` calls plus
        build time (a kernel that saves little a call is not worth a long build)."""
        calls = settings.BUILD_CALLS
        return self.scalar_ns * calls + self.build_us * 1e3 < \
            self.loop_ns * calls + self.loop_build_us * 1e3

    @property
    def build_us(self) -> float:
        """Microseconds to build the scalar kernel: its statements and element lines (as
        LLVM IR, linear; through numba's front end for other dtypes, superlinear)."""
        elements = self.reads + self.writes
        if self.ir:
            return settings.BUILD_IR_STATEMENT_US * self.statements + \
                settings.BUILD_IR_ELEMENT_US * elements + settings.BUILD_IR_NODE_US * self.nodes
        return settings.BUILD_STATEMENT_US * self.statements + elements * (
            settings.BUILD_ELEMENT_US + settings.BUILD_ELEMENT_SQ_US * elements)

    @property
    def loop_build_us(self) -> float:
        """Microseconds to build the loop kernels and steps instead."""
        return settings.BUILD_UNIT_US * (self.kernels + self.steps)

    @property
    def extra_us(self) -> float:
        """Build time the scalar form adds over the loops (0 where it saves some)."""
        return max(0.0, self.build_us - self.loop_build_us)

    def text(self) -> str:
        """``scalar ~a us (n statements) vs loops ~b us (k kernels, s steps); build ~c s
        (e elements read or written) vs ~d s``."""
        k, s = self.kernels, self.steps
        return (f"scalar ~{self.scalar_ns / 1e3:,.3g} us ({self.statements:,} statements) vs "
                f"loops ~{self.loop_ns / 1e3:,.3g} us ({k} kernel{'s' * (k != 1)}, "
                f"{s} step{'s' * (s != 1)}); build ~{self.build_us / 1e6:.2g} s "
                f"({self.reads + self.writes:,} elements read or written) vs "
                f"~{self.loop_build_us / 1e6:.2g} s")


def budget_us(graph: FoldedGraph) -> float:
    """The build time all scalar kernels of ``graph`` may take together (microseconds):
    ``BUILD_BASE_US`` and ``BUILD_PER_NODE_US`` per node of the folded graph."""
    return settings.BUILD_BASE_US + settings.BUILD_PER_NODE_US * len(graph.order)


def within_budget(estimates: list, budget: float) -> list:
    """Per estimate, whether it is built: the faster ones, most run time saved per build
    microsecond added first, while the build time they add over their loops fits in
    ``budget`` together."""
    order = sorted((k for k, e in enumerate(estimates) if e.faster),
                   key=lambda k: -(estimates[k].loop_ns - estimates[k].scalar_ns) /
                   max(estimates[k].extra_us, 1.0))
    fits = [False] * len(estimates)
    spent = 0.0
    for k in order:
        if spent + estimates[k].extra_us <= budget:
            spent += estimates[k].extra_us
            fits[k] = True
    return fits


_IR_DTYPES = frozenset({"float64", "bool"})
"""The values a kernel written as LLVM IR holds (``source._IR_KINDS``); numba compiles
the others."""
_IR_CHARS = frozenset(np.dtype(name).char for name in _IR_DTYPES)
"""The same by numpy's type characters (a dtype's ``name`` is built at each read)."""


def estimate(members: list, graph: FoldedGraph, found: Optional[dict] = None) -> Estimate:
    """Both forms of the region ``members`` (LNodes of ``graph``, in graph order), its
    statements counted on ``found`` (``known(graph)``) where given, else densely.

    One pass over the members: the structural steps (``splits``) and the loop kernels (one
    per loop shape: a fused reduction loops over its input), the statements, the elements
    read from inputs outside the region (a pick reads only its elements), the elements
    written for the region's outputs (wanted, or read outside it), the getitem_grads
    outside it that its members feed (count, elements) and whether every value read or
    made is float64 or bool (``source._native``: written as LLVM IR)."""
    ids = {id(m) for m in members}
    wanted = {id(o) for o in graph.outputs if o is not None}
    consumers = graph.consumers
    read: dict = {}
    scatters: dict = {}
    shapes: set = set()
    steps = work = writes = 0
    ir = True
    ir_chars, fused, scatter = _IR_CHARS, FUSED_REDUCTIONS, S.getitem_grad
    for m in members:
        op = m.op
        elementwise = op.kind == "elementwise"
        if not elementwise and op not in fused and op is not scatter:   # splits
            steps += 1
        else:
            shapes.add(m.inputs[0].shape if op in fused else m.shape)
        terms = found.get(id(m)) if found is not None else None
        if terms is not None and terms.terms != READ:     # statements(m, found)
            work += terms.terms
        else:
            work += size_of(m.shape) if elementwise else statements(m)
        if ir and m.dtype.char not in ir_chars:
            ir = False
        for i in m.inputs:
            if i.is_const:
                continue
            if ir and i.dtype.char not in ir_chars:
                ir = False
            if id(i) not in ids:
                whole = size_of(i.shape)
                part = size_of(m.shape) if op in _PICKS else whole
                read[id(i)] = min(whole, read.get(id(i), 0) + part)
        outside = id(m) in wanted
        for c in consumers[id(m)]:
            if id(c) not in ids:
                outside = True
                if c.op is scatter and c.inputs[0] is m:
                    scatters[id(c)] = size_of(c.shape)
        if outside:
            writes += size_of(m.shape)
    return Estimate(work, sum(read.values()), writes, len(shapes), steps, ir,
                    (len(scatters), sum(scatters.values())), steps_ns(members), len(members))
