"""The CUDA runtime of ``sg.function(..., target="cuda")``: device arrays, transfers,
launch configuration, and the names its generated driver (``cuda_driver``) calls.

Imported only for ``target="cuda"`` (``import symgrad`` never imports numba.cuda).
Needs ``numba.cuda`` (numba's built-in one, or the ``numba-cuda`` package:
``pip install symgrad[cuda]``), a GPU, or ``NUMBA_ENABLE_CUDASIM=1`` (the simulator).

Arrays
------
``f(*arrays)`` takes numpy arrays (uploaded once each; results come back as numpy arrays)
or device arrays: numba device arrays and anything with ``__cuda_array_interface__``
(CuPy arrays, PyTorch CUDA tensors) or a CUDA DLPack capsule (JAX), taken without a
copy. When any argument is a device array the results stay on the device, in the
library of the first device argument (``results``: CuPy in, CuPy out; numba in, numba
out; PyTorch in, PyTorch out; simulated numba device arrays under the simulator) and
nothing goes through the host. Arguments are checked by the CPU target's own code
(``function.bind_runtime``'s ``check_``), before anything is launched: a device array is
checked through a zero-strided numpy stand-in of its shape and dtype, its
``__cuda_array_interface__`` must be complete, and (on a GPU) its memory must be device
memory: host memory dressed as device memory is refused (``device_memory_check``), never
launched on.

Units
-----
The driver ``run(*args)`` is generated source (``cuda_driver.CudaModuleWriter``, the CPU
``ModuleWriter``'s structure with device lines), built over the plan after
``cuda_remat.recompute_cheap_stores``; it calls the functions below.

* kernels: ``cuda_templates`` (grid-stride loop, block tree + atomic reductions), bound
  to their launch configuration once per size and stream (``bound_kernel``) and launched
  asynchronously;
* loop nests (``nest.Nest``, pair sums): rank 2 as tiled passes with the CPU nest's
  mask and symmetry rules (``cuda_tiles``), other ranks one kernel each (``cuda_nest``);
* structural steps (matmul, einsum, layout, indexing, scans, reductions, casts):
  ``cuda_steps.FORMS`` on the array module ``xp`` -- CuPy on a GPU (cuBLAS, CuPy's
  memory pool), numpy standing in for CuPy under the simulator;
* device memory: ``xp.empty``/``xp.zeros`` (CuPy's pool), handed to numba kernels
  through ``__cuda_array_interface__`` without a copy or a synchronisation; numba's own
  allocations come from the same pool (``cuda_memory``, numba's EMM plugin interface).

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
import weakref
from typing import Optional
from dataclasses import dataclass
from functools import lru_cache

import numpy

from ...extras import require
from .compat import ensure_numpy_names

ensure_numpy_names()         # before numba.cuda: numba-cuda 0.30.x needs numpy.row_stack
cuda = require("numba.cuda", extra="cuda", why="sg.function(target='cuda')")
from numba import config  # noqa: E402 - after the shim above

from ...errors import FeedError  # noqa: E402
from ...numba_internals import enabled as internals_enabled
from ...outputs import OutputMode
from ..cache import modules as cache
from .driver import CudaModuleWriter
from .memory import install as install_memory_manager
from .remat import recompute_cheap_stores
from .results import export as export_to, library_of, sparse_result as _sparse_result
from .steps import StepContext, run_step  # noqa: F401 - run_step: the driver's run_step_
from .templates import BLOCK
from ..codegen.lower import lower_kernel
from ..plan.regions import Step
from ..runtime.compiled import CompiledFunction, bind_runtime
from ..targets import CUDA

SIMULATOR = bool(config.ENABLE_CUDASIM)
POOLED = install_memory_manager(SIMULATOR)   # numba allocates from CuPy's pool (cuda_memory)
PREFERRED_THREADS = 256      # threads per block (capped by the device and cuda_templates.BLOCK)
WAVES = 2                    # grid = WAVES x (blocks resident on all SMs), for grid-stride loops
SIM_THREADS, SIM_BLOCKS = 32, 2
TILE_THREADS = 128           # threads per block of a tiled nest (cuda_tiles): rows per block
TILE_BLOCKS_PER_SM = 8       # a tiled nest splits the other axis until the grid has this many
SIM_CHUNKS = 2               # chunks of the other axis under the simulator (exercised in tests)


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

CUPY_WHY = ("sg.function(target='cuda'): its structural steps (matmul, layout, indexing, "
            "scans, reductions) run on the GPU with CuPy")


@lru_cache(maxsize=None)
def array_module() -> types.ModuleType:
    """``xp``: CuPy on a GPU; numpy under the simulator (where device memory is host memory,
    so numpy stands in for CuPy and every device step still runs)."""
    if SIMULATOR:
        return numpy
    return require("cupy", extra="cuda", why=CUPY_WHY)


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
    """A caller's device array as an ``xp`` array, without a copy (FeedError: an
    incomplete ``__cuda_array_interface__``, or host memory dressed as device memory)."""
    if SIMULATOR:
        if getattr(value, "__cuda_ndarray__", False):
            return getattr(value, "_ary", value)
        return _simulated(value)
    cupy = array_module()
    if isinstance(value, cupy.ndarray):
        if value.size:
            device_memory_check(int(value.data.ptr), memory_type)
        return value
    if hasattr(value, "__dlpack__"):     # PyTorch, JAX: stream-ordered, no host sync
        return cupy.from_dlpack(value)   # (CuPy refuses a capsule that is not on a GPU)
    pointer = interface(value)["data"][0]   # checked before CuPy reads the pointer
    if pointer:
        device_memory_check(int(pointer), memory_type)
    return cupy.asarray(value)           # __cuda_array_interface__ (numba device arrays)


INTERFACE_KEYS = ("shape", "typestr", "data", "version")
HOST_MEMORY = {0: "unregistered (pageable) host memory"}   # cudaMemoryType -> words


def interface(value) -> dict:
    """``value.__cuda_array_interface__``, checked to hold ``INTERFACE_KEYS``."""
    desc = value.__cuda_array_interface__
    missing = [k for k in INTERFACE_KEYS if not isinstance(desc, dict) or k not in desc]
    if missing:
        raise FeedError(f"a {type(value).__name__} passed as a device array has a "
                        f"__cuda_array_interface__ without {', '.join(map(repr, missing))} "
                        f"(needs {', '.join(INTERFACE_KEYS)})")
    return desc


class _HostView:
    """numpy's ``__array_interface__`` over a CUDA array interface (simulator only: there
    device memory is host memory, so the pointer is a host pointer)."""

    def __init__(self, desc: dict):
        keep = ("shape", "typestr", "data", "strides")
        self.__array_interface__ = {**{k: desc.get(k) for k in keep}, "version": 3}


def _simulated(value):
    """A foreign device array under the simulator, read through its interface."""
    if not hasattr(value, "__cuda_array_interface__"):
        raise FeedError(f"a {type(value).__name__} passed as a device array: under the "
                        "CUDA simulator only numba's (simulated) device arrays and objects "
                        "with __cuda_array_interface__ are device arrays")
    return numpy.asarray(_HostView(interface(value)))


def memory_type(pointer: int):
    """The CUDA memory type of ``pointer`` (cudaPointerGetAttributes: 0 unregistered
    host, 1 registered host, 2 device, 3 managed; None when the runtime cannot say). A
    runtime that fails on unregistered host memory (CUDA < 11) answers 0."""
    runtime = array_module().cuda.runtime
    query = getattr(runtime, "pointerGetAttributes", None)
    if query is None:
        return None
    try:
        attributes = query(pointer)
    except getattr(runtime, "CUDARuntimeError", RuntimeError):   # cudaErrorInvalidValue
        return 0
    kind = getattr(attributes, "type", getattr(attributes, "memoryType", None))
    return None if kind is None or kind < 0 else int(kind)


def device_memory_check(pointer: int, query) -> None:
    """FeedError when ``query(pointer)`` (``memory_type``) says host memory a kernel
    cannot read: a launch on it fails with CUDA_ERROR_ILLEGAL_ADDRESS and leaves the
    context unusable for the rest of the process."""
    kind = query(pointer)
    if kind in HOST_MEMORY:
        raise FeedError(f"its data pointer {pointer:#x} is {HOST_MEMORY[kind]}, not device "
                        "memory: pass a numpy array (symgrad uploads it) or an array "
                        "allocated on the GPU")


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


def download_for_check(array) -> numpy.ndarray:
    """Device -> host for an index check's error message (a 'check' transfer)."""
    return to_host(array, "check")


