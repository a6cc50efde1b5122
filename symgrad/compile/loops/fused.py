"""A scan whose body compiled to ONE scalar kernel runs as one njit loop.

``compiled_body`` compiles a loop body with ``sg.function`` (its numba compile deferred,
``cpu.py``); where that function's plan is a single scalar kernel (``compile/scalar``:
placeholders, one ``scalar_kernel`` step, its ``scalar_output`` steps, and views of their
values), ``fused_scan`` writes a loop module (text, symgrad's names only: ``c<j>``
carries, ``x<j>`` xs, ``p<j>`` captures, ``y<j>``/``h<j>`` outputs, ``R<j>`` the kernel's
result buffers) whose njit function calls the kernel once per step, reading ``xs[t]`` and
writing ``ys[t]`` and the carry history, element by element, into arrays allocated
before the loop. The kernel is the body module's ``_s<i>_into`` (``scalar/source.py``),
inlined into the loop (``INLINE``): one numba compile per loop, and the body's own driver
is never compiled unless the Python loop runs. An output that is a view of a kernel
result or of an input (``u_new[0]``, ``u[::-1]``, a transpose) is written as the driver
writes the view; a new carry read from a carry is staged first. Otherwise (any other
plan, a replayed checkpoint segment, dynamic shapes) the Python loop of ``cpu.py`` runs, and
``fused_scan`` says why (``FusedScan.reason``, shown by ``f.explain()``).

A warm build does not read the body's plan (``f.plan`` of a warm function is folded and
planned when first read): the loop module's key is kept beside the body's module
(``warm.remember``, sealed) and loaded from the cache by it.

``ENABLED = False`` turns the fused loop off (the tests compare both paths).
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ...errors import ShapeError
from ..plan.oprules import CHEAP_VIEWS, STEP_FORMS, S, index_text
from ..scalar import SCALAR_KERNEL, SCALAR_OUTPUT
from .loop_module import build, recall, remember

__all__ = ["ENABLED", "FusedScan", "fused_scan"]

ENABLED = True
"""False: every loop runs the Python loop over the compiled body (``cpu.py``)."""
INLINE = True
"""The kernel is inlined into the loop (numba ``inline='always'``, the kernel module's
fastmath flags on the loop): one numba compile per loop, not the kernel's and the loop's."""
INTO = True
"""The kernel's ``_s<i>_into`` form (results into buffers made once a call), where the
body's module has it (a carry set from a carry is staged in a buffer of its own first);
False: ``_s<i>``, new arrays a step."""


class FusedScan:
    """The fused loop of one body (``loop`` None where it cannot be, ``reason`` says why)."""

    def __init__(self, loop=None, reason: str = "", inputs: tuple = (), outputs: tuple = (),
                 buffers: list = ()):
        self.loop, self.reason = loop, reason
        self.buffers = list(buffers)   # (shape, dtype) of the kernel's results (_into form)
        self.inputs = inputs        # (shape, dtype) of every body input then capture
        self.outputs = outputs      # (shape, dtype) of every body output

    @property
    def into(self) -> bool:
        """Whether the loop calls the kernel's ``_into`` form."""
        return bool(self.buffers)

    def __repr__(self) -> str:
        return f"FusedScan({'fused' if self.loop else 'python loop: ' + self.reason})"


def _is_view(node) -> bool:
    """A view step the loop can write as the driver does (one input, a numpy form)."""
    return node.op in CHEAP_VIEWS and node.op in STEP_FORMS and len(node.inputs) == 1


def _number(node) -> bool:
    """A view numba takes as a number: a getitem of one element (``R0[0]``)."""
    return node.op is S.getitem and node.shape == () and Ellipsis not in node.attrs["key"]


def _root(src: tuple) -> tuple:
    """The kernel result or input a source is a view of (itself when it is not a view)."""
    return _root(src[1]) if src[0] == "v" else src


