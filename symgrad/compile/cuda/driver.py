"""The generated driver of ``sg.function(..., target="cuda")``: ``run(*args)`` written as
straight-line Python by the CPU's ``ModuleWriter``, with the device forms of its lines.

The CPU writer decides the structure (keyword binding, arity, argument checks, the guards
of unknown lengths, early shape checks, one line group per unit in plan order, the
returned list, and the ``Fallback``/``NumbaError`` handlers); this subclass decides how
each line looks on the device:

* an argument: a host array is checked by the CPU target's ``check_`` and uploaded once
  before its first device use (``upload_``); a device array (``__cuda_array_interface__``,
  DLPack, numba) is taken as an ``xp`` array without a copy (``as_device_``, which
  refuses host memory dressed as device memory) and checked through a zero-strided
  stand-in of its shape and dtype; the first one's library (``library_``) is ``dev_``;
* an allocation: ``xp.empty`` / ``xp.zeros`` (CuPy's memory pool on a GPU);
* a kernel or a loop nest: ``launcher_(name, elements, stream)`` binds the kernel to its
  launch configuration once per size and stream (cached in ``LAUNCHERS_``), then one
  asynchronous launch with the arrays passed through ``karg_`` (no copy, no sync);
* a structural step: ``run_step_(ctx_, N<i>, ...)``, the op's device form
  (``cuda_steps.FORMS``: CuPy/cuBLAS on a GPU, numpy standing in under the simulator);
* the return: device results (``export_``) when any argument was a device array, in the
  library of the first one (``dev_``: 'cupy', 'numba', 'torch', ...; cuda/results.py),
  else one download per result (``download_``), after one read of the deferred index
  checks.

Nothing synchronises the host between launches; the only waits are the downloads and the
read of the index-check flags. Names the source cannot print (constants on the device,
nodes of steps, the fallback) are bound by ``cuda_runtime.compile_cuda``.

>>> import symgrad as sg
>>> from symgrad.compile.plan.fold import fold_graph
>>> from symgrad.compile.codegen.lower import lower_kernel
>>> from symgrad.compile.plan.regions import build_plan
>>> x = sg.placeholder("x", shape=(4, 3))
>>> y = sg.reduce_sum(sg.sin(sg.transpose(x, name="xT")) * 2.0)
>>> plan = build_plan(fold_graph([y], [x]), scatter=False)
>>> writer = CudaModuleWriter(plan, [lower_kernel(k) for k in plan.kernels], "0" * 64)
>>> writer.single = True
>>> print(writer.driver().split("\\n", 1)[1])   # doctest: +ELLIPSIS
    try:
        if kwargs:
            args = bind_(args, kwargs)
        if len(args) != 1:
            arity_(args)
        v0, = args
        dev_ = None
        if type(v0) is ndarray and v0.dtype is D0 and v0.shape == (4, 3):
            h0 = v0
        elif is_device_(v0):
            dev_ = dev_ or library_(v0)
            v0 = as_device_(0, v0)
            check_(0, stand_in_(v0))
            h0 = None
        else:
            h0 = v0 = check_(0, v0)
        xp = xp_module_()
        if UPLOAD_:   # the first call: the constants, once (cuda_runtime.bind_device)
            UPLOAD_()
        st_ = stream_()
        ctx_ = step_context_(xp)
        if h0 is not None:
            v0 = upload_(h0)
        v1 = run_step_(ctx_, N1, v0)  # transpose 'xT' (device step: CuPy)
        # kernel 0: device kernel over (3, 4)
        sh0 = (3, 4)
        o0_0 = xp.zeros((1, 1), numpy.float64)
        (LAUNCHERS_.get(('_k0_cuda', 12, st_)) or launcher_('_k0_cuda', 12, st_))(3, 4, ...)
        v5 = o0_0.reshape(())
        if ctx_.checks:
            raise_checks_(xp, ctx_)
        return (export_(v5, dev_) if dev_ else download_(v5))
    except Fallback_:
        return reference_(args)
    except NumbaError_ as exc:
        raise compile_error_(exc) from None
"""

from __future__ import annotations

import math

import numpy

