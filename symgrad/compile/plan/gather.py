"""Stencil adjoints as gathers: a kernel whose scatters (``scatter.py``) all add into one
buffer through unit-step slices runs as a loop over the *buffer*, not over the region.

The gradient of ``sum(f(x[1:], x[:-1]))`` is ``dx = G1 + G2`` with ``G1`` the slice
gradient at ``[1:]`` and ``G2`` at ``[:-1]``. As a scatter the region loop adds into a
zeroed ``dx`` from two places, so chunks of a ``prange`` could race. As a gather, each
``dx[i]`` is computed from the region iterations that reach it: ``j = i - 1`` through
``[1:]`` and ``j = i`` through ``[:-1]``, each evaluated by the kernel's scalar body
where ``0 <= j < n``. Every element is written once (no zero-fill, no race: it runs under
``prange``), and the first scatter's iteration also does the kernel's stores and sums, so
each region iteration's values are produced exactly once. The range of ``i`` where every
scatter is valid is looped without guards (it vectorises); the edges keep the guards.

Other scatter kernels (integer or strided keys, two buffers) keep the scatter template.

>>> import symgrad as sg
>>> from symgrad.compile.plan.fold import fold_graph
>>> from symgrad.compile.plan.regions import build_plan
>>> x = sg.placeholder("x", shape=(6,))
>>> f = sg.reduce_sum(100 * (x[1:] - x[:-1]**2)**2 + (1 - x[:-1])**2)
>>> k = build_plan(fold_graph([f] + sg.gradients(f, x), [x])).kernels[0]
>>> sorted({(a.start, a.step) for g in gather_axes(k, "r") for a in g})
[('0', 1), ('1', 1)]
>>> k.serial_only
False
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from .access import InputAccess
from .masks import mask_band, read_text
from .oprules import S
from .scatter import _start, basic_key


@dataclass
class GatherAxis:
    """How one scatter maps iteration ``j`` of one axis to buffer index ``i``:
    ``i = start + step * j`` with ``step`` +1 or -1 (``start``: text)."""

    start: str
    step: int

    def j_of(self, i: str) -> str:
        """The iteration index that reaches buffer index ``i``."""
        if self.step == 1:
            return i if self.start == "0" else f"{i} - ({self.start})"
        return f"({self.start}) - {i}"

    def valid_range(self, n: str) -> tuple:
        """(lo, hi) texts: buffer indices ``lo <= i < hi`` whose ``j`` is in ``[0, n)``."""
        if self.step == 1:
            return self.start, f"({self.start}) + {n}"
        return f"({self.start}) - {n} + 1", f"({self.start}) + 1"


def _axes(out, buffer: str) -> Optional[list]:
    like = out.like
    key = basic_key(out.key, len(like.shape))
    if key is None or any(not isinstance(k, slice) for k in key):
        return None
    axes = []
    for a, k in enumerate(key):
        step = 1 if k.step is None else k.step
        if step not in (1, -1):
            return None
        d = like.dims[a]
        start = str(k.indices(d)[0]) if isinstance(d, int) else \
            _start(k, f"{buffer}.shape[{a}]")
        axes.append(GatherAxis(start, step))
    return axes


def gather_axes(kernel, buffer: str) -> Optional[list]:
    """Per scatter output of ``kernel`` (in order), its ``GatherAxis`` per axis; None when
    the kernel has no scatter or cannot gather (two buffers, an integer, None or strided
    key, a region of another rank than the buffer)."""
    scatters = [o for o in kernel.outputs if o.is_scatter]
    if not scatters or len({id(o.node) for o in scatters}) != 1:
        return None
    out = []
    for o in scatters:
        axes = _axes(o, buffer)
        if axes is None or len(axes) != kernel.rank or not kernel.rank:
            return None
        out.append(axes)
    return out


def _items(inner: str) -> list:
    """The top-level comma-separated items of a subscript's text."""
    items, depth, cur = [], 0, ""
    for ch in inner:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            items.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return items + [cur.strip()]


def unsigned(index: str) -> str:
    """A subscript ``[a, b]`` as ``[np.uint64(a), np.uint64(b)]``: every index the gather
    loop reads or writes is known to be in range, and numba skips the negative-index
    wraparound for unsigned integers (with it, LLVM does not vectorise ``u[i - 1, j]``).

    >>> unsigned("[(1) + j0, max(n, 0)]")
    '[np.uint64((1) + j0), np.uint64(max(n, 0))]'
    """
    if index in ("[()]", "()"):
        return index
    items = [i if i.isdigit() else f"np.uint64({i})" for i in _items(index[1:-1])]
    return "[" + ", ".join(items) + "]"


def gather_accesses(outs: list) -> list:
    """The scatter template's accesses as the gather loop writes them: scatters become
    'gather' (the buffer is written once per element, allocated empty) and partial sums
    over trailing axes become 'array' sums (the loop nest is the buffer's, not theirs)."""
    for acc in outs:
        if acc.mode == "scatter":
            acc.mode = "gather"
        elif acc.mode == "suffix" and acc.suffix > 0:
            acc.mode = "array"
    return outs


