"""numba's side of the cache: where numba may keep (and load) its cache files, whether those
directories pass OpenSSH's ownership check, numba's index and data files sealed with this
user's key (verified before numba unpickles them), a guard that turns a fault of one of
numba's files into a compile, and the lock that numba's ``workqueue`` threading layer needs.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import pickle
import stat
import threading
import types
from pathlib import Path
from typing import Callable, Optional

from ...numba_internals import enabled as internals_enabled
from .trust import read_regular, seal_bytes, unseal_bytes, warn_once

MAX_NUMBA_FILE_BYTES = 1 << 30     # numba's files are far smaller: larger ones are foreign

_PARALLEL_LOCK = threading.Lock()  # numba's workqueue layer: one parallel launch at a time


# --- numba's cache directory ------------------------------------------------------------

def numba_cache_dirs(module_file: Path) -> list:
    """Every directory numba may keep (and load) its cache of ``module_file``'s functions
    in: ``$NUMBA_CACHE_DIR``'s subfolder when set, ``__pycache__`` beside the module, and
    numba's user-wide folder (numba falls back along that list when one is unwritable)."""
    from numba.core import config

    folder = os.path.dirname(os.path.abspath(module_file))
    subpath = os.path.basename(folder) + "_" + hashlib.sha1(folder.encode()).hexdigest()
    dirs = [Path(config.CACHE_DIR) / subpath] if config.CACHE_DIR else []
    dirs.append(Path(folder) / "__pycache__")
    try:
        from numba.misc.appdirs import AppDirs
        dirs.append(Path(AppDirs(appname="numba", appauthor=False).user_cache_dir) / subpath)
    except Exception:        # noqa: BLE001 - numba moved it: the other checks still hold
        pass
    return dirs


def numba_cache_allowed(module_file: Path, quiet: bool = False) -> bool:
    """Whether numba may keep its cache (pickles it will load and run) for the module in
    ``module_file``: every directory it may use must pass ``safe_directory``. Beside the
    module, ``__pycache__`` is made first (mode 0700), so it cannot be planted after the
    check; elsewhere the nearest existing ancestor is checked. Always False with
    ``SYMGRAD_NUMBA_INTERNALS=0``: numba's files are sealed through its cache internals,
    and an unsealed cache is not used. ``quiet``: no warning when refused."""
    if not internals_enabled():
        return False
    dirs = numba_cache_dirs(module_file)
    try:
        (Path(module_file).parent / "__pycache__").mkdir(mode=0o700, exist_ok=True)
    except OSError:
        pass                 # numba cannot make it either: the existing ancestor is checked
    for target in dirs:
        probe = target
        while not probe.exists() and probe.parent != probe:
            probe = probe.parent
        problem = safe_directory(probe, created=probe != target)
        if problem and quiet:
            return False
        if problem:
            warn_once(probe, f"numba's cache there is off: {problem}",
                      "use a cache directory that only you own and can write (chmod go-w)")
            return False
    return True


def safe_directory(path: Path, created: bool = False) -> Optional[str]:
    """None if ``path`` and every parent are owned by this user or root and writable by
    nobody else (a sticky world-writable parent such as /tmp is accepted; so is ``path``
    itself when ``created``: the directory we need will be made inside it), else why not.

    >>> safe_directory(Path("/")) is None
    True
    """
    uid = os.getuid()
    current = path.resolve()
    first = not created
    while True:
        try:
            info = os.lstat(current)
        except OSError as exc:
            return f"{current} cannot be inspected ({exc.strerror})"
        if info.st_uid not in (uid, 0):
            return f"{current} is owned by another user"
        writable = info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
        if writable and (first or not info.st_mode & stat.S_ISVTX):
            return f"{current} is writable by group or others"
        if current.parent == current:
            return None
        current, first = current.parent, False

def guard_numba_cache(module: types.ModuleType) -> None:
    """Seal numba's cache files of each kernel of ``module`` (``SealedCacheFile``) and wrap
    its cache in ``_GuardedCache``."""
    for value in list(vars(module).values()):
        guard_dispatcher(value, Path(module.__file__).parent / "__pycache__")