def exported(array, library: str = "numba"):
    """A device-mode result in ``library`` (``results``): the CuPy array itself, a numba
    device array, a PyTorch tensor...; a simulator device array under the simulator."""
    if SIMULATOR:
        return _fake_array()(array)
    return export_to(array, library, kernel_argument)


def sparse_result(layout, values):
    """A device call's sparse output (``results.sparse_result``): CuPy and PyTorch keep it
    on the device; numba device arrays give a scipy ``csr_array`` (one 'output')."""
    def download(v):
        return to_host(as_device_array(v))

    def uploaded():
        TRANSFERS["constant"] += 1
    return _sparse_result(layout, values, download, uploaded)


def step_context(xp) -> StepContext:
    """The context of one call's structural steps (its deferred index checks)."""
    return StepContext(xp, download_for_check)


def raise_checks(xp, ctx: StepContext) -> None:
    """The deferred index checks of a call: one read of all their flags."""
    if not ctx.checks:
        return
    if bool(to_host(xp.stack([flag for flag, _ in ctx.checks]).any(), "check")):
        for flag, raise_error in ctx.checks:
            if bool(to_host(flag, "check")):
                raise_error(download_for_check)


@lru_cache(maxsize=None)
def configuration(size: int) -> tuple:
    """(blocks, threads) of a launch over ``size`` elements on this device (cached)."""
    return launch_config(size, device_limits(), BLOCK)


