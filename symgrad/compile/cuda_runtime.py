"""The CUDA runtime of ``sg.function(..., target="cuda")``: device arrays, launch
configuration and the driver that runs a plan's units on the device.

Imported only for ``target="cuda"`` (``import symgrad`` never imports numba.cuda).
Needs ``numba.cuda`` (numba's built-in one, or the ``numba-cuda`` package:
``pip install symgrad[cuda]``), a GPU, or ``NUMBA_ENABLE_CUDASIM=1`` (the simulator).

Arrays
------
``f(*arrays)`` takes numpy arrays (uploaded once each; results come back as numpy arrays)
or device arrays: numba device arrays and anything with ``__cuda_array_interface__``
(CuPy arrays, PyTorch CUDA tensors) or a CUDA DLPack capsule (JAX), taken without a
copy. When any argument is a device array the results stay on the device: CuPy arrays
on a GPU (simulator device arrays under the simulator) and nothing goes through the
host. Arguments are checked by the CPU target's own code (``function.bind_runtime``'s
``check_``), before anything is launched: a device array is checked through a
zero-strided numpy stand-in of its shape and dtype.

Units
-----
* kernels: ``cuda_templates`` (grid-stride loop, block tree + atomic reductions), bound
  to their launch configuration once and launched asynchronously;
* loop nests (``nest.Nest``, pair sums): one kernel each, ``cuda_nest``;
* structural steps (matmul, einsum, layout, indexing, scans, reductions, casts):
  ``cuda_steps.FORMS`` on the array module ``xp`` -- CuPy on a GPU (cuBLAS, CuPy's
  memory pool), numpy standing in for CuPy under the simulator;
* device memory: ``xp.empty``/``xp.zeros`` (CuPy's pool), handed to numba kernels
  through ``__cuda_array_interface__`` without a copy or a synchronisation.

Every host<->device copy goes through ``to_device``/``to_host`` and is counted in
``TRANSFERS``: host arguments once each, results once each, constants once per
function, and one read of the deferred index-check flags for graphs that gather.

Launch configuration comes from ``cuda.get_current_device()`` (MULTIPROCESSOR_COUNT,
MAX_THREADS_PER_BLOCK, WARP_SIZE). Under the simulator (which runs every GPU thread as a
Python thread) the grid is capped at ``SIM_BLOCKS`` blocks of ``SIM_THREADS`` threads.
"""

from __future__ import annotations

import collections
import hashlib
import importlib
import math
import types
from dataclasses import dataclass
from functools import lru_cache

import numpy

from .cuda_compat import ensure_numpy_names

ensure_numpy_names()         # before numba.cuda: numba-cuda 0.30.x needs numpy.row_stack
from numba import config, cuda, float32, float64  # noqa: E402 - after the shim above
from numba.core.errors import NumbaError

from ..outputs import OutputMode
from ..shapes import is_fully_known
from . import cache
from .runtime import CompiledFunction, Fallback, bind_runtime
from .cuda_templates import BLOCK, accumulator_dtype, module_source, output_mode
from .lower import lower_kernel
from .cuda_nest import device_nest_outputs, nest_inputs
from .cuda_steps import StepContext, run_step
from .oprules import FRESH_STEPS, PLACEHOLDER, S
from .nest import Nest
from .regions import Kernel, Step

SIMULATOR = bool(config.ENABLE_CUDASIM)
PREFERRED_THREADS = 256      # threads per block (capped by the device and cuda_templates.BLOCK)
WAVES = 2                    # grid = WAVES x (blocks resident on all SMs), for grid-stride loops
SIM_THREADS, SIM_BLOCKS = 32, 2


# --- what the generated module imports as ``math``, ``np`` and the helpers -----------------

def _sim_math() -> types.ModuleType:
    """IEEE scalar math for the simulator: numpy ufuncs (no exceptions, dtype kept)."""
    ns = types.ModuleType("symgrad_cuda_sim_math")
    for name in ("sin", "cos", "tan", "sinh", "cosh", "tanh", "exp", "log", "expm1",
                 "log1p", "sqrt"):
        setattr(ns, name, getattr(numpy, name))
    for name, np_name in (("asin", "arcsin"), ("acos", "arccos"), ("atan", "arctan"),
                          ("asinh", "arcsinh"), ("acosh", "arccosh"), ("atanh", "arctanh"),
                          ("atan2", "arctan2")):
        setattr(ns, name, getattr(numpy, np_name))
    ns.erf = _sim_erf
    ns.nan, ns.inf = math.nan, math.inf
    return ns


def _sim_erf(x):
    return numpy.asarray(x).dtype.type(math.erf(x))


