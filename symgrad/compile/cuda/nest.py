"""Loop nests on the device: a ``nest.Nest`` (pre sums -> outer region -> post kernels, see
``nest.py``) as one numba.cuda kernel that never stores the pair-shaped temporaries.

Layout: a *row* is one index of the outer axes but the last (``i0 .. i{R-2}``); each block
takes rows in a grid-stride loop and its threads stride over the last outer axis
``i{R-1}``. Per element the kernel runs the pre kernels' points (unrolled over the inner
axis ``k`` into locals), the outer point, then the post points per ``k`` -- the same
``_k<i>_point`` device functions as the flat kernels. An output is

* ``store``: written at its element;
* ``row``: a sum over axes that include ``i{R-1}``: each thread adds into a local; at
  the end of the row the block adds each local in shared memory (a tree over ``BLOCK``
  slots, one sum after the other, so shared memory stays ``BLOCK`` values) and thread 0
  adds the row's total with one atomic;
* ``atomic``: a sum over outer axes that exclude ``i{R-1}``: added at its element with an
  atomic (neighbouring threads hit different elements).

Accumulators are float64 (the generated driver casts, ``cuda_driver``); arrays keep the
reduced axes with length 1, as the flat kernels do.

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
>>> text = nest_kernel_source(nest, {k.index: lower_kernel(k) for k in plan.kernels}, "_n")
>>> "cuda.shared.array" in text and "cuda.atomic.add" in text
True
"""

from __future__ import annotations

from dataclasses import dataclass

from .signatures import decorator, kernel_signature
from ..nest import Nest, nest_inputs, point_reads
from ..plan.regions import Kernel


@dataclass
class DeviceNestOutput:
    """Output ``j`` of ``kernel`` written by a device nest: mode 'store', 'row' or
    'atomic' (module docstring); ``inner``: it has the inner axis (one value per k)."""

    kernel: Kernel
    j: int
    mode: str
    inner: bool

    @property
    def out(self):
        return self.kernel.outputs[self.j]

    @property
    def name(self) -> str:
        return f"r{self.kernel.index}_{self.j}"


def device_nest_outputs(nest: Nest) -> list:
    r = nest.rank
    outs = []
    for kernel in [nest.outer] + nest.post:
        for j, o in nest.written(kernel):
            axes = set(o.axes) if o.is_reduction else set()
            inner = kernel is not nest.outer and r not in axes
            outer_axes = axes - {r}
            if not outer_axes:
                mode = "store"
            elif r - 1 in outer_axes:
                mode = "row"
            else:
                mode = "atomic"
            outs.append(DeviceNestOutput(kernel, j, mode, inner))
    return outs


def source_register(lowered: dict, kernel: Kernel, node, k=None) -> str:
    """The register a nest's point call writes ``node`` (a source of ``kernel``) into,
    for inner index ``k`` (None: the outer kernel's)."""
    j = [id(s) for s in lowered[kernel.index].sources].index(id(node))
    return f"e{kernel.index}_{j}" + ("" if k is None else f"_{k}")


def point_calls(nest: Nest, lowered: dict, local: dict, arg: dict, rank: int,
                wrap=None) -> list:
    """The lines of a device nest's body that call each kernel's point function: the pre
    kernels summed over the inner index, the outer kernel, the post kernels once per inner
    index. ``local`` (node id -> register) gains the pre sums and the outer kernel's
    links; ``wrap(input, text)`` rewrites the read of an input not in ``local``."""
    point: list = []

    def call(kernel: Kernel, values: list, k=None) -> None:
        target = ", ".join(values) + ("," if len(values) == 1 else "")
        texts = point_reads(kernel, local, arg, rank, k)
        if wrap is not None:
            texts = [t if id(i) in local else wrap(i, t) for i, t in zip(kernel.inputs, texts)]
        point.append(f"{target} = _k{kernel.index}_point({', '.join(texts)})")

    def value(kernel: Kernel, node, k=None) -> str:
        return source_register(lowered, kernel, node, k)

    inner = nest.inner
    for kernel in nest.pre:
        total = f"p{kernel.index}"
        for k in range(inner):
            call(kernel, [f"{total}_{k}"], k)
        point.append(f"{total} = " + " + ".join(f"{total}_{k}" for k in range(inner)))
        local[id(kernel.outputs[0].node)] = total
    call(nest.outer, [value(nest.outer, s) for s in lowered[nest.outer.index].sources])
    for x, c in nest.links.items():
        local[x] = value(nest.outer, c)
    for kernel in nest.post:
        for k in range(inner):
            call(kernel, [value(kernel, s, k) for s in lowered[kernel.index].sources], k)
    return point


