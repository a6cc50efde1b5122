"""Nested kernels: reduce -> elementwise -> broadcast back, fused into one loop nest.

An array program over pairs often reads ``s = sum_k f(i, j, k)`` (a sum over a short
trailing axis), computes ``c = g(s, ...)`` per ``(i, j)``, and its gradient broadcasts
``c`` back along ``k`` (``expand_dims(c, -1) * h(i, j, k)``) and sums that over ``j`` or
``i``. The flat plan runs three kernels and stores ``s`` and ``c`` as ``n x n`` arrays. A
``Nest`` runs them as one loop nest over the outer iteration ``(i0, .., i{R-1})``:

* ``pre`` kernels (rank R+1) whose only output is a sum over their last axis, read only
  by ``outer``: computed per outer element by an unrolled loop over ``k`` into a local;
* ``outer`` (rank R): the elementwise region, reading those locals;
* ``post`` kernels (rank R+1) that read ``expand_dims(c, R)`` of an outer value ``c`` (the
  ``links``): run per outer element for each ``k``, reading ``c`` as a local; their
  outputs are sums (or stores) over the full rank R+1 iteration.

Values read only through links are not stored (``hidden``). Matching is exact or not
at all: static shapes, a trailing axis of at most ``INNER_MAX`` (unrolled), no scatter
outputs; anything else keeps the flat plan. The parallel loop gives chunk ``c`` the rows
``i0 = c, c + nc, ..`` (balanced for triangular work); sums over axis 0 go to per-chunk
slots as in the flat templates, so no two threads write one element.

>>> import numpy as np, symgrad as sg
>>> from symgrad.compile.fold import fold_graph
>>> from symgrad.compile.regions import build_plan
>>> P = sg.placeholder("P", shape=(4, 3))
>>> D = P[:, None, :] - P[None, :, :]
>>> E = sg.reduce_sum(sg.exp(-sg.reduce_sum(D * D, axis=-1)))
>>> plan = nest_plan(build_plan(fold_graph([E] + sg.gradients(E, P), [P])))
>>> nest = next(u for u in plan.units if isinstance(u, Nest))
>>> len(nest.pre), len(nest.post), nest.inner
(1, 1, 3)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Optional

import numpy as np
import sympy as sp

from ..shapes import is_fully_known
from .masks import (complement, is_zero, mask_band, outer_factors, read_text, row_range,
                    vanishes)
from .lower import _in_dependency_order as in_dependency_order
from .lower import lower_kernel
from .oprules import S
from .powers import power_chains
from .printer import number
from .regions import Kernel, Plan, Step
from .templates import OPTIONS, body_source, input_access

INNER_MAX = 16   # longest trailing axis that is unrolled into a nest


NEST_MATH = "libm"
"""The math mode of a nest's point kernels, whatever the function's: a nest's inner loop
adds into a column (``r[j] += ..``) and LLVM keeps it scalar, where glibc's scalar ``exp``
runs the Gaussian pair sum faster than the vectorisable polynomial
(``benchmarks/pair_sums.py``, ``docs/pair_sums.md``; libm is also the more accurate)."""


@dataclass
class Nest:
    """One loop nest: ``pre`` kernels -> ``outer`` -> ``post`` kernels (see module doc)."""

    outer: Kernel
    pre: list = field(default_factory=list)
    post: list = field(default_factory=list)
    links: dict = field(default_factory=dict)    # id(expand_dims node) -> outer node
    steps: list = field(default_factory=list)    # the expand_dims Steps absorbed
    hidden: set = field(default_factory=set)     # ids of outer nodes that are not stored
    # {(post kernel index, column output j): row output j} when the nest visits i0 <= i1
    # only (``nest_symmetry``); None until the source is written, {} when it may not
    mirror: Optional[dict] = None

    @property
    def kernels(self) -> list:
        return self.pre + [self.outer] + self.post

    @property
    def index(self) -> int:
        return self.outer.index

    @property
    def rank(self) -> int:
        return self.outer.rank

    @property
    def inner(self) -> int:
        """The trailing axis of the pre and post kernels (1 for a nest of one kernel)."""
        return (self.pre or self.post)[0].shape[-1] if self.pre or self.post else 1

    def written(self, kernel: Kernel) -> list:
        """(j, output) of ``kernel`` that the nest writes to an array."""
        if kernel in self.pre:
            return []
        return [(j, o) for j, o in enumerate(kernel.outputs)
                if not (kernel is self.outer and not o.is_reduction and id(o.node) in self.hidden)]


def nest_plan(plan: Plan, pair_loops: bool = True) -> Plan:
    """The plan with every matching pre/outer/post group replaced by one ``Nest``, and
    (``pair_loops``: host targets) each flat pair kernel that a nest's rules speed up by a
    nest of that kernel alone (``_pair_loop``)."""
    units = plan.units
    position = {id(u): k for k, u in enumerate(units)}
    producer: dict = {}
    for u in units:
        if isinstance(u, Kernel):
            for o in u.outputs:
                producer.setdefault(id(o.node), u)
        else:
            producer[id(u.node)] = u
    graph = plan.graph
    wanted = {id(o) for o in graph.outputs if o is not None}
    used: set = set()
    nests: dict = {}
    for outer in [u for u in units if isinstance(u, Kernel)]:
        if id(outer) in used or not _flat(outer, outer.rank) or not outer.rank:
            continue
        nest = _match(outer, graph, producer, position, wanted, used) or \
            (_pair_loop(outer) if pair_loops else None)
        if nest is None:
            continue
        nests[id(outer)] = nest
        used |= {id(k) for k in nest.kernels} | {id(s) for s in nest.steps}
    if not nests:
        return plan
    out = []
    for u in units:
        if id(u) in nests:
            out.append(nests[id(u)])
        elif id(u) not in used:
            out.append(u)
    plan = Plan(plan.graph, out, plan.outputs)
    for k, kernel in enumerate(plan.kernels):
        kernel.index = k
    return plan


def _flat(kernel: Kernel, rank: int) -> bool:
    return kernel.rank == rank and is_fully_known(kernel.shape) and \
        not any(o.is_scatter for o in kernel.outputs)


def _inner_ok(kernel: Kernel, outer: Kernel, used: set) -> bool:
    r = outer.rank
    return id(kernel) not in used and _flat(kernel, r + 1) and \
        tuple(kernel.dims[:r]) == tuple(outer.dims) and 1 <= kernel.shape[r] <= INNER_MAX


def _match(outer: Kernel, graph, producer: dict, position: dict, wanted: set, used: set):
    r = outer.rank
    members = {id(n) for n in outer.nodes}
    pre = []
    for i in outer.inputs:
        u = producer.get(id(i))
        if not isinstance(u, Kernel) or u in pre or not _inner_ok(u, outer, used) or \
                len(u.outputs) != 1:
            continue
        o = u.outputs[0]
        if o.node is i and i.op is S.reduce_sum and tuple(o.axes) == (r,) and \
                not o.mean and i.dims == outer.dims and i.dtype.name == "float64" and \
                o.source.dtype.name == "float64" and id(i) not in wanted and \
                all(id(c) in members for c in graph.consumers[id(i)]):
            pre.append(u)
    nest = Nest(outer, pre)
    _match_post(nest, graph, producer, position, wanted, used)
    if not nest.pre and not nest.post:
        return None
    inner = {k.shape[r] for k in nest.pre + nest.post}
    return nest if len(inner) == 1 else None


def _match_post(nest: Nest, graph, producer: dict, position: dict, wanted: set,
                used: set) -> None:
    outer, r = nest.outer, nest.rank
    start = position[id(outer)]
    stored = {id(o.node): o.node for o in outer.outputs if not o.is_reduction}
    links: dict = {}
    for u in producer.values():
        if isinstance(u, Step) and u.node.op is S.expand_dims and \
                tuple(u.node.attrs["axes"]) in ((r,), (-1,)) and \
                id(u.node.inputs[0]) in stored and id(u.node) not in wanted:
            links[id(u.node)] = u
    posts: list = []
    for u in producer.values():
        if not isinstance(u, Kernel) or u in posts or not _inner_ok(u, outer, used):
            continue
        if position[id(u)] > start and any(id(i) in links for i in u.inputs):
            posts.append(u)
    while True:   # a link must be read only by posts; a post must read only kept links
        post_nodes = {id(n) for p in posts for n in p.nodes}
        links = {x: s for x, s in links.items()
                 if all(id(c) in post_nodes for c in graph.consumers[x])}
        keep = [p for p in posts if any(id(i) in links for i in p.inputs) and
                all(id(i) in links or _ready(i, producer, position, start) for i in p.inputs)]
        if len(keep) == len(posts):
            break
        posts = keep
    if not posts:
        return
    nest.post = sorted(posts, key=lambda p: position[id(p)])
    nest.links = {x: s.node.inputs[0] for x, s in links.items()}
    nest.steps = list(links.values())
    for o in outer.outputs:
        c = o.node
        if o.is_reduction or id(c) in wanted:
            continue
        if all(id(x) in links for x in graph.consumers[id(c)]):
            nest.hidden.add(id(c))


_ROW_VIEW_1 = (slice(None), None)    # x[:, None]
_COL_VIEW_1 = (None, slice(None))    # x[None, :]


def _pair_loop(outer: Kernel) -> Optional[Nest]:
    """A nest of ``outer`` alone: a square rank-2 kernel whose outputs are all row, column
    or total sums, whose inputs are views ``x[:, None]``, ``x[None, :]`` and constants
    (the pair sum written by components, ``dx = x[:, None] - x[None, :]``, ...), when one
    of the nest's rules pays: the symmetric ``i0 <= i1`` loop, a triangular mask's skip or
    a cutoff's gate (otherwise the flat loop does as well)."""
    if outer.rank != 2 or outer.shape[0] != outer.shape[1] or \
            len(outer.nodes) > SPECIALISE_NODES or \
            any(not o.is_reduction or o.mean or tuple(o.axes) not in ((0,), (1,), (0, 1))
                for o in outer.outputs):
        return None
    for i in outer.inputs:
        key = i.attrs.get("key") if i.op is S.getitem else None
        if key not in (_ROW_VIEW_1, _COL_VIEW_1) and getattr(i, "value", None) is None:
            return None
    nest = Nest(outer)
    lowered = {outer.index: lower_kernel(outer)}
    if nest_symmetry(nest, lowered) or nest_masks(nest, lowered)[1] is not None or \
            nest_gate(nest, lowered) is not None:
        return nest
    return None


