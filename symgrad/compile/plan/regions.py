"""The fusion plan: maximal elementwise regions, the reductions they feed, and the
structural steps that run between kernels (see the package docstring for the data
structure).

Regions are grown in topological order. An elementwise node joins the region of an
elementwise input of the same static shape unless that would make a cycle (the region
would have to run both before and after some other step). A ``reduce_sum``,
``reduce_mean`` or ``unbroadcast`` of a region node whose axes are known statically is
fused into that region's kernel as an accumulated output, and so is a ``getitem_grad``
of a region node (a scatter-add into a buffer, see ``scatter.py``) on the cpu targets.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Optional

from ...errors import CompileError
from .fold import FoldedGraph, LNode
from .gather import gather_axes
from .oprules import FUSED_REDUCTIONS, S
from .scatter import fusable_scatter, pure_sum



@dataclass
class KernelOutput:
    """One output of a kernel: a stored region node, or an accumulated reduction.

    ``node`` is the LNode whose value this output is; ``source`` the region node it is
    computed from (``node`` itself for stores); ``axes`` the iteration axes summed over;
    ``mean`` whether the sum is divided by the number of summed elements. A scatter
    (``key`` set) adds ``source`` into the buffer ``node`` (shaped like ``like``) at the
    basic index ``key``; several scatters may share one buffer ``node``.
    """

    node: LNode
    source: LNode
    axes: tuple = ()
    mean: bool = False
    key: Optional[tuple] = None
    like: Optional[LNode] = None

    @property
    def is_scatter(self) -> bool:
        return self.key is not None

    @property
    def is_reduction(self) -> bool:
        return self.node is not self.source


@dataclass(eq=False)
class Kernel:
    """A fused loop nest over ``shape`` (the static iteration shape of the region); kernels
    compare by identity."""

    index: int
    shape: tuple
    nodes: list                      # region LNodes, topological order
    dims: tuple = ()                 # shape with unknown lengths as shared '?k' symbols
    inputs: list = field(default_factory=list)     # LNodes read (not uniform constants)
    outputs: list = field(default_factory=list)    # KernelOutput

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def serial_only(self) -> bool:
        """Two scatters into one buffer may race across parallel chunks (unless the kernel
        runs as a gather, see ``gather.py``)."""
        if gather_axes(self, "r") is not None:
            return False
        buffers = [id(o.node) for o in self.outputs if o.is_scatter]
        return len(buffers) != len(set(buffers))


@dataclass
class Step:
    """A structural node run between kernels with numpy (``node.op``; views where possible)."""

    node: LNode


@dataclass
class Plan:
    """Everything the runtime needs, in execution order (see the package docstring)."""

    graph: FoldedGraph
    units: list                      # Kernel | Step, in execution order
    outputs: list                    # LNode or None, per requested output

    @property
    def kernels(self) -> list:
        """Every Kernel, in index order (the kernels of a ``nest.Nest`` in place)."""
        out = []
        for u in self.units:
            if isinstance(u, Kernel):
                out.append(u)
            elif not isinstance(u, Step):
                out.extend(u.kernels)
        return out


class _UnionFind:
    def __init__(self):
        self.parent: dict = {}

    def add(self, r: int) -> None:
        self.parent[r] = r

    def find(self, r: int) -> int:
        while self.parent[r] != r:
            self.parent[r] = self.parent[self.parent[r]]
            r = self.parent[r]
        return r


def _unbroadcast_axes(g_shape: tuple, like_shape: tuple) -> Optional[tuple]:
    """Iteration axes summed by ``unbroadcast(g, like)`` (over dims, where symbolic
    lengths are strings), or None if not static."""
    lead = len(g_shape) - len(like_shape)
    if lead < 0:
        return None
    axes = list(range(lead))
    for i, d in enumerate(like_shape):
        gd = g_shape[lead + i]
        if d == 1:
            if gd != 1:
                axes.append(lead + i)
        elif isinstance(d, str) and gd != d:
            return None
    return tuple(axes)


def reduction_axes(node: LNode) -> Optional[tuple]:
    """The axes a fusable reduction sums over its input, or None if it cannot be fused."""
    src = node.inputs[0]
    if node.op is S.unbroadcast:
        return _unbroadcast_axes(src.dims, node.inputs[1].dims)
    if node.op is S.reduce_mean and src.dtype.kind != "f":
        return None
    if node.op is S.reduce_sum and src.dtype.kind not in "fiub":
        return None
    return tuple(node.attrs["axes"])


def _elementwise(node: LNode) -> bool:
    return node.kind == "elementwise" and not node.is_const


class _Grower:
    """Region assignment with cycle checks (``deps``: regions a value depends on)."""

    def __init__(self, graph: FoldedGraph, scatter: bool = True):
        self.graph = graph
        self.scatter = scatter
        self.scatters: set = set()  # ids of fused getitem_grads and of sums of them
        self.buffer_of: dict = {}   # id(scatter node) -> the pure sum whose buffer it uses
        self.wanted = {id(o) for o in graph.outputs if o is not None}
        self.uf = _UnionFind()
        self.region: dict = {}      # id(node) -> region id (elementwise and fused reductions)
        self.fused: set = set()     # ids of fused reduction nodes
        self.deps: dict = {}        # id(node) -> frozenset of region ids it depends on
        self.anc: dict = {}         # region root -> set of region ids strictly before it

    def roots(self, regions) -> set:
        """The current roots of ``regions`` and of every region they follow, transitively.

        ``anc`` is recorded when a region is made; a region grows later and gains
        ancestors, so a region made earlier from it sees them only through this walk.
        """
        find = self.uf.find
        out: set = set()
        stack = [find(r) for r in regions]
        while stack:
            r = stack.pop()
            if r in out:
                continue
            out.add(r)
            stack.extend(find(a) for a in self.anc.get(r, ()) if find(a) not in out)
        return out

    def node_deps(self, node: LNode) -> set:
        return self.roots(self.deps.get(id(node), ()))

    def in_region(self, node: LNode) -> bool:
        return id(node) in self.region and id(node) not in self.fused

    def fuse(self, node: LNode, region: int) -> None:
        r = self.uf.find(region)
        self.region[id(node)] = r
        self.fused.add(id(node))
        self.deps[id(node)] = frozenset({r} | self.roots(self.anc[r]))

    def shared_buffer(self, node: LNode) -> Optional[int]:
        """The region whose scatters a pure sum ``node`` can collect into one buffer."""
        if not self.scatter or not pure_sum(node):
            return None
        regions = set()
        for i in node.inputs:
            if id(i) not in self.scatters or id(i) in self.wanted or \
                    len(self.graph.consumers[id(i)]) != 1:
                return None
            regions.add(self.uf.find(self.region[id(i)]))
        return regions.pop() if len(regions) == 1 else None

    def share_buffers(self) -> None:
        """After regions are final: a pure sum of scatters of one region, each used only by
        the sum, becomes that region's buffer (the sum is no longer computed)."""
        for node in self.graph.order:
            if not self.in_region(node):
                continue
            shared = self.shared_buffer(node)
            if shared is not None:
                self.fuse(node, shared)
                self.scatters.add(id(node))
                for i in node.inputs:
                    self.buffer_of[id(i)] = node

    def run(self) -> None:
        for node in self.graph.order:
            if _elementwise(node):
                self._place(node)
            elif node.op in FUSED_REDUCTIONS and self.in_region(node.inputs[0]) \
                    and reduction_axes(node) is not None:
                self.fuse(node, self.region[id(node.inputs[0])])
            elif self.scatter and node.op is S.getitem_grad and \
                    self.in_region(node.inputs[0]) and \
                    fusable_scatter(node, node.inputs[0].dims):
                self.fuse(node, self.region[id(node.inputs[0])])
                self.scatters.add(id(node))
            else:
                deps = set()
                for i in node.inputs:
                    deps |= self.node_deps(i)
                self.deps[id(node)] = frozenset(deps)

    def _external_deps(self, node: LNode, members: set) -> set:
        deps = set()
        for i in node.inputs:
            r = self.region.get(id(i))
            if r is not None and id(i) not in self.fused and self.uf.find(r) in members:
                deps |= self.roots(self.anc[self.uf.find(r)])
            else:
                deps |= self.node_deps(i)
        return deps

    def _place(self, node: LNode) -> None:
        candidates = []
        for i in node.inputs:
            r = self.region.get(id(i))
            if r is not None and id(i) not in self.fused and i.dims == node.dims:
                r = self.uf.find(r)
                if r not in candidates:
                    candidates.append(r)
        chosen: set = set()
        for r in candidates:
            trial = chosen | {r}
            ext = self._external_deps(node, trial)
            if any(c in ext for c in trial):
                continue
            if any(c in self.roots(self.anc[r]) for c in chosen) or \
                    any(r in self.roots(self.anc[c]) for c in chosen):
                continue
            chosen = trial
        ext = self._external_deps(node, chosen)
        if chosen:
            root = min(chosen)
            for c in chosen:
                self.uf.parent[c] = root
            anc = set(ext)
            for c in chosen:
                anc |= self.anc[c]
            anc = self.roots(anc) - {root}
        else:
            root = len(self.uf.parent)
            self.uf.add(root)
            anc = self.roots(ext)
        self.anc[root] = anc
        self.region[id(node)] = root
        self.deps[id(node)] = frozenset({root} | anc)


    def merge_siblings(self) -> None:
        """Merge regions of equal dims that do not depend on each other, directly or
        through a third region (one loop reads the shared inputs once)."""
        dims_of: dict = {}
        for node in self.graph.order:
            r = self.region.get(id(node))
            if r is not None and id(node) not in self.fused:
                dims_of.setdefault(self.uf.find(r), node.dims)
        groups: dict = {}
        for r, d in dims_of.items():
            groups.setdefault(d, []).append(r)
        for members in groups.values():
            merged: list = []
            for r in members:
                for m in merged:
                    m_root = self.uf.find(m)
                    if r in self.roots(self.anc[m_root]) or \
                            m_root in self.roots(self.anc[r]):
                        continue
                    self.uf.parent[r] = m_root
                    self.anc[m_root] = self.roots(self.anc[m_root] | self.anc[r]) - {m_root}
                    break
                else:
                    merged.append(r)