def nest_kernel_source(nest: Nest, lowered: dict, name: str) -> str:
    """The ``@cuda.jit`` kernel ``name(n0.., inputs.., outputs..)`` of a nest (lowered:
    kernel index -> LoweredKernel)."""
    r, inner = nest.rank, nest.inner
    inputs = nest_inputs(nest)
    arg = {id(n): f"x{k}" for k, n in enumerate(inputs)}
    outs = device_nest_outputs(nest)
    params = [f"n{j}" for j in range(r)] + [arg[id(n)] for n in inputs] + [o.name for o in outs]
    lines = [decorator(nest_signature(nest, inputs)), f"def {name}({', '.join(params)}):",
             "    tid = cuda.threadIdx.x", "    bd = cuda.blockDim.x"]
    local: dict = {}
    rows = " * ".join(f"n{j}" for j in range(r - 1)) or "1"
    sums = [(o, k) for o in outs if o.mode == "row" for k in (range(inner) if o.inner else [None])]
    if sums:
        lines.append("    m = cuda.shared.array(BLOCK, float64)")
    lines.append(f"    for row in range(cuda.blockIdx.x, {rows}, cuda.gridDim.x):")
    body = _split_row(r)
    for s, _ in enumerate(sums):
        body.append(f"s{s} = 0.0")
    body.append(f"for i{r - 1} in range(tid, n{r - 1}, bd):")
    point = point_calls(nest, lowered, local, arg, r)

    def value(kernel: Kernel, node, k=None) -> str:
        return source_register(lowered, kernel, node, k)
    slot = {(id(o), k): s for s, (o, k) in enumerate(sums)}
    for o in outs:
        src = o.out.source
        if o.kernel is nest.outer or o.inner:
            pairs = [(k, value(o.kernel, src, k)) for k in
                     (range(inner) if o.kernel is not nest.outer else [None])]
        else:
            pairs = [(None, " + ".join(value(o.kernel, src, k) for k in range(inner)))]
        for k, e in pairs:
            if o.mode == "store":
                point.append(f"{o.name}[{_index(o, r, k)}] = {e}")
            elif o.mode == "atomic":
                point.append(f"cuda.atomic.add({o.name}, {_atomic(o, r, k)}, {e})")
            else:
                point.append(f"s{slot[(id(o), k)]} += {e}")
    body += ["    " + p for p in point]
    for s, (o, k) in enumerate(sums):   # one BLOCK-slot tree per sum: bounded shared memory
        body += [f"m[tid] = s{s}", "cuda.syncthreads()", "h = bd // 2", "while h > 0:",
                 "    if tid < h:", "        m[tid] += m[tid + h]", "    cuda.syncthreads()",
                 "    h //= 2", "if tid == 0:",
                 f"    cuda.atomic.add({o.name}, {_atomic(o, r, k)}, m[0])",
                 "cuda.syncthreads()"]
    lines += ["        " + b for b in body]
    return "\n".join(lines)


def nest_signature(nest: Nest, inputs: list) -> str:
    """The explicit signature of a device nest kernel reading ``inputs``
    (``cuda_signatures``): lengths, inputs, then ``device_nest_outputs``' buffers."""
    outs = [("float64" if o.out.is_reduction else o.out.node.dtype, o.kernel.rank)
            for o in device_nest_outputs(nest)]
    return kernel_signature(nest.rank, [(n.dtype, len(n.shape)) for n in inputs], outs)


def _split_row(r: int) -> list:
    """``row`` -> ``i0 .. i{r-2}`` (row-major)."""
    if r == 1:
        return []
    lines = ["q = row"]
    for j in range(r - 2, -1, -1):
        lines.append(f"i{j} = q % n{j}" if j else "i0 = q")
        if j:
            lines.append(f"q = q // n{j}")
    return lines


def _atomic(o: DeviceNestOutput, r: int, k) -> str:
    """An atomic's index: a bare integer for 1-D arrays, a tuple otherwise."""
    items = _index(o, r, k).split(", ")
    return items[0] if len(items) == 1 else "(" + ", ".join(items) + ")"


def _index(o: DeviceNestOutput, r: int, k) -> str:
    """The element of output ``o`` written at ``i0 ..`` (and ``k``): 0 on summed axes."""
    axes = set(o.out.axes) if o.out.is_reduction else set()
    idx = ["0" if a in axes else f"i{a}" for a in range(r)]
    if o.kernel.rank == r + 1:
        idx.append("0" if r in axes or k is None else str(k))
    return ", ".join(idx)