def _ready(node, producer: dict, position: dict, start: int) -> bool:
    """Whether ``node`` is a source, a constant or computed by a unit before ``start``."""
    unit = producer.get(id(node))
    return unit is None or position[id(unit)] < start


# --- the loop function ----------------------------------------------------------------

@dataclass
class NestOutput:
    """How the nest writes output ``j`` of ``kernel``: 'store', 'local' (sum over the
    outer axes level.. in locals, stored after loop ``level``) or 'array' (``+=``)."""

    kernel: Kernel
    j: int
    mode: str
    level: int
    chunked: bool
    inner: bool          # the output has the inner axis (one value per k)

    @property
    def name(self) -> str:
        return f"r{self.kernel.index}_{self.j}"

    @property
    def zeroed(self) -> bool:
        return self.mode == "array"


def nest_outputs(nest: Nest, parallel: bool) -> list:
    outs = []
    r = nest.rank
    for kernel in [nest.outer] + nest.post:
        for j, o in nest.written(kernel):
            axes = set(o.axes) if o.is_reduction else set()
            has_inner = kernel is not nest.outer and r not in axes
            outer_axes = axes - {r}
            level = min(outer_axes) if outer_axes else r
            if not o.is_reduction:
                mode = "store"
            elif outer_axes == set(range(level, r)):
                mode = "local"
            else:
                mode = "array"
            chunked = parallel and 0 in outer_axes
            if nest.mirror and axes != {0, 1}:   # rows and columns get mirrors
                mode, chunked = "array", parallel
            outs.append(NestOutput(kernel, j, mode, level, chunked, has_inner))
    return outs