def _single_kernel(f) -> tuple:
    """(kernel node, sources of the outputs) of a plan that is one scalar kernel, or
    (None, reason). A source is ("k", result index), ("i", input position) or ("v", source,
    view node): a view (``u_new[0]``) of another source, which the loop takes as the driver
    would and copies into the stacked ys."""
    try:
        graph, outputs = f.plan.graph, f.plan.outputs
    except Exception as exc:                     # noqa: BLE001 (a plan we cannot read)
        return None, f"the body's plan cannot be read ({type(exc).__name__})"
    kernels = [n for n in graph.order if n.op is SCALAR_KERNEL]
    others = [n for n in graph.order if n.op is not SCALAR_KERNEL and
              n.op is not SCALAR_OUTPUT and not n.is_const and not _is_view(n) and
              not any(n is p for p in graph.placeholders)]
    if len(kernels) != 1 or others:
        ops = sorted({n.op.name for n in others})
        return None, (f"the body compiled to {len(kernels)} scalar kernels and "
                      f"{len(others)} other nodes ({', '.join(ops)}), not one scalar kernel")
    position = {id(t): k for k, t in enumerate(f.inputs)}
    kernel = kernels[0]
    if any(id(getattr(i, "tensor", None)) not in position for i in kernel.inputs):
        return None, "the scalar kernel reads a value that is not a body input"

    def source(o):
        if o is not None and o.op is SCALAR_OUTPUT and o.inputs[0] is kernel:
            return ("k", o.attrs["index"])
        if o is not None and id(getattr(o, "tensor", None)) in position and \
                any(o is p for p in graph.placeholders):
            return ("i", position[id(o.tensor)])
        if o is not None and _is_view(o):
            base = source(o.inputs[0])
            return base and ("v", base, o)
        return None
    sources = [source(o) for o in outputs]
    if any(s is None for s in sources):
        return None, "a body output is not a result of the scalar kernel"
    return (kernel, [position[id(i.tensor)] for i in kernel.inputs], sources), ""


def _static(t) -> bool:
    return all(isinstance(d, int) for d in t.shape)


def _copy(array: str, lead: str, src: str, shape: tuple, indent: str,
          number: bool = False) -> list:
    """Lines copying array ``src`` into ``array[lead, ...]`` (``lead`` "" for the whole
    array) element by element over the static ``shape``: scalar stores only, so numba never
    compiles an array-into-slice assignment (its shape check and its message cost about a
    second of compile per loop module). ``number``: ``src`` is a number, not a 0-d array.

    >>> _copy("h0", "i", "c0", (2,), "")
    ['for e0 in range(2):', '    h0[i, e0] = c0[e0]']
    >>> _copy("c0", "", "R0", (), "")
    ['c0[()] = R0[()]']
    """
    element = [f"e{d}" for d in range(len(shape))]
    lines = [f"{indent}{'    ' * d}for e{d} in range({n}):" for d, n in enumerate(shape)]
    to = ", ".join(([lead] if lead else []) + element) or "()"
    read = src if number and not shape else f"{src}[{', '.join(element) or '()'}]"
    lines.append(f"{indent}{'    ' * len(shape)}{array}[{to}] = {read}")
    return lines