def _device_numpy() -> types.ModuleType:
    """``np.floor``/``np.ceil`` for device code: ``math.floor`` keeps the float type on a
    GPU (numba.cuda types it float32 -> float32, float64 -> float64)."""
    ns = types.ModuleType("symgrad_cuda_numpy")

    def floor(x):
        return math.floor(x)

    def ceil(x):
        return math.ceil(x)

    ns.floor = cuda.jit(device=True)(floor)
    ns.ceil = cuda.jit(device=True)(ceil)
    return ns


device_math = _sim_math() if SIMULATOR else math
device_numpy = numpy if SIMULATOR else _device_numpy()


@lru_cache(maxsize=None)
def device_helper(spec: str):
    """The njit scalar helper ``"package.module:function"`` (a scalar function's
    ``numba_helper``) compiled for the device: the same code object, with ``math`` and
    ``np`` bound to their device versions. Generated modules call this for each helper
    their kernels use."""
    module, _, name = spec.partition(":")
    fn = getattr(importlib.import_module(module), name)
    py = getattr(fn, "py_func", fn)
    glb = {**py.__globals__, "math": device_math, "np": device_numpy}
    return cuda.jit(device=True)(types.FunctionType(py.__code__, glb, py.__name__))


# --- launch configuration ------------------------------------------------------------------

@dataclass(frozen=True)
class DeviceLimits:
    sm_count: int
    max_threads: int
    warp: int
    threads_per_sm: int
    simulator: bool


@lru_cache(maxsize=None)
def device_limits() -> DeviceLimits:
    """The current device's properties; simulator (or missing attributes): fallbacks."""
    get = getattr(cuda, "get_current_device", None)
    device = None
    if get is not None and not SIMULATOR:
        device = get()

    def attr(name: str, default: int) -> int:
        value = getattr(device, name, None)
        return int(value) if isinstance(value, int) and value > 0 else default

    return DeviceLimits(attr("MULTIPROCESSOR_COUNT", 1), attr("MAX_THREADS_PER_BLOCK", 1024),
                        attr("WARP_SIZE", 32), attr("MAX_THREADS_PER_MULTI_PROCESSOR", 2048),
                        SIMULATOR or device is None)