def nest_inputs(nest: Nest) -> list:
    """The LNodes the nest function reads (pre results and links are computed inside)."""
    inside = {id(k.outputs[0].node) for k in nest.pre} | set(nest.links)
    nodes, seen = [], set()
    for kernel in nest.kernels:
        for i in kernel.inputs:
            if id(i) not in inside and id(i) not in seen:
                seen.add(id(i))
                nodes.append(i)
    return nodes


def nest_source(nest: Nest, lowered: list, name: str, parallel: bool) -> str:
    """The loop function ``name(nc?, n0.., inputs.., outputs..)`` of a nest."""
    r, inner = nest.rank, nest.inner
    inputs = nest_inputs(nest)
    arg = {id(n): f"x{k}" for k, n in enumerate(inputs)}
    outs = nest_outputs(nest, parallel)
    params = (["nc"] if parallel else []) + [f"n{j}" for j in range(r)] + \
        [arg[id(n)] for n in inputs] + [o.name for o in outs]
    deco = f"@numba.njit({OPTIONS}{', parallel=True' if parallel else ''})"
    lines = [deco, f"def {name}({', '.join(params)}):"]
    local: dict = {}       # id(node) -> local name (pre sums, linked outer values)
    chunk = "c, " if parallel else ""
    bands, skip = nest_masks(nest, lowered)
    kept = bands[skip][0] if skip is not None else None
    nest.mirror = nest_symmetry(nest, lowered) if skip is None else {}
    points: list = []   # the gate and specialised outer point functions, before the loop
    gate = nest_gate(nest, lowered)
    if gate is not None:
        points.append(gate_source(nest, lowered, gate, f"{name}_gate"))
    outs = nest_outputs(nest, parallel)
    params = (["nc"] if parallel else []) + [f"n{j}" for j in range(r)] + \
        [arg[id(n)] for n in inputs] + [o.name for o in outs]
    lines[1] = f"def {name}({', '.join(params)}):"
    for x, mb in bands.items():   # constant masks read as index predicates
        local[x] = read_text(mb, "i0", "i1", kept)
    for x, (r0, c0) in nest_factors(nest).items():   # outer products: a column and a row
        local[x] = f"({arg[x]}[i0, {c0}] * {arg[x]}[{r0}, i1])"

    def emit(depth: int, text: str) -> None:
        lines.append("    " * depth + text)

    def call(depth: int, kernel: Kernel, values: list, k=None, point=None) -> None:
        target = ", ".join(values) + ("," if len(values) == 1 else "")
        reads = point_reads(kernel, local, arg, r, k)
        emit(depth, f"{target} = {point or f'_k{kernel.index}_point'}({', '.join(reads)})")

    def value(kernel: Kernel, node, k=None) -> str:
        j = [id(s) for s in lowered[kernel.index].sources].index(id(node))
        return f"e{kernel.index}_{j}" + ("" if k is None else f"_{k}")

    def locals_of(o: NestOutput) -> list:
        return [f"s{o.kernel.index}_{o.j}_{k}" for k in range(inner)] if o.inner else \
            [f"s{o.kernel.index}_{o.j}"]

    def index(o: NestOutput, k=None, store=False) -> str:
        axes = set(o.kernel.outputs[o.j].axes)
        idx = [("0" if a in axes or (store and a >= o.level) else f"i{a}") for a in range(r)]
        if o.kernel is not nest.outer:
            idx.append("0" if k is None else str(k))
        return (chunk if o.chunked else "") + ", ".join(idx)

    def open_level(depth: int, level: int) -> None:
        for o in outs:
            if o.mode == "local" and o.level == level and level < r:
                for s in locals_of(o):
                    emit(depth, f"{s} = 0.0")

    def close_level(depth: int, level: int) -> None:
        for o in outs:
            if o.mode == "local" and o.level == level and level < r:
                for k, s in enumerate(locals_of(o)):
                    emit(depth, f"{o.name}[{index(o, k if o.inner else None, True)}] = {s}")

    def outer_point(values: dict) -> str:
        """The outer point function for a part of the loop where the masks are ``values``."""
        sk = specialised(nest, lowered, values)
        if sk is None:
            return f"_k{nest.outer.index}_point"
        fn = f"{name}_o{len(points)}"
        points.append(body_source(sk, fn, NEST_MATH, trig=False))
        return fn

    def body(depth: int, point: str = f"_k{nest.outer.index}_point") -> int:
        """The pair's pre sums, gate, outer and post calls; the depth of what follows."""
        for kernel in nest.pre:
            total = f"p{kernel.index}"
            for k in range(inner):
                call(depth, kernel, [f"{total}_{k}"], k)
            emit(depth, f"{total} = " + " + ".join(f"{total}_{k}" for k in range(inner)))
            local[id(kernel.outputs[0].node)] = total
        if gate is not None:   # pairs outside the cutoff add exactly 0: skip them
            reads = point_reads(nest.outer, local, arg, r)
            emit(depth, f"if {name}_gate({', '.join(reads)})[0]:")
            depth += 1
        call(depth, nest.outer, [value(nest.outer, s) for s in lowered[nest.outer.index].sources],
             point=point)
        for x, c in nest.links.items():
            local[x] = value(nest.outer, c)
        for kernel in nest.post:
            for k in range(inner):
                call(depth, kernel, [value(kernel, s, k) for s in lowered[kernel.index].sources],
                     k)
        return depth

    if nest.mirror:   # i0 <= i1 only: each off-diagonal pair stands for (i0, i1) and (i1, i0)
        rows = {(p, j) for p, j in nest.mirror.values()}
        src = {(o.kernel.index, o.j): o.kernel.outputs[o.j].source for o in outs}
        depth = 1
        if parallel:
            emit(depth, "for c in numba.prange(nc):")
            depth += 1
        open_level(depth, 0)
        emit(depth, f"for i0 in range({'c, n0, nc' if parallel else 'n0'}):")
        depth += 1
        def total(o: NestOutput) -> bool:   # a sum over every pair (checked)
            return o.kernel is nest.outer and set(o.kernel.outputs[o.j].axes) == {0, 1}

        def ks(o: NestOutput) -> list:   # (inner index, its subscript) per value
            return [(None, "")] if o.kernel is nest.outer else \
                [(k, f", {k}") for k in range(inner)]

        # a column sum equals its paired row sum (C[j] = sum_i e_col(i, j) = sum_i
        # e_row(j, i) = R[j]): the loop adds into the rows only, and copies them after
        posts = [o for o in outs if not total(o) and (o.kernel.index, o.j) in rows]
        cols = [o for o in outs if not total(o) and (o.kernel.index, o.j) not in rows]
        for o in posts:
            for k in range(inner):
                emit(depth, f"m{o.kernel.index}_{o.j}_{k} = 0.0")
        for diagonal in (True, False):
            at = depth
            if diagonal:
                emit(at, "i1 = i0")
            else:
                emit(at, "for i1 in range(i0 + 1, n1):")
                at += 1
            fixed = {x: a if (b[0] == "==") == diagonal else other
                     for x, (b, a, other) in bands.items()}
            for x, v in fixed.items():   # eye / ~eye: a literal on each part
                local[x] = repr(v)
            at = body(at, outer_point(fixed))
            for o in outs:
                if total(o):
                    e = value(o.kernel, o.kernel.outputs[o.j].source)
                    emit(at, f"{locals_of(o)[0]} += {e if diagonal else f'2.0 * ({e})'}")
                    continue
                pi = o.kernel.index
                for n, (k, sub) in enumerate(ks(o)):
                    e = value(o.kernel, src[(pi, o.j)], k)
                    if (pi, o.j) in rows:   # row i0 sums over i1: a local
                        emit(at, f"m{pi}_{o.j}_{n} += {e}")
                        continue
                    row = nest.mirror[(pi, o.j)]
                    if not diagonal:   # the mirror: row i1 gets e_col(i0, i1) = e_row(i1, i0)
                        emit(at, f"r{row[0]}_{row[1]}[{chunk}i1, 0{sub}] += {e}")
        for o in posts:
            for n, (k, sub) in enumerate(ks(o)):
                at = f"{chunk}i0, 0{sub}" if (o.kernel.index, o.j) in rows else f"{chunk}0, i0{sub}"
                emit(depth, f"{o.name}[{at}] += m{o.kernel.index}_{o.j}_{n}")
        close_level(depth - 1, 0)
        if cols:
            emit(depth - 1, "for i0 in range(n0):")
        for o in cols:
            row = nest.mirror[(o.kernel.index, o.j)]
            for k, sub in ks(o):
                emit(depth, f"{o.name}[{chunk}0, i0{sub}] = r{row[0]}_{row[1]}[{chunk}i0, 0{sub}]")
        return "\n\n\n".join(points + ["\n".join(lines)])

    depth = 1
    if parallel:
        emit(depth, "for c in numba.prange(nc):")
        depth += 1
    for j in range(r):
        open_level(depth, j)
        bounds = "c, n0, nc" if j == 0 and parallel else f"n{j}"
        if j == 1 and skip is not None:   # only the columns the mask keeps
            bounds = row_range(kept, "i0", "n1")
        emit(depth, f"for i{j} in range({bounds}):")
        depth += 1
    fixed = {x: a if b == kept else other for x, (b, a, other) in bands.items()
             if kept is not None and kept in (b, complement(b))}
    at = body(depth, outer_point(fixed))
    for o in outs:
        src = o.kernel.outputs[o.j].source
        ks = list(range(inner)) if o.kernel is not nest.outer else [None]
        if o.kernel is nest.outer or o.inner:
            pairs = [(k, value(o.kernel, src, k)) for k in ks]
        else:
            pairs = [(None, " + ".join(value(o.kernel, src, k) for k in ks))]
        for n, (k, e) in enumerate(pairs):
            if o.mode == "store":
                emit(at, f"{o.name}[{index(o, k)}] = {e}")
            elif o.mode == "array":
                emit(at, f"{o.name}[{index(o, k)}] += {e}")
            elif o.level == r:
                emit(at, f"{o.name}[{index(o, k, True)}] = {e}")
            else:
                emit(at, f"{locals_of(o)[n]} += {e}")
    for j in reversed(range(r)):
        depth -= 1
        close_level(depth, j)
    return "\n\n\n".join(points + ["\n".join(lines)])