from ...shapes import format_shape, is_fully_known
from .nest import device_nest_outputs, nest_inputs
from .tiles import column_pass, device_nest_inputs, tiled
from .templates import BLOCK, accumulator_dtype, module_source, output_mode
from ..cpu.driver import ModuleWriter, _tuple
from ..nest import Nest
from ..plan.oprules import FRESH_STEPS, PLACEHOLDER, S
from ..plan.regions import Kernel, Plan, Step
from ..targets import CUDA
from ..codegen.templates import quoted

__all__ = ["CudaModuleWriter", "DRIVER_HEAD", "reduced_shape"]

DRIVER_HEAD = """\
# --- the driver: run(*args), straight-line device code (symgrad.compile.cuda.driver) -----
from symgrad.compile.cuda.runtime import (
    array_module as xp_module_, exported as export_, library_of as library_,
    is_device_array as is_device_, kernel_argument as karg_, launch_stream as stream_,
    raise_checks as raise_checks_, run_step as run_step_, stand_in as stand_in_,
    step_context as step_context_, to_device as upload_, to_host as download_,
    bound_kernel as bound_kernel_, bound_tiles as bound_tiles_)

ndarray = numpy.ndarray
LAUNCHERS_ = {}   # (kernel name, elements, stream) -> the kernel bound to its configuration


def launcher_(name, size, stream):
    LAUNCHERS_[name, size, stream] = bound = bound_kernel_(globals()[name], size, stream)
    return bound


def tile_launcher_(name, own, other, stream):
    LAUNCHERS_[name, own, other, stream] = bound = bound_tiles_(globals()[name], own, other,
                                                                stream)
    return bound"""


