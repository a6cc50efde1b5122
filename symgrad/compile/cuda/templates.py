"""CUDA kernel source for ``sg.function(..., target="cuda")``: the generated module text.

Nothing here imports numba.cuda; this module only prints text (the generated module
imports ``numba.cuda`` and ``symgrad.compile.cuda.runtime`` when it is loaded).

One device function per kernel, one loop template
-------------------------------------------------
The scalar body is *the same text* as the CPU target's ``_k<i>_point``
(``templates.split_body_source``); only its decorator changes, from
``@numba.njit(...)`` to ``@cuda.jit(device=True)``. In the generated module ``math``
and ``np`` are bound by ``cuda_runtime`` (``device_math``, ``device_numpy``): the real
``math`` module and a namespace whose ``floor``/``ceil`` are device functions on a GPU,
numpy-backed versions under the simulator (Python's ``math.log(0.0)`` raises where a
GPU gives ``-inf``). Literals are already typed by the printer (``f32(2.0)``), so a
float32 graph stays float32 on the device.

The kernel ``_k<i>_cuda(n0.., x0.., r0..)`` is a grid-stride loop over the flattened
iteration space; each flat index is split into ``i0, i1, ..`` and the inputs are read
with the CPU target's subscripts (``templates.input_access``). An input whose unknown
dim may be 1 at run time is read at ``(i<j> if i<j> < x.shape[p] else 0)`` (exact, since
broadcasting allows only 1 or the full length) instead of being broadcast on the host.

Reductions (fused ``reduce_sum``/``reduce_mean``/``unbroadcast``)
----------------------------------------------------------------
* ``block``: a sum over *every* iteration axis (for example a loss summed to a scalar).
  Every thread of a block accumulates into the same output element, so each thread keeps
  a local sum over its grid-stride elements, the block adds those in shared memory with
  a tree (``BLOCK`` slots, halving strides, ``syncthreads`` between levels) and thread 0
  does one ``cuda.atomic.add`` per block. Atomics: grid-size / block-size of them.
* ``atomic``: any other set of axes (row sums, column sums, the un-broadcast sums of
  gradients). Neighbouring flat indices map to different output elements in general, so
  each element is added with ``cuda.atomic.add`` into the keepdims-shaped accumulator.
  Per-element atomics rather than a two-pass reduction because they work for any set of
  axes in the same single pass over the data (a two-pass scheme needs a partial-sum
  buffer shaped by the launch and a second kernel per output) and the contention is
  bounded by how many threads share an output element at once. The known weak case is
  a sum over the last axis of a long row (every lane of a warp hits one address); a
  row-per-block layout with a block reduction is the planned improvement.

Accumulators are float64 for float sums and int64 for integer/bool sums (as on the CPU);
the generated driver (``cuda_driver``) divides means and casts to the node's dtype on the
device.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...shapes import format_shape
from .nest import nest_kernel_source
from .signatures import decorator, kernel_signature
from .tiles import tiled, tiled_source
from ..cpu.driver import kernel_exprs
from ..codegen.lower import LoweredKernel
from ..nest import Nest
from ..printing.printer import helpers_used
from ..plan.regions import Kernel, KernelOutput, Plan
from ..codegen.templates import (LONG_POINT_DECORATOR, OPTIONS, POINT_DECORATOR, input_access,
                                 quoted, split_body_source, subscript_items)

BLOCK = 256            # shared-memory slots per block reduction: the largest block launched
DEVICE_DECORATOR = "@cuda.jit(device=True)"


@dataclass
class CudaOutput:
    """How a kernel writes one output: 'store', 'block' (sum over every axis: shared
    memory tree + one atomic per block) or 'atomic' (per-element atomic adds)."""

    out: KernelOutput
    mode: str

    @property
    def accumulates(self) -> bool:
        return self.mode != "store"


def output_mode(out: KernelOutput, rank: int) -> CudaOutput:
    if not out.is_reduction or not out.axes:
        return CudaOutput(out, "store")
    if set(out.axes) == set(range(rank)):
        return CudaOutput(out, "block")
    return CudaOutput(out, "atomic")


def accumulator_dtype(out: KernelOutput) -> str:
    """float64 for float sums, int64 for integer and bool sums (as the CPU target)."""
    return "float64" if out.source.dtype.kind == "f" else "int64"


def input_subscript(dims: tuple, it_dims: tuple, name: str) -> str:
    """The subscript reading one input (``dims``; symbolic lengths are strings) at the
    iteration index ``i0, i1, ..`` of a loop over ``it_dims``."""
    access = input_access(dims, it_dims)
    if not access.broadcast:
        return access.index
    idx = subscript_items(dims, it_dims,   # not the builtin min: see cuda_tiles._band_range
                          lambda p, j: f"(i{j} if i{j} < {name}.shape[{p}] else 0)")
    return "[" + ", ".join(idx) + "]"


def device_body_source(lowered: LoweredKernel, name: str) -> str:
    """The CPU target's scalar body text with the device decorator."""
    text = split_body_source(lowered, name)
    return text.replace(POINT_DECORATOR, DEVICE_DECORATOR).replace(
        LONG_POINT_DECORATOR, DEVICE_DECORATOR).replace(
        f"@numba.njit({OPTIONS})", DEVICE_DECORATOR)


