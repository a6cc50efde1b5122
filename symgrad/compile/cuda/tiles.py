"""Rank-2 pair-sum nests on the device, tiled, with the CPU nest's pair rules.

A ``nest.Nest`` over ``(i0, i1)`` (pre sums -> outer region -> post kernels, ``nest.py``)
runs as one ``@cuda.jit`` kernel per pass. In a pass each thread *owns* one index of the
own axis (``i0``; ``i1`` for the column pass) and keeps its accumulators in registers;
the block walks the other axis in tiles of ``blockDim`` indexes: the values the point
functions read at the tile's indexes only (``P[None, :, :]`` at ``i1``) are loaded once
per tile into shared memory, values read at the own index only once per tile into locals.
Blocks are ``row blocks x chunks`` of the other axis (``cuda_runtime.tile_configuration``
fills the device). An output is

* a sum over the other axis (a row sum): a register per thread, one atomic per row and
  chunk at the end;
* a sum over both axes: a register per thread, one shared-memory tree per block and one
  atomic per block;
* a sum over the own axis (a column sum): the column pass (same kernel, axes swapped),
  unless the rules below make it a copy of a row sum;
* a per-pair value: stored at its element.

No global-memory atomic runs per pair (the triangle adds shared-memory ones, below). The
rules are the CPU nest's, read from ``nest.py``'s analysis
(``device_rules``), not re-derived:

* ``nest.nest_masks``: constant masks (eye, ~eye, triu, tril) are read as index
  predicates (no ``N x N`` argument, no upload); when a band's dropped pairs add exactly
  0 the passes visit only the tiles that meet the band and test the predicate per pair;
* ``nest.nest_symmetry``: when the sum is symmetric in the pair, a column output equals a
  row output with the operands swapped (``mirror``), so a thread's row accumulator is
  added into both arrays and the column pass is not run; and (``triangle``) a block of
  rows walks only the tiles on or above the diagonal: a thread adds the pairs
  ``i1 >= i0`` into its row registers, the mirrored column values into a shared-memory
  column sum per tile (one shared atomic per pair, none in global memory), added into
  both arrays once per tile, as the CPU nest visits ``i0 <= i1``.

Accumulators are float64 (the generated driver casts, ``cuda_driver``).

>>> import symgrad as sg
>>> from symgrad.compile.plan.fold import fold_graph
>>> from symgrad.compile.codegen.lower import lower_kernel
>>> from symgrad.compile.nest import Nest, nest_plan
>>> from symgrad.compile.plan.regions import build_plan
>>> P = sg.placeholder("P", shape=(4, 3))
>>> D = P[:, None, :] - P[None, :, :]
>>> E = sg.reduce_sum(sg.exp(-sg.reduce_sum(D * D, axis=-1)))
>>> plan = nest_plan(build_plan(fold_graph([E] + sg.gradients(E, P), [P]), scatter=False))
>>> nest = next(u for u in plan.units if isinstance(u, Nest))
>>> lowered = {k.index: lower_kernel(k) for k in plan.kernels}
>>> bool(device_rules(nest, lowered).mirror), column_pass(nest, lowered)
(True, False)
>>> text = tiled_source(nest, lowered, "_n")
>>> "cuda.shared.array(BLOCK, T0_n)" in text and "def _n_cols(" not in text
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from ...shapes import format_shape
from .signatures import decorator
from ..plan.masks import predicate, read_text
from .nest import device_nest_outputs, nest_signature, point_calls, source_register
from ..nest import Nest, nest_inputs, nest_masks, nest_symmetry
from ..plan.regions import Kernel

__all__ = ["DeviceRules", "device_rules", "tiled", "device_nest_inputs", "column_pass",
           "triangle", "TRIANGLE", "tiled_source", "rule_lines"]


@dataclass
class DeviceRules:
    """What a device nest takes from the CPU nest's analysis: ``bands`` (id(input) ->
    ``masks.mask_band``: constants read as predicates), ``skip`` (the id of the mask
    whose dropped pairs are skipped, or None) and ``mirror`` ({(post index, column output
    j): (post index, row output j)}, ``nest.nest_symmetry``)."""

    bands: dict
    skip: Optional[int]
    mirror: dict

    @property
    def kept(self):
        """The band the passes visit only, or None."""
        return self.bands[self.skip][0] if self.skip is not None else None


def tiled(nest: Nest) -> bool:
    """Whether the nest runs as tiled passes (rank 2); others keep ``cuda_nest``'s rows."""
    return nest.rank == 2