def _source(module: str, function: str, n_carry: int, n_x: int, n_cap: int, args: list,
            sources: list, shapes: list, out_shapes: list, into: Optional[list] = None,
            staged: tuple = ()) -> str:
    """The loop module: ``loop_(steps, reverse, k, carries, xs, captures, ys, hists)``."""
    names = [f"c{j}" for j in range(n_carry)] + [f"x{j}" for j in range(n_x)]
    names += [f"p{j}" for j in range(n_cap)]
    n_y = len(sources) - n_carry
    read = []
    for k in range(n_carry + n_x + n_cap):
        if n_carry <= k < n_carry + n_x:       # one slice of xs per step
            j = k - n_carry
            read.append(f"x{j}[t:t + 1].reshape(())" if not shapes[k] else f"x{j}[t]")
        else:
            read.append(names[k])
    result = "R{}" if into else "r_[{}]"

    def value(src) -> str:
        if src[0] == "v":                     # a view of another source, as the driver's
            node = src[2]
            if _number(node):                 # numba: a number, not a 0-d view
                return f"{value(src[1])}[{index_text(tuple(node.attrs['key']))}]"
            return STEP_FORMS[node.op](node, [value(src[1])])
        return result.format(src[1]) if src[0] == "k" else read[src[1]]

    outs = [f"y{j}" for j in range(n_y)] + [f"h{j}" for j in range(n_carry)]
    outs += [f"R{j}" for j in range(len(into or ()))]   # the kernel's result buffers
    outs += [f"T{j}" for j in staged]       # new carries read from carries, staged
    kernel = f"M_.{function}{'_into' if into else ''}"
    lines = ["import sys", "", "import numba", "", f"M_ = sys.modules[{module!r}]",
             "FASTMATH_ = getattr(M_, 'FASTMATH', False)",
             f"K_ = numba.njit(inline='always', error_model='numpy', "
             f"fastmath=FASTMATH_)({kernel}.py_func)" if INLINE else f"K_ = {kernel}", "", "",
             "@numba.njit(cache=NUMBA_CACHE, error_model='numpy'"
             f"{', fastmath=FASTMATH_' if INLINE else ''})",
             f"def loop_(steps, reverse, k, {', '.join(names + outs)}):"]
    lines += ["    for s in range(steps):",
              "        t = steps - 1 - s if reverse else s",
              "        if s % k == 0:",
              "            i = s // k if k > 1 else t"]
    for j in range(n_carry):
        lines += _copy(f"h{j}", "i", f"c{j}", shapes[j], "            ")
    ys = []       # ys read the carries entering the step (when a y is a carry input)
    for j in range(n_y):
        src = sources[n_carry + j]
        ys += _copy(f"y{j}", "t", value(src), out_shapes[n_carry + j], "        ",
                    src[0] == "v" and _number(src[2]))
    if into:
        buffers = "".join(f", R{j}" for j in range(len(into)))
        lines.append(f"        K_({', '.join(read[a] for a in args)}{buffers})")
        lines += ys
        for j in sorted(range(n_carry), key=lambda j: j not in staged):
            src = sources[j]     # staged first: every carry is read before any is written
            lines += _copy(f"T{j}" if j in staged else f"c{j}", "", value(src), shapes[j],
                           "        ", src[0] == "v" and _number(src[2]))
        for j in staged:
            lines += _copy(f"c{j}", "", f"T{j}", shapes[j], "        ")
    else:
        lines.append(f"        r_ = K_({', '.join(read[a] for a in args)}"
                     f"{',' * (len(args) == 1)})")
        lines += ys
        if n_carry:
            lines.append(f"        {', '.join(f'c{j}' for j in range(n_carry))}, = "
                         f"{', '.join(value(sources[j]) for j in range(n_carry))},")
    lines.append(f"    return ({''.join(f'c{j}, ' for j in range(n_carry)).rstrip(' ')})")
    return "\n".join(lines) + "\n"


def fused_scan(body, run, n_carry: int, n_x: int) -> FusedScan:
    """The fused loop of ``body`` compiled as ``run`` (``cpu.compiled_body``), cached on it."""
    f = getattr(run, "function_", None)
    if f is None:
        return FusedScan(reason="the body is not a compiled function")
    held = getattr(f, "fused_scan_", None)
    if held is not None and held[0] == (n_carry, n_x):
        return held[1]
    made = _make(body, f, n_carry, n_x)
    f.fused_scan_ = ((n_carry, n_x), made)
    return made