class _SimulatorLaunch:
    """The simulator configures a kernel object in place (``kernel[config]`` returns the
    kernel itself): a cached launch configures it again at each call. It ignores kernel
    signatures, so each launch checks its arguments against the kernel's
    (``kernel_jit``): what a GPU's specialized launch would take without looking."""

    def __init__(self, kernel, config: tuple):
        self.kernel, self.config = kernel, config
        held = signature_of(kernel)
        self.argtypes = held.argtypes if held is not None else None

    def __call__(self, *args):
        if self.argtypes is not None:
            check_arguments(self.kernel, self.argtypes, args)
        return self.kernel[self.config](*args)


SIGNED: collections.Counter = collections.Counter()
"""Kernels built with an explicit signature (``kernel_jit``), by kind: 'compiled' (a
specialized numba dispatcher, GPU) or 'checked' (simulator: launches check arguments)."""


@dataclass(frozen=True)
class KernelSignature:
    text: str        # ``cuda_signatures.kernel_signature``'s text
    argtypes: Optional[tuple]  # its numba argument types (None: internals off, unchecked)


SIGNATURES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
"""kernel -> its ``KernelSignature``: a side table, because a real numba-cuda dispatcher
(0.30) does not take new attributes."""


_UNWEAKABLE: dict = {}   # id -> (kernel, signature) for a kernel no weak reference takes


def signature_of(kernel):
    """The ``KernelSignature`` a generated kernel was built with (None: not ours)."""
    try:
        return SIGNATURES.get(kernel)
    except TypeError:
        held = _UNWEAKABLE.get(id(kernel))
        return held[1] if held is not None and held[0] is kernel else None


def _hold(kernel, held: KernelSignature) -> None:
    try:
        SIGNATURES[kernel] = held
    except TypeError:
        _UNWEAKABLE[id(kernel)] = (kernel, held)