def device_rules(nest: Nest, lowered: dict) -> DeviceRules:
    """The pair rules a tiled nest uses: the CPU writer's decisions (``nest.nest_source``:
    masks first, symmetry only when no mask skips pairs). Kept on the nest
    (``device_rules_``): the kernel text, the driver and ``explain`` all ask, and reading
    an ``N x N`` constant's band compares ``N**2`` values."""
    if not tiled(nest):
        return DeviceRules({}, None, {})
    rules = getattr(nest, "device_rules_", None)
    if rules is None:
        bands, skip = nest_masks(nest, lowered)
        mirror = nest_symmetry(nest, lowered) if skip is None else {}
        rules = nest.device_rules_ = DeviceRules(bands, skip, mirror)
    return rules


def device_nest_inputs(nest: Nest, lowered: dict) -> list:
    """The arrays a device nest reads: ``nest.nest_inputs`` less the constants it reads
    as index predicates."""
    bands = device_rules(nest, lowered).bands
    return [n for n in nest_inputs(nest) if id(n) not in bands]


def _summed(kernel: Kernel, j: int) -> frozenset:
    """The outer axes (0, 1) output ``j`` of ``kernel`` sums over."""
    o = kernel.outputs[j]
    return frozenset(a for a in (o.axes if o.is_reduction else ()) if a < 2)


TRIANGLE = True
"""Whether a symmetric tiled nest visits only the tiles on or above the diagonal
(``triangle``); False: every tile, its column sums copies of its row sums."""


def triangle(nest: Nest, lowered: dict) -> bool:
    """Whether a tiled nest visits only the pairs ``i0 <= i1`` (``TRIANGLE``, a symmetry
    proof and no skipping mask; every output a sum over both axes, a row sum, or a column
    sum that mirrors a row sum): the block of rows ``lo .. hi - 1`` walks the columns from
    ``lo`` on, a thread adds pair ``(i0, i1)`` with ``i1 >= i0`` into its row registers
    (the sums over both axes twice off the diagonal), and the mirrored column values of the
    off-diagonal pairs into a shared-memory column sum per tile (a shared atomic per pair,
    the threads staggered over the tile's columns), added into row ``i1`` of both the row
    and the column output once per tile."""
    rules = device_rules(nest, lowered)
    if not (TRIANGLE and tiled(nest) and rules.mirror and rules.kept is None) or \
            nest.outer.shape[0] != nest.outer.shape[1]:
        return False
    for o in device_nest_outputs(nest):
        summed, key = _summed(o.kernel, o.j), (o.kernel.index, o.j)
        if not (summed in ({0, 1}, {1}) or (summed == {0} and key in rules.mirror)):
            return False
    return True


def column_pass(nest: Nest, lowered: dict) -> bool:
    """Whether a tiled nest needs its column pass (a column sum no row sum mirrors)."""
    mirror = device_rules(nest, lowered).mirror
    return any(_summed(o.kernel, o.j) == {0} and (o.kernel.index, o.j) not in mirror
               for o in device_nest_outputs(nest))


def tiled_source(nest: Nest, lowered: dict, name: str) -> str:
    """The kernels ``name(n0, n1, inputs.., outputs..)`` (own axis 0) and, when needed,
    ``name + '_cols'`` (own axis 1) of a rank-2 nest."""
    parts = [_pass(nest, lowered, name, 0)]
    if column_pass(nest, lowered):
        parts.append(_pass(nest, lowered, name + "_cols", 1))
    return "\n\n\n".join(parts)