def kernel_source(lowered: LoweredKernel, name: str, point: str) -> str:
    """The ``@cuda.jit`` kernel of one fused region (see the module docstring)."""
    kernel = lowered.kernel
    rank = kernel.rank
    ins = [f"x{k}" for k in range(len(kernel.inputs))]
    outs = [output_mode(o, rank) for o in kernel.outputs]
    out_names = [f"r{k}" for k in range(len(outs))]
    dims = [f"n{j}" for j in range(rank)]
    sig = kernel_signature(rank, [(i.dtype, len(i.shape)) for i in kernel.inputs],
                           [(accumulator_dtype(o.out) if o.accumulates else o.out.node.dtype,
                             rank) for o in outs])
    lines = [decorator(sig), f"def {name}({', '.join(dims + ins + out_names)}):"]
    source_index = {id(s): j for j, s in enumerate(lowered.sources)}
    values = [f"e{j}" for j in range(len(lowered.sources))]
    reads = ", ".join(n + input_subscript(i.dims, kernel.dims, n)
                      for n, i in zip(ins, kernel.inputs))
    call = f"{', '.join(values)}{',' if len(values) == 1 else ''} = {point}({reads})"
    if not rank:
        lines += ["    if cuda.grid(1) == 0:", f"        {call}"]
        for k, o in enumerate(outs):
            lines.append(f"        {out_names[k]}[()] = {values[source_index[id(o.out.source)]]}")
        return "\n".join(lines)
    lines += ["    tid = cuda.threadIdx.x", "    bd = cuda.blockDim.x",
              "    stride = cuda.gridDim.x * bd"]
    for k, o in enumerate(outs):
        if o.mode == "block":
            zero = "0.0" if accumulator_dtype(o.out) == "float64" else "0"
            lines.append(f"    s{k} = {zero}")
    lines.append(f"    for flat in range(cuda.blockIdx.x * bd + tid, {' * '.join(dims)}, stride):")
    lines += _split_index(rank)
    lines.append(f"        {call}")
    full = ", ".join(f"i{j}" for j in range(rank))
    for k, o in enumerate(outs):
        e = values[source_index[id(o.out.source)]]
        if o.mode == "store":
            lines.append(f"        {out_names[k]}[{full}] = {e}")
        elif o.mode == "block":
            lines.append(f"        s{k} += {e}")
        else:
            idx = _index(["0" if j in o.out.axes else f"i{j}" for j in range(rank)])
            lines.append(f"        cuda.atomic.add({out_names[k]}, {idx}, {e})")
    for k, o in enumerate(outs):
        if o.mode == "block":
            lines += _block_sum(k, out_names[k], rank, accumulator_dtype(o.out))
    return "\n".join(lines)


def _index(items: list) -> str:
    """An atomic's index: an integer for 1-D arrays (numba.cuda lowers a 1-tuple index
    of an int64 array wrongly), a tuple otherwise."""
    return items[0] if len(items) == 1 else "(" + ", ".join(items) + ")"


