"""Loop templates for CPU kernels, and the scalar body (``_k<i>_point``) they share.

One scalar body per kernel, printed from the lowered sympy; two loop templates:

* ``cpu``: a plain ``numba.njit`` loop nest over the iteration shape;
* ``parallel``: ``numba.njit(parallel=True)``, ``prange`` over ``nc`` chunks of axis 0.
  Sums that include axis 0 accumulate into one slot per chunk (``r[c, ...]``), which the
  driver adds up afterwards, so no two threads write the same element.

Sums over a suffix of the axes use a local scalar accumulator; other sums accumulate
into their (keepdims-shaped) output array. Float sums accumulate in float64. Scatters
(``scatter.py``) add into a zeroed buffer at the mapped index; scatters that share a
buffer share its parameter (the first one's ``r<k>``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .llvm.body import function_ir
from .lower import LoweredKernel
from ..plan.masks import loop_masks, row_range
from ..printing.printer import NumbaPrinter, helpers_used
from ..plan.regions import KernelOutput
from ..plan.access import InputAccess
from ..plan.gather import base_reads, gather_accesses, gather_axes, gather_loop_source
from ..plan.scatter import scatter_index

# No 'arcp': with it LLVM turns float32 ``1/sqrt(x)`` into an rsqrt estimate (NaN at 0 and
# inf, wrong for subnormals) and ``a/b`` into ``a*(1/b)`` (inf where 1/b overflows);
# power chains (compile/printing/powers.py) already form each reciprocal once, explicitly.
FASTMATH = "{'contract', 'afn', 'reassoc', 'nsz'}"
OPTIONS = "cache=NUMBA_CACHE, error_model='numpy', fastmath=FASTMATH"
# The scalar body is inlined into its loops by LLVM (support.always_inline): the loop is then
# one function that LLVM can vectorise. It is not cached on disk (a cached body is object
# code, which LLVM cannot inline); its loops are.
POINT_DECORATOR = ("@always_inline\n"
                   "@numba.njit(cache=False, error_model='numpy', fastmath=FASTMATH)")
# A body of more statements than this is not forced inline (plain njit, cached with its
# loop's module): LLVM gains nothing from inlining a body that long (it is bound by the
# values it computes, and prints libm past FAST_MATH_SITES), while inlining it costs a
# second optimisation of the whole body. Wide graph of 300 sin terms + gradient: first
# call 7.3 s forced inline vs 5.5 s not (CPU seconds).
INLINE_STATEMENTS = 200
LONG_POINT_DECORATOR = "@numba.njit(cache=NUMBA_CACHE, error_model='numpy', fastmath=FASTMATH)"
# A body longer than this is split into chained functions. Effectively off: each chunk
# passes every value still live to the next as arguments and a returned tuple, which numba
# types and lowers at a cost that grows with their number. W6 (random graph + gradients,
# hundreds of live values): 200 nodes (270 statements) first call 2.0 s split at 250 vs
# 1.7 s whole; 2,000 nodes (2,600 statements) 101 s at 250, 33 s at 1000, 12 s whole.
SPLIT_STATEMENTS = 1 << 30
# A kernel with more calls of vector math than this keeps libm: LLVM's time to optimise
# and vectorise the inlined bodies grows with their number (a 40-level sin/tanh chain:
# first call 1.3 s with libm, 4.3 s with 200 inlined bodies), while large kernels gain
# least from it (they are bound by the many values they compute, not by one function).
FAST_MATH_SITES = 24


def quoted(name: str, limit: int = 60) -> str:
    """A user's name as it may appear in generated source: inside a comment, quoted and
    escaped (``ascii``: no newline, quote or control character survives), and shortened.

    >>> print(quoted("x\\nimport os  # \\u2028"))
    'x\\nimport os  # \\u2028'
    >>> len(quoted("x" * 500))
    65

    """
    short = name if len(name) <= limit else name[:limit] + "..."
    return ascii(short)


@dataclass
class OutputAccess:
    """How the loop writes one output: 'store', 'suffix' (local sum over axes k..),
    'array' (sum into the array) or 'scatter'; ``chunked`` when it has a leading per-chunk
    axis; ``shares``: the index of the earlier scatter whose buffer this one adds into."""

    out: KernelOutput
    mode: str
    chunked: bool
    suffix: int = 0
    shares: int = -1

    @property
    def is_param(self) -> bool:
        return self.shares < 0


def input_access(dims: tuple, it_dims: tuple) -> InputAccess:
    """Subscript of an input with ``dims`` in a loop over ``it_dims`` (symbolic lengths
    are strings; the driver checks at call time that equal symbols are equal lengths)."""
    rank = len(it_dims)
    if not dims:
        return InputAccess("[()]", False)
    idx = subscript_items(dims, it_dims, lambda p, j: None)
    if idx is None:
        return InputAccess("[" + ", ".join(f"i{j}" for j in range(rank)) + "]", True)
    return InputAccess("[" + ", ".join(idx) + "]", False)


def subscript_items(dims: tuple, it_dims: tuple, other) -> Optional[list]:
    """Index expressions reading an input with ``dims`` at ``i0, i1, ..`` of a loop over
    ``it_dims``; ``other(p, j)`` indexes a dim that is neither the loop's nor 1 (None:
    no static subscript)."""
    lead = len(it_dims) - len(dims)
    idx = []
    for p, d in enumerate(dims):
        j = lead + p
        if d == it_dims[j]:
            idx.append(f"i{j}")
        elif d == 1:
            idx.append("0")
        else:
            item = other(p, j)
            if item is None:
                return None
            idx.append(item)
    return idx


def output_accesses(outputs: list, rank: int, parallel: bool) -> list:
    """The accesses of a kernel's outputs (scatters into one buffer share a parameter)."""
    accesses, first = [], {}
    for k, out in enumerate(outputs):
        acc = output_access(out, rank, parallel)
        if out.is_scatter:
            acc.shares = first.setdefault(id(out.node), k)
            acc.shares = -1 if acc.shares == k else acc.shares
        accesses.append(acc)
    return accesses