class _Reads:
    """Classifies the point functions' array reads of one pass: read at the other index
    only (a shared-memory tile), at the own index only (a local per tile), or direct."""

    def __init__(self, own: int, name: str):
        self.own, self.other, self.name = own, 1 - own, name
        self.tiles: dict = {}     # read text -> (shared name, load text, dtype name)
        self.owned: dict = {}     # read text -> local name

    def __call__(self, node, text: str) -> str:
        mine = re.search(rf"\bi{self.own}\b", text)
        theirs = re.search(rf"\bi{self.other}\b", text)
        if not re.match(r"x\d+\[", text) or bool(mine) == bool(theirs):
            return text
        if theirs:
            if text not in self.tiles:
                load = re.sub(rf"\bi{self.other}\b", "t0 + q", text)
                self.tiles[text] = (f"tt{len(self.tiles)}", load, node.dtype.name)
            return self.tiles[text][0] + "[jj]"
        return self.owned.setdefault(text, f"ow{len(self.owned)}")


def _band_range(kept, own: int, lines: list, upper: bool = False) -> None:
    """``b_lo, b_hi``: the other-axis indexes band ``kept`` keeps for the block's own
    indexes ``lo .. hi - 1`` (all of them when ``kept`` is None; from ``lo`` on with
    ``upper``, the triangle). Integer bounds are clamped with ``if`` (numba.cuda resolves
    the builtin ``max`` of two ints to an iterable overload)."""
    other = f"n{1 - own}"
    lines += ["b_lo = lo" if upper else "b_lo = 0", f"b_hi = {other}"]
    if kept is not None:
        op, k = kept
        k = k if own == 0 else -k     # i1 - i0 op k, seen from the own axis
        if (op == ">=") == (own == 0) or op == "==":
            lines += [f"b_lo = lo + {k}" if k else "b_lo = lo", "if b_lo < 0:", "    b_lo = 0"]
        if (op == "<=") == (own == 0) or op == "==":
            lines += [f"b_hi = hi + {k}" if k else "b_hi = hi", f"if b_hi > {other}:",
                      f"    b_hi = {other}"]
    lines += ["if b_hi < b_lo:", "    b_hi = b_lo"]


def _pass(nest: Nest, lowered: dict, name: str, own: int) -> str:
    rules = device_rules(nest, lowered)
    inner = nest.inner
    inputs = [n for n in nest_inputs(nest) if id(n) not in rules.bands]
    arg = {id(n): f"x{k}" for k, n in enumerate(inputs)}
    outs = device_nest_outputs(nest)
    local: dict = {x: read_text(mb, "i0", "i1", rules.kept) for x, mb in rules.bands.items()}
    reads = _Reads(own, name)
    point = point_calls(nest, lowered, local, arg, 2, wrap=reads)

    def value(kernel: Kernel, node, k=None) -> str:
        return source_register(lowered, kernel, node, k)

    tri = own == 0 and triangle(nest, lowered)
    acc: dict = {}          # (kernel index, j, k) -> register of a row or full sum
    ends: list = []         # (register, output, k, 'row' | 'full' | 'mirror')
    cols: list = []         # triangle: (shared column sum, row output, column output, k)
    for o in outs:
        summed = _summed(o.kernel, o.j)
        key = (o.kernel.index, o.j)
        if own == 1 and (summed != {0} or key in rules.mirror):
            continue        # the column pass writes the column sums no row sum mirrors
        if own == 0 and summed == {0} and not tri:
            continue        # the column pass's, or a row sum's mirror (added below)
        src = o.out.source
        if o.kernel is nest.outer or o.inner:
            pairs = [(k, value(o.kernel, src, k)) for k in
                     (range(inner) if o.kernel is not nest.outer else [None])]
        else:
            pairs = [(None, " + ".join(value(o.kernel, src, k) for k in range(inner)))]
        for k, e in pairs:
            if not summed:
                point.append(f"{o.name}[{_element(o, k)}] = {e}")
                continue
            if tri and summed == {0}:   # the mirror: row i1 gets e_col(i0, i1)
                row = next(x for x in outs if (x.kernel.index, x.j) == rules.mirror[key])
                cm = f"cm{len(cols)}"
                cols.append((cm, row, o, k))
                point += ["if i1 != i0:", f"    cuda.atomic.add({cm}, jj, {e})"]
                continue
            s = acc.setdefault((*key, k), f"s{len(acc)}")
            point.append(f"{s} += {'w_ * ' if tri and len(summed) == 2 else ''}{e}")
            ends.append((s, o, k, "full" if len(summed) == 2 else "row"))
    if own == 0:
        for col, row in rules.mirror.items():
            o = next(x for x in outs if (x.kernel.index, x.j) == col)
            for k in range(inner):
                ends.append((acc[(*row, k)], o, k, "mirror"))
    return _kernel_text(nest, name, own, inputs, outs, rules, reads, point, acc, ends, arg,
                        cols if tri else None)