def kernel_jit(signature: str, cache: bool):
    """The decorator of a generated kernel (``cuda_signatures``). On a GPU:
    ``cuda.jit(signature)``, compiled when the module loads (inside ``sg.function``) and
    specialized, so a launch takes its one overload without typing its arguments. Under
    the simulator (which ignores signatures) every launch checks its arguments against
    the parsed signature. Either way ``SIGNATURES`` holds it."""
    argtypes = None                  # numba.core.sigutils is an internal (numba_internals)
    if internals_enabled():
        from numba.core import sigutils
        argtypes = tuple(sigutils.normalize_signature(signature)[0])
    held = KernelSignature(signature, argtypes)

    def compiled(fn):
        if SIMULATOR:
            kernel = cuda.jit(fn)
            SIGNED["checked"] += 1
        elif not _gpu_present():   # a toolkit without a GPU (cuda_ptx_check): lazily
            kernel = cuda.jit(cache=cache)(fn)
        else:
            kernel = cuda.jit(signature, cache=cache)(fn)
            SIGNED["compiled"] += 1
        _hold(kernel, held)
        return kernel
    return compiled


@lru_cache(maxsize=None)
def _gpu_present() -> bool:
    return bool(cuda.is_available())


def check_arguments(kernel, argtypes: tuple, args: tuple) -> None:
    """A launch's arguments against the kernel's signature: integers for integers, arrays
    of the signature's dtype and rank, C-contiguous where it says C (RuntimeError)."""
    from numba.np.numpy_support import as_dtype
    if len(args) != len(argtypes):
        raise RuntimeError(f"{kernel.__name__}: {len(args)} arguments for {argtypes}")
    for k, (value, ty) in enumerate(zip(args, argtypes)):
        if not hasattr(ty, "ndim"):
            ok = isinstance(value, (int, numpy.integer)) and not isinstance(value, bool)
        else:
            a = numpy.asarray(getattr(value, "_ary", value))
            ok = a.dtype == as_dtype(ty.dtype) and a.ndim == ty.ndim and \
                (ty.layout != "C" or a.flags.c_contiguous)
        if not ok:
            got = type(value).__name__ if not hasattr(ty, "ndim") else \
                f"{a.dtype} {a.ndim}-d{' C' if a.flags.c_contiguous else ''}"
            raise RuntimeError(f"{kernel.__name__}: argument {k} is {got}, its signature "
                               f"says {ty} (cuda_signatures)")


def _bound(kernel, config: tuple):
    """``kernel`` configured; a specialized kernel (one signature) as its compiled
    overload's ``launch`` bound to the configuration, so a call neither types nor looks
    up anything."""
    if SIMULATOR:
        return _SimulatorLaunch(kernel, config)
    configured = kernel[config]
    overloads = getattr(kernel, "overloads", {})
    if not internals_enabled() or not getattr(kernel, "specialized", False) or \
            len(overloads) != 1:
        return configured
    compiled = next(iter(overloads.values()))
    try:
        grid, block = configured.griddim, configured.blockdim
        stream, shared = configured.stream, configured.sharedmem
    except AttributeError:   # another numba-cuda layout: the configured dispatcher
        return configured

    def launch(*args):
        compiled.launch(args, grid, block, stream, shared)
    return launch


