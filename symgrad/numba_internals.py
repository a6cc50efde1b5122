"""The numba (and numba-cuda) internals symgrad uses, each behind one switch.

Every fast path that reaches past numba's public API reads ``enabled()``; with the
environment variable ``SYMGRAD_NUMBA_INTERNALS=0`` each takes its public fallback instead
(docs/compiler.md, "numba internals", lists them with why and the fallback). ``INTERNALS``
names each one as a dotted path that ``resolve`` looks up, so that a numba release that
moves one fails ``tests/test_numba_internals.py`` naming it (not a compile somewhere).
Most switches are read when a function is compiled; vecmath's wrapper-less dispatchers
are made when symgrad is imported, so set the variable before ``import symgrad``.

>>> isinstance(enabled(), bool)
True
>>> resolve("numba.core.types.functions.BaseFunction.get_call_type").__name__
'get_call_type'
"""

from __future__ import annotations

import importlib
import os
from typing import Any, NamedTuple

ENV = "SYMGRAD_NUMBA_INTERNALS"


def enabled() -> bool:
    """Whether symgrad may use numba's internals (``SYMGRAD_NUMBA_INTERNALS`` is not ``0``)."""
    return os.environ.get(ENV, "1").strip() != "0"


class Internal(NamedTuple):
    """One numba internal: its dotted path (module, then attributes), where symgrad uses
    it, and whether it lives in numba-cuda (checked only where numba.cuda imports)."""
    path: str
    used_in: str
    cuda: bool = False