def launch_config(size: int, limits: DeviceLimits, block_cap: int) -> tuple:
    """(blocks, threads) for a grid-stride loop over ``size`` elements; threads is a power
    of two (the block tree reduction halves it) and a multiple of the warp size."""
    if limits.simulator:
        threads = SIM_THREADS
        return max(1, min(SIM_BLOCKS, -(-size // threads))), threads
    cap = min(PREFERRED_THREADS, limits.max_threads, block_cap)
    threads = max(limits.warp, 1 << (cap.bit_length() - 1))
    resident = limits.sm_count * max(1, limits.threads_per_sm // threads)
    return max(1, min(-(-size // threads), WAVES * resident)), threads


# --- device arrays: CuPy on a GPU, numpy standing in for it under the simulator ------------

TRANSFERS: collections.Counter = collections.Counter()
"""Host<->device copies made by symgrad, by kind: 'input' (a host argument uploaded),
'output' (a result downloaded), 'constant' (a graph constant, once per function), 'check'
(the flags of deferred index checks, one read per call that has any) and 'fallback' (a
call run by the reference interpreter). Every copy goes through ``to_device``/``to_host``;
tests/test_cuda_transfers.py counts them."""

CUPY_MISSING = ("sg.function(target='cuda') runs its structural steps (matmul, layout, "
                "indexing, scans, reductions) on the GPU with CuPy, which is not installed: "
                "pip install 'symgrad[cuda]' (or cupy-cuda12x)")


@lru_cache(maxsize=None)
def array_module() -> types.ModuleType:
    """``xp``: CuPy on a GPU; numpy under the simulator (where device memory is host memory,
    so numpy stands in for CuPy and every device step still runs)."""
    if SIMULATOR:
        return numpy
    try:
        import cupy
    except ImportError as exc:
        raise ImportError(CUPY_MISSING) from exc
    return cupy


def _fake_array():
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
    return FakeCUDAArray


def is_device_array(value) -> bool:
    """A numba device array (or the simulator's), anything with __cuda_array_interface__
    (CuPy, PyTorch CUDA tensors, numba), or a DLPack object on a CUDA device (JAX)."""
    if getattr(value, "__cuda_ndarray__", False) or hasattr(value, "__cuda_array_interface__"):
        return True
    device = getattr(value, "__dlpack_device__", None)
    if device is None or isinstance(value, numpy.ndarray):
        return False
    try:
        return device()[0] in (2, 3, 13)    # kDLCUDA, kDLCUDAHost, kDLCUDAManaged
    except Exception:  # noqa: BLE001 - a __dlpack_device__ that cannot answer: host
        return False


def as_device_array(value):
    """A caller's device array as an ``xp`` array, without a copy."""
    if SIMULATOR:
        d = value if getattr(value, "__cuda_ndarray__", False) else cuda.as_cuda_array(value)
        return getattr(d, "_ary", d)
    cupy = array_module()
    if isinstance(value, cupy.ndarray):
        return value
    if hasattr(value, "__dlpack__"):     # PyTorch, JAX: stream-ordered, no host sync
        return cupy.from_dlpack(value)
    return cupy.asarray(value)           # __cuda_array_interface__ (numba device arrays)


def stand_in(array) -> numpy.ndarray:
    """A zero-strided numpy array with a device array's shape and dtype (no copy), so the
    CPU target's argument checks can run on it."""
    shape = tuple(array.shape)
    return numpy.lib.stride_tricks.as_strided(numpy.zeros((), numpy.dtype(array.dtype)),
                                              shape=shape, strides=(0,) * len(shape))


def to_device(array, kind: str = "input"):
    """Host -> device (counted in TRANSFERS[kind])."""
    TRANSFERS[kind] += 1
    if SIMULATOR:
        return numpy.array(array, order="C", copy=True)
    return array_module().asarray(numpy.asarray(array, order="C"))


def to_host(array, kind: str = "output") -> numpy.ndarray:
    """Device -> host (counted in TRANSFERS[kind])."""
    TRANSFERS[kind] += 1
    if SIMULATOR:
        return numpy.array(array, copy=True)
    return array_module().asnumpy(array)


def kernel_argument(array):
    """An ``xp`` array as a numba.cuda kernel argument, without a copy and (on a GPU)
    without the stream synchronisation numba does by default for foreign arrays."""
    if SIMULATOR:
        return _fake_array()(array)
    desc = dict(array.__cuda_array_interface__)
    desc.pop("stream", None)      # ordered by launch_stream: no per-array stream object
    return cuda.from_cuda_array_interface(desc, owner=array, sync=False)


@lru_cache(maxsize=None)
def _external_stream(ptr: int):
    return cuda.external_stream(ptr)


def launch_stream():
    """The stream kernels are launched on: CuPy's current stream (so kernels and CuPy
    steps stay ordered without a synchronisation); 0 (the default) under the simulator."""
    if SIMULATOR:
        return 0
    ptr = array_module().cuda.get_current_stream().ptr
    return 0 if ptr == 0 else _external_stream(ptr)


def _download_for_check(array) -> numpy.ndarray:
    return to_host(array, "check")


def exported(array):
    """A device-mode result: the CuPy array itself (GPU), a simulator device array."""
    return _fake_array()(array) if SIMULATOR else array


def finish(xp, acc, dtype, count):
    """A reduction's accumulator divided by ``count`` (means) and cast to ``dtype``."""
    dtype = numpy.dtype(dtype)
    if count is not None:
        acc = acc / count
    return acc if acc.dtype == dtype else acc.astype(dtype)


# --- the driver ----------------------------------------------------------------------------

CUDA_CODEGEN_VERSION = "cuda-3"


class _Values:
    """The device values of one call, by node index (``xp`` arrays)."""

    def __init__(self, xp, const_device: dict):
        self.xp = xp
        self.dev: dict = {}
        self.host: dict = {}            # host arguments not uploaded yet
        self.const_device = const_device

    def on_device(self, node):
        if node.index in self.dev:
            return self.dev[node.index]
        if node.is_const:
            if node.index not in self.const_device:
                self.const_device[node.index] = to_device(node.value, "constant")
            return self.const_device[node.index]
        self.dev[node.index] = to_device(self.host.pop(node.index), "input")
        return self.dev[node.index]

    def shape(self, node) -> tuple:
        if node.is_const:
            return numpy.shape(node.value)
        if node.index in self.dev:
            return tuple(self.dev[node.index].shape)
        return numpy.shape(self.host[node.index])


class CudaDriver:
    """Runs a plan on the device: ``run(*args)`` is the compiled function's body.

    Kernels are numba.cuda kernels; structural steps are ``cuda_steps.FORMS`` on ``xp``;
    nothing returns to the host before the results (host arguments: one upload each,
    when first read; results: one download each, or none when they stay on the device).
    Launches are asynchronous: the only synchronisation is the results' download (or the
    read of deferred index checks)."""

    def __init__(self, module, plan, single: bool):
        self.module, self.plan, self.single = module, plan, single
        self.placeholders = plan.graph.placeholders
        self.kernels = {k.index: getattr(module, f"_k{k.index}_cuda") for k in plan.kernels}
        self.nests = {u.index: getattr(module, f"_n{u.index}_cuda") for u in plan.units
                      if isinstance(u, Nest)}
        self.early = [k for k in plan.kernels if not is_fully_known(k.shape) and
                      all(i.op is PLACEHOLDER or i.is_const for i in k.inputs)]
        self.const_device: dict = {}
        self.bound: dict = {}          # (kernel index, blocks, threads) -> configured kernel
        self.configs: dict = {}        # size -> (blocks, threads)
        self.reference = None        # set by compile_cuda: the reference interpreter
        self.compile_error = None    # and CompiledFunction._compile_error
        self.guards = [(k, j, d) for k, p in enumerate(self.placeholders)
                       for j, d in enumerate(p.dims) if isinstance(d, str)]
        fresh = {o.node.index for k in plan.kernels for o in k.outputs}
        fresh |= {u.node.index for u in plan.units
                  if isinstance(u, Step) and u.node.op in FRESH_STEPS}
        self.fresh = fresh

    def run(self, *args, **kwargs):
        try:
            if kwargs:
                args = self.module.bind_(args, kwargs)     # names the function (runtime)
            return self._run(args)
        except Fallback:
            return self.fallback(args)
        except NumbaError as exc:
            raise self.compile_error(exc) from None

    def fallback(self, args: tuple):
        """A call that breaks an assumption of the plan (two unknown lengths it took as
        equal are not) runs the reference interpreter, on the host."""
        device_mode = any(is_device_array(a) for a in args)
        host = [to_host(as_device_array(a), "fallback") if is_device_array(a) else a
                for a in args]
        out = self.reference(tuple(host))
        if not device_mode:
            return out

        def back(o):
            return None if o is None else exported(to_device(o, "fallback"))
        return back(out) if self.single else [back(o) for o in out]

    def check_lengths(self, values: "_Values") -> None:
        """Unknown lengths that the plan took as equal must be equal in this call."""
        first: dict = {}
        for k, j, d in self.guards:
            n = values.shape(self.placeholders[k])[j]
            if first.setdefault(d, n) != n:
                raise Fallback()

    def _run(self, args: tuple):
        m = self.module
        if len(args) != len(self.placeholders):
            m.arity_(args)
        xp = array_module()
        values = _Values(xp, self.const_device)
        device_mode = False
        for k, (p, a) in enumerate(zip(self.placeholders, args)):
            if is_device_array(a):
                device_mode = True
                d = as_device_array(a)
                m.check_(k, stand_in(d))
                values.dev[p.index] = d
            else:
                values.host[p.index] = m.check_(k, a)
        host_args = dict(values.host)
        self.check_lengths(values)
        shapes = {k.index: self.iteration_shape(k, values) for k in self.early}
        ctx = StepContext(xp, _download_for_check)
        for unit in self.plan.units:
            if isinstance(unit, Kernel):
                sh = shapes.get(unit.index) or self.iteration_shape(unit, values)
                self.launch(unit, sh, values)
            elif isinstance(unit, Nest):
                self.launch_nest(unit, values)
            else:
                node = unit.node
                values.dev[node.index] = run_step(
                    ctx, node, *[values.on_device(i) for i in node.inputs])
        self.raise_checks(xp, ctx)
        return self.results(values, host_args, device_mode)

    @staticmethod
    def raise_checks(xp, ctx: StepContext) -> None:
        """The deferred index checks of this call: one read of all their flags."""
        if not ctx.checks:
            return
        if bool(to_host(xp.stack([flag for flag, _ in ctx.checks]).any(), "check")):
            for flag, raise_error in ctx.checks:
                if bool(to_host(flag, "check")):
                    raise_error(_download_for_check)

    def iteration_shape(self, kernel, values: _Values) -> tuple:
        if is_fully_known(kernel.shape):
            return tuple(kernel.shape)
        return self.module.bshape_(kernel.index, *[values.shape(i) for i in kernel.inputs])

    def launcher(self, kernel, size: int, nest: bool = False):
        """The kernel bound to its launch configuration and stream (both cached)."""
        config = self.configs.get(size)
        if config is None:
            config = self.configs[size] = launch_config(size, device_limits(), BLOCK)
        stream = launch_stream()
        key = (kernel.index, nest, *config, stream)
        bound = self.bound.get(key)
        if bound is None or SIMULATOR:   # the simulator's kernel[...] configures itself
            fn = self.nests[kernel.index] if nest else self.kernels[kernel.index]
            bound = self.bound[key] = fn[(*config, stream)]
        return bound

    def launch_nest(self, nest, values: _Values) -> None:
        """One kernel for a whole loop nest (``cuda_nest``): rows over blocks."""
        xp, r = values.xp, nest.rank
        outs = device_nest_outputs(nest)
        arrays = []
        for o in outs:
            shape = tuple(o.kernel.shape)
            if not o.out.is_reduction:
                arrays.append(xp.empty(shape, o.out.node.dtype))
            else:
                arrays.append(xp.zeros(tuple(1 if a in o.out.axes else shape[a]
                                             for a in range(len(shape))), "float64"))
        sh = tuple(nest.outer.shape)
        ins = [kernel_argument(values.on_device(i)) for i in nest_inputs(nest)]
        rows = math.prod(sh[:r - 1])
        launch = self.launcher(nest, max(1, rows) * BLOCK, nest=True)
        launch(*sh, *ins, *[kernel_argument(a) for a in arrays])
        for o, a in zip(outs, arrays):
            node = o.out.node
            if not o.out.is_reduction:
                values.dev[node.index] = a
                continue
            shape = tuple(o.kernel.shape)
            count = math.prod(shape[k] for k in o.out.axes) if o.out.mean else None
            values.dev[node.index] = finish(xp, a, node.dtype, count).reshape(
                _reduced_shape(o.out, shape))

    def launch(self, kernel, sh: tuple, values: _Values) -> None:
        xp, rank = values.xp, len(sh)
        modes = [output_mode(o, rank) for o in kernel.outputs]
        outs = []
        for mode in modes:
            o = mode.out
            if mode.accumulates:
                keep = tuple(1 if a in o.axes else sh[a] for a in range(rank))
                outs.append(xp.zeros(keep, accumulator_dtype(o)))
            else:
                outs.append(xp.empty(sh, o.node.dtype))
        ins = [kernel_argument(values.on_device(i)) for i in kernel.inputs]
        self.launcher(kernel, math.prod(sh))(*sh, *ins, *[kernel_argument(o) for o in outs])
        for mode, out in zip(modes, outs):
            o = mode.out
            if not o.is_reduction:
                values.dev[o.node.index] = out
                continue
            count = math.prod(sh[a] for a in o.axes) if o.mean else None
            out = finish(xp, out, o.node.dtype, count)
            values.dev[o.node.index] = out.reshape(_reduced_shape(o, sh))

    def results(self, values: _Values, host_args: dict, device_mode: bool):
        xp = values.xp
        items, seen = [], set()
        for o in self.plan.outputs:
            if o is None:
                items.append(None)
                continue
            new = o.index in self.fresh and o.index not in seen
            seen.add(o.index)
            if device_mode:
                d = values.on_device(o)
                items.append(exported(d if new else xp.array(d, copy=True)))
            elif o.is_const:
                items.append(numpy.array(o.value, copy=True))
            elif o.index in host_args:
                items.append(numpy.array(host_args[o.index], copy=True))
            else:
                items.append(to_host(values.dev[o.index], "output"))
        return items[0] if self.single else items


def _reduced_shape(o, sh: tuple) -> tuple:
    """The shape of a fused reduction's node, from the iteration shape ``sh``."""
    node, rank = o.node, len(sh)
    if node.op is S.unbroadcast:
        lead = rank - len(node.shape)
        return tuple(1 if a in o.axes else sh[a] for a in range(lead, rank))
    if node.attrs.get("keepdims"):
        return tuple(1 if a in o.axes else sh[a] for a in range(rank))
    return tuple(sh[a] for a in range(rank) if a not in o.axes)


def compile_cuda(inputs: list, outputs: list, plan, key: str, mode: OutputMode):
    """The CompiledFunction of ``sg.function(..., target="cuda")`` for a built plan."""
    key = hashlib.sha256(f"{key}\n{CUDA_CODEGEN_VERSION}".encode()).hexdigest()

    def build() -> str:
        return module_source(plan, [lower_kernel(k) for k in plan.kernels], key)

    module, source, _ = cache.load_or_build(key, build)
    bind_runtime(module, plan, inputs)
    driver = CudaDriver(module, plan, mode.single)
    module.run = driver.run
    cls = type("CompiledFunction", (CompiledFunction,), {"__call__": staticmethod(driver.run)})
    f = cls(inputs, outputs, "cuda", plan, module, source, key, mode)
    driver.reference, driver.compile_error = f._reference, f._compile_error
    return f
