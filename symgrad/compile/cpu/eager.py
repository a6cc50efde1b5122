"""Eager compilation: every numba function the generated driver calls is compiled (or
loaded from numba's cache) inside ``sg.function``, so the first call is an ordinary call.

The signatures are exactly those of the driver's calls: the driver runs once on dummy
arguments (zeros of each placeholder's dtype and rank, unknown lengths 3) in a copy of the
module's namespace where each numba function is replaced by a recorder that compiles the
argument types it receives and returns without running the loop. Both branches of a
size-dependent choice between a serial and a parallel loop are taken (one dry run each),
and an all-scalar function also runs its Python-float fast path. A dry run that fails (a
step that cannot run on dummy data) leaves the remaining functions to compile at their first
call. The ``_libm`` twins of loops that check sin/cos ranges are not compiled here: they run
only when a sin/cos argument is >= 2**30 (or not finite), and compile at that first use
(about a quarter of a cold compile saved; such a call is then the one that compiles).

>>> import numpy as np, symgrad as sg
>>> x = sg.placeholder("x", shape=(None,))
>>> f = sg.function([x], sg.reduce_sum(sg.sin(x)))
>>> loop = f.module._k0_cpu
>>> before = len(loop.signatures)
>>> _ = f(np.ones(5))
>>> before >= 1 and len(loop.signatures) == before
True
"""

from __future__ import annotations

import logging
import threading
import types
from contextlib import contextmanager
from typing import Callable, Iterator, Optional

import numpy as np

from ...numba_internals import enabled as internals_enabled
from ..kernel_lib.deferred import Deferred, jit_disabled, materialize, numba_imported, pending
from .native_kernels import kernels as native_kernels
from .native_loops import loops as native_loops
from .numba_startup import defer_blas_check
from .phantom import Stop, dry_namespace, is_phantom, phantom
from ..loops.state import dry_running, is_deferred

logger = logging.getLogger("symgrad")

UNKNOWN_LENGTH = 3   # a length >= 3: strided views keep their general layout
DUMMY_BYTES = 1 << 24
"""Placeholders of more bytes than this in all (unknown lengths 3) take phantom arrays in the
dry run (``phantom.py``: the static shapes, no memory); smaller ones take zeros, and the
driver's numpy steps run on them for real."""


def dispatchers(module: types.ModuleType) -> dict:
    """{name: numba dispatcher} of the functions the module defines (unwrapping the
    parallel-launch lock)."""
    if not numba_imported():
        return {}
    from numba.extending import is_jitted

    found = {}
    for name, value in vars(module).items():
        if isinstance(value, Deferred):         # not made yet (kernel_lib/deferred.py)
            continue
        if not is_jitted(value):
            value = getattr(value, "__wrapped__", None)   # guard_parallel's lock
        if is_jitted(value) and value.py_func.__module__ == module.__name__:
            found[name] = value
    return found


def _recorder(dispatcher, cold: bool = True) -> Callable:
    from numba import typeof

    def record(*args):
        if cold:         # numba's first compile: its registries without scipy.linalg
            defer_blas_check()   # (a cache hit links without them: numba_cache)
        dispatcher.compile(tuple(typeof(a.view(np.ndarray) if is_phantom(a) else a)
                                 for a in args))
        return 0         # a loop that checks sin/cos ranges: no element failed
    return record


def _scalar_runner(dispatcher, cold: bool = True) -> Callable:
    def run(*args):      # scalar bodies run: their results are the next one's arguments
        if cold and not dispatcher.signatures:
            defer_blas_check()
        return dispatcher(*args)
    return run


def _shape(p) -> tuple:
    return tuple(UNKNOWN_LENGTH if d is None else d for d in p.shape)


def phantom_run(inputs: list) -> bool:
    """Whether the dry run takes phantoms: the placeholders' zeros would exceed
    ``DUMMY_BYTES``."""
    total = 0
    for p in inputs:
        total += int(np.prod(_shape(p), dtype=object)) * np.dtype(p.dtype).itemsize
    return total > DUMMY_BYTES


def dummy_arguments(inputs: list, scalars: bool, phantoms: bool = False) -> list:
    """One value per placeholder: zeros of its dtype and rank (Python floats when
    ``scalars``, for the fast path of all-scalar functions; phantoms of its static shape,
    which hold no memory, when ``phantoms``).

    >>> import symgrad as sg
    >>> [a.shape for a in dummy_arguments([sg.placeholder("x", shape=(2**40,))], False, True)]
    [(1099511627776,)]
    """
    if scalars:
        return [0.5 for _ in inputs]
    make = phantom if phantoms else np.zeros
    return [make(_shape(p), p.dtype) for p in inputs]


