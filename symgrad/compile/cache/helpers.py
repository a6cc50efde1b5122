"""numba's cache of the kernel helpers (``kernel_lib``: vecmath, support, support_v2), sealed.

Every generated kernel calls a few of these scalar helpers (``exp_f64``, ``sin_f64``,
``sign_``, ...). Each costs numba 0.02-0.15 s to compile (vecmath's pieces are inlined at
numba's IR level), paid in every process when they are compiled there. ``cache_helpers``
(run once per process, before the first generated module runs) gives each helper numba's
on-disk cache, sealed with this user's key like a generated module's (``numba_files``:
only files this user's symgrad wrote and authenticated are unpickled), in the directories
that ``numba_cache_allowed`` accepts (none, such as a package folder that another user
owns or a group may write: the helpers compile in memory, as before, without a warning).

numba keeps a cached function's LLVM bitcode beside its object code, and links that
bitcode into each caller: a helper loaded from the cache still carries LLVM's
``alwaysinline`` (``support.always_inline`` marks the module before numba saves it), so it
is inlined into the loops and vectorised exactly as when compiled in this process.

numba invalidates a cache file when its function's source file changes; the files here
are further bound (``_stamp``) to the text of every helper source file and to the
versions of Python, numpy, numba and symgrad, so that an edit of a piece in another file
cannot leave a stale helper. Helpers that are closures (vecmath's float32 wrappers: numba
would pickle the wrapped dispatcher into the key) and numba-IR pieces
(``inline="always"``) stay uncached; the float32 wrappers link the cached float64 helpers.

>>> from symgrad.compile.kernel_lib import vecmath
>>> cacheable(vecmath.exp_f64), cacheable(vecmath.exp_f32), cacheable(vecmath._exp_core)
(True, False, False)
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import os
import sys
import threading
from pathlib import Path

from ...numba_internals import enabled as internals_enabled
from .numba_files import guard_dispatcher, numba_cache_allowed
from .trust import key_persists, key_tag

#: the modules whose njit helpers generated code links
HELPER_MODULES = ("symgrad.compile.kernel_lib.vecmath", "symgrad.compile.kernel_lib.support",
                  "symgrad.compile.kernel_lib.support_v2",
                  "symgrad.compile.kernel_lib.linalg_checks")
#: every source file those helpers' bodies come from (their stamp)
_SOURCES = HELPER_MODULES + ("symgrad.ops.elementwise.scalar_math",)

_LOCK = threading.Lock()
_DONE: list = []       # [True] once cache_helpers has run in this process


def cacheable(value: object) -> bool:
    """Whether ``value`` is a helper dispatcher that numba may cache: a CPU dispatcher,
    not inlined at numba's IR level, not a closure."""
    from numba.core.registry import CPUDispatcher

    if not isinstance(value, CPUDispatcher):
        return False
    if value.targetoptions.get("inline", "never") != "never":
        return False
    return value.py_func.__closure__ is None


def cache_helpers() -> None:
    """Give every cacheable helper of ``HELPER_MODULES`` numba's sealed on-disk cache, once
    per process (later calls return at once). Nothing with ``SYMGRAD_NUMBA_INTERNALS=0``,
    with a key for this process only (its files would pile up, never read again), or where
    ``numba_cache_allowed`` refuses the helper's directories."""
    if _DONE:
        return
    with _LOCK:
        if _DONE or not internals_enabled() or not key_persists():
            _DONE.append(True)
            return
        from numba.core.compiler_lock import global_compiler_lock

        modules = [importlib.import_module(name) for name in HELPER_MODULES]
        stamp = _stamp()
        allowed: dict = {}
        seen: set = set()
        with global_compiler_lock:            # no compile reads a cache while we swap it
            for module in modules:
                for value in list(vars(module).values()):
                    if id(value) in seen or not cacheable(value):
                        continue
                    seen.add(id(value))
                    _enable(value, stamp, allowed)
        _DONE.append(True)


def _enable(dispatcher: object, stamp: str, allowed: dict) -> None:
    try:
        source = Path(inspect.getsourcefile(dispatcher.py_func))
    except (TypeError, OSError):
        return
    if source not in allowed:
        allowed[source] = numba_cache_allowed(source, quiet=True)
    if not allowed[source]:
        return
    try:
        dispatcher.enable_caching()
    except Exception:        # noqa: BLE001 - numba finds no cache directory: compiled as before
        return
    guard_dispatcher(dispatcher, source.parent / "__pycache__", stamp)
    _name_by_key(getattr(dispatcher._cache, "_inner", None))


def _name_by_key(cache: object) -> None:
    """Name the helper's files after this user's key (``trust.key_tag``): the helpers'
    directory is shared by every key a user runs with (tests, ``SYMGRAD_KEY_FILE``), and a
    file sealed under another key would otherwise be refused with a warning and replaced
    at each switch. Names only: what is read is still verified."""
    files = getattr(cache, "_cache_file", None)
    if not all(hasattr(files, a) for a in ("_index_name", "_cache_path", "_data_name_pattern")):
        return
    base, tag = files._index_name[:-len(".nbi")], key_tag()
    files._index_name = f"{base}.{tag}.nbi"
    files._index_path = os.path.join(files._cache_path, files._index_name)
    files._data_name_pattern = f"{base}.{tag}" + ".{number:d}.nbc"


def _stamp() -> str:
    """sha256 of the helper source files' text and of the versions symgrad depends on."""
    import numba
    import numpy

    from ... import __version__
    digest = hashlib.sha256(f"symgrad {__version__} numba {numba.__version__} numpy "
                            f"{numpy.__version__} python {sys.version}".encode())
    for name in _SOURCES:
        spec = importlib.util.find_spec(name)
        try:
            digest.update(Path(spec.origin).read_bytes())
        except (AttributeError, TypeError, OSError):
            digest.update(name.encode())
    return digest.hexdigest()