def output_access(out: KernelOutput, rank: int, parallel: bool) -> OutputAccess:
    if out.is_scatter:
        return OutputAccess(out, "scatter", False)
    if not out.is_reduction or not out.axes:
        return OutputAccess(out, "store", False)
    axes = set(out.axes)
    chunked = parallel and 0 in axes
    k = min(axes)
    if axes == set(range(k, rank)):
        return OutputAccess(out, "suffix", chunked, k)
    return OutputAccess(out, "array", chunked)


def printed(lowered: LoweredKernel, math: str = "libm", trig: bool = True) -> tuple:
    """(statement texts ``name = expr``, result texts, sin/cos argument texts) of the
    scalar body, printed once per lowered kernel and math mode and kept on it."""
    if lowered.texts is not None:    # lowered node by node: printed already, with libm
        return lowered.texts, [r.name for r in lowered.results], []
    if lowered.printed is None:
        lowered.printed = {}
    key = (math, trig)
    if key not in lowered.printed:
        printer = NumbaPrinter(lowered.float_dtype, math, trig)
        statements = [f"{sym.name} = {printer.doprint(expr)}"
                      for sym, expr in lowered.replacements]
        results = [printer.doprint(r) for r in lowered.results]
        if printer.fast_sites > FAST_MATH_SITES:
            lowered.printed[key] = printed(lowered, "libm", trig)
        else:
            lowered.printed[key] = (statements, results, list(dict.fromkeys(printer.trig_args)))
    return lowered.printed[key]


def checks_trig(lowered: LoweredKernel, math: str) -> bool:
    """Whether the fast body of this kernel reports that a sin/cos argument was too large
    for its range reduction (the kernel then runs again with libm)."""
    return math == "fast" and bool(printed(lowered, math)[2])


def body_source(lowered: LoweredKernel, name: str, math: str = "libm",
                trig: bool = True) -> str:
    """The scalar body: inputs in, one value per distinct output source out (and, when
    ``checks_trig``, a last value: every sin/cos argument was in range)."""
    args = ", ".join(s.name for s in lowered.symbols)
    statements, results, trig_args = printed(lowered, math, trig)
    decorator = POINT_DECORATOR if len(statements) <= INLINE_STATEMENTS else LONG_POINT_DECORATOR
    lines = [decorator, f"def {name}({args}):"]
    names = [f"{s.name} = {quoted(n.name)}" for s, n in zip(lowered.symbols, lowered.kernel.inputs)]
    if names:
        lines.insert(2, "    # " + ", ".join(names))
    lines += ["    " + line for line in statements]
    if trig_args:
        results = results + [" & ".join(f"trig_in_range({a})" for a in trig_args)]
    assignments, results = _named_results(results)
    lines += ["    " + line for line in assignments]
    lines.append(f"    return ({', '.join(results)}{',' if len(results) == 1 else ''})")
    return "\n".join(lines)