@lru_cache(maxsize=None)
def tile_configuration(own: int, other: int) -> tuple:
    """(blocks, threads) of a tiled nest pass (``cuda_tiles``) whose threads own ``own``
    indexes and walk ``other`` in tiles: row blocks of ``threads`` times chunks of the
    other axis, so that small ``own`` still fills every SM (each chunk adds one atomic per
    row sum and row)."""
    limits = device_limits()
    if limits.simulator:
        threads = SIM_THREADS
        chunks = max(1, min(SIM_CHUNKS, -(-other // threads)))
    else:
        threads = max(limits.warp, min(TILE_THREADS, limits.max_threads, BLOCK))
        rows = max(1, -(-own // threads))
        want = TILE_BLOCKS_PER_SM * limits.sm_count
        chunks = max(1, min(-(-want // rows), -(-other // threads)))
    return max(1, -(-own // threads)) * chunks, threads


def bound_tiles(kernel, own: int, other: int, stream):
    """A tiled nest pass bound to its configuration (``tile_configuration``) and stream."""
    return _bound(kernel, (*tile_configuration(own, other), stream))


def bound_kernel(kernel, size: int, stream):
    """``kernel`` bound to the launch configuration of ``size`` elements and to ``stream``;
    the generated driver caches the result per (kernel, size, stream)."""
    return _bound(kernel, (*configuration(size), stream))


# --- building a cuda function --------------------------------------------------------------

CUDA_CODEGEN_VERSION = "cuda-9"     # layout: symgrad.compile.cuda.runtime


def device_fallback(reference, single: bool):
    """``reference_`` of a cuda driver: a call that breaks an assumption of the plan (two
    unknown lengths it took as equal are not) runs the reference interpreter on the host;
    device arguments come down once each and the results go back up, in the library of
    the first device argument."""
    def run(args: tuple):
        devices = [a for a in args if is_device_array(a)]
        host = [to_host(as_device_array(a), "fallback") if is_device_array(a) else a
                for a in args]
        out = reference(tuple(host))
        if not devices:
            return out
        library = library_of(devices[0])

        def back(o):
            return None if o is None else exported(to_device(o, "fallback"), library)
        return back(out) if single else [back(o) for o in out]
    return run


def bind_device(module, plan, inputs: list) -> None:
    """Bind what the generated driver reads but cannot print: the nodes of its steps;
    ``as_device_(k, value)``, which takes argument ``k`` as a device array and names it
    in its errors; and ``UPLOAD_``, which its first call runs: the constants it reads on
    the device, uploaded once per module as ``K<i>`` ('constant' transfers; not at
    compile time, so that a module compiles where no device is at hand)."""
    ns = module.__dict__
    nodes = {n.index: n for n in plan.graph.order}
    for unit in plan.units:
        if isinstance(unit, Step):
            ns[f"N{unit.node.index}"] = unit.node
    missing = [i for i in ns["DEVICE_CONSTANTS_"] if f"K{i}" not in ns]
    placeholders = plan.graph.placeholders
    context = f"f({', '.join(p.name for p in inputs)})"

    def as_device_(k: int, value):
        try:
            return as_device_array(value)
        except FeedError as exc:
            raise FeedError(f"{ns.get('label_', context)}: argument "
                            f"'{placeholders[k].name}': {exc}") from None

    def upload() -> None:
        for index in missing:
            ns[f"K{index}"] = to_device(nodes[index].value, "constant")
        ns["UPLOAD_"] = None

    ns["as_device_"] = as_device_
    ns["UPLOAD_"] = upload if missing else None


def compile_cuda(inputs: list, outputs: list, plan, key: str, mode: OutputMode):
    """The CompiledFunction of ``sg.function(..., target="cuda")`` for a built plan: its
    module (kernels and the generated driver, ``cuda_driver``) from the cache or built."""
    from . import tiles   # the triangle switch changes the kernels: part of the key
    key = hashlib.sha256(f"{key}\n{CUDA_CODEGEN_VERSION}\ntriangle {tiles.TRIANGLE}".encode()
                         ).hexdigest()
    plan = recompute_cheap_stores(plan)

    def build() -> str:
        writer = CudaModuleWriter(plan, [lower_kernel(k) for k in plan.kernels], key)
        writer.single = mode.single
        return writer.source()

    module, source, built = cache.load_or_build(key, build)
    bind_runtime(module, plan, inputs)
    bind_device(module, plan, inputs)
    # a class per function whose __call__ is the generated driver itself: no extra frame
    cls = type("CompiledFunction", (CompiledFunction,), {"__call__": staticmethod(module.run)})
    f = cls(inputs, outputs, CUDA.name, plan, module, source, key, mode)
    module.__dict__.update(reference_=device_fallback(f._reference, mode.single),
                           compile_error_=f._compile_error)
    f.cache_hit = not built
    return f