def nest_factors(nest: Nest) -> dict:
    """{id(node): (r, c)} of the outer kernel's constant outer products
    (``masks.outer_factors``), read as ``x[i0, c] * x[r, i1]``."""
    if nest.rank != 2:
        return {}
    out = {}
    for i in nest.outer.inputs:
        f = outer_factors(i, input_access(i.dims, nest.outer.dims).index)
        if f is not None:
            out[id(i)] = f
    return out


def nest_masks(nest: Nest, lowered) -> tuple:
    """({id(node): masks.mask_band} of the outer kernel's constant pair masks read as
    index predicates, id of the bool mask whose dropped pairs the loop skips or None).

    The loop over ``i1`` visits only the columns a triangular or diagonal mask keeps when
    every pair it drops adds exactly 0: the outer kernel's written and linked values vanish
    with the mask False, and the post kernels' values vanish with those links 0 (sympy, on
    the lowered kernels; ``lowered[k.index]``), and the nest stores no per-pair value.
    """
    outer = nest.outer
    if outer.rank != 2:
        return {}, None
    bands = {}
    for i in outer.inputs:
        b = mask_band(i, input_access(i.dims, outer.dims).index)
        if b is not None:
            bands[id(i)] = b
    if not bands or any(o.mode == "store" for o in nest_outputs(nest, False)):
        return bands, None
    lk = lowered[outer.index]
    needed = {id(o.source) for _, o in nest.written(outer)} | \
        {id(c) for c in nest.links.values()}
    for post in nest.post:
        links = {s: 0 for s, i in zip(lowered[post.index].symbols, post.inputs)
                 if id(i) in nest.links}
        if not all(vanishes(lowered[post.index], links)):
            return bands, None
    for x, (b, a, _) in bands.items():
        if a is not True or row_range(b, "i0", "n1") is None:
            continue
        sym = lk.symbols[[id(i) for i in outer.inputs].index(x)]
        zero = vanishes(lk, {sym: sp.false})
        if all(z for z, s in zip(zero, lk.sources) if id(s) in needed):
            return bands, x
    return bands, None