def _make(body, f, n_carry: int, n_x: int) -> FusedScan:
    tensors = list(body.inputs) + list(body.captures)
    if not all(_static(t) for t in tensors + list(body.outputs)):
        return FusedScan(reason="a body value has an unknown length")
    for j in range(n_carry):
        i, o = body.inputs[j], body.outputs[j]
        if i.shape != o.shape or i.dtype != o.dtype:
            return FusedScan(reason=f"carry {j} changes shape or dtype")
    inputs = tuple((t.shape, t.dtype) for t in tensors)
    outputs = tuple((o.shape, o.dtype) for o in body.outputs)
    parts = f"{f.key}|{n_carry}|{n_x}|{(inputs, outputs)!r}|{INTO}|{INLINE}" if f.key else None
    loop_module, known = recall("fused scan", parts)
    if loop_module is not None:   # a warm build: the loop module without the body's plan
        loop_module.BODY_FUNCTION_ = f
        buffers = [(tuple(s), np.dtype(d)) for s, d in known["buffers"]]
        return FusedScan(loop_module.loop_, "", inputs, outputs, buffers)
    found, reason = _single_kernel(f)
    if found is None:
        return FusedScan(reason=reason)
    kernel, args, sources = found
    function = f"_s{kernel.index}"
    module = f.module.__name__
    if not hasattr(f.module, function):
        return FusedScan(reason="the body's module has no scalar function")
    n_cap = len(body.captures)
    shapes = [tuple(t.shape) for t in tensors]
    into = None        # results written into buffers: no allocation per step
    region = kernel.attrs.get("region")
    if INTO and hasattr(f.module, function + "_into") and region is not None:
        into = [(tuple(o.shape), o.dtype.name) for o in region.outputs]
    staged = tuple(j for j in range(n_carry)     # read from a carry: staged, then copied
                   if _root(sources[j])[0] == "i" and _root(sources[j])[1] < n_carry)
    for j, src in enumerate(sources[:n_carry]):  # new arrays a step: carries are rebound
        if into is None and src[0] == "v":
            return FusedScan(reason=f"carry {j} is a view ({src[2].op.name}) of a body "
                                    "value and the kernel has no _into form")
        if into is None and src[0] == "i" and n_carry <= src[1] < n_carry + n_x:
            return FusedScan(reason="a carry is set to a slice of xs")
    if into is None:
        staged = ()
    text = _source(module, function, n_carry, n_x, n_cap, args, sources, shapes,
                   [tuple(o.shape) for o in body.outputs], into, staged)
    try:
        loop_module, key = build("fused scan", text)
    except Exception as exc:                     # noqa: BLE001 (the Python loop still runs)
        return FusedScan(reason=f"the loop module did not load ({type(exc).__name__})")
    loop_module.BODY_FUNCTION_ = f          # the body's module stays loaded with the loop
    buffers = (into or []) + [(shapes[j], body.inputs[j].dtype) for j in staged]
    remember("fused scan", parts, {"loop": key, "buffers": [
        [list(s), np.dtype(getattr(d, "name", d)).name] for s, d in buffers]})
    return FusedScan(loop_module.loop_, "", inputs, outputs, buffers)


def run_fused(fused: FusedScan, args: tuple, n_carry: int, n_x: int, length, reverse: bool,
              checkpoint) -> Optional[list]:
    """``run_scan``'s results through the fused loop (None: take the Python loop)."""
    if len(args) != len(fused.inputs):
        return None
    values = []
    for k, (a, (shape, dtype)) in enumerate(zip(args, fused.inputs)):
        a = np.asarray(a)
        if n_carry <= k < n_carry + n_x:
            if a.shape[1:] != shape:
                return None
        elif a.shape != shape:
            return None
        values.append(np.require(a, dtype, "C"))   # (ascontiguousarray makes 0-d 1-d)
    xs = values[n_carry:n_carry + n_x]
    lengths = {x.shape[0] for x in xs}
    if len(lengths) > 1:
        raise ShapeError(f"sg.scan: xs have different lengths {sorted(lengths)} along axis 0")
    steps = xs[0].shape[0] if xs else int(length)
    k = checkpoint or 1
    carries = [np.array(c, copy=True) for c in values[:n_carry]]
    ys = [np.empty((steps,) + s, d) for s, d in fused.outputs[n_carry:]]
    hist = [np.empty(((steps + k - 1) // k,) + c.shape, c.dtype) for c in carries]
    from numba.core.errors import NumbaError   # the fused loop is numba's: numba is imported

    try:
        finals = fused.loop(steps, bool(reverse), k, *carries, *xs, *values[n_carry + n_x:],
                            *ys, *hist, *(np.empty(s, d) for s, d in fused.buffers))
    except NumbaError as exc:           # numba could not compile it: the Python loop runs
        fused.loop = None
        fused.reason = f"numba could not compile the fused loop ({type(exc).__name__})"
        return None
    return [np.asarray(c) for c in finals] + ys + hist


def compile_now(fused: FusedScan, n_carry: int, n_x: int) -> None:
    """Compile the loop (a call of zero steps on dummy arrays) during ``sg.function``'s dry
    run, so the first real call runs compiled code."""
    if fused.loop is None:
        return
    args = [np.zeros(((0,) if n_carry <= k < n_carry + n_x else ()) + s, d)
            for k, (s, d) in enumerate(fused.inputs)]
    run_fused(fused, tuple(args), n_carry, n_x, 0, False, None)