_TYPING = threading.local()     # this thread's typing memo while symgrad compiles
_INSTALLED: list = []
_INSTALL_LOCK = threading.Lock()


def _install_memo() -> None:
    """Route ``BaseFunction.get_call_type`` through ``_memo_call_type`` (once per process).
    Only a thread inside ``memoised_typing`` sees a memo: every other thread's typing,
    a user's own numba compile included, calls numba's function unchanged."""
    from numba.core import types as nt
    from numba.core.types.functions import BaseFunction

    with _INSTALL_LOCK:
        if _INSTALLED:
            return
        original = BaseFunction.get_call_type

        def get_call_type(self, context, args, kws):
            memo = getattr(_TYPING, "memo", None)
            if memo is None or kws or not all(
                    isinstance(a, (nt.Number, nt.Boolean)) and not isinstance(a, nt.Literal)
                    for a in args):
                return original(self, context, args, kws)
            key = (self, context, args)
            if key not in memo:
                memo[key] = original(self, context, args, kws)
            return memo[key]

        get_call_type.symgrad_original_ = original
        BaseFunction.get_call_type = get_call_type
        _INSTALLED.append(original)


@contextmanager
def memoised_typing() -> Iterator[None]:
    """numba types each scalar operation of a body by trying every template of its
    function (``operator.mul`` has dozens), again for every occurrence. While generated
    kernels compile in this thread, the signature of a builtin function on plain number
    and boolean types is remembered per typing context (templates of such calls are pure):
    about a third of numba's time on bodies of thousands of statements. Off (numba's own
    typing) with ``SYMGRAD_NUMBA_INTERNALS=0``."""
    if not internals_enabled():
        yield
        return
    _install_memo()
    outer = getattr(_TYPING, "memo", None)
    _TYPING.memo = {} if outer is None else outer
    try:
        yield
    finally:
        _TYPING.memo = outer


def compile_module(module: types.ModuleType, inputs: list, parallel_at: int,
                   scalar_path: bool, cold: bool = True) -> int:
    """Compile every numba function that ``module.run`` calls; returns how many dry runs
    completed. ``parallel_at``: the driver's size threshold for parallel loops (0 when it
    has none to choose); ``scalar_path``: the driver has a Python-float fast path;
    ``cold``: the module was just built (its numba functions compile: numba's registries
    are loaded first, ``numba_startup``; a warm module's load from numba's cache)."""
    if jit_disabled():    # plain Python functions: nothing to compile
        return 0
    if is_deferred():     # a scan body: compiled when its driver is the loop (loops/cpu.py)
        module.COMPILE_LATER_ = lambda: compile_module(module, inputs, parallel_at,
                                                       scalar_path, cold)
        return 0
    for _, kernel in native_kernels(module):   # scalar kernels written as IR: no dry run
        kernel.compile()
    if pending(vars(module)):  # numba's functions not made: maybe the IR kernels are all
        done = _runs_without_numba(module, inputs, parallel_at, scalar_path)
        if done is not None:
            return done
        materialize(vars(module))
    found = dispatchers(module)
    entries = getattr(module, "ENTRIES_", {})
    scalar = {id(found[name]) for name in entries.values() if name in found}
    # scalar kernels (compile/scalar) run: their results are arrays the next steps read
    scalar |= {id(found[name]) for name in getattr(module, "SCALAR_KERNELS_", ())
               if name in found}
    namespace = dict(vars(module))
    for name, dispatcher in found.items():
        wrap = _scalar_runner if id(dispatcher) in scalar else _recorder
        namespace[name] = wrap(dispatcher, cold)
    with memoised_typing():
        done = _dry_runs(module, namespace, set(found), inputs, parallel_at, scalar_path)
    if internals_enabled():
        _bind_entries(module, found, entries)
    return done


def _runs_without_numba(module: types.ModuleType, inputs: list, parallel_at: int,
                        scalar_path: bool) -> Optional[int]:
    """The dry runs of a module whose numba functions are not made yet
    (``kernel_lib/deferred.py``): the number completed where no numba function was called
    (its kernels are all IR: numba is never imported), else None."""
    called = []

    def needs_numba(*args):
        called.append(True)
        raise Stop()

    namespace = dict(vars(module))
    deferred = {name for name, value in namespace.items() if isinstance(value, Deferred)}
    namespace.update({name: needs_numba for name in deferred})
    done = _dry_runs(module, namespace, deferred, inputs, parallel_at, scalar_path)
    return None if called else done