def imax(a: str, b: str) -> str:
    """``max(a, b)`` of two integer expressions, as a comparison: numba compiles its
    ``max``/``min`` overloads once per signature and process (about 0.03 s each, four in a
    2-D gather loop), a comparison costs nothing.

    >>> imax("lo0", "(1) + n0"), imin("t0", "lo0")
    ('((1) + n0 if (1) + n0 > lo0 else lo0)', '(lo0 if lo0 < t0 else t0)')
    """
    return f"({b} if {b} > {a} else {a})"


def imin(a: str, b: str) -> str:
    """``min(a, b)`` of two integer expressions, as a comparison (see ``imax``)."""
    return f"({b} if {b} < {a} else {a})"


class _Writer:
    """Emits the gather loop of one kernel (see ``gather_loop_source``)."""

    def __init__(self, lowered, point, parallel, checked, ins, outs, names):
        self.lk, self.point, self.parallel, self.checked = lowered, point, parallel, checked
        self.ins, self.outs, self.names = ins, outs, names
        self.rank = lowered.kernel.rank
        self.buffer = next(n for n, o in zip(names, outs) if o.mode == "gather")
        self.axes = gather_axes(lowered.kernel, self.buffer)
        self.index = {id(s): j for j, s in enumerate(lowered.sources)}
        self.lines: list = []

    def emit(self, text: str, depth: int) -> None:
        self.lines.append("    " * depth + text)

    def call(self, js: list, depth: int) -> None:
        values = [f"e{j}" for j in range(len(self.lk.sources))]
        target = ", ".join(values + (["ok"] if self.checked else [])) + \
            ("," if len(values) == 1 and not self.checked else "")
        unsigned_of: dict = {}   # each index converts once per call (numba types each call)
        reads = []
        for k, a in enumerate(self.ins):
            index = re.sub(r"\bi(\d+)\b", lambda m: js[int(m.group(1))], a.index)
            band = mask_band(self.lk.kernel.inputs[k], a.index)
            if band is not None:   # a constant eye/triu/tril: an index predicate, no read
                reads.append(read_text(band, js[0], js[1]))
                continue
            if index in ("[()]", "()"):
                reads.append(f"x{k}{index}")
                continue
            items = [i if i.isdigit() else unsigned_of.setdefault(i, f"u{len(unsigned_of)}")
                     for i in _items(index[1:-1])]
            reads.append(f"x{k}[{', '.join(items)}]")
        for item, name in unsigned_of.items():
            self.emit(f"{name} = np.uint64({item})", depth)
        self.emit(f"{target} = {self.point}({', '.join(reads)})", depth)
        if self.checked:
            self.emit("nbad += 0 if ok else 1", depth)

    def primary_outputs(self, js: list, depth: int) -> None:
        full = unsigned("[" + ", ".join(js) + "]")[1:-1]
        for k, o in enumerate(self.outs):
            e = f"e{self.index[id(o.out.source)]}"
            if o.mode == "store":
                self.emit(f"{self.names[k]}[{full}] = {e}", depth)
            elif o.mode == "suffix":
                self.emit(f"s{k} += {e}", depth)
            elif o.mode == "array":
                idx = ["0" if a in o.out.axes else js[a] for a in range(self.rank)]
                idx = (["c"] if o.chunked else []) + idx
                self.emit(f"{self.names[k]}{unsigned('[' + ', '.join(idx) + ']')} += {e}",
                          depth)

    def body(self, guarded: bool, depth: int) -> None:
        self.emit("acc = 0.0", depth)
        groups: dict = {}   # scatters through the same map share one call of the body
        gathers = [o for o in self.outs if o.mode == "gather"]
        for axes, o in zip(self.axes, gathers):
            groups.setdefault(tuple((ax.start, ax.step) for ax in axes), (axes, []))[1].append(o)
        for seen, (axes, group) in enumerate(groups.values()):
            js = [f"j{a}" for a in range(self.rank)]
            for a, ax in enumerate(axes):
                self.emit(f"j{a} = {ax.j_of(f'i{a}')}", depth)
            d = depth
            if guarded:
                cond = " and ".join(f"0 <= j{a} < n{a}" for a in range(self.rank))
                self.emit(f"if {cond}:", depth)
                d += 1
            self.call(js, d)
            if seen == 0:
                self.primary_outputs(js, d)
            total = " + ".join(f"e{self.index[id(o.out.source)]}" for o in group)
            self.emit(f"acc += {total}", d)
        idx = unsigned("[" + ", ".join(f"i{a}" for a in range(self.rank)) + "]")
        self.emit(f"{self.buffer}{idx} = acc", depth)

    def bounds(self) -> None:
        for a in range(self.rank):
            self.emit(f"m{a} = {self.buffer}.shape[{a}]", 1)
            los, his = zip(*(ax[a].valid_range(f"n{a}") for ax in self.axes))
            los, his = list(dict.fromkeys(los)), list(dict.fromkeys(his))   # each once
            self.emit(f"lo{a} = {los[0]}", 1)
            for lo in los[1:]:
                self.emit(f"lo{a} = {imax(f'lo{a}', lo)}", 1)
            self.emit(f"hi{a} = {his[0]}", 1)
            for hi in his[1:]:
                self.emit(f"hi{a} = {imin(f'hi{a}', hi)}", 1)
            self.emit(f"hi{a} = {imax(f'lo{a}', f'hi{a}')}", 1)

    def innermost(self, depth: int, b: str, e: str) -> None:
        """The last axis: one guarded copy of the body for both edges (a loop over the two
        edge segments; the whole row where an outer axis is outside its interior), one
        unguarded copy for the interior (it vectorises). Each copy of the body is typed,
        lowered and optimised by numba: two copies instead of four halve the compile."""
        a = self.rank - 1
        inside = f"in{a - 1}" if a else ""
        p, q = imin(e, f"lo{a}"), imax(b, f"hi{a}")
        if inside:
            p, q = f"{p} if {inside} else {e}", f"{q} if {inside} else {e}"
        self.emit(f"p{a} = {p}", depth)
        self.emit(f"q{a} = {q}", depth)
        self.emit(f"for edge{a} in range(2):   # the edges: [{b}, p{a}) and [q{a}, {e})", depth)
        self.emit(f"for i{a} in range({b} if edge{a} == 0 else q{a}, "
                  f"p{a} if edge{a} == 0 else {e}):", depth + 1)
        self.body(True, depth + 2)
        if inside:
            self.emit(f"if {inside}:", depth)
            depth += 1
        self.emit(f"for i{a} in range({imax(b, f'lo{a}')}, {imin(e, f'hi{a}')}):", depth)
        self.body(False, depth + 1)

    def loops(self) -> None:
        depth = 1
        if self.parallel:
            self.emit("for c in numba.prange(nc):", depth)
            depth += 1
            self.emit("b0 = c * m0 // nc", depth)
            self.emit("t0 = (c + 1) * m0 // nc", depth)
        else:
            self.emit("b0 = 0", depth)
            self.emit("t0 = m0", depth)
        for k, o in enumerate(self.outs):
            if o.mode == "suffix":
                zero = "0.0" if o.out.source.dtype.kind == "f" else "0"
                self.emit(f"s{k} = {zero}", depth)
        inner = depth
        for a in range(self.rank - 1):
            b, e = ("b0", "t0") if a == 0 else ("0", f"m{a}")
            self.emit(f"for i{a} in range({b}, {e}):", inner)
            inner += 1
            prev = f"in{a - 1} and " if a else ""
            self.emit(f"in{a} = {prev}lo{a} <= i{a} < hi{a}", inner)
        last = self.rank - 1
        self.innermost(inner, *(("b0", "t0") if last == 0 else ("0", f"m{last}")))
        for k, o in enumerate(self.outs):
            if o.mode == "suffix":
                idx = (["c"] if o.chunked else []) + ["0"] * self.rank
                self.emit(f"{self.names[k]}[{', '.join(idx)}] = s{k}", depth)