def _kernel_text(nest, name, own, inputs, outs, rules, reads, point, acc, ends, arg,
                 cols=None) -> str:
    """``cols``: the triangle's shared column sums (``triangle``), or None."""
    other = 1 - own
    params = ["n0", "n1"] + [arg[id(n)] for n in inputs] + [o.name for o in outs]
    types = {}
    for _, (_, _, dtype) in reads.tiles.items():
        types.setdefault(dtype, f"T{len(types)}{name}")
    lines = [*(f"{t} = from_dtype(numpy.dtype({d!r}))" for d, t in types.items()), "", "",
             decorator(nest_signature(nest, inputs)), f"def {name}({', '.join(params)}):"]
    body = ["tid = cuda.threadIdx.x", "bd = cuda.blockDim.x",
            f"nrb = (n{own} + bd - 1) // bd", "if nrb < 1:", "    nrb = 1",
            "nch = cuda.gridDim.x // nrb", "if nch < 1:", "    nch = 1",
            "ch = cuda.blockIdx.x // nrb", "lo = (cuda.blockIdx.x % nrb) * bd",
            "hi = lo + bd", f"if hi > n{own}:", f"    hi = n{own}",
            f"i{own} = lo + tid", f"live = i{own} < n{own}"]
    _band_range(rules.kept, own, body, cols is not None)
    body += ["per = (b_hi - b_lo + nch - 1) // nch", "c_lo = b_lo + ch * per",
             "if c_lo > b_hi:", "    c_lo = b_hi", "c_hi = c_lo + per", "if c_hi > b_hi:",
             "    c_hi = b_hi"]
    body += [f"{t} = cuda.shared.array(BLOCK, {types[d]})" for t, _, d in reads.tiles.values()]
    if any(mode == "full" for *_, mode in ends):
        body.append("m = cuda.shared.array(BLOCK, float64)")
    body += [f"{cm} = cuda.shared.array(BLOCK, float64)" for cm, *_ in cols or ()]
    body += [f"{s} = 0.0" for s in acc.values()]
    body += ["for t0 in range(c_lo, c_hi, bd):", "    tl = c_hi - t0", "    if tl > bd:",
             "        tl = bd",
             "    cuda.syncthreads()", "    for q in range(tid, tl, bd):"]
    body += [f"        {t}[q] = {load}" for t, load, _ in reads.tiles.values()]
    body += [f"        {cm}[q] = 0.0" for cm, *_ in cols or ()]
    body += ["    cuda.syncthreads()", "    if live:"]
    body += [f"        {v} = {text}" for text, v in reads.owned.items()]
    if cols is None:
        body += ["        for jj in range(tl):", f"            i{other} = t0 + jj"]
        at = "            "
    else:   # staggered: the threads of a warp add into different columns at each step
        body += ["        jj = tid % tl", "        for _ in range(tl):",
                 "            i1 = t0 + jj", "            if i1 >= i0:",
                 "                w_ = 1.0 if i1 == i0 else 2.0"]
        at = "                "
    if rules.kept is not None:
        body.append(f"{at}if {predicate(rules.kept, 'i0', 'i1')}:")
        at += "    "
    body += [at + p for p in point]
    if cols is not None:
        body += ["            jj += 1", "            if jj == tl:", "                jj = 0",
                 "    cuda.syncthreads()", "    for q in range(tid, tl, bd):",
                 "        jc = t0 + q"]
        for cm, row, col, k in cols:   # row jc of both outputs: the row sum is the column's
            for o, i in ((row, "i0"), (col, "i1")):
                at_jc = re.sub(rf"\b{i}\b", "jc", _atomic(o, k))
                body.append(f"        cuda.atomic.add({o.name}, {at_jc}, {cm}[q])")
    for s, o, k, mode in ends:
        if mode == "full":
            body += _block_sum(s, o.name, _element(o, k))
        elif mode == "row":
            body += ["if live:", f"    cuda.atomic.add({o.name}, {_atomic(o, k)}, {s})"]
        else:   # the column output at own index i0 is the row sum of row i0
            body += ["if live:", f"    cuda.atomic.add({o.name}, (0, i0, {k}), {s})"]
    lines += ["    " + b for b in body]
    return "\n".join(lines)