def _dry_runs(module: types.ModuleType, namespace: dict, found: set, inputs: list,
              parallel_at: int, scalar_path: bool) -> int:
    """Run the driver on dummy arguments in ``namespace`` (numba's functions, ``found``,
    replaced there already) for each size-dependent choice; the number completed."""
    def stop(args):
        raise Stop()

    namespace.update(reference_=stop, scalars_=_no_scalars)   # 0-d arrays: general path
    ir_loops = set()
    for name, loop in native_loops(module):     # loops written as IR: numba's if declined
        ir_loops.add(name[:-2] + "_native")
        namespace[name[:-2] + "_native"] = _ir_loop(loop, namespace, name[:-2])
    natives = set()
    for name, _ in native_kernels(module):      # phantoms (subclasses) would take numba's
        native = getattr(module, name[:-2] + "_native", None)
        if native is not None:
            namespace[native.__name__] = _real_arrays(native)
            natives.add(native.__name__)
    phantoms = phantom_run(inputs)
    arrays = namespace
    if phantoms:          # numpy, workspaces and steps that never touch an element
        arrays = dict(namespace)
        steps = {int(n[1:]): v.static_ for n, v in namespace.items()
                 if n[:1] == "S" and n[1:].isdigit() and hasattr(v, "static_")}
        dry_namespace(arrays, found | natives | ir_loops, steps)
    runs = [(False, parallel_at)]
    if parallel_at:
        runs.append((False, 0))        # every size-dependent choice takes its parallel loop
    if scalar_path:
        runs.append((True, parallel_at))
    done = 0
    for scalars, threshold in runs:
        ns = arrays if phantoms and not scalars else namespace
        ns["PARALLEL_AT_"] = threshold
        run = types.FunctionType(module.run.__code__, ns, "run", module.run.__defaults__)
        if _dry_run(run, dummy_arguments(inputs, scalars, phantoms)):
            done += 1
    return done


def _ir_loop(loop, namespace: dict, fallback: str) -> Callable:
    """A loop kernel written as IR in a dry run: compiled for the arguments' types (phantoms
    count as their arrays; nothing runs), or numba's function recorded where it declines."""
    def run(*args):
        if loop.compile_for(args):
            return 0
        return namespace[fallback](*args)
    return run


def _real_arrays(native: Callable) -> Callable:
    """A scalar kernel written as IR in a dry run: phantom arguments (static shapes over one
    element) become zeros, which it reads (its inputs are small static tensors), and its
    results phantoms again, as the steps after it expect. Where the kernel declines its dry
    arguments (a linalg check fails: a zero matrix is singular) the dry run stops there, as a
    numba kernel's raise stops it, instead of compiling numba's fallback for dummy data."""
    fallback = native.__name__[:-len("_native")]

    def run(*args):
        names = native.__globals__
        saved = names[fallback]
        names[fallback] = _stop
        try:
            if not any(is_phantom(a) for a in args):
                return native(*args)
            out = native(*[np.zeros(a.shape, a.dtype) if is_phantom(a) else a for a in args])
        finally:
            names[fallback] = saved
        return tuple(phantom(o.shape, o.dtype) for o in out)
    return run


def _stop(*args):
    raise Stop()


def _no_scalars(*values) -> None:
    """``scalars_`` in dry runs: the 0-d arrays of the general path's run stay on it."""
    return None


def _bind_entries(module: types.ModuleType, found: dict, entries: dict) -> None:
    """The fast path's scalar bodies are called through their compiled entry point (no
    type dispatch: the fast path passes Python floats only) once they have one signature."""
    for alias, name in entries.items():
        dispatcher = found.get(name)
        if dispatcher is not None and len(dispatcher.signatures) == 1:
            module.__dict__[alias] = dispatcher.overloads[dispatcher.signatures[0]].entry_point


def _dry_run(run: Callable, args: list) -> bool:
    try:
        with np.errstate(all="ignore"), dry_running():   # numpy steps on dummy data (warnings
            run(*args)                    # pass: a CacheWarning is the user's to see)
        return True
    except Stop:
        return False
    except Exception as exc:   # noqa: BLE001 - the first call compiles what is left
        logger.debug("sg.function: eager compile stopped (%s: %s); the first call "
                     "compiles the rest", type(exc).__name__, exc)
        return False


def signatures(module: types.ModuleType) -> dict:
    """{name: number of compiled signatures} of the module's numba functions."""
    return {name: len(d.signatures) for name, d in dispatchers(module).items()}

