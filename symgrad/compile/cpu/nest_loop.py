"""The CPU loop writer of a nest: ``nest_source`` prints a nest as one numba function
(serial, or parallel chunks of rows), with the rules of ``nest/rules.py``."""

from __future__ import annotations

from ..codegen.templates import OPTIONS, body_source
from ..nest.ir import NEST_MATH, Nest, NestOutput, nest_inputs, nest_outputs, point_reads
from ..plan.masks import complement, literal, read_text, row_range
from ..plan.regions import Kernel
from ..nest.rules import gate_source, nest_factors, nest_gate, nest_masks, nest_symmetry, specialised


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
                local[x] = literal(v)
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


