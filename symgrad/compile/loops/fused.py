"""A scan whose body compiled to ONE scalar kernel runs as one njit loop.

``compiled_body`` compiles a loop body with ``sg.function``; where that function's plan is
a single scalar kernel (``compile/scalar``: placeholders, one ``scalar_kernel`` step, its
``scalar_output`` steps), ``fused_scan`` writes a loop module (text, symgrad's names only:
``c<j>`` carries, ``x<j>`` xs, ``p<j>`` captures, ``y<j>``/``h<j>`` outputs) whose njit
function calls the kernel's njit function once per step, reading ``xs[t]`` and writing
``ys[t]`` and the carry history into arrays allocated before the loop. The kernel is
called as the generated driver calls it (``_s<i>(inputs...)`` returning a tuple of new
arrays, ``scalar/source.py``); the loop module reads it from the body's module, which
the body's compiled function keeps loaded. Otherwise (any other plan, a replayed
checkpoint segment, dynamic shapes) the Python loop of ``cpu.py`` runs, and
``fused_scan`` says why (``FusedScan.reason``).

A warm build does not read the body's plan (``f.plan`` of a warm function is folded and
planned when first read): the loop module's key is kept beside the body's module
(``warm.remember``, sealed) and loaded from the cache by it.

``ENABLED = False`` turns the fused loop off (the tests compare both paths).
"""

from __future__ import annotations

import hashlib
from typing import Optional

import numpy as np

from numba.core.errors import NumbaError

from ...errors import ShapeError
from ..cache import warm
from ..cache.modules import load_or_build
from ..scalar import SCALAR_KERNEL, SCALAR_OUTPUT

__all__ = ["ENABLED", "FusedScan", "fused_scan"]

ENABLED = True
"""False: every loop runs the Python loop over the compiled body (``cpu.py``)."""
INTO = True
"""The kernel's ``_s<i>_into`` form (results into buffers made once), where the body's
module has it and no carry is set to another carry; False: ``_s<i>``, new arrays a step."""


class FusedScan:
    """The fused loop of one body (``loop`` None where it cannot be, ``reason`` says why)."""

    def __init__(self, loop=None, reason: str = "", inputs: tuple = (), outputs: tuple = (),
                 into: bool = False):
        self.loop, self.reason, self.into = loop, reason, into
        self.inputs = inputs        # (shape, dtype) of every body input then capture
        self.outputs = outputs      # (shape, dtype) of every body output

    def __repr__(self) -> str:
        return f"FusedScan({'fused' if self.loop else 'python loop: ' + self.reason})"


def _single_kernel(f) -> tuple:
    """(kernel node, sources of the outputs) of a plan that is one scalar kernel, or
    (None, reason). A source is ("k", result index) or ("i", input position)."""
    try:
        graph, outputs = f.plan.graph, f.plan.outputs
    except Exception as exc:                     # noqa: BLE001 (a plan we cannot read)
        return None, f"the body's plan cannot be read ({type(exc).__name__})"
    kernels = [n for n in graph.order if n.op is SCALAR_KERNEL]
    others = [n for n in graph.order if n.op is not SCALAR_KERNEL and
              n.op is not SCALAR_OUTPUT and not n.is_const and
              not any(n is p for p in graph.placeholders)]
    if len(kernels) != 1 or others:
        ops = sorted({n.op.name for n in others})
        return None, (f"the body compiled to {len(kernels)} scalar kernels and "
                      f"{len(others)} other nodes ({', '.join(ops)}), not one scalar kernel")
    position = {id(t): k for k, t in enumerate(f.inputs)}
    kernel = kernels[0]
    if any(id(getattr(i, "tensor", None)) not in position for i in kernel.inputs):
        return None, "the scalar kernel reads a value that is not a body input"
    sources = []
    for o in outputs:
        if o is not None and o.op is SCALAR_OUTPUT and o.inputs[0] is kernel:
            sources.append(("k", o.attrs["index"]))
        elif o is not None and id(getattr(o, "tensor", None)) in position and \
                any(o is p for p in graph.placeholders):
            sources.append(("i", position[id(o.tensor)]))
        else:
            return None, "a body output is not a result of the scalar kernel"
    return (kernel, [position[id(i.tensor)] for i in kernel.inputs], sources), ""


def _static(t) -> bool:
    return all(isinstance(d, int) for d in t.shape)