# v2 elementwise (minimal fix, reported to the compiler's owner): CPython builds a tuple
# display of more than 30 items as a list (LIST_TO_TUPLE), and numba rejects that op-code
# when a conditional expression among the items makes a phi node. Past 30 results, each
# one that is not a plain name is first bound to a local, so the tuple holds names only.
_TUPLE_ITEMS_MAX = 30


def _named_results(results: list) -> tuple:
    """(assignments, results): the non-name results bound to locals, past 30 results."""
    if len(results) <= _TUPLE_ITEMS_MAX:
        return [], results
    assignments, names = [], []
    for k, text in enumerate(results):
        if text.isidentifier():
            names.append(text)
        else:
            assignments.append(f"res{k}_ = {text}")
            names.append(f"res{k}_")
    return assignments, names


def split_body_source(lowered: LoweredKernel, name: str, math: str = "libm",
                      trig: bool = True, llvm: bool = False) -> str:
    """The scalar body as a chain of functions of at most SPLIT_STATEMENTS statements each
    (one long straight-line function makes LLVM slow), or one function when short.
    ``llvm`` (CPU targets): a kernel lowered node by node is written as LLVM IR where
    ``llvm_body`` can (``llvm_body_source``)."""
    if llvm:
        source = llvm_body_source(lowered, name)
        if source is not None:
            return source
    reps = lowered.replacements
    if len(reps) <= SPLIT_STATEMENTS or checks_trig(lowered, math):
        return body_source(lowered, name, math, trig)
    texts, results, _ = printed(lowered, math, trig)
    inputs = [s.name for s in lowered.symbols]
    chunks = [list(zip(reps[k:k + SPLIT_STATEMENTS], texts[k:k + SPLIT_STATEMENTS]))
              for k in range(0, len(reps), SPLIT_STATEMENTS)]
    later_uses = []
    used: set = set()
    for r in lowered.results:
        used |= {s.name for s in r.free_symbols}
    for chunk in reversed(chunks):
        later_uses.append(set(used))
        for (_, expr), _ in chunk:
            used |= {s.name for s in expr.free_symbols}
    later_uses.reverse()
    parts, live = [], []
    for c, chunk in enumerate(chunks):
        defined = [s.name for (s, _), _ in chunk]
        keep = [v for v in live + defined if v in later_uses[c]]
        lines = [f"@numba.njit({OPTIONS})", f"def {name}_{c}({', '.join(inputs + live)}):"]
        lines += [f"    {text}" for _, text in chunk]
        lines.append(f"    return ({', '.join(keep)}{',' if len(keep) == 1 else ''})")
        parts.append("\n".join(lines))
        live = keep
    lines = [f"@numba.njit({OPTIONS})", f"def {name}({', '.join(inputs)}):"]
    carried: list = []
    for c in range(len(chunks)):
        outs = parts[c].splitlines()[-1].strip()[len("return ("):-1].rstrip(",")
        names = [v.strip() for v in outs.split(",") if v.strip()]
        target = ", ".join(names) + ("," if len(names) == 1 else "")
        call = f"{name}_{c}({', '.join(inputs + carried)})"
        lines.append(f"    {target} = {call}" if names else f"    {call}")
        carried = names
    lines.append(f"    return ({', '.join(results)}{',' if len(results) == 1 else ''})")
    parts.append("\n".join(lines))
    return "\n\n\n".join(parts)


# Kernels lowered node by node (``lower.lower_straight``) have their scalar body written as
# LLVM IR (``llvm_body``) on CPU targets: numba's front end (bytecode, typing, lowering)
# was about 90% of their compile (deep chain of 2,000 levels and its gradient: 6.7 s of
# 9.6 s in the body's numba passes, 0.9 s in LLVM).
LLVM_BODIES = True


