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
>>> from symgrad.compile.plan.fold import fold_graph
>>> from symgrad.compile.plan.regions import build_plan
>>> P = sg.placeholder("P", shape=(4, 3))
>>> D = P[:, None, :] - P[None, :, :]
>>> E = sg.reduce_sum(sg.exp(-sg.reduce_sum(D * D, axis=-1)))
>>> plan = nest_plan(build_plan(fold_graph([E] + sg.gradients(E, P), [P])))
>>> nest = next(u for u in plan.units if isinstance(u, Nest))
>>> len(nest.pre), len(nest.post), nest.inner
(1, 1, 3)
"""

from __future__ import annotations

from typing import Optional

from ...shapes import is_fully_known
from ..codegen.lower import lower_kernel
from ..plan.oprules import S
from ..plan.regions import Kernel, Plan, Step
from .ir import INNER_MAX, Nest
from .rules import SPECIALISE_NODES, _COL_VIEW_1, _ROW_VIEW_1, nest_gate, nest_masks, nest_symmetry

PRE_FLOATS = ("float64", "float32")
"""Dtypes of a pre sum (the sum and its summands alike: a float32 sum of float32 terms is
added in float32 in the nest, as the flat kernel's point function computes it)."""


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
                not o.mean and i.dims == outer.dims and i.dtype.name in PRE_FLOATS and \
                o.source.dtype == i.dtype and id(i) not in wanted and \
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


def _pair_shaped(plan: Plan):
    """Whether a shape is (N, N) over (N, d) inputs, N known or not: larger than every
    placeholder of ``plan`` or with more unknown lengths than any."""
    largest = max([_size(p.shape) for p in plan.graph.placeholders] or [0])
    unknown = max([_unknowns(p.shape) for p in plan.graph.placeholders] or [0])
    return lambda shape: _size(shape) > largest or _unknowns(shape) > unknown


def unknown_pair_kernels(plan: Plan) -> list:
    """The pair-shaped kernels (rank >= 2) of ``plan`` left flat because a length is
    unknown: those a compile for the call's actual shapes may nest
    (``compile/runtime/specialise.py`` decides by them whether to specialise per call).

    >>> import symgrad as sg
    >>> from symgrad.compile.plan.fold import fold_graph
    >>> from symgrad.compile.plan.regions import build_plan
    >>> P = sg.placeholder("P", shape=(None, 3))
    >>> D = P[:, None, :] - P[None, :, :]
    >>> E = sg.reduce_sum(sg.exp(-sg.reduce_sum(D * D, axis=-1)))
    >>> len(unknown_pair_kernels(nest_plan(build_plan(fold_graph([E], [P]))))) > 0
    True
    >>> x = sg.placeholder("x", shape=(None, None))
    >>> unknown_pair_kernels(nest_plan(build_plan(fold_graph([sg.sin(x) * x], [x]))))
    []
    """
    pair_shaped = _pair_shaped(plan)
    return [u for u in plan.units if isinstance(u, Kernel) and u.rank >= 2 and
            not is_fully_known(u.shape) and pair_shaped(u.shape)]


def nest_rejections(plan: Plan) -> list:
    """Why the pair-shaped kernels (rank >= 2, larger than every input or with more unknown
    lengths than any) of ``plan`` are not loop nests, and the full-size values nests still
    store: one sentence each (empty when every rank >= 2 kernel is nested or only sums).
    ``f.explain()`` lists them under "loop nests".

    >>> import numpy as np, symgrad as sg
    >>> from symgrad.compile.plan.fold import fold_graph
    >>> from symgrad.compile.plan.regions import build_plan
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
    pair_shaped = _pair_shaped(plan)
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