class CudaModuleWriter(ModuleWriter):
    """Writes a cuda function's module: ``cuda_templates``' kernels, then the driver."""

    single = False

    def __init__(self, plan: Plan, lowered: list, key: str):
        # not ModuleWriter.__init__: no host buffer reuse, no module-call aliases (the
        # kernels' scalar text must stay the CPU target's, see cuda_templates)
        self.plan, self.lowered, self.target, self.key = plan, lowered, CUDA.name, key
        self.math, self.parallel, self.pooled = CUDA.math("libm"), False, False
        self.reuse: dict = {}
        self.lines: list = []
        self.uploaded: set = set()     # placeholders already on the device in the driver
        self.device_constants: set = set()

    def source(self) -> str:
        driver = self.driver()
        consts = f"DEVICE_CONSTANTS_ = {tuple(sorted(self.device_constants))!r}" \
            "   # bound as K<i> by cuda_runtime.bind_device"
        return "\n\n\n".join([module_source(self.plan, self.lowered, self.key).rstrip("\n"),
                               DRIVER_HEAD, consts, driver]) + "\n"

    def has_fast_path(self) -> bool:
        return False

    # --- arguments ------------------------------------------------------------------
    def check_arguments(self) -> None:
        g = self.plan.graph
        self.emit("dev_ = None")
        for k, p in enumerate(g.placeholders):
            v, h = f"v{p.index}", f"h{p.index}"
            if is_fully_known(p.shape):
                self.emit(f"if type({v}) is ndarray and {v}.dtype is D{k} and "
                          f"{v}.shape == {_tuple(map(str, p.shape))}:")
                self.emit(f"{h} = {v}", 2)
                self.emit(f"elif is_device_({v}):")
            else:
                self.emit(f"if is_device_({v}):")
            self.emit(f"dev_ = dev_ or library_({v})", 2)
            self.emit(f"{v} = as_device_({k}, {v})", 2)
            self.emit(f"check_({k}, stand_in_({v}))", 2)
            self.emit(f"{h} = None", 2)
            self.emit("else:")
            self.emit(f"{h} = {v} = check_({k}, {v})", 2)
        self.emit("xp = xp_module_()")
        self.emit("if UPLOAD_:   # the first call: the constants, once (cuda_runtime.bind_device)")
        self.emit("UPLOAD_()", 2)
        if any(not isinstance(u, Step) for u in self.plan.units):
            self.emit("st_ = stream_()")
        if self.has_steps():
            self.emit("ctx_ = step_context_(xp)")

    def has_steps(self) -> bool:
        return any(isinstance(u, Step) for u in self.plan.units)

    def value_of(self, node) -> str:
        """A node's device value (constants: uploaded once per module, ``K<i>``)."""
        return f"K{node.index}" if node.is_const else f"v{node.index}"

    def device(self, node, depth: int = 1) -> str:
        """``value_of(node)``, after the line uploading it when it is a host argument read
        for the first time (the driver has no branches, so once is enough)."""
        if node.is_const:
            self.device_constants.add(node.index)
        elif node.op is PLACEHOLDER and node.index not in self.uploaded:
            self.uploaded.add(node.index)
            self.emit(f"if h{node.index} is not None:", depth)
            self.emit(f"v{node.index} = upload_(h{node.index})", depth + 1)
        return self.value_of(node)

    # --- units ----------------------------------------------------------------------
    def kernel_call(self, k: Kernel, need_shape: bool) -> None:
        i, rank = k.index, k.rank
        ins = [self.device(node) for node in k.inputs]
        self.emit(f"# kernel {i}: {CUDA.kernel_place} over {format_shape(k.shape)}")
        if is_fully_known(k.shape):
            self.emit(f"sh{i} = {_tuple(map(str, k.shape))}")
        elif need_shape:
            self.emit(self.shape_line(k))
        sh = f"sh{i}"
        names = []
        for j, mode in enumerate(output_mode(o, rank) for o in k.outputs):
            o, name = mode.out, f"o{i}_{j}"
            names.append(name)
            if mode.accumulates:
                keep = _tuple("1" if a in o.axes else f"{sh}[{a}]" for a in range(rank))
                self.emit(f"{name} = xp.zeros({keep}, numpy.{accumulator_dtype(o)})")
            else:
                self.emit(f"{name} = xp.empty({sh}, numpy.{o.node.dtype.name})")
        if is_fully_known(k.shape):
            dims, size = [str(d) for d in k.shape], str(math.prod(k.shape))
        else:
            dims = [f"{sh}[{j}]" for j in range(rank)]
            size = " * ".join(dims) or "1"
        self.launch(f"_k{i}_cuda", size, dims + [f"karg_({v})" for v in ins + names])
        for j, mode in enumerate(output_mode(o, rank) for o in k.outputs):
            buffer = numpy.dtype(accumulator_dtype(mode.out)) if mode.accumulates else \
                mode.out.node.dtype
            self.finish(mode.out, f"o{i}_{j}", buffer, [f"{sh}[{a}]" for a in range(rank)],
                        self.reduced_shape(k, mode.out))

    def launch(self, name: str, size: str, args: list) -> None:
        key = f"({name!r}, {size}, st_)"
        self.emit(f"(LAUNCHERS_.get({key}) or launcher_({key[1:-1]}))({', '.join(args)})")

    def launch_tiles(self, name: str, sh: tuple, args: list) -> None:
        key = f"({name!r}, {sh[0]}, {sh[1]}, st_)"
        self.emit(f"(LAUNCHERS_.get({key}) or tile_launcher_({key[1:-1]}))({', '.join(args)})")

    def finish(self, out, name: str, buffer, dims: list, shape: str) -> None:
        """``v<node> = `` a kernel's output buffer: stored as is; a sum divided (means),
        cast to the node's dtype and reshaped to the node's shape, on the device."""
        v = f"v{out.node.index}"
        if not out.is_reduction:
            self.emit(f"{v} = {name}")
            return
        expr, dtype = name, numpy.dtype(buffer)
        if out.mean:
            count = " * ".join(dims[a] for a in out.axes) or "1"
            expr, dtype = f"({expr} / ({count}))", (numpy.zeros((), dtype) / 1).dtype
        if dtype != out.node.dtype:
            expr = f"{expr}.astype(numpy.{out.node.dtype.name})"
        self.emit(f"{v} = {expr}.reshape({shape})")

    def nest_call(self, nest: Nest) -> None:
        r = nest.rank
        lowered = {lk.kernel.index: lk for lk in self.lowered}
        ins = [self.device(node) for node in
               (device_nest_inputs(nest, lowered) if tiled(nest) else nest_inputs(nest))]
        self.emit(f"# nest {nest.index}: kernels "
                  f"{', '.join(str(k.index) for k in nest.kernels)} in one device kernel")
        outs = device_nest_outputs(nest)
        names = []
        for o in outs:
            shape = tuple(o.kernel.shape)
            names.append(f"o{o.kernel.index}_{o.j}")
            if o.out.is_reduction:
                keep = tuple(1 if a in o.out.axes else d for a, d in enumerate(shape))
                self.emit(f"{names[-1]} = xp.zeros({keep}, numpy.float64)")
            else:
                self.emit(f"{names[-1]} = xp.empty({shape}, numpy.{o.out.node.dtype.name})")
        sh = tuple(nest.outer.shape)
        rows = max(1, math.prod(sh[:r - 1]))
        args = [str(d) for d in sh] + [f"karg_({v})" for v in ins + names]
        if tiled(nest):   # cuda_tiles: own-axis row blocks x chunks of the other axis
            self.launch_tiles(f"_n{nest.index}_cuda", sh, args)
            if column_pass(nest, lowered):
                self.launch_tiles(f"_n{nest.index}_cuda_cols", sh[::-1], args)
        else:
            self.launch(f"_n{nest.index}_cuda", str(rows * BLOCK), args)
        for o, name in zip(outs, names):
            shape = tuple(o.kernel.shape)
            buffer = numpy.float64 if o.out.is_reduction else o.out.node.dtype
            self.finish(o.out, name, buffer, [str(d) for d in shape],
                        repr(reduced_shape(o.out, shape)))

    def step(self, step: Step) -> None:
        node = step.node
        ins = [self.device(i) for i in node.inputs]
        self.emit(f"v{node.index} = run_step_(ctx_, N{node.index}, {', '.join(ins)})  "
                  f"# {node.op.name} {quoted(node.name)} ({CUDA.step_place(node)})")

    # --- results --------------------------------------------------------------------
    def fresh_values(self) -> set:
        fresh = {o.node.index for k in self.plan.kernels for o in k.outputs}
        return fresh | {u.node.index for u in self.plan.units
                        if isinstance(u, Step) and u.node.op in FRESH_STEPS}

    def emit_return(self) -> None:
        if self.has_steps():
            self.emit("if ctx_.checks:")
            self.emit("raise_checks_(xp, ctx_)", 2)
        for o in self.plan.outputs:   # host arguments returned on the device: uploaded
            if o is not None and o.op is PLACEHOLDER and o.index not in self.uploaded:
                self.emit("if dev_:")
                self.device(o, 2)
        fresh, seen = self.fresh_values(), set()
        on_device, on_host = [], []
        for o in self.plan.outputs:
            if o is None:
                on_device.append("None")
                on_host.append("None")
                continue
            v = self.device(o)
            new = o.index in fresh and o.index not in seen
            seen.add(o.index)
            on_device.append(f"export_({v}, dev_)" if new else
                             f"export_(xp.array({v}, copy=True), dev_)")
            on_host.append(f"numpy.array(C{o.index}, copy=True)" if o.is_const else
                           f"numpy.array(h{o.index}, copy=True)" if o.op is PLACEHOLDER else
                           f"download_({v})")
        if self.single:
            self.emit(f"return ({on_device[0]} if dev_ else {on_host[0]})")
        else:
            self.emit("if dev_:")
            self.emit(f"return [{', '.join(on_device)}]", 2)
            self.emit(f"return [{', '.join(on_host)}]")


def reduced_shape(out, sh: tuple) -> tuple:
    """The shape of a fused reduction's node, from the static iteration shape ``sh``."""
    node, rank = out.node, len(sh)
    if not out.is_reduction:
        return tuple(sh)
    if node.op is S.unbroadcast:
        lead = rank - len(node.shape)
        return tuple(1 if a in out.axes else sh[a] for a in range(lead, rank))
    if node.attrs.get("keepdims"):
        return tuple(1 if a in out.axes else sh[a] for a in range(rank))
    return tuple(sh[a] for a in range(rank) if a not in out.axes)