def _split_index(rank: int) -> list:
    """``flat`` -> ``i0, .., i<rank-1>`` (row-major)."""
    if rank == 1:
        return ["        i0 = flat"]
    lines = ["        q = flat"]
    for j in range(rank - 1, 0, -1):
        lines.append(f"        i{j} = q % n{j}")
        if j > 1:
            lines.append(f"        q = q // n{j}")
    lines.append("        i0 = q // n1")
    return lines


def _block_sum(k: int, out: str, rank: int, dtype: str) -> list:
    """Shared-memory tree over the block, then one atomic add by thread 0."""
    zeros = _index(["0"] * rank)
    return [f"    m{k} = cuda.shared.array(BLOCK, {dtype})",
            f"    m{k}[tid] = s{k}",
            "    cuda.syncthreads()",
            "    h = bd // 2",
            "    while h > 0:",
            "        if tid < h:",
            f"            m{k}[tid] += m{k}[tid + h]",
            "        cuda.syncthreads()",
            "        h //= 2",
            "    if tid == 0:",
            f"        cuda.atomic.add({out}, {zeros}, m{k}[0])"]


def module_source(plan: Plan, lowered: list, key: str) -> str:
    """The whole generated module: header, then per kernel its device body and kernel."""
    g = plan.graph
    ins = ", ".join(f"{quoted(p.name)} {p.dtype.name} {format_shape(p.shape)}"
                    for p in g.placeholders)
    outs = ", ".join("None" if o is None else quoted(o.name) for o in plan.outputs)
    head = [f"# symgrad generated · key {key[:16]} · target cuda",
            f"# inputs: {ins or '-'}   outputs: {outs or '-'}",
            "# structural steps run on the device: symgrad.compile.cuda.steps (CuPy)",
            "import numpy", "from numba import cuda, float64, from_dtype, int64", "",
            "from symgrad.compile.cuda.runtime import device_math as math",
            "from symgrad.compile.cuda.runtime import device_numpy as np",
            "from symgrad.compile.cuda.runtime import device_helper",
            "from symgrad.compile.cuda.runtime import kernel_jit as kernel_jit_",
            *[f"{alias} = device_helper({spec!r})"
              for alias, spec in helpers_used(kernel_exprs(lowered))], "",
            "f32 = numpy.float32", f"BLOCK = {BLOCK}", ""]
    parts = ["\n".join(head)]
    nested = {k.index for u in plan.units if isinstance(u, Nest) for k in u.kernels}
    for lk in lowered:   # a nest's kernels: only their point functions (nothing launches
        parts.append(_kernel_part(lk, lk.kernel.index not in nested))   # them flat)
    by_index = {lk.kernel.index: lk for lk in lowered}
    for unit in plan.units:
        if isinstance(unit, Nest):
            name = f"_n{unit.index}_cuda"
            text = tiled_source(unit, by_index, name) if tiled(unit) else \
                nest_kernel_source(unit, by_index, name)
            parts.append(f"# nest {unit.index}: kernels "
                         f"{', '.join(str(k.index) for k in unit.kernels)} in one kernel\n"
                         + text)
    return "\n\n\n".join(parts) + "\n"


def _kernel_part(lk: LoweredKernel, flat: bool = True) -> str:
    k: Kernel = lk.kernel
    names = ", ".join(sorted({n.op.name for n in k.nodes}))
    modes = [output_mode(o, k.rank) for o in k.outputs]
    outs = ", ".join(quoted(m.out.node.name) + (f" ({m.mode} sum over {m.out.axes})"
                                                 if m.accumulates else "") for m in modes)
    comment = (f"# kernel {k.index}: {len(k.nodes)} nodes ({names}) over shape "
               f"{format_shape(k.shape)} -> {outs}")
    point = f"_k{k.index}_point"
    body = comment + "\n" + device_body_source(lk, point)
    return "\n\n\n".join([body, kernel_source(lk, f"_k{k.index}_cuda", point)]) if flat \
        else body
