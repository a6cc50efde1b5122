"""The generated module: header, kernels (body + loop templates) and ``run``, the Python
driver that checks the arguments and runs the plan's steps in order.

The driver is generated code too, so a call does no interpretation: each step is one
line (a kernel launch, a numpy view, a BLAS matmul, or a call of the reference forward).
Names the driver uses but cannot print (constants, fallback steps, argument checks) are
bound into the module after import by ``function.bind_runtime``.
"""

from __future__ import annotations

from typing import Optional

from ...shapes import format_shape, is_fully_known
from ..codegen.lower import LoweredKernel, alias_module_calls
from ..plan.oprules import PARALLEL_STEP_FORMS, PLACEHOLDER, STEP_FORMS, VIEWS, S, index_text
from .nest_loop import nest_source
from ..nest import NEST_MATH, Nest, nest_inputs, nest_outputs
from ..plan.regions import Kernel, Plan, Step
from ..targets import get as get_target
from ..kernel_lib.threaded_matmul import CHUNKS_PER_THREAD
from ..printing.printer import FAST_NAMES, helpers_used
from ..kernel_lib.deferred import jit_disabled
from .reuse import merged_inputs, one_array, reuse_plan
from ..codegen.templates import (FASTMATH, OPTIONS, checks_trig, loop_source, printed, quoted,
                                 split_body_source)
from .native_loops import BODY_STATEMENTS, section as native_loop_section
from .workspace import WorkspacePlan
from ..scalar import STEP_FORMS as SCALAR_STEP_FORMS, region_summary

PARALLEL_THRESHOLD = 1 << 15   # below this many elements a parallel kernel runs serially



def _tuple(items) -> str:
    items = list(items)
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def _acc_dtype(out) -> str:
    return "np.float64" if out.source.dtype.kind == "f" else "np.int64"



def ir_loop_section(lk: LoweredKernel, fn: str, loop: str, math: str) -> Optional[str]:
    """The lines binding the IR form of serial loop ``fn`` (``native_loops.section``), or
    None under ``NUMBA_DISABLE_JIT`` or when its body checks sin/cos ranges."""
    if jit_disabled():
        return None
    if checks_trig(lk, math):
        why = "its body checks sin/cos ranges (vecmath's fast forms run in numba functions)"
        return f'globals().setdefault("LOOP_REASONS_", {{}})[{lk.kernel.index}] = {why!r}'
    statements, results, _ = printed(lk, math)
    if len(statements) > BODY_STATEMENTS:
        why = (f"a body of {len(statements)} statements (the IR loop inlines bodies of at most "
               f"{BODY_STATEMENTS}; LLVM's O3 on a longer one costs more than numba's loop)")
        return f'globals().setdefault("LOOP_REASONS_", {{}})[{lk.kernel.index}] = {why!r}'
    point = (f"_k{lk.kernel.index}_point", [s.name for s in lk.symbols], list(statements),
             list(results))
    return native_loop_section(fn, loop, point)


def kernel_exprs(lowered: list) -> list:
    """Every sympy expression the kernels' scalar bodies print."""
    return [e for lk in lowered for e in [*(x for _, x in lk.replacements), *lk.results]]


def helper_imports(lowered: list, extra: tuple = ()) -> list:
    """``deferred_names(globals(), "pkg.mod", ("fn_", "fn as fn_"))`` lines (``from pkg.mod
    import ..``, made when the module needs numba) for the njit helpers the kernels call
    (derived from the function classes in their expressions, see ``printer.helpers_used``;
    ``extra``: the scalar kernels' expressions)."""
    by_module: dict = {}
    for alias, spec in helpers_used(kernel_exprs(lowered) + list(extra)):
        module, _, name = spec.partition(":")
        by_module.setdefault(module, []).append(name if name == alias else
                                                f"{name} as {alias}")
    return [f"deferred_names(globals(), {m!r}, {tuple(names)!r})"
            for m, names in sorted(by_module.items())]