_ROW_VIEW = (slice(None), None, slice(None))    # P[:, None, :]
_COL_VIEW = (None, slice(None), slice(None))    # P[None, :, :]


def _same(a, b) -> bool:
    return _same_expr(a, b)


def _expanded(lk, j: int):
    env: dict = {}
    for sym, expr in lk.replacements:
        env[sym] = expr.xreplace(env)
    return sp.sympify(lk.results[j]).xreplace(env)


def gate_source(nest: Nest, lowered, gate, name: str) -> str:
    """The point function ``name(outer inputs..) -> (gate,)`` of ``nest_gate``."""
    lk = lowered[nest.outer.index]
    return body_source(replace(lk, exprs=[gate], replacements=[], results=[gate], printed=None,
                               texts=None), name, NEST_MATH, trig=False)


SPECIALISE_NODES = 64   # the largest outer kernel specialised per part of the loop


def specialised(nest: Nest, lowered, values: dict) -> Optional[object]:
    """The outer kernel's LoweredKernel with its constant masks fixed to ``values``
    ({id(input node): value on one part of the loop: the diagonal, i0 < i1, the kept
    band}), or None when nothing changes.

    Fixed masks fold their conditionals away. Then each value is distributed
    (``expand_mul``, after ``piecewise_fold`` of at most 3 conditions) where that makes it
    no larger and every base of a half power is a pre sum that sympy proves nonnegative (a
    sum of squares): ``(-12 g r**-13 - 6 g' r**-7) * 0.5/r`` with ``r = sqrt(r2)`` (the
    ``sqrt`` forms' gradient) becomes ``-6 g r2**-7 - 3 g' r2**-4``, no square root (the
    hand loop's ``1/r2``). With ``b >= 0``, ``b**(m/2) * b**(n/2) = b**((m+n)/2)`` holds in
    IEEE arithmetic up to rounding, ``b = 0`` and ``inf`` included.
    """
    outer = nest.outer
    lk = lowered[outer.index]
    if len(outer.nodes) > SPECIALISE_NODES or not values or lk.texts is not None:
        return None
    env: dict = {}    # bound intermediates (``u<k>``) of long expressions, substituted
    for sym, expr in lk.replacements:
        env[sym] = expr.xreplace(env)
    exprs = [sp.sympify(e).xreplace(env) for e in lk.exprs]
    fixed = {}
    for sym, i in zip(lk.symbols, outer.inputs):
        if id(i) in values:
            v = values[id(i)]
            fixed[sym] = sp.true if v is True else sp.false if v is False else number(v)
    nonneg = set()
    for pre in nest.pre:
        sym = lk.symbols[[id(i) for i in outer.inputs].index(id(pre.outputs[0].node))]
        if _expanded(lowered[pre.index], 0).is_nonnegative:
            nonneg.add(sym)
    out = []
    for e in exprs:
        e = e.xreplace(fixed)
        d = _distributed(e, nonneg)
        out.append(e if d is None else d)
    reps, reduced = sp.cse(out, symbols=sp.numbered_symbols("t"), order="none")
    statements, results = power_chains(list(reps), list(reduced))
    if len(statements) != len(reps):
        statements = in_dependency_order(statements)
    return replace(lk, exprs=out, replacements=statements, results=results, printed=None,
                   texts=None)


def _distributed(expr, nonneg: set):
    """``expand_mul(piecewise_fold(expr))`` when it pays and is exact (``specialised``)."""
    for pw in expr.atoms(sp.Pow):
        if not pw.exp.is_integer and pw.base not in nonneg and not pw.base.is_nonnegative:
            return None
    if len({c for pw in expr.atoms(sp.Piecewise) for _, c in pw.args}) > 4:
        return None
    d = sp.expand_mul(sp.piecewise_fold(expr)) if expr.has(sp.Piecewise) else \
        sp.expand_mul(expr)
    for pw in d.atoms(sp.Pow):
        if not pw.exp.is_integer and pw.base not in nonneg and not pw.base.is_nonnegative:
            return None
    calls = _calls(d) <= _calls(expr)   # (1 - e)**2 distributed: exp(x)**2 -> exp(2x)
    return d if calls and sp.count_ops(d) <= sp.count_ops(expr) else None


