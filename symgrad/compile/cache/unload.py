"""What numba's JIT keeps of a released module's kernels, handed back (docs/memory.md).

numba adds the LLVM module of every function it compiles to its execution engine, which
holds it for the life of the process, although the machine code was emitted long ago. When
the last function of a generated module is gone (``modules.release``), nothing can call its
kernels any more (the module's namespace was the only way to them), so their LLVM modules
leave the engine and are freed. The machine code stays where the JIT put it (llvmlite frees
it only with the engine); the helpers the kernels link (``kernel_lib``) are shared and stay.

Uses numba internals (``SYMGRAD_NUMBA_INTERNALS=0`` turns it off: nothing is handed back).

>>> import types
>>> engine_modules(types.SimpleNamespace(__dict__={}).__dict__)
[]
"""

from __future__ import annotations

import threading

from ...numba_internals import enabled as internals_enabled

_PENDING: list = []               # (engine, LLVM module) left for a moment the engine is free
_GUARD = threading.Lock()


def engine_modules(ns: dict) -> list:
    """``[(engine, LLVM module)]`` of every compiled overload of the numba functions that the
    module namespace ``ns`` defines itself (not those it imports), still in the engine."""
    if not internals_enabled():
        return []
    name = ns.get("__name__")
    found = []
    for value in list(ns.values()):
        if not hasattr(value, "overloads"):
            value = getattr(value, "__wrapped__", value)      # guard_parallel's lock
        if getattr(getattr(value, "py_func", None), "__module__", None) != name:
            continue
        for cres in list(getattr(value, "overloads", {}).values()):
            library = getattr(cres, "library", None)
            module = getattr(library, "_final_module", None)
            engine = getattr(getattr(getattr(library, "codegen", None), "_engine", None),
                             "_ee", None)
            if module is not None and module in getattr(engine, "_modules", ()):
                found.append((engine, module))
    return found


def hand_back(found: list) -> int:
    """Remove the modules ``found`` (``engine_modules``) from numba's engine, under numba's
    compiler lock; if another thread compiles right now they wait for the next call (this
    runs from a finalizer: it never blocks). Returns how many left the engine."""
    with _GUARD:
        _PENDING.extend(found)
        if not _PENDING:
            return 0
        from numba.core.compiler_lock import global_compiler_lock
        lock = getattr(global_compiler_lock, "_lock", None)
        if lock is None or not lock.acquire(blocking=False):
            return 0
        try:
            done = 0
            for engine, module in _PENDING:
                if module in engine._modules:
                    engine.remove_module(module)     # ours again: freed when unreferenced
                    done += 1
            _PENDING.clear()
            return done
        finally:
            lock.release()