def guard_dispatcher(value: object, where: Path, stamp: object = None) -> None:
    """Seal the cache files of one dispatcher ``value`` (nothing for other objects) and wrap
    its cache in ``_GuardedCache`` (warnings name ``where``). ``stamp``, when given, is
    added to numba's source stamp of the files (a file saved under another stamp reads as
    absent): what the function depends on beyond its own source file."""
    inner = getattr(value, "_cache", None)
    if hasattr(inner, "load_overload") and not isinstance(inner, _GuardedCache):
        sealed = sealed_cache_file(getattr(inner, "_cache_file", None))
        if sealed is None:          # a cache file class we do not know: no cache at all
            from numba.core.caching import NullCache
            value._cache = NullCache()
            return
        if stamp is not None:
            sealed._source_stamp = (sealed._source_stamp, stamp)
        inner._cache_file = sealed
        value._cache = _GuardedCache(inner, where)


def has_cache_file(dispatcher: object) -> bool:
    """Whether numba's index file of ``dispatcher`` exists (a load is likely; False when it
    keeps no cache, or a compile of it was interrupted before numba saved it)."""
    if not internals_enabled():
        return False
    cache = getattr(dispatcher, "_cache", None)
    files = getattr(getattr(cache, "_inner", cache), "_cache_file", None)
    path = getattr(files, "_index_path", None)
    return path is not None and os.path.isfile(path)


# what SealedFiles overrides or reads of numba's IndexDataCacheFile (numba-cuda keeps its
# own copy of that class, with the same members)
_CACHE_FILE_MEMBERS = ("_load_index", "_load_data", "_open_for_write", "_data_path")
_SEALED_CLASSES: dict = {}


def sealed_cache_file(files: object) -> Optional["SealedFiles"]:
    """``files`` (numba's ``IndexDataCacheFile`` of one kernel, or numba-cuda's copy of
    that class) sealed (``SealedFiles``), with the same state; None for any other object."""
    base = type(files)
    if not all(callable(getattr(base, m, None)) for m in _CACHE_FILE_MEMBERS) or not all(
            hasattr(files, a) for a in ("_index_path", "_version", "_source_stamp")):
        return None
    if isinstance(files, SealedFiles):
        return files
    cls = _sealed_class(base)
    sealed = cls.__new__(cls)
    sealed.__dict__.update(vars(files))
    return sealed


class SealedFiles:
    """Mixed into numba's cache-file class: the index (``.nbi``) and data (``.nbc``) files
    of one kernel are each written as ``trust.seal_bytes`` of numba's bytes, bound to the
    file's name; a file is opened without following links or blocking, read once, and only
    bytes whose MAC verifies are unpickled. Anything else (planted, truncated, another key)
    reads as absent, with one ``CacheWarning``: numba compiles and its next save replaces
    the file."""

    def _load_index(self) -> dict:
        payload = self._read_sealed(self._index_path)
        if payload is None:
            return {}
        stream = io.BytesIO(payload)
        if pickle.load(stream) != self._version:
            return {}
        stamp, overloads = pickle.loads(stream.read())
        return overloads if stamp == self._source_stamp else {}

    def _load_data(self, name: str) -> object:
        payload = self._read_sealed(self._data_path(name))
        return None if payload is None else pickle.loads(payload)

    @contextlib.contextmanager
    def _open_for_write(self, filepath: str):
        buffer = io.BytesIO()
        yield buffer
        with super()._open_for_write(filepath) as out:
            out.write(seal_bytes(os.path.basename(filepath), buffer.getvalue()))

    def _read_sealed(self, path: str) -> Optional[bytes]:
        """The verified payload of numba's file ``path``; None if absent or not sealed."""
        try:
            data = read_regular(path, MAX_NUMBA_FILE_BYTES + 1)
        except FileNotFoundError:
            return None
        payload = None if data is None or len(data) > MAX_NUMBA_FILE_BYTES else \
            unseal_bytes(os.path.basename(path), data)
        if payload is None:
            warn_once(path, "numba's cache file cannot be read (not sealed by this user's "
                      "symgrad: truncated, corrupted or foreign); compiled without it",
                      "nothing to do: it is replaced")
        return payload


def _sealed_class(base: type) -> type:
    """``base`` (a cache-file class) with ``SealedFiles`` mixed in, made once per class."""
    cls = _SEALED_CLASSES.get(base)
    if cls is None:
        from numba.core.caching import IndexDataCacheFile
        name = "SealedCacheFile" if base is IndexDataCacheFile else "Sealed" + base.__name__
        cls = type(name, (SealedFiles, base), {"__module__": __name__, "__doc__":
                                               f"numba's ``{base.__name__}``, sealed."})
        _SEALED_CLASSES[base] = cls
    return cls


