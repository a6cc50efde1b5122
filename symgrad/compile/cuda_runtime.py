"""The CUDA runtime of ``sg.function(..., target="cuda")``: device arrays, launch
configuration and the driver that runs a plan's units on the device.

Imported only for ``target="cuda"`` (``import symgrad`` never imports numba.cuda).
Needs ``numba.cuda`` (numba's built-in one, or the ``numba-cuda`` package:
``pip install symgrad[cuda]``), a GPU, or ``NUMBA_ENABLE_CUDASIM=1`` (the simulator).

Arrays
------
``f(*arrays)`` takes numpy arrays (copied to the device; results come back as numpy
arrays) or device arrays: numba device arrays and any object with
``__cuda_array_interface__`` (CuPy arrays, PyTorch CUDA tensors), wrapped with
``cuda.as_cuda_array`` without a copy. When any argument is a device array the results
are numba device arrays and no value of the graph goes through the host except for the
structural steps below. Arguments are checked by the CPU target's own code
(``function.bind_runtime``'s ``check_``), before anything is launched: a device array
is checked through a zero-strided numpy stand-in of its shape and dtype.

Units
-----
* kernels: ``cuda_templates`` (grid-stride loop, block tree + atomic reductions);
* 2-D ``matmul`` of two arrays of one float dtype: ``_matmul``, a tiled shared-memory
  kernel (``TILE`` x ``TILE`` tiles);
* every other structural step (getitem, transpose, reshape, broadcast_like, other
  matmuls, reduce_max/min/prod, scatter, ...) is a **host round trip**: its inputs are
  copied to the host, it runs with the same numpy forward the CPU target uses, and its
  result is copied to the device when a kernel reads it. These steps are usually small
  or views; device versions are the next step for graphs where they are large.

Launch configuration comes from ``cuda.get_current_device()`` (MULTIPROCESSOR_COUNT,
MAX_THREADS_PER_BLOCK, WARP_SIZE). Under the simulator (which runs every GPU thread as a
Python thread) the grid is capped at ``SIM_BLOCKS`` blocks of ``SIM_THREADS`` threads.
"""

from __future__ import annotations

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

from ..feeds import bind_keywords
from ..shapes import is_fully_known
from . import cache
from .runtime import CompiledFunction, Fallback, bind_runtime
from .cuda_templates import BLOCK, accumulator_dtype, module_source, output_mode
from .lower import lower_kernel
from .oprules import PLACEHOLDER, S
from .regions import Kernel

SIMULATOR = bool(config.ENABLE_CUDASIM)
PREFERRED_THREADS = 256      # threads per block (capped by the device and cuda_templates.BLOCK)
WAVES = 2                    # grid = WAVES x (blocks resident on all SMs), for grid-stride loops
SIM_THREADS, SIM_BLOCKS = 32, 2
TILE = 8 if SIMULATOR else 16


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


# --- device arrays -------------------------------------------------------------------------

def is_device_array(value) -> bool:
    """A numba device array (or the simulator's) or anything with __cuda_array_interface__."""
    return bool(getattr(value, "__cuda_ndarray__", False)) or \
        hasattr(value, "__cuda_array_interface__")


def as_device_array(value):
    if getattr(value, "__cuda_ndarray__", False):
        return value
    return cuda.as_cuda_array(value)


def stand_in(array) -> numpy.ndarray:
    """A zero-strided numpy array with a device array's shape and dtype (no copy), so the
    CPU target's argument checks can run on it."""
    shape = tuple(array.shape)
    return numpy.lib.stride_tricks.as_strided(numpy.zeros((), numpy.dtype(array.dtype)),
                                              shape=shape, strides=(0,) * len(shape))


def to_device(array):
    return cuda.to_device(numpy.asarray(array, order="C"))


def to_host(array) -> numpy.ndarray:
    return array.copy_to_host()


# --- kernels of the runtime itself ---------------------------------------------------------

@cuda.jit(cache=True)
def _divide(acc, out, count):
    """out = acc / count, cast to out's dtype (flat arrays): a mean's last step."""
    for i in range(cuda.grid(1), acc.shape[0], cuda.gridsize(1)):
        out[i] = acc[i] / count


@cuda.jit(cache=True)
def _cast(acc, out):
    """out = acc cast to out's dtype (flat arrays): a float64/int64 sum's last step."""
    for i in range(cuda.grid(1), acc.shape[0], cuda.gridsize(1)):
        out[i] = acc[i]