INTERNALS = (
    Internal("numba.core.types.functions.BaseFunction.get_call_type", "cpu/eager.py"),
    Internal("numba.core.dispatcher.Dispatcher.overloads", "cpu/eager.py"),
    Internal("numba.core.compiler.CompileResult.entry_point", "cpu/eager.py"),
    Internal("numba.core.registry.cpu_target.target_context.refresh", "cpu/numba_startup.py"),
    Internal("numba.np.linalg.ensure_blas", "cpu/numba_startup.py"),
    Internal("numba.core.caching.IndexDataCacheFile._load_index", "cache/numba_files.py"),
    Internal("numba.core.caching.IndexDataCacheFile._load_data", "cache/numba_files.py"),
    Internal("numba.core.caching.IndexDataCacheFile._open_for_write", "cache/numba_files.py"),
    Internal("numba.core.caching.IndexDataCacheFile._data_path", "cache/numba_files.py"),
    Internal("numba.core.caching.NullCache", "cache/numba_files.py"),
    Internal("numba.core.caching.Cache._index_key", "cache/numba_files.py"),
    Internal("numba.core.caching.Cache._guard_against_spurious_io_errors",
             "cache/numba_files.py"),
    Internal("numba.core.caching.Cache._enabled", "cache/numba_files.py"),
    Internal("numba.core.caching.Cache._cache_file", "cache/numba_files.py"),
    Internal("numba.core.caching.Cache._impl", "cache/numba_files.py"),
    Internal("numba.core.caching.CompileResultCacheImpl.rebuild", "cache/numba_files.py"),
    Internal("numba.core.dispatcher.Dispatcher._cache", "cache/numba_files.py"),
    Internal("numba.core.runtime.rtsys.initialize", "cache/numba_files.py"),
    Internal("numba.core.cpu.CPUContext.refresh", "cache/numba_files.py"),
    Internal("numba.np.ufunc.parallel._launch_threads", "cache/numba_files.py"),
    Internal("numba.misc.appdirs.AppDirs", "cache/numba_files.py"),
    Internal("numba.core.dispatcher.Dispatcher.enable_caching", "cache/helpers.py"),
    Internal("numba.core.compiler_lock.global_compiler_lock", "cache/helpers.py"),
    Internal("numba.core.caching.IndexDataCacheFile._index_name", "cache/helpers.py"),
    Internal("numba.core.caching.IndexDataCacheFile._data_name_pattern", "cache/helpers.py"),
    Internal("numba.core.caching.IndexDataCacheFile._source_stamp", "cache/numba_files.py"),
    Internal("numba.core.base.BaseContext.active_code_library", "codegen/llvm/link.py"),
    Internal("numba.core.codegen.CPUCodeLibrary.add_linking_library", "codegen/llvm/link.py"),
    Internal("numba.core.codegen.CPUCodeLibrary.add_llvm_module", "codegen/llvm/link.py"),
    Internal("numba.core.codegen.CPUCodeLibrary._final_module", "kernel_lib/support.py"),
    Internal("numba.core.funcdesc.FunctionDescriptor.llvm_func_name", "codegen/llvm/link.py"),
    Internal("numba.core.cgutils.get_or_insert_function", "codegen/llvm/link.py"),
    Internal("numba.core.cgutils.alloca_once", "codegen/llvm/link.py"),
    Internal("numba.core.codegen.JITCPUCodegen._customize_tm_options", "codegen/llvm/native.py"),
    Internal("numba.core.codegen.CPUCodegen._module_pass_manager", "codegen/llvm/native.py"),
    Internal("numba.core.codegen.CPUCodegen._function_pass_manager", "codegen/llvm/native.py"),
    Internal("numba.core.codegen.CPUCodegen.unserialize_library", "codegen/llvm/native.py"),
    Internal("numba.core.codegen.CPUCodeLibrary._get_module_for_linking",
             "codegen/llvm/native.py"),
    Internal("numba.core.codegen.JITCodeLibrary.get_pointer_to_function",
             "codegen/llvm/native.py"),
    Internal("numba.core.dispatcher.Dispatcher.add_overload", "kernel_lib/support.py"),
    Internal("numba.core.registry.CPUDispatcher", "kernel_lib/vecmath.py"),
    Internal("numba.core.cpu.CPUTargetOptions.no_cpython_wrapper", "kernel_lib/support.py"),
    Internal("numba.core.cpu.CPUTargetOptions.no_cfunc_wrapper", "kernel_lib/support.py"),
    Internal("numba.core.dispatcher.Dispatcher._cache_misses", "function.py"),
    Internal("numba.core.dispatcher.Dispatcher._cache_hits", "function.py"),
    Internal("numba.core.caching.IndexDataCacheFile._index_path", "cache/numba_files.py"),
    Internal("numba.core.compiler.CompileResult.library", "cache/unload.py"),
    Internal("numba.core.codegen.JITCPUCodegen._engine", "cache/unload.py"),
    Internal("numba.core.codegen.JitEngine._ee", "cache/unload.py"),
    Internal("llvmlite.binding.executionengine.ExecutionEngine._modules", "cache/unload.py"),
    Internal("numba.core.compiler_lock.global_compiler_lock._lock", "cache/unload.py"),
    Internal("numba.core.sigutils.normalize_signature", "cuda/runtime.py"),
    Internal("numba.np.numpy_support.as_dtype", "cuda/runtime.py"),
    Internal("numba.cuda.dispatcher._LaunchConfiguration.griddim", "cuda/runtime.py", cuda=True),
    Internal("numba.cuda.dispatcher._Kernel.launch", "cuda/runtime.py", cuda=True),
)
"""Every numba internal symgrad reaches (docs/compiler.md, "numba internals")."""


def resolve(path: str) -> Any:
    """The object at dotted ``path``: the longest importable module prefix, then
    attributes (an attribute set on instances only, such as ``CompileResult.entry_point``
    or ``CPUCodeLibrary._final_module``, resolves to its name in the class's fields or
    source). Raises LookupError naming ``path`` when numba moved it."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            found = getattr(value, attr, _MISSING)
            if found is _MISSING:
                found = _instance_attribute(value, attr)
            if found is _MISSING:
                raise LookupError(f"numba internal {path!r}: {attr!r} is gone from "
                                  f"{getattr(value, '__name__', value)!r} (numba moved it: "
                                  f"run with {ENV}=0 and update symgrad)")
            value = found
        return value
    raise LookupError(f"numba internal {path!r}: module not importable")


_MISSING = object()


def _instance_attribute(cls: Any, attr: str) -> Any:
    """``attr`` if the class ``cls`` declares it for its instances (a namedtuple field, a
    slot, or an assignment ``self.<attr> =`` in its source), else _MISSING."""
    if not isinstance(cls, type):
        return _MISSING
    if attr in getattr(cls, "_fields", ()) or attr in getattr(cls, "__slots__", ()):
        return attr
    import inspect
    for klass in cls.__mro__:
        try:
            source = inspect.getsource(klass)
        except (OSError, TypeError):
            continue
        if f"self.{attr} =" in source or f"self.{attr}=" in source:
            return attr
    return _MISSING