def _calls(expr) -> int:
    """The distinct function calls (exp, sqrt's ``Pow`` aside) of ``expr``."""
    return sum(not isinstance(f, sp.Piecewise) for f in expr.atoms(sp.Function))


def gate_text(nest: Nest, gate) -> str:
    """``nest_gate``'s condition over the outer kernel's input names (for ``explain``)."""
    names = {sp.Symbol(f"a{k}"): sp.Symbol(i.name) for k, i in enumerate(nest.outer.inputs)}
    floats = {f: sp.Symbol(repr(float(f))) for f in gate.atoms(sp.Float)}
    syms = {s: names.get(sp.Symbol(s.name), s) for s in gate.free_symbols}
    return str(gate.xreplace({**syms, **floats}))


GATE_NODES = 200   # the largest outer kernel searched for a gate (expanded expressions)


def nest_gate(nest: Nest, lowered) -> Optional[object]:
    """The condition (a sympy Boolean over the outer kernel's input symbols) outside of
    which a pair adds exactly 0, when the nest may skip such pairs, else None.

    A ``where(r < rc, f, 0)`` cutoff makes the outer kernel's values Piecewise expressions
    of one condition. When every written outer value and every link vanishes with that
    condition False (sympy, on the expanded lowered kernel), every post kernel's values
    vanish with the links 0, and the nest stores no per-pair value, the loop computes the
    pre sums, tests the condition and runs the rest of the pair only where it holds (the
    hand loop's ``if r2 < rc2:``). Conditions on constant masks only are left to
    ``nest_masks`` and ``nest_symmetry``.
    """
    outer = nest.outer
    lk = lowered[outer.index]
    if outer.rank != 2 or len(outer.nodes) > GATE_NODES or \
            any(o.mode == "store" or (o.mode == "local" and o.level == nest.rank)
                for o in nest_outputs(nest, False)):
        return None
    for post in nest.post:
        links = {s: 0 for s, i in zip(lowered[post.index].symbols, post.inputs)
                 if id(i) in nest.links}
        if not all(vanishes(lowered[post.index], links)):
            return None
    needed = {id(o.source) for _, o in nest.written(outer)} | \
        {id(c) for c in nest.links.values()}
    sources = [id(s) for s in lk.sources]
    values = [_expanded(lk, sources.index(x)) for x in needed]
    masks = {lk.symbols[k] for k, i in enumerate(outer.inputs)
             if mask_band(i, input_access(i.dims, outer.dims).index) is not None}
    candidates: list = []
    for v in values:
        for pw in v.atoms(sp.Piecewise):
            for _, cond in pw.args:
                if cond not in candidates and isinstance(cond, sp.logic.boolalg.Boolean) \
                        and cond is not sp.true and not cond.free_symbols <= masks:
                    candidates.append(cond)
    for cond in sorted(candidates, key=sp.count_ops, reverse=True):
        if all(is_zero(v.xreplace({cond: sp.false})) for v in values):
            return cond
    return None


def _same_expr(a, b) -> bool:
    """Equal as expressions (``expand`` of the difference is 0; no ``simplify``). A
    difference of conditionals on at most 4 conditions is folded into one
    (``piecewise_fold``) and each branch must expand to 0."""
    if a == b:
        return True
    d = a - b
    if d.has(sp.Piecewise):
        if len({c for pw in d.atoms(sp.Piecewise) for _, c in pw.args}) > 4:
            return False
        d = sp.piecewise_fold(d)
        if isinstance(d, sp.Piecewise):
            return all(sp.expand(e) == 0 for e, _ in d.args)
    return sp.expand(d) == 0


def nest_symmetry(nest: Nest, lowered) -> dict:
    """{(post kernel index, column output j): (post kernel index, row output j)} when the
    nest may visit ``i0 <= i1`` only (docs/pair_sums.md, the four conditions), else {}:

    1. the pair operands are one array read as ``P[:, None, :]`` and ``P[None, :, :]``
       (every pre and post kernel reads those two views, and links only);
    2. the pre sums are unchanged with the two operands swapped, and the outer kernel reads
       only them and constants that are symmetric (``C == C.T``, eye and ~eye masks), so
       each outer value is symmetric; its written outputs are sums over every pair;
    3. each post output is a row sum (over ``i1``) or a column sum (over ``i0``), and the
       column sums pair up with the row sums: column value at ``(i0, i1)`` = row value at
       ``(i1, i0)`` (the operands swapped);
    4. the loop then adds the diagonal once and each off-diagonal pair's sums twice (the
       sums over every pair) or into both rows (``nest_source``).
    """
    outer = nest.outer
    if nest.rank != 2 or outer.shape[0] != outer.shape[1]:
        return {}
    if not nest.pre and not nest.post:
        return _pair_loop_symmetry(nest, lowered)
    if not nest.pre or not nest.post:
        return {}
    views = {}
    for k in nest.pre + nest.post:
        for i in k.inputs:
            if id(i) in nest.links:
                continue
            key = i.attrs.get("key") if i.op is S.getitem else None
            if key not in (_ROW_VIEW, _COL_VIEW) or len(i.inputs) != 1:
                return {}
            views[id(i)] = (key == _COL_VIEW, i.inputs[0])
    if len({id(base) for _, base in views.values()}) != 1 or \
            sorted(col for col, _ in views.values()) != [False, True]:
        return {}

    def swap(lk, kernel) -> dict:
        syms = {views[id(i)][0]: sym for sym, i in zip(lk.symbols, kernel.inputs)
                if id(i) in views}
        return {syms[False]: syms[True], syms[True]: syms[False]} if len(syms) == 2 else {}

    for pre in nest.pre:
        lk = lowered[pre.index]
        sw = swap(lk, pre)
        e = _expanded(lk, 0)
        if not sw or not _same(e, e.xreplace(sw)):
            return {}
    pre_nodes = {id(p.outputs[0].node) for p in nest.pre}
    lk = lowered[outer.index]
    pairs: dict = {}   # views x[:, None], x[None, :] the outer kernel reads (charges)
    for sym, i in zip(lk.symbols, outer.inputs):
        view = _vector_view(i, outer)
        if view is not None:
            col, base = view
            if col in pairs.setdefault(base, {}):
                return {}
            pairs[base][col] = sym
        elif id(i) not in pre_nodes and not _symmetric_constant(i, outer):
            return {}
    if any(tuple(o.axes) != (0, 1) for _, o in nest.written(outer)):
        return {}
    if pairs:   # each outer value the nest uses is unchanged with the views swapped
        sw = {}
        for pair in pairs.values():
            if sorted(pair) != [False, True]:
                return {}
            sw[pair[False]], sw[pair[True]] = pair[True], pair[False]
        sources = [id(x) for x in lk.sources]
        used = {id(o.source) for _, o in nest.written(outer)} | \
            {id(c) for c in nest.links.values()}
        for x in used:
            e = _expanded(lk, sources.index(x))
            if not _same(e, e.xreplace(sw)):
                return {}
    mirror = {}
    for post in nest.post:
        pairs = _row_column_pairs(post, lowered[post.index], swap(lowered[post.index], post))
        if pairs is None:
            return {}
        mirror.update(pairs)
    return mirror