class ModuleWriter:
    """Writes the source of one compiled function's module from its plan."""

    def __init__(self, plan: Plan, lowered: list, target: str, key: str, math: str = "libm",
                 scalars: tuple = ()):
        self.plan, self.lowered, self.target, self.key = plan, lowered, target, key
        self.scalars = {id(s.region.node): s for s in scalars}   # scalar kernels (scalar/)
        self.math = math
        self.parallel = get_target(target).threads
        self.lines: list = []
        # parallel kernels run in chunks on the pool (threaded_matmul.run_chunks), not in
        # OpenMP regions: no worker spins for a core a matmul block waits for, and a chunk
        # no pool thread has started runs on the caller (an OpenMP barrier waits for a
        # descheduled worker: W2 parallel 7.1 ms vs 0.82 ms pooled at load 7, cpu 0.64 ms)
        self.pooled = self.parallel
        self.chunk_loops: set = set()
        self.ir_loops: set = set()      # kernels whose serial loop is also written as IR
        self.reuse = reuse_plan(plan, lambda k: not checks_trig(lowered[k.index], math))
        self.workspace = WorkspacePlan(plan, self.reuse)   # temporaries kept between calls
        self.aliases: list = []
        for lk in lowered:
            if lk.texts is not None:   # straight kernels: module functions as globals
                lk.texts, lines = alias_module_calls(lk.texts)
                self.aliases += [line for line in lines if line not in self.aliases]

    # --- the whole module ---------------------------------------------------------------
    def source(self) -> str:
        g = self.plan.graph
        ins = ", ".join(f"{quoted(p.name)} {p.dtype.name} {format_shape(p.shape)}"
                        for p in g.placeholders)
        outs = ", ".join("None" if o is None else quoted(o.name) for o in self.plan.outputs)
        head = [f"# symgrad generated · key {self.key[:16]} · target {self.target}",
                f"# inputs: {ins or '-'}   outputs: {outs or '-'}",
                "import math", "", "import numpy as np", "",
                "from symgrad.compile.kernel_lib.deferred import always_inline, "
                "deferred_names, numba",
                "deferred_names(globals(), 'symgrad.compile.kernel_lib.vecmath', "
                + repr(("trig_in_range",) + FAST_NAMES) + ")",
                *helper_imports(self.lowered, [e for s in self.scalars.values()
                                               for e in s.exprs]),
                *(["from symgrad.compile.kernel_lib.threaded_matmul import matmul as tmatmul_, "
                   "run_chunks as chunks_"] if self.parallel else []), "",
                f"FASTMATH = {_fastmath()}", "f32 = np.float32", "array = np.array",
                "ndarray = np.ndarray", f"REUSED = {self.reused()}",
                f"PARALLEL_AT_ = {PARALLEL_THRESHOLD}   # elements: a parallel loop from here",
                *sorted(self.aliases), ""]
        parts = ["\n".join(head)]
        for unit in self.plan.units:
            if isinstance(unit, Kernel):
                parts.append(self.kernel_source(self.lowered[unit.index]))
            elif isinstance(unit, Nest):
                parts.append(self.nest_source(unit))
            elif id(unit.node) in self.scalars:
                s = self.scalars[id(unit.node)]
                parts.append(f"# scalar kernel {s.region.number}: "
                             f"{region_summary(s.region)}, {s.statements} statements\n"
                             + s.text)
        if self.scalars:   # eager.compile_module runs these (their results are read)
            names = sorted(f"_s{s.region.node.index}" for s in self.scalars.values())
            parts.append(f"SCALAR_KERNELS_ = {names!r}")
        if self.has_fast_path():
            parts.append(self.scalar_entries())
        parts.append(self.driver())
        return "\n\n\n".join(parts) + "\n"

    def kernel_source(self, lk: LoweredKernel) -> str:
        k = lk.kernel
        names = ", ".join(sorted({n.op.name for n in k.nodes}))
        outs = ", ".join(quoted(o.node.name) + _output_note(o) for o in k.outputs)
        comment = (f"# kernel {k.index}: {len(k.nodes)} nodes ({names}) over shape "
                   f"{format_shape(k.shape)} -> {outs}")
        point = f"_k{k.index}_point"
        parts = [comment + "\n" + split_body_source(lk, point, self.math, llvm=True)]
        variants = [("", point, False)]
        if checks_trig(lk, self.math):   # a sin/cos argument beyond the fast reduction
            parts.append(split_body_source(lk, point + "_libm", "libm"))
            variants = [("", point, True), ("_libm", point + "_libm", False)]
        merged = merged_inputs(k, self.reuse)
        for suffix, body, checked in variants:
            loops = [loop_source(lk, f"_k{k.index}_cpu{suffix}", body, False, checked)[0]]
            if k.rank and self.parallel and not k.serial_only:
                par = loop_source(lk, f"_k{k.index}_parallel{suffix}", body, True, checked)[0]
                chunk = chunk_source(par) if self.pooled else None
                if chunk is not None:
                    self.chunk_loops.add(k.index)
                loops.append(par if chunk is None else chunk)
            parts += [one_array(loop, merged) for loop in loops]
        serial = one_array(loop_source(lk, f"_k{k.index}_cpu", point, False)[0], merged)
        section = ir_loop_section(lk, f"_k{k.index}_cpu", serial, self.math)
        if section is not None:         # the serial loop as IR too (cpu/native_loops.py)
            self.ir_loops.update([k.index] if "native_loop_(" in section else [])
            parts.append(section)
        return "\n\n\n".join(parts)

    def nest_source(self, nest: Nest) -> str:
        parts = []
        for k in nest.kernels:
            role = "pre" if k in nest.pre else "post" if k in nest.post else "outer"
            names = ", ".join(sorted({n.op.name for n in k.nodes}))
            comment = (f"# nest {nest.index}, {role} kernel {k.index}: {len(k.nodes)} nodes "
                       f"({names}) over shape {format_shape(k.shape)}")
            parts.append(comment + "\n" + split_body_source(self.lowered[k.index],
                                                              f"_k{k.index}_point",
                                                              NEST_MATH,
                                                              trig=False, llvm=True))
        parts.append(nest_source(nest, self.lowered, f"_n{nest.index}_cpu", False))
        if self.nest_parallel(nest):
            parts.append(nest_source(nest, self.lowered, f"_n{nest.index}_parallel", True))
        return "\n\n\n".join(parts)

    def nest_parallel(self, nest: Nest) -> bool:
        total = nest.inner
        for d in nest.outer.shape:
            total *= d
        return self.parallel and total >= PARALLEL_THRESHOLD

    def nest_call(self, nest: Nest) -> None:
        self.emit(f"# nest {nest.index}: kernels {', '.join(str(k.index) for k in nest.kernels)}")
        for k in nest.kernels:
            self.emit(f"sh{k.index} = {_tuple(map(str, k.shape))}")
        parallel = self.nest_parallel(nest)
        outs = nest_outputs(nest, parallel)
        if parallel:
            self.emit(f"nc = min(NTHREADS, {nest.outer.shape[0]})")
        names = []
        for o in outs:
            out = o.kernel.outputs[o.j]
            name = f"o{o.kernel.index}_{o.j}"
            names.append(name)
            if out.is_reduction:
                shape = _tuple("1" if a in out.axes else str(d)
                               for a, d in enumerate(o.kernel.shape))
                dtype = _acc_dtype(out)
            else:
                shape, dtype = _tuple(map(str, o.kernel.shape)), f"np.{out.node.dtype.name}"
            if o.chunked:
                shape = f"(nc,) + {shape}"
            self.emit(f"{name} = np.{'zeros' if o.zeroed else 'empty'}({shape}, {dtype})")
        args = [str(d) for d in nest.outer.shape]
        args += [self.value_of(n) for n in nest_inputs(nest)]
        fn = f"_n{nest.index}_{'parallel' if parallel else 'cpu'}"
        self.emit(f"{fn}({', '.join((['nc'] if parallel else []) + args + names)})")
        for o, name in zip(outs, names):
            if o.chunked:
                self.emit(f"{name} = {name}.sum(0)")
        for k in [nest.outer] + nest.post:
            self.finish_outputs(k, {j for j, _ in nest.written(k)})

    def reused(self) -> dict:
        """{output node index: index of the dead input whose buffer it is stored into}
        (``explain`` reports these)."""
        kernels = {k.index: k for k in self.plan.kernels}
        return {kernels[i].outputs[j].node.index: node.index
                for (i, j), node in sorted(self.reuse.items())}

    # --- the driver ---------------------------------------------------------------------
    def emit(self, line: str, depth: int = 1) -> None:
        self.lines.append("    " * depth + line)

    def driver(self) -> str:
        g = self.plan.graph
        n = len(g.placeholders)
        unpack = f"{', '.join(f'v{p.index}' for p in g.placeholders)}{',' if n == 1 else ''} = args"
        self.lines = ["def run(*args, **kwargs):"]
        fast = []
        if self.has_fast_path():   # positional-only parameters: no tuple to check, unpack
            names = [f"v{p.index}" for p in g.placeholders]
            self.lines = fast = [f"def run({', '.join(v + '=MISSING_' for v in names)}, /, "
                                 "*rest, **kwargs):"]
            self.fast_path()   # depth 1 and 2 here
            self.emit(f"args = ({', '.join(names)},) + rest if {names[-1]} is not MISSING_ "
                      f"else tuple(v for v in ({', '.join(names)},) if v is not MISSING_)")
            self.lines = ["def run(*args, **kwargs):"]
        self.emit("if kwargs:")
        self.emit("args = bind_(args, kwargs)", 2)
        self.emit(f"if len(args) != {n}:")
        self.emit("arity_(args)", 2)
        if n:
            self.emit(unpack)
        self.check_arguments()
        self.placeholder_guards()
        early = [u for u in self.plan.units if isinstance(u, Kernel) and
                 not is_fully_known(u.shape) and
                 all(i.op is PLACEHOLDER or i.is_const for i in u.inputs)]
        for k in early:
            self.emit(self.shape_line(k))
        for unit in self.plan.units:
            if isinstance(unit, Kernel):
                self.kernel_call(unit, unit not in early)
            elif isinstance(unit, Nest):
                self.nest_call(unit)
            else:
                self.step(unit)
        self.emit_return()
        body = ["    " + line for line in self.lines[1:]]
        kept = self.workspace is not None and self.workspace.used()   # workspace.py
        return "\n".join([(fast or self.lines)[0]] + fast[1:] + ["    ws_ = take_()"] * kept +
                         ["    try:"] + body + [
            "    except Fallback_:",
            "        return reference_(args)",
            "    except NumbaError_ as exc:",
            "        raise compile_error_(exc) from None"] + ["    finally:",
                                                          "        give_(ws_)"] * kept)

    def check_arguments(self) -> None:
        """The lines checking each argument (a target's writer may write its own)."""
        for k, p in enumerate(self.plan.graph.placeholders):
            v = f"v{p.index}"
            if is_fully_known(p.shape):
                self.emit(f"if type({v}) is not ndarray or {v}.dtype is not D{k} or "
                          f"{v}.shape != {_tuple(map(str, p.shape))}:")
                self.emit(f"{v} = check_({k}, {v})", 2)
            else:
                self.emit(f"{v} = check_({k}, {v})")

    def emit_return(self) -> None:
        self.emit(f"return {self.returned()}")

    def placeholder_guards(self) -> None:
        """Unknown lengths that the plan took as equal must be equal in this call."""
        first: dict = {}
        for p in self.plan.graph.placeholders:
            for j, d in enumerate(p.dims):
                if not isinstance(d, str):
                    continue
                here = f"v{p.index}.shape[{j}]"
                if d in first:
                    self.emit(f"if {here} != {first[d]}:")
                    self.emit("fallback_()", 2)
                else:
                    first[d] = here

    def returned(self) -> str:
        seen: set = set()
        fresh = self.fresh_values()
        items = []
        for o in self.plan.outputs:
            if o is None:
                items.append("None")
                continue
            v = self.value_of(o)
            if o.index in fresh and o.index not in seen:
                items.append(v)
            else:
                items.append(f"np.array({v}, copy=True)")
            seen.add(o.index)
        if self.single:
            return items[0]
        return "[" + ", ".join(items) + "]"

    single = False
    workspace = None   # WorkspacePlan (set by __init__; the cuda writer keeps none)

    def fresh_values(self) -> set:
        fresh = set()
        for unit in self.plan.units:
            if isinstance(unit, Kernel):
                fresh |= {o.node.index for o in unit.outputs}
            elif isinstance(unit, Nest):
                fresh |= {o.node.index for k in unit.kernels for _, o in unit.written(k)}
            elif unit.node.op not in VIEWS:
                fresh.add(unit.node.index)
        return fresh

    def shape_line(self, k: Kernel) -> str:
        shapes = ", ".join(f"{self.value_of(i)}.shape" for i in k.inputs)
        return f"sh{k.index} = bshape_({k.index}, {shapes})"

    def value_of(self, node) -> str:
        return f"C{node.index}" if node.is_const else f"v{node.index}"

    def kernel_call(self, k: Kernel, need_shape: bool) -> None:
        i = k.index
        self.emit(f"# kernel {i}")
        if is_fully_known(k.shape):
            self.emit(f"sh{i} = {_tuple(map(str, k.shape))}")
        elif need_shape:
            self.emit(self.shape_line(k))
        sh = f"sh{i}"
        lk = self.lowered[i]
        _, _, ins, outs_serial = loop_source(lk, "x", "p", False)
        args = []
        merged = merged_inputs(k, self.reuse)   # read through their output's parameter
        for j, (node, acc) in enumerate(zip(k.inputs, ins)):
            if j in merged:
                continue
            v = self.value_of(node if acc.base is None else acc.base)
            if acc.broadcast:
                b = f"b{i}_{j}"
                self.emit(f"{b} = {v} if {v}.shape == {sh} else broadcast_({v}, {sh}, {i}, {j})")
                v = b
            args.append(v)
        dims = [f"{sh}[{j}]" for j in range(k.rank)]
        size = " * ".join(dims) if dims else "1"
        if not self.parallel or not k.rank or k.serial_only:
            self.launch(k, outs_serial, dims, args, False, 1)
        else:
            _, _, _, outs_par = loop_source(lk, "x", "p", True)
            static = is_fully_known(k.shape)
            if static:
                total = 1
                for d in k.shape:
                    total *= d
                self.launch(k, outs_par if total >= PARALLEL_THRESHOLD else outs_serial, dims,
                            args, total >= PARALLEL_THRESHOLD, 1)
            else:
                self.emit(f"if {size} >= PARALLEL_AT_:")
                self.launch(k, outs_par, dims, args, True, 2)
                self.emit("else:")
                self.launch(k, outs_serial, dims, args, False, 2)
        self.finish_outputs(k)

    def launch(self, k: Kernel, outs: list, dims: list, args: list, parallel: bool,
               depth: int) -> None:
        i, sh = k.index, f"sh{k.index}"
        if parallel:   # pooled: several chunks per thread, taken in turn (run_chunks)
            per = CHUNKS_PER_THREAD if i in self.chunk_loops else 1
            self.emit(f"nc = min({f'{per} * ' if per > 1 else ''}NTHREADS, {sh}[0])", depth)
        allocations, names = self.allocations(k, outs), []
        for line in allocations:
            self.emit(line, depth)
        names = [f"o{i}_{j}" for j, acc in enumerate(outs) if acc.is_param]
        fn = f"_k{i}_parallel" if parallel else f"_k{i}_cpu"
        if not parallel and i in self.ir_loops:
            fn += "_native"
        call = f"({', '.join((['nc'] if parallel else []) + dims + args + names)})"
        if parallel and i in self.chunk_loops:   # the pool runs _k<i>_chunk(c, nc, ...)
            fn, call = "chunks_", f"(_k{i}_chunk{{}}, {call[1:]}"
        if checks_trig(self.lowered[i], self.math):
            first, again = (fn, call.format("")), (fn, call.format("_libm"))
            if fn != "chunks_":
                first, again = (fn, call), (fn + "_libm", call)
            self.emit(f"if {''.join(first)}:   # a sin/cos argument >= 2**30: again with libm",
                      depth)
            for line in allocations:
                self.emit(line, depth + 1)
            self.emit("".join(again), depth + 1)
        else:
            self.emit(f"{fn}{call.format('')}", depth)
        for j, acc in enumerate(outs):
            if acc.chunked:
                self.emit(f"o{i}_{j} = o{i}_{j}.sum(0)", depth)

    def allocations(self, k: Kernel, outs: list) -> list:
        """The lines allocating a kernel launch's output buffers."""
        i, sh = k.index, f"sh{k.index}"
        lines = []
        for j, acc in enumerate(outs):
            o = acc.out
            name = f"o{i}_{j}"
            if acc.mode in ("scatter", "gather"):   # a gather writes every element
                if acc.is_param:
                    shape = _tuple(map(str, o.node.shape)) if is_fully_known(o.node.shape) \
                        else f"{self.value_of(o.like)}.shape"
                    alloc = "zeros" if acc.mode == "scatter" else "empty"
                    lines.append(f"{name} = " + self.alloc(k, j, alloc, shape, o.node))
                continue
            if acc.mode == "store":
                dead = self.reuse.get((i, j))
                lines.append(f"{name} = {self.value_of(dead)}  # the dead buffer of "
                             f"{quoted(dead.name)}" if dead is not None else
                             f"{name} = " + self.alloc(k, j, "empty", sh, o.node))
                continue
            keep = _tuple(("1" if a in o.axes else f"{sh}[{a}]") for a in range(k.rank))
            if acc.chunked:
                keep = f"(nc,) + {keep}"
            alloc = "np.empty" if acc.mode == "suffix" else "np.zeros"
            lines.append(f"{name} = {alloc}({keep}, {_acc_dtype(o)})")
        return lines

    def alloc(self, k: Kernel, j: int, fill: str, shape: str, node) -> str:
        """``np.empty(shape, dtype)`` (or ``zeros``), from the call's workspace when the
        buffer is a large temporary never returned (``workspace.py``)."""
        dtype = f"np.{node.dtype.name}"
        size = None
        if is_fully_known(node.shape):
            size = node.dtype.itemsize
            for d in node.shape:
                size *= d
        line = None if self.workspace is None else \
            self.workspace.alloc((k.index, j), node, fill, shape, dtype, size)
        return line or f"np.{fill}({shape}, {dtype})"

    def finish_outputs(self, k: Kernel, only=None) -> None:
        i, sh = k.index, f"sh{k.index}"
        for j, o in enumerate(k.outputs):
            if only is not None and j not in only:
                continue
            name = f"o{i}_{j}"
            v = f"v{o.node.index}"
            if not o.is_reduction or o.is_scatter:
                if not o.is_scatter or all(p.node is not o.node for p in k.outputs[:j]):
                    self.emit(f"{v} = {name}")
                continue
            expr = name
            if o.mean:
                count = " * ".join(f"{sh}[{a}]" for a in o.axes) or "1"
                expr = f"({expr} / ({count}))"
            if o.node.dtype.kind != ("f" if o.source.dtype.kind == "f" else "i") or \
                    o.node.dtype.itemsize != 8:
                expr = f"({expr}).astype(np.{o.node.dtype.name})"
            shape = self.reduced_shape(k, o)
            self.emit(f"{v} = {expr}.reshape({shape})")

    def reduced_shape(self, k: Kernel, o) -> str:
        sh = f"sh{k.index}"
        node = o.node
        if node.op is S.unbroadcast:
            lead = k.rank - len(node.shape)
            return _tuple(("1" if a in o.axes else f"{sh}[{a}]") for a in range(lead, k.rank))
        if node.attrs.get("keepdims"):
            return _tuple(("1" if a in o.axes else f"{sh}[{a}]") for a in range(k.rank))
        return _tuple(f"{sh}[{a}]" for a in range(k.rank) if a not in o.axes)

    def step(self, step: Step) -> None:
        node = step.node
        v = f"v{node.index}"
        ins = [self.value_of(i) for i in node.inputs]
        form = (PARALLEL_STEP_FORMS if self.parallel else STEP_FORMS).get(node.op) or \
            SCALAR_STEP_FORMS.get(node.op)
        line = None if self.workspace is None else \
            self.workspace.step(step, ins, self.parallel)   # into a kept buffer
        if line is None:
            line = form(node, ins) if form is not None else None
        scalar = self.scalars.get(id(node))
        if scalar is not None and scalar.native:   # the whole kernel as IR (scalar/source.py)
            line = f"_s{node.index}_native({', '.join(ins)})"
        if line is None:
            line = f"S{node.index}({', '.join(ins)})"
        self.emit(f"{v} = {line}  # {node.op.name} {quoted(node.name)}")

    def has_fast_path(self) -> bool:
        """All-scalar float64 functions whose kernels read placeholders or earlier kernels
        only: the driver calls their scalar bodies on Python floats directly."""
        g = self.plan.graph
        if not g.placeholders or any(p.shape != () or p.dtype.name != "float64"
                                     for p in g.placeholders):
            return False
        if any(not isinstance(u, Kernel) or u.rank for u in self.plan.units):
            return False
        known = set()
        for k in self.plan.kernels:
            if any(i.op is not PLACEHOLDER and i.index not in known for i in k.inputs):
                return False
            known |= {s.index for s in self.lowered[k.index].sources}
            known |= {o.node.index for o in k.outputs}
        return True

    def scalar_entries(self) -> str:
        """``_k<i>_scalar``: the fast path's scalar bodies as cached functions (the
        ``_point`` bodies are inlined into loops, never cached), and ``ENTRIES_``, which
        ``eager.compile_module`` rebinds to their compiled entry points."""
        parts, entries = [], {}
        for k in self.plan.kernels:
            lk = self.lowered[k.index]
            point = f"_k{k.index}_point" + ("_libm" if checks_trig(lk, self.math) else "")
            args = ", ".join(s.name for s in lk.symbols)
            parts.append(f"@numba.njit({OPTIONS})\ndef _k{k.index}_scalar({args}):\n"
                         f"    return {point}({args})")
            entries[f"P{k.index}_"] = f"_k{k.index}_scalar"
        aliases = "\n".join(f"{a} = {n}" for a, n in entries.items())
        return "\n\n\n".join(parts) + f"\n\n\n{aliases}\nENTRIES_ = {entries!r}\n" \
            "MISSING_ = object()   # a positional argument of run not given"

    def fast_path(self) -> None:
        """The scalar fast path of ``has_fast_path`` functions (depth 1: the driver's
        positional-only parameters are the placeholders' values): Python floats and numpy
        float64 scalars go straight to the scalar bodies; 0-d float64 arrays after
        ``scalars_`` (``runtime/compiled.py``) reads their values (the one check that
        costs a call, on the path that would otherwise check each argument)."""
        g = self.plan.graph
        names = [f"v{p.index}" for p in g.placeholders]
        cond = " and ".join(f"(type({v}) is float or type({v}) is F64_)" for v in names)
        self.emit(f"if {cond} and not rest and not kwargs:")
        self.fast_body()
        self.emit(f"s_ = scalars_({', '.join(names)}) if not rest and not kwargs else None")
        self.emit("if s_ is not None:")
        self.emit(f"{', '.join(names)}{',' if len(names) == 1 else ''} = s_", 2)
        self.fast_body()

    def fast_body(self) -> None:
        """The fast path's calls of the scalar bodies and its return (depth 2)."""
        scalars: dict = {}
        for k in self.plan.kernels:
            lk = self.lowered[k.index]
            args = [f"v{i.index}" if i.op is PLACEHOLDER else f"e{i.index}"
                    for i in k.inputs]
            names = [f"e{s.index}" for s in lk.sources]
            self.emit(f"{', '.join(names)}{',' if len(names) == 1 else ''} = "
                      f"P{k.index}_({', '.join(args)})", 2)
            for s in lk.sources:
                scalars[s.index] = s
            for o in k.outputs:
                if o.mean or o.node.index != o.source.index:
                    self.emit(f"e{o.node.index} = e{o.source.index}", 2)
                scalars[o.node.index] = o.node
        items = []
        for o in self.plan.outputs:
            if o is None:
                items.append("None")
            elif o.index in scalars:
                items.append(f"array(e{o.index})" if o.dtype.name == "float64" else
                             f"array(e{o.index}, np.{o.dtype.name})")
            elif o.op is PLACEHOLDER:
                items.append(f"np.array(v{o.index}, np.{o.dtype.name})")
            else:
                items.append(f"np.array(C{o.index}, copy=True)")
        self.emit("return " + (items[0] if self.single else "[" + ", ".join(items) + "]"), 2)