def gather_loop_source(lowered, name: str, point: str, parallel: bool, ins: list,
                       outs: list, params: list, decorator: str, checked: bool) -> str:
    """The gather loop of a kernel that ``gather_axes`` accepts (``ins``, ``outs``,
    ``params``, ``decorator``: as the scatter template computed them; ``outs`` already
    passed through ``gather_accesses``)."""
    names = [f"r{k}" if o.is_param else f"r{o.shares}" for k, o in enumerate(outs)]
    w = _Writer(lowered, point, parallel, checked, ins, outs, names)
    w.lines = [decorator, f"def {name}({', '.join(params)}):"]
    if checked:
        w.emit("nbad = 0", 1)
    w.bounds()
    w.loops()
    if checked:
        w.emit("return nbad", 1)
    return "\n".join(w.lines)


def base_reads(kernel, ins: list) -> list:
    """``ins`` with each input that is a unit-step slice ``b[s0:e0, s1:e1, ..]`` read
    directly from ``b`` at ``s + j`` (a 2-D slice view is not C-contiguous; numba reads
    it through strides and LLVM does not vectorise the loop)."""
    out = list(ins)
    for k, node in enumerate(kernel.inputs):
        if node.op is not S.getitem or ins[k].broadcast or node.dims != kernel.dims:
            continue
        base = node.inputs[0]
        key = basic_key(node.attrs["key"], len(base.shape))
        if key is None or len(key) != len(base.shape) or \
                any(not isinstance(s, slice) or (s.step or 1) not in (1, -1) for s in key):
            continue
        idx = []
        for a, s in enumerate(key):
            d = base.dims[a]
            start = str(s.indices(d)[0]) if isinstance(d, int) else \
                _start(s, f"x{k}.shape[{a}]")
            step = s.step or 1
            idx.append(f"i{a}" if start == "0" and step == 1 else
                       f"({start}) {'+' if step == 1 else '-'} i{a}")
        out[k] = InputAccess("[" + ", ".join(idx) + "]", False, base)
    return out