def _vector_view(i, outer: Kernel) -> Optional[tuple]:
    """``(is column, key of the vector)`` when outer input ``i`` is one vector read along
    one pair axis: a view ``x[:, None]`` / ``x[None, :]``, or a constant of shape
    ``(N, 1)`` / ``(1, N)`` (such a view folded); the key pairs the two reads of a vector."""
    key = i.attrs.get("key") if i.op is S.getitem else None
    if key in (_ROW_VIEW_1, _COL_VIEW_1) and len(i.inputs) == 1:
        return key == _COL_VIEW_1, id(i.inputs[0])
    value = getattr(i, "value", None)
    index = input_access(i.dims, outer.dims).index
    if value is not None and np.ndim(value) == 2 and index in ("[i0, 0]", "[0, i1]"):
        v = np.ascontiguousarray(value, dtype=np.float64).ravel()
        return index == "[0, i1]", ("const", v.tobytes())
    return None


def _symmetric_constant(i, outer: Kernel) -> bool:
    """Whether outer input ``i`` is a constant equal to its transpose (eye and ~eye masks
    read as predicates included) or read the same at every pair."""
    index = input_access(i.dims, outer.dims).index
    value = getattr(i, "value", None)
    if value is None:
        return False
    if "i0" not in index and "i1" not in index:
        return True
    mb = mask_band(i, index)
    if mb is not None and mb[0] in (("==", 0), ("!=", 0)):
        return True
    return np.ndim(value) == 2 and index == "[i0, i1]" and \
        np.array_equal(value, np.asarray(value).T)


def _row_column_pairs(kernel: Kernel, lk, sw: dict, totals: bool = False,
                      canon: Optional[dict] = None) -> Optional[dict]:
    """{(kernel index, column sum j): (kernel index, row sum j')} when every output of
    ``kernel`` is a row or column sum (or, with ``totals``, a sum over every pair that is
    unchanged by the swap ``sw``) and the column values are the row values with the
    operands swapped; else None. ``canon``: a substitution applied to both sides of each
    comparison (``_pair_loop_symmetry``)."""
    canon = canon or {}

    def _same(a, b) -> bool:
        return _same_expr(a.xreplace(canon), b.xreplace(canon))

    sources = [id(x) for x in lk.sources]
    rows, cols = [], []
    for j, o in enumerate(kernel.outputs):
        axes = tuple(o.axes) if o.is_reduction else None
        e = _expanded(lk, sources.index(id(o.source)))
        if totals and axes == (0, 1):
            if not sw or not _same(e, e.xreplace(sw)):
                return None
            continue
        if axes not in ((0,), (1,)):
            return None
        (cols if axes == (0,) else rows).append((j, e))
    if not sw or len(rows) != len(cols):
        return None
    out = {}
    for j, e in cols:
        match = next((r for r in rows if _same(e, r[1].xreplace(sw))), None)
        if match is None:
            return None
        rows.remove(match)
        out[(kernel.index, j)] = (kernel.index, match[0])
    return out


def _pair_loop_symmetry(nest: Nest, lowered) -> dict:
    """``nest_symmetry`` for a nest of one kernel (``_pair_loop``): each base is read as
    one row view ``x[:, None]`` and one column view ``x[None, :]``, every other input is a
    symmetric constant, the total sums are unchanged with all the views swapped and the
    column sums are the row sums swapped. ``{}`` when there are no row sums to pair
    (``nest_source`` needs a mirror entry) and no total sum."""
    outer = nest.outer
    lk = lowered[outer.index]
    views: dict = {}
    for sym, i in zip(lk.symbols, outer.inputs):
        key = i.attrs.get("key") if i.op is S.getitem else None
        if key in (_ROW_VIEW_1, _COL_VIEW_1) and len(i.inputs) == 1:
            views.setdefault(id(i.inputs[0]), {})[key == _COL_VIEW_1] = sym
        elif not _symmetric_constant(i, outer):
            return {}
    sw, canon = {}, {}
    for k, pair in enumerate(views.values()):
        if sorted(pair) != [False, True]:
            return {}
        sw[pair[False]], sw[pair[True]] = pair[True], pair[False]
        # x[None, :] = x[:, None] - d: both sides then read differences d, where sympy
        # folds (-d)**2 to d**2 itself (no expand of powers of sums)
        canon[pair[True]] = pair[False] - sp.Symbol(f"_d{k}", real=True)
    if len(views) * 2 != sum(1 for i in outer.inputs if i.op is S.getitem):
        return {}   # a base read twice the same way
    pairs = _row_column_pairs(outer, lk, sw, totals=True, canon=canon)
    if not pairs:
        return {}
    return pairs