def llvm_body_source(lowered: LoweredKernel, name: str) -> Optional[str]:
    """``name = llvm_body_(IR, ..)``: the scalar body of a straight kernel of float64,
    float32 and bool values as an LLVM IR function (None where ``llvm_body`` cannot write
    it)."""
    from ...numba_internals import enabled
    from ..kernel_lib.deferred import jit_disabled

    kernel = lowered.kernel
    inputs = tuple(_IR_KINDS.get(i.dtype.name) for i in kernel.inputs)
    outputs = tuple(_IR_KINDS.get(s.dtype.name) for s in lowered.sources)
    if not LLVM_BODIES or not enabled() or jit_disabled() or lowered.steps is None or \
            None in inputs + outputs:
        return None
    results = [r.name for r in lowered.results]
    helpers = dict(helpers_used([e for _, e in lowered.replacements]))
    made = function_ir(inputs, lowered.steps, results,
                       len(lowered.steps) <= INLINE_STATEMENTS, helpers, outputs)
    if made is None or '"""' in made[0] or "\\" in made[0]:
        return None
    names = ", ".join(f"{s.name} = {quoted(n.name)}"
                      for s, n in zip(lowered.symbols, kernel.inputs))
    return (f"# {name}: LLVM IR, {len(lowered.steps)} statements ({names or 'no inputs'})\n"
            "from symgrad.compile.codegen.llvm.link import deferred_body as llvm_body_\n"
            f'{name} = llvm_body_("""{made[0]}""", {inputs!r}, {outputs!r}, {made[1]!r})')


_IR_KINDS = {"float64": "double", "float32": "float", "bool": "i1"}