PRANGE = "for c in numba.prange(nc):"


def chunk_source(parallel_source: str) -> Optional[str]:
    """The ``_k<i>_chunk`` form of a ``_k<i>_parallel`` loop: chunk ``c`` of ``nc`` only,
    compiled ``nogil=True`` for the thread pool (``threaded_matmul.run_chunks``); None when
    the loop is not one ``prange`` over chunks (gathers)."""
    lines = parallel_source.split("\n")
    at = [j for j, line in enumerate(lines) if line.strip() == PRANGE]
    if len(at) != 1 or not lines[0].endswith(", parallel=True)") or \
            not lines[1].startswith("def _k") or "_parallel" not in lines[1]:
        return None
    lines[0] = lines[0][:-len(", parallel=True)")] + ", nogil=True)"
    name, _, params = lines[1][len("def "):].partition("(")
    lines[1] = f"def {name.replace('_parallel', '_chunk', 1)}(c, {params}"
    lines[at[0]] = lines[at[0]].replace(PRANGE, "if c < nc:")
    return "\n".join(lines)


def _output_note(o) -> str:
    if o.is_scatter:
        return f" (+= at [{index_text(o.key)}])"
    return f" (sum over {o.axes})" if o.is_reduction else ""


def _fastmath() -> str:
    return FASTMATH
