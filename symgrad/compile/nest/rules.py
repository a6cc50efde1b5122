"""The pair rules of a nest: constant-mask predicates, zero gates, factors and the
symmetry proofs that let a pair loop visit each unordered pair once (read by both the
CPU loop writer, ``cpu/nest_loop.py``, and the device tiles, ``cuda/tiles.py``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

import numpy as np
import sympy as sp

from .ir import NEST_MATH, Nest, nest_outputs
from ..plan.masks import is_zero, mask_band, outer_factors, row_range, vanishes
from ..codegen.lower import _in_dependency_order as in_dependency_order
from ..printing.powers import power_chains
from ..printing.printer import number
from ..codegen.templates import body_source, input_access
from ..plan.oprules import S
from ..plan.regions import Kernel

_ROW_VIEW_1 = (slice(None), None)    # x[:, None]
_COL_VIEW_1 = (None, slice(None))    # x[None, :]


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