def _source(module: str, function: str, n_carry: int, n_x: int, n_cap: int, args: list,
            sources: list, ndims: list, out_ndims: list, into: Optional[list] = None) -> str:
    """The loop module: ``loop_(steps, reverse, k, carries, xs, captures, ys, hists)``."""
    names = [f"c{j}" for j in range(n_carry)] + [f"x{j}" for j in range(n_x)]
    names += [f"p{j}" for j in range(n_cap)]
    n_y = len(sources) - n_carry
    read = []
    for k in range(n_carry + n_x + n_cap):
        if n_carry <= k < n_carry + n_x:       # one slice of xs per step
            j = k - n_carry
            read.append(f"x{j}[t:t + 1].reshape(())" if ndims[k] == 0 else f"x{j}[t]")
        else:
            read.append(names[k])

    def value(src) -> str:
        return f"r_[{src[1]}]" if src[0] == "k" else read[src[1]]

    def whole(text: str, ndim: int) -> str:
        return f"{text}[()]" if ndim == 0 else text

    outs = [f"y{j}" for j in range(n_y)] + [f"h{j}" for j in range(n_carry)]
    lines = ["import sys", "", "import numba", "import numpy as np", "",
             f"K_ = sys.modules[{module!r}].{function}{'_into' if into else ''}", "", "",
             "@numba.njit(cache=NUMBA_CACHE, error_model='numpy')",
             f"def loop_(steps, reverse, k, {', '.join(names + outs)}):"]
    if into:                       # the kernel writes into buffers R<j> made once
        lines += [f"    R{j} = np.empty({shape!r}, np.{dtype})"
                  for j, (shape, dtype) in enumerate(into)]

        def value(src) -> str:     # noqa: F811 (a result is its buffer)
            return f"R{src[1]}" if src[0] == "k" else read[src[1]]
    lines += ["    for s in range(steps):",
             "        t = steps - 1 - s if reverse else s",
             "        if s % k == 0:",
             "            i = s // k if k > 1 else t"]
    lines += [f"            h{j}[i] = {whole(f'c{j}', ndims[j])}" for j in range(n_carry)]
    ys = [f"        y{j}[t] = {whole(value(sources[n_carry + j]), out_ndims[n_carry + j])}"
          for j in range(n_y)]
    if into:
        buffers = "".join(f", R{j}" for j in range(len(into)))
        lines.append(f"        K_({', '.join(read[a] for a in args)}{buffers})")
        lines += ys
        lines += [f"        c{j}[{'()' if ndims[j] == 0 else ':'}] = "
                  f"{whole(value(sources[j]), ndims[j])}" for j in range(n_carry)]
        lines.append(f"    return ({''.join(f'c{j}, ' for j in range(n_carry)).rstrip(' ')})")
        return "\n".join(lines) + "\n"
    lines.append(f"        r_ = K_({', '.join(read[a] for a in args)}{',' * (len(args) == 1)})")
    lines += ys      # ys read the carries entering the step (when a y is a carry input)
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
    shapes = (tuple((t.shape, t.dtype) for t in tensors),
              tuple((o.shape, o.dtype) for o in body.outputs))
    parts = f"{f.key}|{n_carry}|{n_x}|{shapes!r}|{INTO}" if f.key else None
    known = warm.recall("fused scan", parts) if parts else None
    if known is not None:         # a warm build: the loop module without the body's plan
        try:
            loop_module, _, _ = load_or_build(known["loop"], _not_cached)
        except Exception:  # noqa: BLE001 - not in the cache (or not verified): build it
            pass
        else:
            loop_module.BODY_FUNCTION_ = f
            return FusedScan(loop_module.loop_, "", *shapes, bool(known["into"]))
    found, reason = _single_kernel(f)
    if found is None:
        return FusedScan(reason=reason)
    kernel, args, sources = found
    if any(s == "i" and n_carry <= k < n_carry + n_x for s, k in sources[:n_carry]):
        return FusedScan(reason="a carry is set to a slice of xs")
    function = f"_s{kernel.index}"
    module = f.module.__name__
    if not hasattr(f.module, function):
        return FusedScan(reason="the body's module has no scalar function")
    n_cap = len(body.captures)
    ndims = [len(t.shape) for t in tensors]
    into = None        # results written into buffers: no allocation per step
    region = kernel.attrs.get("region")
    if INTO and hasattr(f.module, function + "_into") and region is not None and \
            not any(s == "i" and k < n_carry for s, k in sources[:n_carry]):
        into = [(tuple(o.shape), o.dtype.name) for o in region.outputs]
    text = _source(module, function, n_carry, n_x, n_cap, args, sources, ndims,
                   [len(o.shape) for o in body.outputs], into)
    key = hashlib.sha256(("fused scan loop\n" + text).encode()).hexdigest()
    try:
        loop_module, _, _ = load_or_build(key, lambda: text)
    except Exception as exc:                     # noqa: BLE001 (the Python loop still runs)
        return FusedScan(reason=f"the loop module did not load ({type(exc).__name__})")
    loop_module.BODY_FUNCTION_ = f          # the body's module stays loaded with the loop
    if parts:
        warm.remember("fused scan", parts, {"loop": key, "into": into is not None})
    return FusedScan(loop_module.loop_, "", *shapes, into is not None)


def _not_cached() -> str:
    raise LookupError("the fused loop's module is not in the cache")


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
    try:
        finals = fused.loop(steps, bool(reverse), k, *carries, *xs, *values[n_carry + n_x:],
                            *ys, *hist)
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
