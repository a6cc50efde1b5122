"""The folded graph with each scalar region replaced by one node.

A region (``select.scalar_regions``) becomes a ``scalar_kernel`` node reading the
region's inputs (constants are inlined, not read) and, per value needed outside it, a
``scalar_output`` node picking that array from the kernel's results. The kernel planner
(``plan/regions.py``) sees both as structural steps: the driver calls the region's njit
function once (``source.py``) and names its results. Both are compiler records of this
room, not ops of the registry (no graph a user builds contains them).

The compile key reads the original folded graph and the regions (``digest``), so a
change of threshold is a different module.

>>> import symgrad as sg
>>> from symgrad.compile.plan.fold import fold_graph
>>> u = sg.placeholder("u", shape=(2,))
>>> y = sg.reduce_sum(sg.stack([u[0] * u[1], u[1] - u[0]]) * u)
>>> g, regions = scalar_graph(fold_graph([y]))
>>> [n.op.name for n in g.order], len(regions[0].members)
(['placeholder', 'scalar_kernel', 'scalar_output'], 7)
"""

from __future__ import annotations

import hashlib
import heapq
from dataclasses import dataclass, field
from typing import Optional

from ...ops.opdef import OpDef
from ..plan.fold import FoldedGraph, LNode, canonical_text
from .select import scalar_regions

__all__ = ["SCALAR_KERNEL", "SCALAR_OUTPUT", "ScalarRegion", "ScalarGraph", "scalar_graph",
           "region_of"]

SCALAR_KERNEL = OpDef("scalar_kernel", "structural")
"""A region worked per element: one njit call returning a tuple of arrays (not registered)."""
SCALAR_OUTPUT = OpDef("scalar_output", "structural")
"""One array of a scalar kernel's results (``attrs["index"]``; not registered)."""


@dataclass(eq=False)
class ScalarRegion:
    """``members`` in topological order; ``inputs`` the values it reads (original LNodes,
    constants excluded); ``outputs`` the members read outside it or returned."""

    number: int
    members: list
    inputs: list
    outputs: list
    node: Optional[LNode] = None            # the scalar_kernel node
    results: list = field(default_factory=list)   # the scalar_output nodes


class ScalarGraph(FoldedGraph):
    """A folded graph with scalar regions. ``digest`` (the compile key's part) hashes the
    original graph's digest and the regions (by original node index, ``regions``);
    ``canonical`` is the original graph's text and the regions, made when first asked
    for from ``snapshot``: (its order, each node's input indices and the outputs' as the
    original graph had them)."""

    def __init__(self, order: list, outputs: list, placeholders: list, original: str,
                 snapshot: tuple, regions: str):
        super().__init__(order, outputs, placeholders)
        self.original, self.snapshot, self.regions = original, snapshot, regions

    def canonical(self) -> str:
        if not isinstance(self.snapshot, str):
            self.snapshot = canonical_text(*self.snapshot)
        return self.snapshot + self.regions

    def digest(self) -> str:
        return hashlib.sha256((self.original + self.regions).encode()).hexdigest()


def region_of(node: LNode) -> Optional[ScalarRegion]:
    """The region a ``scalar_kernel`` node runs (None for any other node)."""
    return node.attrs.get("region") if node.op is SCALAR_KERNEL else None


def _found_regions(graph: FoldedGraph, found: list) -> list:
    wanted = {id(o) for o in graph.outputs if o is not None}
    regions = []
    for number, members in enumerate(found):
        ids = {id(m) for m in members}
        inputs, seen, outputs = [], set(), []
        for m in members:
            for i in m.inputs:
                if id(i) not in ids and id(i) not in seen and not i.is_const:
                    seen.add(id(i))
                    inputs.append(i)
            if id(m) in wanted or any(id(c) not in ids for c in graph.consumers[id(m)]):
                outputs.append(m)
        regions.append(ScalarRegion(number, members, inputs, outputs))
    return regions


def scalar_graph(graph: FoldedGraph) -> tuple:
    """(the graph with scalar regions, the regions); the graph itself when there are none."""
    regions = _found_regions(graph, scalar_regions(graph))
    if not regions:
        return graph, []
    original = graph.digest()          # before the nodes' inputs and indices change
    snapshot = (graph.order, [[i.index for i in n.inputs] for n in graph.order],
                [None if o is None else o.index for o in graph.outputs])
    text = "".join(f"\nscalar {r.number}: {[m.index for m in r.members]}" for r in regions)
    member_of = {id(m): r for r in regions for m in r.members}
    replaced: dict = {}                     # id(output member) -> its scalar_output node
    for r in regions:
        first = r.outputs[0] if r.outputs else r.members[-1]
        r.node = LNode(first.tensor, SCALAR_KERNEL, (), {"region": r})
        r.node.shape = r.node.dims = ()
        r.node.name = f"scalar kernel {r.number}"
        for j, m in enumerate(r.outputs):
            out = LNode(m.tensor, SCALAR_OUTPUT, (r.node,), {"index": j})
            out.shape, out.dims, out.dtype, out.name = m.shape, m.dims, m.dtype, m.name
            r.results.append(out)
            replaced[id(m)] = out
    for r in regions:
        r.node.inputs = tuple(replaced.get(id(i), i) for i in r.inputs)
    position: dict = {}
    nodes: list = []
    for k, node in enumerate(graph.order):
        r = member_of.get(id(node))
        if r is None:
            node.inputs = tuple(replaced.get(id(i), i) for i in node.inputs)
            nodes.append(node)
            position[id(node)] = (k, 0)
        elif node is r.members[-1]:
            nodes += [r.node] + r.results
            position[id(r.node)] = (k, 0)
            position.update({id(o): (k, 1 + j) for j, o in enumerate(r.results)})
    outputs = [None if o is None else replaced.get(id(o), o) for o in graph.outputs]
    order = _topological(nodes, position)
    out = ScalarGraph(order, outputs, graph.placeholders, original, snapshot, text)
    out.hoisted = getattr(graph, "hoisted", [])
    out.scalar_choices = getattr(graph, "scalar_choices", [])
    return out, regions


def _topological(nodes: list, position: dict) -> list:
    """``nodes`` in an order where every input comes first (Kahn, by ``position``)."""
    pending = {id(n): 0 for n in nodes}
    users: dict = {id(n): [] for n in nodes}
    for n in nodes:
        for i in set(map(id, n.inputs)):
            pending[id(n)] += 1
            users[i].append(n)
    ready = [(position[id(n)], k, n) for k, n in enumerate(nodes) if not pending[id(n)]]
    heapq.heapify(ready)
    seq = len(nodes)
    order = []
    while ready:
        _, _, n = heapq.heappop(ready)
        order.append(n)
        for u in users[id(n)]:
            pending[id(u)] -= 1
            if not pending[id(u)]:
                seq += 1
                heapq.heappush(ready, (position[id(u)], seq, u))
    if len(order) != len(nodes):
        raise AssertionError("scalar pass: the regions made a cycle in the graph")
    return order