@cuda.jit(device=True)
def _matmul_tiles(a, b, c, zero, sa, sb):
    """c = a @ b, one TILE x TILE block of c per block of (TILE, TILE) threads; the
    k dimension is walked in tiles staged in the shared arrays ``sa``, ``sb``."""
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    acc = zero
    for t in range((a.shape[1] + TILE - 1) // TILE):
        k = t * TILE
        sa[ty, tx] = a[row, k + tx] if row < a.shape[0] and k + tx < a.shape[1] else zero
        sb[ty, tx] = b[k + ty, col] if k + ty < b.shape[0] and col < b.shape[1] else zero
        cuda.syncthreads()
        for j in range(TILE):
            acc += sa[ty, j] * sb[j, tx]
        cuda.syncthreads()
    if row < c.shape[0] and col < c.shape[1]:
        c[row, col] = acc


@cuda.jit(cache=True)
def _matmul32(a, b, c, zero):
    _matmul_tiles(a, b, c, zero, cuda.shared.array((TILE, TILE), float32),
                  cuda.shared.array((TILE, TILE), float32))


@cuda.jit(cache=True)
def _matmul64(a, b, c, zero):
    _matmul_tiles(a, b, c, zero, cuda.shared.array((TILE, TILE), float64),
                  cuda.shared.array((TILE, TILE), float64))


def device_matmul(a, b, dtype):
    """``a @ b`` for 2-D device arrays of one float dtype (float32 or float64)."""
    dtype = numpy.dtype(dtype)
    c = cuda.device_array((a.shape[0], b.shape[1]), dtype)
    grid = (max(1, -(-b.shape[1] // TILE)), max(1, -(-a.shape[0] // TILE)))
    kernel = _matmul32 if dtype == numpy.float32 else _matmul64
    kernel[grid, (TILE, TILE)](a, b, c, dtype.type(0))
    return c


def finish(acc, dtype, count: int):
    """A reduction's accumulator divided by ``count`` (means) and cast to ``dtype``."""
    dtype = numpy.dtype(dtype)
    if count is None and dtype == numpy.dtype(acc.dtype):
        return acc
    out = cuda.device_array(acc.shape, dtype)
    flat_acc, flat_out = acc.reshape(acc.size), out.reshape(out.size)
    blocks, threads = launch_config(acc.size, device_limits(), 1 << 30)
    if count is None:
        _cast[blocks, threads](flat_acc, flat_out)
    else:
        _divide[blocks, threads](flat_acc, flat_out, float(count))
    return out


# --- the driver ----------------------------------------------------------------------------

CUDA_CODEGEN_VERSION = "cuda-1"


class _Values:
    """The values of one call, by node index: on the host, on the device, or both."""

    def __init__(self, const_device: dict):
        self.host: dict = {}
        self.dev: dict = {}
        self.const_device = const_device

    def on_host(self, node):
        if node.is_const:
            return node.value
        if node.index not in self.host:
            self.host[node.index] = to_host(self.dev[node.index])
        return self.host[node.index]

    def on_device(self, node):
        if node.index in self.dev:
            return self.dev[node.index]
        if node.is_const:
            if node.index not in self.const_device:
                self.const_device[node.index] = to_device(node.value)
            return self.const_device[node.index]
        self.dev[node.index] = to_device(self.host[node.index])
        return self.dev[node.index]

    def shape(self, node) -> tuple:
        if node.is_const:
            return node.value.shape
        if node.index in self.dev:
            return tuple(self.dev[node.index].shape)
        return self.host[node.index].shape


class CudaDriver:
    """Runs a plan on the device: ``run(*args)`` is the compiled function's body."""

    def __init__(self, module, plan, single: bool):
        self.module, self.plan, self.single = module, plan, single
        self.placeholders = plan.graph.placeholders
        self.kernels = {k.index: getattr(module, f"_k{k.index}_cuda") for k in plan.kernels}
        self.early = [k for k in plan.kernels if not is_fully_known(k.shape) and
                      all(i.op is PLACEHOLDER or i.is_const for i in k.inputs)]
        self.const_device: dict = {}
        self.reference = None        # set by compile_cuda: the reference interpreter
        self.compile_error = None    # and CompiledFunction._compile_error
        self.guards = [(k, j, d) for k, p in enumerate(self.placeholders)
                       for j, d in enumerate(p.dims) if isinstance(d, str)]

    def run(self, *args, **kwargs):
        try:
            if kwargs:
                args = bind_keywords([p.tensor for p in self.placeholders], args, kwargs)
            return self._run(args)
        except Fallback:
            return self.fallback(args)
        except NumbaError as exc:
            raise self.compile_error(exc) from None

    def fallback(self, args: tuple):
        """A call that breaks an assumption of the plan (two unknown lengths it took as
        equal are not) runs the reference interpreter, on the host."""
        device_mode = any(is_device_array(a) for a in args)
        host = [to_host(as_device_array(a)) if is_device_array(a) else a for a in args]
        out = self.reference(tuple(host))
        if not device_mode:
            return out
        if self.single:
            return None if out is None else to_device(out)
        return [None if o is None else to_device(o) for o in out]

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
        values = _Values(self.const_device)
        device_mode = False
        for k, (p, a) in enumerate(zip(self.placeholders, args)):
            if is_device_array(a):
                device_mode = True
                d = as_device_array(a)
                m.check_(k, stand_in(d))
                values.dev[p.index] = d
            else:
                values.host[p.index] = m.check_(k, a)
        self.check_lengths(values)
        shapes = {k.index: self.iteration_shape(k, values) for k in self.early}
        for unit in self.plan.units:
            if isinstance(unit, Kernel):
                sh = shapes.get(unit.index) or self.iteration_shape(unit, values)
                self.launch(unit, sh, values)
            else:
                self.step(unit.node, values)
        return self.results(values, device_mode)

    def iteration_shape(self, kernel, values: _Values) -> tuple:
        if is_fully_known(kernel.shape):
            return tuple(kernel.shape)
        return self.module.bshape_(kernel.index, *[values.shape(i) for i in kernel.inputs])

    def launch(self, kernel, sh: tuple, values: _Values) -> None:
        rank = len(sh)
        modes = [output_mode(o, rank) for o in kernel.outputs]
        outs = []
        for mode in modes:
            o = mode.out
            if mode.accumulates:
                keep = tuple(1 if a in o.axes else sh[a] for a in range(rank))
                outs.append(cuda.to_device(numpy.zeros(keep, accumulator_dtype(o))))
            else:
                outs.append(cuda.device_array(sh, o.node.dtype))
        ins = [values.on_device(i) for i in kernel.inputs]
        size = math.prod(sh)
        blocks, threads = launch_config(size, device_limits(), BLOCK)
        self.kernels[kernel.index][blocks, threads](*sh, *ins, *outs)
        for mode, out in zip(modes, outs):
            o = mode.out
            if not o.is_reduction:
                values.dev[o.node.index] = out
                continue
            count = math.prod(sh[a] for a in o.axes) if o.mean else None
            out = finish(out, o.node.dtype, count)
            values.dev[o.node.index] = out.reshape(_reduced_shape(o, sh))

    def step(self, node, values: _Values) -> None:
        a = node.inputs[0] if node.inputs else None
        if node.op is S.matmul and node.dtype.name in ("float32", "float64") and \
                all(len(i.shape) == 2 and i.dtype == node.dtype for i in node.inputs):
            values.dev[node.index] = device_matmul(values.on_device(a),
                                                   values.on_device(node.inputs[1]), node.dtype)
            return
        run = getattr(self.module, f"S{node.index}")
        values.host[node.index] = run(*[values.on_host(i) for i in node.inputs])

    def results(self, values: _Values, device_mode: bool):
        fresh = {o.node.index for k in self.plan.kernels for o in k.outputs}
        fresh |= {u.node.index for u in self.plan.units if not isinstance(u, Kernel)}
        items, seen = [], set()
        for o in self.plan.outputs:
            if o is None:
                items.append(None)
                continue
            new = o.index in fresh and o.index not in seen
            seen.add(o.index)
            if device_mode:
                d = values.on_device(o)
                items.append(d if new and o.index in values.dev and not o.is_const
                             else to_device(values.on_host(o)))
            elif o.index in values.dev and not o.is_const:
                items.append(to_host(values.dev[o.index]))
            else:
                items.append(numpy.array(values.on_host(o), copy=True))
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


def compile_cuda(inputs: list, outputs: list, plan, key: str, single: bool):
    """The CompiledFunction of ``sg.function(..., target="cuda")`` for a built plan."""
    key = hashlib.sha256(f"{key}\n{CUDA_CODEGEN_VERSION}".encode()).hexdigest()

    def build() -> str:
        return module_source(plan, [lower_kernel(k) for k in plan.kernels], key)

    module, source, _ = cache.load_or_build(key, build)
    bind_runtime(module, plan, inputs)
    driver = CudaDriver(module, plan, single)
    module.run = driver.run
    cls = type("CompiledFunction", (CompiledFunction,), {"__call__": staticmethod(driver.run)})
    f = cls(inputs, outputs, "cuda", plan, module, source, key, single)
    driver.reference, driver.compile_error = f._reference, f._compile_error
    return f