def _element(o, k) -> str:
    """The element of output ``o`` at ``i0, i1`` (and ``k``): 0 on summed axes."""
    axes = set(o.out.axes) if o.out.is_reduction else set()
    idx = ["0" if a in axes else f"i{a}" for a in range(2)]
    if o.kernel.rank == 3:
        idx.append("0" if 2 in axes or k is None else str(k))
    return ", ".join(idx)


def _atomic(o, k) -> str:
    items = _element(o, k).split(", ")
    return items[0] if len(items) == 1 else "(" + ", ".join(items) + ")"


def _block_sum(s: str, out: str, element: str) -> list:
    """A sum over both axes: the block's registers in a shared-memory tree, one atomic."""
    items = element.split(", ")
    idx = items[0] if len(items) == 1 else "(" + element + ")"
    return [f"m[tid] = {s}", "cuda.syncthreads()",
            "h = bd // 2", "while h > 0:", "    if tid < h:", "        m[tid] += m[tid + h]",
            "    cuda.syncthreads()", "    h //= 2", "if tid == 0:",
            f"    cuda.atomic.add({out}, {idx}, m[0])", "cuda.syncthreads()"]


def rule_lines(nests: list) -> list:
    """``f.explain()``'s "loop nests" lines of a cuda function: per nest, the pairs its
    device kernel visits and which rule it uses."""
    from ..codegen.lower import lower_kernel
    lines = []
    for n in nests:
        shape = format_shape(n.outer.shape)
        if not tiled(n):
            lines.append(f"  nest {n.index} visits every element of {shape} in one device "
                         "kernel (a block per row; tiles and pair rules need rank 2)")
            continue
        lowered = {k.index: lower_kernel(k) for k in n.kernels}
        rules = device_rules(n, lowered)
        names = {id(i): i.name for i in n.outer.inputs}
        head = f"  nest {n.index} (tiled device kernel, registers per row, no per-pair atomic)"
        if triangle(n, lowered):
            lines.append(f"{head.replace('no per-pair atomic', 'no per-pair global atomic')} "
                         f"visits only the (i0, i1) of {shape} with i0 <= i1, the tiles on "
                         "or above the diagonal: the sum is symmetric in the pair "
                         "(docs/pair_sums.md), so each off-diagonal pair adds into both rows "
                         "(a shared-memory column sum per tile): no column pass")
        elif rules.kept is not None:
            lines.append(f"{head} visits only the (i0, i1) of {shape} with "
                         f"{predicate(rules.kept, 'i0', 'i1')}: the constant mask "
                         f"{names[rules.skip]!r} drops the others, which add exactly 0")
        elif rules.mirror:
            lines.append(f"{head} visits every (i0, i1) of {shape}; the sum is symmetric in "
                         "the pair (docs/pair_sums.md), so its column sums are copies of its "
                         "row sums: no column pass")
        else:
            lines.append(f"{head} visits every (i0, i1) of {shape}: no mask or symmetry rule"
                         + (", so its column sums take a second pass over the columns"
                            if column_pass(n, lowered) else ""))
        for x, (b, _, _) in rules.bands.items():
            lines.append(f"  nest {n.index} reads the constant {names[x]!r} as "
                         f"{predicate(b, 'i0', 'i1')} (no (N, N) read or upload)")
    return lines