def build_plan(graph: FoldedGraph, scatter: bool = True) -> Plan:
    """Group the folded graph into kernels and steps, in an order that respects data flow
    (``scatter``: fuse getitem_grad into kernels; the cuda target does not; loop nests of
    reduce -> elementwise -> broadcast chains are ``nest.nest_plan(plan)``, applied after)."""
    grower = _Grower(graph, scatter)
    grower.run()
    grower.merge_siblings()
    if scatter:
        grower.share_buffers()
    find = grower.uf.find
    kernels: dict = {}
    for node in graph.order:
        r = grower.region.get(id(node))
        if r is None or id(node) in grower.fused:
            continue
        r = find(r)
        if r not in kernels:
            kernels[r] = Kernel(-1, node.shape, [], dims=node.dims)
        kernels[r].nodes.append(node)
    wanted = {id(o) for o in graph.outputs if o is not None}
    unit_of: dict = {}
    for r, kernel in kernels.items():
        for node in kernel.nodes:
            unit_of[id(node)] = kernel
    for node in graph.order:
        if id(node) in grower.fused:
            unit_of[id(node)] = kernels[find(grower.region[id(node)])]
    for kernel in kernels.values():
        _kernel_io(kernel, graph, unit_of, wanted, grower)
    units = _schedule(graph, kernels, unit_of)
    for k, kernel in enumerate(u for u in units if isinstance(u, Kernel)):
        kernel.index = k
    return Plan(graph, units, list(graph.outputs))


