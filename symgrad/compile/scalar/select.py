"""Which nodes of the folded graph are worked per element, and the regions they form.

A node is *small* when its op has an element rule (``elements.py``: every elementwise op,
and the structural records listed there), its value is float, and it and every input have
a static shape of at most ``SCALAR_ELEMENTS`` elements (``settings.SCALAR_ELEMENTS``).
Regions are grown in topological order like the kernel planner's (``plan/regions.py``): a
small node joins the regions of its small inputs unless that would make a cycle (some
value outside the region both depends on the region and feeds it); then regions that do
not depend on each other are merged (one call for independent small computations). A
region becomes one scalar kernel when it would otherwise be split by at least
``MIN_STEPS`` structural steps (a region of elementwise nodes and the sums a loop fuses
is one kernel already) and computes more than views. A view (getitem, transpose, ...)
that no small node reads stays a numpy view for the loops that read it.

>>> import symgrad as sg
>>> from symgrad.compile.plan.fold import fold_graph
>>> u = sg.placeholder("u", shape=(2,))
>>> y = sg.stack([u[0] * u[1], u[1] - u[0]])
>>> [[n.op.name for n in r] for r in scalar_regions(fold_graph([y]))]
[['getitem', 'getitem', 'multiply', 'subtract', 'stack']]
"""

from __future__ import annotations

from ...shapes import is_fully_known
from ..plan.fold import FoldedGraph, LNode
from ..plan.oprules import FUSED_REDUCTIONS, VIEWS, S
from . import settings
from .elements import ELEMENT_RULES

__all__ = ["scalar_regions", "is_small", "size_of"]


def size_of(shape: tuple) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _small_value(node: LNode, kinds: str) -> bool:
    return is_fully_known(node.shape) and node.dims == node.shape and \
        node.dtype.kind in kinds and 0 < size_of(node.shape) <= settings.SCALAR_ELEMENTS


def is_small(node: LNode) -> bool:
    """A node the scalar pass may work per element (see the module docstring)."""
    if node.is_const or node.kind == "source":
        return False
    if node.kind != "elementwise" and node.op not in ELEMENT_RULES:
        return False
    if node.kind == "elementwise" and node.op.sympy is None:
        return False
    return _small_value(node, "f") and all(_small_value(i, "fiub") or
                                           (i.is_const and _small_value(i, "fiub"))
                                           for i in node.inputs)


def _splits(node: LNode) -> bool:
    """A structural node the kernel planner would run as a step between kernels."""
    return node.kind != "elementwise" and node.op not in FUSED_REDUCTIONS and \
        node.op is not S.getitem_grad


class _Regions:
    """Union-find of regions with the set of regions each value depends on."""

    def __init__(self):
        self.parent: list = []
        self.anc: dict = {}      # root -> region ids strictly before it (through outside)
        self.deps: dict = {}     # id(node) -> region ids its value depends on
        self.region: dict = {}   # id(member) -> region id

    def find(self, r: int) -> int:
        while self.parent[r] != r:
            self.parent[r] = self.parent[self.parent[r]]
            r = self.parent[r]
        return r

    def roots(self, regions) -> set:
        out: set = set()
        stack = [self.find(r) for r in regions]
        while stack:
            r = stack.pop()
            if r not in out:
                out.add(r)
                stack.extend(self.find(a) for a in self.anc.get(r, ()))
        return out

    def external(self, node: LNode, trial: set) -> set:
        """Regions ``node`` depends on other than through members of ``trial``."""
        deps: set = set()
        for i in node.inputs:
            r = self.region.get(id(i))
            if r is not None and self.find(r) in trial:
                deps |= self.anc[self.find(r)]
            else:
                deps |= self.deps.get(id(i), set())
        return self.roots(deps)

    def place(self, node: LNode) -> None:
        candidates: list = []
        for i in node.inputs:
            r = self.region.get(id(i))
            if r is not None and self.find(r) not in candidates:
                candidates.append(self.find(r))
        chosen: set = set()
        for r in candidates:
            trial = chosen | {r}
            if trial & self.external(node, trial):
                continue
            if any(c in self.roots(self.anc[r]) or r in self.roots(self.anc[c])
                   for c in chosen):
                continue
            chosen = trial
        ext = self.external(node, chosen)
        if chosen:
            root = min(chosen)
            anc: set = set(ext)
            for c in chosen:
                self.parent[c] = root
                anc |= self.anc[c]
            self.anc[root] = self.roots(anc) - {root}
        else:
            root = len(self.parent)
            self.parent.append(root)
            self.anc[root] = ext
        self.region[id(node)] = root
        self.deps[id(node)] = {root} | self.anc[root]

    def merge_independent(self) -> None:
        """Regions that do not depend on each other (directly or through other values)
        become one: one call instead of several (as the planner merges sibling loops)."""
        merged: list = []
        for r in sorted({self.find(r) for r in self.region.values()}):
            for m in merged:
                m = self.find(m)
                if r in self.roots(self.anc[m]) or m in self.roots(self.anc[r]):
                    continue
                self.parent[r] = m
                self.anc[m] = self.roots(self.anc[m] | self.anc[r]) - {m}
                break
            else:
                merged.append(r)

    def pass_through(self, node: LNode) -> None:
        deps: set = set()
        for i in node.inputs:
            deps |= self.deps.get(id(i), set())
        if deps:
            self.deps[id(node)] = self.roots(deps)


def _candidates(graph: FoldedGraph) -> set:
    """Ids of the small nodes, less the views (getitem, transpose, ...) that no small node
    reads: numpy gives those as views to the loops that read them (a copy out of a scalar
    kernel would cost more, and the loop nests match reads of such views)."""
    small = {id(n) for n in graph.order if is_small(n)}
    for node in reversed(graph.order):
        if id(node) in small and node.op in VIEWS and \
                not any(id(c) in small for c in graph.consumers[id(node)]):
            small.discard(id(node))
    return small


def _worth(members: list) -> bool:
    """A region the loop planner would split with ``MIN_STEPS`` steps, computing more
    than views."""
    return sum(map(_splits, members)) >= settings.MIN_STEPS and \
        any(m.op not in VIEWS for m in members)


def scalar_regions(graph: FoldedGraph) -> list:
    """The regions that become scalar kernels: lists of member LNodes in graph order."""
    regions = _Regions()
    small = _candidates(graph)
    for node in graph.order:
        if id(node) in small:
            regions.place(node)
        else:
            regions.pass_through(node)
    regions.merge_independent()
    members: dict = {}
    for node in graph.order:
        r = regions.region.get(id(node))
        if r is not None:
            members.setdefault(regions.find(r), []).append(node)
    return [m for m in members.values() if _worth(m)]
