"""Which nodes of the folded graph are worked per element, and the regions they form.

A node is *small* when its op has an element rule (``elements.py``: every elementwise op,
and the structural records listed there), its value is float, it and every input have a
static shape, and its statements cost at most one call more than its loop
(``cost.admissible``; or, where ``settings.SCALAR_ELEMENTS`` is set, the rule before the
cost model: it and every input of at most that many elements). Regions are grown in
topological order like the kernel planner's (``plan/regions.py``): a small node joins the
regions of its small inputs unless that would make a cycle (some value outside the region
both depends on the region and feeds it); then regions that do not depend on each other are
merged (one call for independent small computations). A region the kernel planner would
split with at least ``MIN_STEPS`` structural steps, computing more than views, becomes one
scalar kernel where the cost model chooses it (``cost.py``: cheaper at run time, build time
within the program's budget). Where it does not, its heaviest nodes (statements or
elements) leave the candidates and the regions are grown again, until every region is
chosen or not a candidate (each round halves the heaviest node a rejected region may
keep). A view (getitem, transpose, ...) that no small node reads stays a numpy view for
the loops that read it. Every region the cost model weighed is kept on the graph
(``graph.scalar_choices``: members and estimate) for ``f.explain()``.

>>> import symgrad as sg
>>> from symgrad.compile.plan.fold import fold_graph
>>> u = sg.placeholder("u", shape=(2,))
>>> y = sg.stack([u[0] * u[1], u[1] - u[0]])
>>> [[n.op.name for n in r] for r in scalar_regions(fold_graph([y]))]
[['getitem', 'getitem', 'multiply', 'subtract', 'stack']]
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Optional

from ...shapes import is_fully_known
from ...collector import paused_gc
from ..plan.fold import FoldedGraph, LNode
from ..plan.oprules import VIEWS
from . import settings
from .cost import (Estimate, admissible, budget_us, estimate, known, size_of, splits,
                   statements, units, within_budget)
from .elements import ELEMENT_RULES

__all__ = ["scalar_regions", "is_small", "size_of", "Choice"]


def _small_value(node: LNode, kinds: str) -> bool:
    if node.dtype.kind not in kinds:
        return False
    found = _SIZED.get(id(node))
    if found is None or found[0] is not node:
        limit = settings.SCALAR_ELEMENTS
        found = _SIZED[id(node)] = (node, is_fully_known(node.shape) and
                                    node.dims == node.shape and 0 < size_of(node.shape) and
                                    (limit is None or size_of(node.shape) <= limit))
    return found[1]


def is_small(node: LNode, known: Optional[dict] = None, saved: int = 1) -> bool:
    """A node the scalar pass may work per element (see the module docstring; ``known``
    and ``saved``: ``cost.admissible``'s)."""
    return _static(node) and (settings.SCALAR_ELEMENTS is not None or
                              admissible(node, known, saved))


def _static(node: LNode) -> bool:
    """A node an element rule covers, of static small-dtype values (once per node)."""
    found = _STATIC.get(id(node))
    if found is None or found[0] is not node:
        found = _STATIC[id(node)] = (node, _covered(node))
    return found[1]


_STATIC: dict = {}
"""id(node) -> (node, _covered(node)) of the graph being chosen (``scalar_regions``
clears it)."""
_SIZED: dict = {}
"""id(node) -> (node, whether its values are static and small), as ``_STATIC``."""


def _covered(node: LNode) -> bool:
    op = node.op
    kind = op.kind
    if node.value is not None or kind == "source":
        return False
    if kind != "elementwise" and op not in ELEMENT_RULES:
        return False
    if kind == "elementwise" and op.sympy is None:
        return False
    if not _small_value(node, "f"):
        return False
    for i in node.inputs:               # _small_value(i, "fiub") with its memo read here
        found = _SIZED.get(id(i))
        if found is not None and found[0] is i and i.dtype.kind in "fiub":
            if not found[1]:
                return False
        elif not _small_value(i, "fiub"):
            return False
    return True


def _weight(node: LNode, known: Optional[dict] = None) -> int:
    """What a node adds to a scalar kernel's build: its statements or its elements."""
    return max(statements(node, known), size_of(node.shape))


@dataclass(frozen=True)
class Choice:
    """A region the cost model weighed: its ``members``, ``estimate`` and whether its build
    fits the program's budget (``budget`` microseconds)."""

    members: tuple
    estimate: Estimate
    fits: bool
    budget: float

    @property
    def chosen(self) -> bool:
        return self.estimate.faster and self.fits

    def text(self) -> str:
        why = "" if self.chosen else \
            f"; loops are faster (over {settings.BUILD_CALLS:.3g} calls, with the builds)" \
            if not self.estimate.faster else \
            f"; over the program's build budget ~{self.budget / 1e6:.2g} s"
        return self.estimate.text() + why


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
        if not regions:
            return out
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
            if r is not None:
                r = self.find(r)
                if r in trial:
                    deps |= self.anc[r]
                    continue
            found = self.deps.get(id(i))
            if found:
                deps |= found
        return self.roots(deps)

    def place(self, node: LNode) -> None:
        candidates: list = []
        for i in node.inputs:
            r = self.region.get(id(i))
            if r is not None:
                r = self.find(r)
                if r not in candidates:
                    candidates.append(r)
        chosen: set = set()
        ext = None                          # external(node, chosen) once known
        for r in candidates:
            trial = chosen | {r}
            found = self.external(node, trial)
            if trial & found:
                continue
            if any(c in self.roots(self.anc[r]) or r in self.roots(self.anc[c])
                   for c in chosen):
                continue
            chosen, ext = trial, found
        if ext is None:
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
            found = self.deps.get(id(i))
            if found:
                deps |= found
        if deps:
            self.deps[id(node)] = self.roots(deps)


def _candidates(graph: FoldedGraph, limits: dict, found: Optional[dict]) -> tuple:
    """(ids of the small nodes within their ``limits`` (id -> heaviest weight kept), less
    the views (getitem, transpose, ...) that no small node reads: numpy gives those as
    views to the loops that read them (a copy out of a scalar kernel would cost more, and
    the loop nests match reads of such views); whether a node was declined by its
    statements). ``found``: the values' structure, or None (counted densely)."""
    saved = units(graph)
    small, declined = set(), False
    for n in graph.order:
        if not _static(n):
            continue
        if not is_small(n, found, saved):
            declined = True
        elif id(n) not in limits or _weight(n, found) <= limits[id(n)]:
            small.add(id(n))
    for node in reversed(graph.order):
        if id(node) in small and node.op in VIEWS and \
                not any(id(c) in small for c in graph.consumers[id(node)]):
            small.discard(id(node))
    return small, declined


def _worth(members: list) -> bool:
    """A region the loop planner would split with ``MIN_STEPS`` steps, computing more
    than views."""
    return sum(map(splits, members)) >= settings.MIN_STEPS and \
        any(m.op not in VIEWS for m in members)


def _grown(graph: FoldedGraph, small: set) -> list:
    """The regions of the ``small`` nodes: lists of member LNodes in graph order."""
    regions = _Regions()
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
    return list(members.values())


_ROUNDS = 16
"""Rounds that halve the heaviest node of a rejected region; later ones drop it whole."""


def scalar_regions(graph: FoldedGraph) -> list:
    """The regions that become scalar kernels: lists of member LNodes in graph order (the
    regions weighed are ``graph.scalar_choices``)."""
    try:
        with paused_gc():
            return _chosen(graph)
    finally:        # the classes are the size of the graph's values: not kept with it
        _STATIC.clear()
        _SIZED.clear()
        graph.scalar_structure = None


def _countable(graph: FoldedGraph):
    """``small`` for the structure pass: the static nodes of at most ``MAX_TERMS`` elements
    a statement the build budget allows (a larger one would exceed it even if one element
    in ``MAX_TERMS`` emitted a statement: it is read, and no classes, an array of its or
    its inputs' shape, are made: a hundred-million-element placeholder allocates nothing)."""
    most = budget_us(graph) / settings.BUILD_IR_STATEMENT_US * settings.MAX_TERMS
    return lambda node: (node.is_const or _static(node)) and all(size_of(x.shape) <= most
                                              for x in (node,) + tuple(node.inputs))


def _chosen(graph: FoldedGraph) -> list:
    """Counted densely first (cheap); where that declines a node or a region, again on
    the values' structure (``cost.known``: exact zeros, numbers, equal elements)."""
    found = None
    while True:
        limits: dict = {}
        rejected: list = []
        for rounds in itertools.count():
            small, declined = _candidates(graph, limits, found)
            regions = [m for m in _grown(graph, small) if _worth(m)]
            if settings.SCALAR_ELEMENTS is not None:      # the rule before the cost model
                graph.scalar_choices = []
                return regions
            if found is None and declined:
                break
            estimates = [estimate(m, graph, found) for m in regions]
            budget = budget_us(graph)
            choices = [Choice(tuple(m), e, fits, budget) for m, e, fits in
                       zip(regions, estimates, within_budget(estimates, budget))]
            losers = [c for c in choices if not c.chosen]
            if not losers or found is None:
                break
            rejected += losers
            for c in losers:
                keep = max(_weight(m, found) for m in c.members) // 2 if rounds < _ROUNDS \
                    else 0
                for m in c.members:
                    limits[id(m)] = min(limits.get(id(m), keep), keep)
        if found is None and (declined or losers):
            found = known(graph, _countable(graph))
            continue
        members = {id(m) for c in choices for m in c.members}
        rejected = [c for c in rejected if not all(id(m) in members for m in c.members)]
        graph.scalar_choices = choices + _distinct(rejected)
        return [list(c.members) for c in choices]


def _distinct(rejected: list) -> list:
    """The rejections of the last round that weighed each node (later rounds weigh parts
    of earlier regions)."""
    seen: set = set()
    out = []
    for c in reversed(rejected):
        ids = {id(m) for m in c.members}
        if not ids & seen:
            out.append(c)
        seen |= ids
    return out[::-1]