def _buffer(node: LNode, buffer_of: dict) -> LNode:
    while id(node) in buffer_of:
        node = buffer_of[id(node)]
    return node


def _kernel_io(kernel: Kernel, graph: FoldedGraph, unit_of: dict, wanted: set,
               grower: _Grower) -> None:
    fused = grower.fused
    members = {id(n) for n in kernel.nodes}
    seen: set = set()
    for node in kernel.nodes:
        for i in node.inputs:
            if id(i) in members or id(i) in seen:
                continue
            if i.is_const and i.uniform is not None:
                continue
            seen.add(id(i))
            kernel.inputs.append(i)
    for node in kernel.nodes:
        consumers = graph.consumers[id(node)]
        stored = id(node) in wanted
        for c in consumers:
            if id(c) in fused and unit_of.get(id(c)) is kernel and \
                    c.op is S.getitem_grad:
                kernel.outputs.append(KernelOutput(_buffer(c, grower.buffer_of), node,
                                                   key=c.attrs["key"], like=c.inputs[1]))
            elif id(c) in fused and unit_of.get(id(c)) is kernel:
                kernel.outputs.append(KernelOutput(
                    c, node, reduction_axes(c), c.op is S.reduce_mean))
            elif unit_of.get(id(c)) is not kernel:
                stored = True
        if stored:
            kernel.outputs.append(KernelOutput(node, node))


def _schedule(graph: FoldedGraph, kernels: dict, unit_of: dict) -> list:
    """Units in a topological order (Kahn), stable by first appearance."""
    units: list = []
    index: dict = {}
    for node in graph.order:
        if node.kind == "source" or node.is_const:
            continue
        unit = unit_of.get(id(node))
        if unit is None:
            unit = Step(node)
            unit_of[id(node)] = unit
        if id(unit) not in index:
            index[id(unit)] = len(units)
            units.append(unit)
    preds: dict = {id(u): set() for u in units}
    succs: dict = {id(u): set() for u in units}
    members = {id(n) for k in kernels.values() for n in k.nodes}
    for node in graph.order:
        unit = unit_of.get(id(node))
        if unit is None:
            continue
        inputs = node.inputs
        if isinstance(unit, Kernel) and id(node) not in members and len(inputs) == 2:
            inputs = inputs[:1]   # a fused unbroadcast/scatter reads only the shape of 'like'
        for i in inputs:
            producer = unit_of.get(id(i))
            if producer is not None and producer is not unit:
                preds[id(unit)].add(id(producer))
                succs[id(producer)].add(id(unit))
    ready = [index[id(u)] for u in units if not preds[id(u)]]
    heapq.heapify(ready)
    out = []
    while ready:
        k = heapq.heappop(ready)
        unit = units[k]
        out.append(unit)
        for s in succs[id(unit)]:
            preds[s].discard(id(unit))
            if not preds[s]:
                heapq.heappush(ready, index[s])
    if len(out) != len(units):
        raise CompileError("sg.function: internal error, the fusion plan has a cycle "
                           f"({len(units) - len(out)} of {len(units)} units unscheduled); "
                           "please report the graph")
    return out