# --- why a kernel stayed flat (for ``explain``) ----------------------------------------

def _describe(kernel: Kernel) -> str:
    return f"kernel {kernel.index} over shape {tuple(kernel.shape)}"


def _flat_reason(kernel: Kernel) -> str:
    """The first nest rule a rank >= 2 kernel left in the flat plan breaks."""
    if not is_fully_known(kernel.shape):
        return "the nest needs static shapes (a dimension is None)"
    if any(o.is_scatter for o in kernel.outputs):
        return "it has scatter outputs (gradients of slices) which a nest cannot hold"
    stored = [o.node for o in kernel.outputs if not o.is_reduction]
    if not stored:
        return "all its outputs are sums (no full-size temporary: it needs no nest)"
    if kernel.shape[-1] > INNER_MAX:
        names = ", ".join(repr(n.name) for n in stored[:3])
        return (f"it stores {names}, and no reduce_sum over a trailing axis of at most "
                f"INNER_MAX={INNER_MAX} feeds it, nor does a kernel of one more axis read "
                "its values through expand_dims (the nest's patterns)")
    return (f"its trailing axis ({kernel.shape[-1]}) is short enough to be unrolled, but it "
            "is not the pre or post kernel of a nest: its only output must be a reduce_sum "
            "over that axis read only by the outer kernel, or it must read an outer value "
            "through expand_dims")


def _size(shape: tuple) -> float:
    total = 1
    for d in shape:
        total *= d if isinstance(d, int) else float("inf")
    return total


def _unknowns(shape: tuple) -> int:
    return sum(not isinstance(d, int) for d in shape)


def nest_rejections(plan: Plan) -> list:
    """Why the pair-shaped kernels (rank >= 2, larger than every input or with more unknown
    lengths than any) of ``plan`` are not loop nests, and the full-size values nests still
    store: one sentence each (empty when every rank >= 2 kernel is nested or only sums).
    ``f.explain()`` lists them under "loop nests".

    >>> import numpy as np, symgrad as sg
    >>> from symgrad.compile.fold import fold_graph
    >>> from symgrad.compile.regions import build_plan
    >>> P = sg.placeholder("P", shape=(4, 3))
    >>> D = P[:, None, :] - P[None, :, :]
    >>> E = sg.reduce_sum(sg.exp(-sg.reduce_sum(D * D, axis=-1)))
    >>> nest_rejections(nest_plan(build_plan(fold_graph([E] + sg.gradients(E, P), [P]))))
    []
    >>> S = sg.exp(-sg.reduce_sum(D * D, axis=-1))
    >>> E = sg.reduce_sum(S)
    >>> nest_rejections(nest_plan(build_plan(fold_graph([E, S] + sg.gradients(E, P), [P]))))
    ... # doctest: +ELLIPSIS
    ["nest 1 stores 'exp_...' (4, 4): it is read outside the nest ..."]
    """
    largest = max([_size(p.shape) for p in plan.graph.placeholders] or [0])
    unknown = max([_unknowns(p.shape) for p in plan.graph.placeholders] or [0])

    def pair_shaped(shape: tuple) -> bool:   # (N, N) over (N, d) inputs, N known or not
        return _size(shape) > largest or _unknowns(shape) > unknown

    out = []
    for u in plan.units:
        if isinstance(u, Kernel) and u.rank >= 2 and pair_shaped(u.shape):
            reason = _flat_reason(u)
            if not reason.startswith("all its outputs are sums"):
                out.append(f"{_describe(u)}: {reason}")
        elif isinstance(u, Nest):
            for j, o in u.written(u.outer):
                if not o.is_reduction and pair_shaped(u.outer.shape):
                    out.append(f"nest {u.index} stores {o.node.name!r} {tuple(u.outer.shape)}:"
                               " it is read outside the nest (not only through expand_dims "
                               "by its post kernels)")
    return out


def flat_pair_notes(plan: Plan) -> list:
    """Pair-shaped rank-2 kernels left flat whose outputs are all sums (no stored value, so
    ``nest_rejections`` does not list them): one sentence each on what the flat loop does
    not get (``f.explain()`` lists them under "flat pair loops")."""
    largest = max([_size(p.shape) for p in plan.graph.placeholders] or [0])
    out = []
    for u in plan.units:
        if isinstance(u, Kernel) and u.rank == 2 and _size(u.shape) > largest and \
                all(o.is_reduction for o in u.outputs):
            out.append(f"{_describe(u)} is a flat loop, not a nest: no reduce_sum over a "
                       "short trailing axis feeds it and no value of it is broadcast back "
                       "along one (the nest's patterns, e.g. P[:, None, :] - P[None, :, :] "
                       "summed over the last axis), so the symmetric i0 <= i1 rule and a "
                       "cutoff's skip do not apply: it visits every ordered pair, or those a "
                       "triangular constant mask keeps")
    return out


def point_reads(kernel: Kernel, local: dict, arg: dict, r: int, k=None) -> list:
    """The arguments of ``kernel``'s point function inside a nest (cpu and cuda): a value
    the nest holds in a local (``local``), else its array (``arg``) at the nest's indexes,
    with the inner index ``i<r>`` fixed to ``k`` when given."""
    args = []
    for i in kernel.inputs:
        if id(i) in local:
            args.append(local[id(i)])
            continue
        index = input_access(i.dims, kernel.dims).index
        if k is not None:
            index = re.sub(rf"\bi{r}\b", str(k), index)
        args.append(arg[id(i)] + index)
    return args