def __getattr__(name: str) -> type:
    """``SealedCacheFile``: numba's ``IndexDataCacheFile`` sealed, made when first asked for
    (numba loads with the compiler, not at ``import symgrad``)."""
    if name == "SealedCacheFile":
        from numba.core.caching import IndexDataCacheFile
        return _sealed_class(IndexDataCacheFile)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _GuardedCache:
    """numba's cache of one kernel, where a fault (a truncated, corrupted or foreign index
    or data file, a full disk) means compiling as if there were no cache file, with one
    warning; a broken index is emptied so that the next save repairs it."""

    def __init__(self, inner: object, where: Path):
        self._inner, self._where = inner, where

    def load_overload(self, sig: object, target_context: object) -> object:
        try:
            return _load_light(self._inner, sig, target_context)
        except Exception as exc:     # noqa: BLE001 - any fault: compile instead
            self._fault("read", exc)
            try:
                self._inner.flush()
            except Exception:        # noqa: BLE001 - saving will warn if it matters
                pass
            return None

    def save_overload(self, sig: object, data: object) -> None:
        try:
            self._inner.save_overload(sig, data)
        except Exception as exc:     # noqa: BLE001 - the kernel works without its file
            self._fault("written", exc)

    def _fault(self, verb: str, exc: Exception) -> None:
        warn_once(self._where, f"numba's cache file cannot be {verb} "
                  f"({type(exc).__name__}); compiled without it",
                  "nothing to do (remove that folder to stop this warning)")

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)


def _load_light(cache: object, sig: object, context: object) -> object:
    """numba's ``Cache.load_overload`` without its ``context.refresh()`` (about 0.25 s on
    a process's first load: it imports numba's whole library of typing and lowering
    registries, scipy.linalg included, which linking a cached object never uses; a later
    compile refreshes the context itself). What linking needs is numba's runtime (NRT)
    symbols; a cached library that declares any other symbol the process cannot resolve
    (one that a registry module adds, such as the hash secret) gets the full refresh.
    Other targets' contexts (numba-cuda's) take numba's own path."""
    from numba.core.cpu import CPUContext
    from numba.core.runtime import rtsys

    if not isinstance(context, CPUContext):
        return cache.load_overload(sig, context)
    if not cache._enabled:
        return None
    rtsys.initialize(context)
    with cache._guard_against_spurious_io_errors():
        data = cache._cache_file.load(cache._index_key(sig, context.codegen()))
        if data is None:
            return None
        if not _links_without_refresh(data):
            context.refresh()
        return cache._impl.rebuild(context, data)


def _links_without_refresh(data: object) -> bool:
    """Whether every external symbol that the cached library ``data`` declares (numba's
    ``CompileResult._reduce`` payload) resolves in this process now; False for a payload
    of another shape."""
    import llvmlite.binding as ll

    try:
        _name, _kind, (_obj, bitcode) = data[0]
        module = ll.parse_bitcode(bitcode)
    except Exception:    # noqa: BLE001 - unknown layout: numba's own path
        return False
    names = [f.name for f in module.functions if f.is_declaration]
    names += [g.name for g in module.global_variables if g.is_declaration]
    return all(n.startswith("llvm.") or ll.address_of_symbol(n) is not None for n in names)


def guard_parallel(module: types.ModuleType) -> None:
    """Under numba's ``workqueue`` threading layer (not thread-safe: numba aborts the
    process when two threads launch parallel kernels at once), route the module's
    ``parallel=True`` kernels through one process-wide lock. tbb and omp need nothing."""
    from numba.extending import is_jitted

    kernels = {k: v for k, v in vars(module).items()
               if is_jitted(v) and v.targetoptions.get("parallel")}
    if not kernels or _threadsafe_layer():
        return
    for attr, kernel in kernels.items():
        setattr(module, attr, _serialised(kernel))


def _threadsafe_layer() -> bool:
    import numba
    if not internals_enabled():
        return False
    try:
        from numba.np.ufunc import parallel
        parallel._launch_threads()          # what numba does at the first parallel launch
        return numba.threading_layer() != "workqueue"
    except Exception:        # noqa: BLE001 - unknown: serialising is always correct
        return False


def _serialised(kernel: Callable) -> Callable:
    def launch(*args):
        with _PARALLEL_LOCK:
            return kernel(*args)
    launch.__wrapped__ = kernel
    launch.__name__ = getattr(kernel, "__name__", "kernel")
    return launch