def loop_source(lowered: LoweredKernel, name: str, point: str, parallel: bool,
                checked: bool = False) -> tuple:
    """(source of the loop function, its parameter names, the output accesses).

    ``checked``: the point function returns a last in-range flag; the loop returns how
    many elements failed it (a prange-safe sum)."""
    kernel = lowered.kernel
    rank = kernel.rank
    ins = [input_access(i.dims, kernel.dims) for i in kernel.inputs]
    outs = output_accesses(kernel.outputs, rank, parallel)
    in_names = [f"x{k}" for k in range(len(ins))]
    out_names = [f"r{k}" if o.is_param else f"r{o.shares}" for k, o in enumerate(outs)]
    dims = [f"n{j}" for j in range(rank)]
    params = (["nc"] if parallel else []) + dims + in_names + \
        [n for n, o in zip(out_names, outs) if o.is_param]
    decorator = f"@numba.njit({OPTIONS}{', parallel=True' if parallel else ''})"
    if gather_axes(kernel, "r") is not None:   # stencil adjoint: loop over the buffer
        outs = gather_accesses(outs)
        ins = base_reads(kernel, ins)
        return (gather_loop_source(lowered, name, point, parallel, ins, outs, params,
                                   decorator, checked), params, ins, outs)
    lines = [decorator, f"def {name}({', '.join(params)}):"]
    values = [f"e{j}" for j in range(len(lowered.sources))]
    source_index = {id(s): j for j, s in enumerate(lowered.sources)}
    indent = "    "
    chunk = "c, " if parallel else ""

    def acc_init(level):
        for k, o in enumerate(outs):
            if o.mode == "suffix" and o.suffix == level:
                zero = "0.0" if o.out.source.dtype.kind == "f" else "0"
                lines.append(f"{indent * depth}s{k} = {zero}")

    def acc_store(level):
        for k, o in enumerate(outs):
            if o.mode == "suffix" and o.suffix == level:
                idx = [f"i{j}" for j in range(level)] + ["0"] * (rank - level)
                if o.chunked:
                    idx = ["c"] + idx
                sub = ", ".join(idx) if idx else "()"
                lines.append(f"{indent * depth}{out_names[k]}[{sub}] = s{k}")

    depth = 1
    subs, viewed = [a.index for a in ins], set()
    # constant pair masks read as index predicates; ``kept``: the loop visits its pairs only
    predicates, kept = loop_masks(lowered, subs, all(o.mode != "store" for o in outs))
    for k, text in predicates.items():
        in_names[k], subs[k] = "", text
    if checked:
        lines.append(f"{indent}nbad = 0")
    if parallel and rank and kept is not None:   # rows c, c + nc, ..: balanced triangles
        lines.append(f"{indent}for c in numba.prange(nc):")
        depth += 1
    elif parallel and rank:
        lines.append(f"{indent}for c in numba.prange(nc):")
        depth += 1
        lines.append(f"{indent * depth}lo = c * n0 // nc")
        lines.append(f"{indent * depth}hi = (c + 1) * n0 // nc")
        in_names, subs, out_names, viewed = chunk_views(lines, indent * depth, in_names,
                                                        subs, out_names, outs)
    for j in range(rank):
        acc_init(j)
        if j == 0 and parallel and kept is not None:
            lines.append(f"{indent * depth}for i0 in range(c, n0, nc):")
        elif j == 0 and parallel:
            lines.append(f"{indent * depth}for k0 in range(hi - lo):")
            lines.append(f"{indent * (depth + 1)}i0 = lo + k0")
        elif j == 1 and kept is not None:
            lines.append(f"{indent * depth}for i1 in range({row_range(kept, 'i0', 'n1')}):")
        else:
            lines.append(f"{indent * depth}for i{j} in range(n{j}):")
        depth += 1
    args = ", ".join(f"{n}{sub}" for n, sub in zip(in_names, subs))
    target = ", ".join(values + (["ok"] if checked else [])) + \
        ("," if len(values) == 1 and not checked else "")
    lines.append(f"{indent * depth}{target} = {point}({args})")
    if checked:
        lines.append(f"{indent * depth}nbad += 0 if ok else 1")
    full = ", ".join(f"i{j}" for j in range(rank)) if rank else "()"
    for k, o in enumerate(outs):
        e = values[source_index[id(o.out.source)]]
        if o.mode == "store":
            sub = "k0" + full[2:] if k in viewed else full
            lines.append(f"{indent * depth}{out_names[k]}[{sub}] = {e}")
        elif o.mode == "suffix":
            lines.append(f"{indent * depth}s{k} += {e}")
        elif o.mode == "scatter":
            idx = ", ".join(scatter_index(o.out, out_names[k])) or "()"
            lines.append(f"{indent * depth}{out_names[k]}[{idx}] += {e}")
        else:
            idx = ["0" if j in o.out.axes else f"i{j}" for j in range(rank)]
            lines.append(f"{indent * depth}{out_names[k]}[{chunk if o.chunked else ''}"
                         f"{', '.join(idx)}] += {e}")
    for j in reversed(range(rank)):
        depth -= 1
        acc_store(j)
    if checked:
        lines.append(f"{indent}return nbad")
    return "\n".join(lines), params, ins, outs


_LEAD = "[i0"


def chunk_views(lines: list, indent: str, in_names: list, subs: list, out_names: list,
                outs: list) -> tuple:
    """Views ``v<k> = x<k>[lo:hi]`` of the arrays a parallel chunk reads or stores at
    ``[i0, ..]``, read as ``v<k>[k0, ..]``: (input names, their subscripts, output names,
    indices of the outputs stored through a view).

    Indexed at ``i0 = lo + k0``, numba's negative-index wraparound (``lo`` may be negative
    as far as LLVM knows) leaves the vectorised loop gathers and scatters instead of
    contiguous loads and stores: W1's chunk ran at 0.6x the serial loop's speed per element
    (docs/threads_and_buffers.md). A view's index ``k0`` counts from 0, which LLVM proves
    non-negative, as in the serial loop over ``range(n0)``.
    """
    in_names, subs, out_names, viewed = list(in_names), list(subs), list(out_names), set()
    for k, sub in enumerate(subs):
        if in_names[k] and (sub.startswith(_LEAD + ",") or sub == _LEAD + "]"):
            lines.append(f"{indent}v{k} = {in_names[k]}[lo:hi]")
            in_names[k] = f"v{k}"
            subs[k] = "[k0" + sub[len(_LEAD):]
    for k, o in enumerate(outs):
        if o.is_param and o.mode == "store":
            lines.append(f"{indent}w{k} = {out_names[k]}[lo:hi]")
            out_names[k] = f"w{k}"
            viewed.add(k)
    return in_names, subs, out_names, viewed
