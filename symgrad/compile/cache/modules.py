"""The module cache: generated modules are real files, named by a content hash and
authenticated with a per-user key.

Threat model (docs/security.md): symgrad runs only code it generated. A module file ends
with an HMAC-SHA256 of its module name and text under a secret key that only this user can
read (``$SYMGRAD_KEY_FILE``, default ``~/.config/symgrad/cache.key``, mode 0600). A file is
opened without following links or blocking, must be a regular file of sane size, is read
once, its MAC checked, and the checked bytes are compiled and executed (no import system,
no bytecode read from or written to the cache). numba's own cache files (pickles: the index
``.nbi`` and data ``.nbc``) are sealed with the same key and verified before numba unpickles
them (``numba_cache.SealedCacheFile``), and used only where the directory that holds them
is owned by this user and writable by no one else (OpenSSH's check, up the path; a sticky
world-writable parent such as /tmp is accepted); elsewhere numba caching is off, with a
warning; a fault of one of numba's files, or one that does not verify, compiles without it. Any fault of the cache (unwritable, full, a file where a directory should be, a
corrupted, truncated or foreign file) degrades to a compile in memory, with one
``CacheWarning`` per message.

Threads: one lock per key; a module is published only once it has run completely. numba's
``workqueue`` threading layer aborts the process when two threads enter parallel kernels at
once, so under that layer a module's parallel kernels are serialised by one lock.
"""

from __future__ import annotations

import hashlib
import linecache
import os
import stat
import sys
import tempfile
import threading
import types
import weakref
from pathlib import Path
from typing import Callable, Optional

from ..kernel_lib.deferred import Later
from .helpers import cache_helpers
from . import unload
from .numba_files import guard_numba_cache, guard_parallel, numba_cache_allowed
from .trust import (KEY_BYTES, OPEN_FLAGS, key_file, read_all, sealed, secret_key, unsealed,
                    warn_once, write_all)

__all__ = ["KEY_BYTES", "cache_dir", "key_file", "load_or_build", "secret_key", "sealed",
           "unsealed", "warn_once", "numba_cache_allowed"]

MAX_MODULE_BYTES = 64 << 20        # a generated module is far smaller: larger files are foreign

_LOADED: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
"""module name -> module, complete modules only, while a compiled function (or anything
else) holds the module."""
_LOCKS = tuple(threading.Lock() for _ in range(64))   # by module name: a bounded set
_USES_GUARD = threading.RLock()   # the users count of each module (finalizers take it)


# --- where ------------------------------------------------------------------------------

def cache_dir() -> Path:
    """``$SYMGRAD_CACHE_DIR``, else ``symgrad`` under the user's cache folder (not created)."""
    env = os.environ.get("SYMGRAD_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "symgrad"


# --- versions and names -----------------------------------------------------------------

_CODE_HASH: list = []


def code_hash() -> str:
    """A hash of symgrad's own source (every ``.py`` under ``symgrad/``, by relative path):
    a change in the code generator, anywhere in ``compile/`` or in an op's record, is a new
    key. (It hashed ``compile/cache/*.py`` only once the modules moved there, so a changed
    generator reused modules written by the old one.)"""
    if not _CODE_HASH:
        digest = hashlib.sha256()
        root = Path(__file__).resolve().parents[2]
        for path in sorted(root.rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
        _CODE_HASH.append(digest.hexdigest()[:16])
    return _CODE_HASH[0]


def _numba_version() -> str:
    """numba's version without importing numba where it is not imported yet."""
    if "numba" in sys.modules:
        return sys.modules["numba"].__version__
    if not _NUMBA_VERSION:
        _NUMBA_VERSION.append(_read_numba_version())
    return _NUMBA_VERSION[0]


def _read_numba_version() -> str:
    """numba's ``__version__`` read from its ``_version.py`` (versioneer's JSON), not run;
    else from the distribution's metadata (0.03 s).

    >>> import numba; _read_numba_version() == numba.__version__
    True
    """
    import importlib.util
    import re

    spec = importlib.util.find_spec("numba")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        try:
            found = re.search(r'"version":\s*"([^"]+)"', Path(folder, "_version.py").read_text())
        except OSError:
            continue
        if found:
            return found.group(1)
    from importlib.metadata import version

    return version("numba")


_NUMBA_VERSION: list = []


def versions() -> str:
    import numpy
    import sympy

    from ... import __version__
    from ...numba_internals import enabled
    return (f"symgrad {__version__} numba {_numba_version()} numpy {numpy.__version__} "
            f"sympy {sympy.__version__} python {sys.version_info[:3]} code {code_hash()}"
            f"{'' if enabled() else ' public numba only'}")


def module_name(key: str) -> str:
    """The module (and file) name of a cache key.

    >>> module_name("0123456789abcdef" * 4)
    'symgrad_gen_0123456789abcdef0123456789abcdef'
    """
    return f"symgrad_gen_{key[:32]}"


# --- loading ----------------------------------------------------------------------------

def _live(name: str) -> Optional[types.ModuleType]:
    """The loaded module ``name``, unless released (its last function is gone)."""
    module = _LOADED.get(name)
    return None if module is None or "RELEASED_" in module.__dict__ else module


def _lock(name: str) -> threading.Lock:
    return _LOCKS[int(hashlib.sha256(name.encode()).hexdigest()[:8], 16) % len(_LOCKS)]


def attach(module: types.ModuleType, function: object) -> None:
    """``function`` (a CompiledFunction) runs ``module``: the module's ``reference_`` and
    ``compile_error_`` reach it weakly (through any live user of the module: functions of
    one key share it). When its last user is gone the module leaves ``sys.modules`` and
    its namespace drops every name bound after its source ran (``release``): numba keeps
    each jitted function's globals for as long as its machine code, i.e. for ever."""
    ns = module.__dict__
    name = module.__name__
    with _USES_GUARD:
        users = ns.get("USERS_")
        if users is None:
            users = ns["USERS_"] = weakref.WeakSet()
            ns["USES_"] = 0

            def user():
                for f in list(users):
                    return f
                raise RuntimeError(f"{name}: its compiled function is gone")
            ns.update(reference_=lambda args: user()._reference(args),
                      compile_error_=lambda exc: user()._compile_error(exc))
        users.add(function)
        ns["USES_"] += 1
    weakref.finalize(function, _detach, name, ns).atexit = False   # nothing to free at exit


def _detach(name: str, ns: dict) -> None:
    with _USES_GUARD:
        ns["USES_"] = ns.get("USES_", 1) - 1
        if ns["USES_"] > 0:
            return
        module = sys.modules.get(name)
        if module is not None and module.__dict__ is ns:
            sys.modules.pop(name, None)
        module = _LOADED.get(name)
        if module is not None and module.__dict__ is ns:
            _LOADED.pop(name, None)
        compiled = unload.engine_modules(ns)
        linecache.cache.pop(ns.get("__file__"), None)   # the source lines numba read
        release(ns)
    unload.hand_back(compiled)   # numba's engine lets go of the kernels' LLVM modules


def release(ns: dict) -> None:
    """Empty a dropped module's namespace (but its dunder names): numba keeps the globals
    of every function it compiled for as long as the machine code, so whatever the namespace
    holds would stay: the runtime of ``bind_runtime`` (constants, steps and their graph,
    workspaces), its users, and its numba dispatchers with their typed IR and compile
    metadata. What stays is numba's machine code, which numba never frees."""
    if "SOURCE_NAMES_" not in ns:
        return
    for key in [k for k in ns if not k.startswith("__")]:
        ns.pop(key, None)
    ns["RELEASED_"] = True


def execute(name: str, source: str, filename: str, numba_cache) -> types.ModuleType:
    """Run ``source`` (already verified, or just generated) as module ``name``; it is in
    ``sys.modules`` while it runs (numba's cache needs that), and removed if it fails.
    ``numba_cache``: whether numba may cache the module's functions, or a function that
    says so (called when numba is needed: ``kernel_lib/deferred.py``)."""
    deferred = "numba" not in sys.modules   # numba's names made at the module's first need
    if not deferred:
        cache_helpers()              # the kernel helpers it links: numba's sealed cache
    module = types.ModuleType(name)
    module.__file__ = filename
    if callable(numba_cache):         # decided when numba is needed (numba's settings)
        numba_cache = Later(numba_cache) if deferred else numba_cache()
    module.__dict__["NUMBA_CACHE"] = numba_cache
    code = compile(source, filename, "exec", dont_inherit=True)
    sys.modules[name] = module
    try:
        exec(code, module.__dict__)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    module.__symgrad_source__ = source
    module.__dict__["SOURCE_NAMES_"] = frozenset(module.__dict__) | {"SOURCE_NAMES_"}

    def guard() -> None:
        if deferred:
            cache_helpers()
        if numba_cache.get() if isinstance(numba_cache, Later) else numba_cache:
            guard_numba_cache(module)
        guard_parallel(module)
    if deferred and "numba" not in sys.modules:
        module.__dict__["ON_NUMBA_"] = guard      # run by deferred.materialize
    else:
        guard()
    return module


def load_or_build(key: str, build: Callable[[], str]) -> tuple:
    """(module, source, built) for ``key``: the verified cached module, else ``build()``'s
    source, written (when the cache works) and run. Safe from many threads at once."""
    name = module_name(key)
    module = _live(name)
    if module is not None:
        return module, module.__symgrad_source__, False
    with _lock(name):
        module = _live(name)
        if module is not None:
            return module, module.__symgrad_source__, False
        module, built = _load_or_build_locked(name, build)
        _LOADED[name] = module
        return module, module.__symgrad_source__, built


def _load_or_build_locked(name: str, build: Callable[[], str]) -> tuple:
    directory = cache_dir()
    path = directory / f"{name}.py"
    source = _read_verified(name, path)
    if source is not None:
        try:
            return execute(name, source, str(path), lambda: numba_cache_allowed(path)), False
        except Exception:        # verified but broken (another symgrad version): rebuild
            sys.modules.pop(name, None)
    source = build()
    try:
        _prepare(directory)
        _write(path, sealed(name, source))
    except OSError as exc:
        warn_once(directory, f"cannot write ({exc.strerror or exc}); compiled in memory",
                  "make it writable, or set SYMGRAD_CACHE_DIR to a directory you own")
        return execute(name, source, f"<symgrad {name}>", False), True
    return execute(name, source, str(path), lambda: numba_cache_allowed(path)), True


def _read_verified(name: str, path: Path) -> Optional[str]:
    """The verified source in ``path``, or None (absent, unreadable, not a regular file, too
    large, or not written by this user's symgrad under this name). Never blocks: a FIFO is
    opened non-blocking and refused; a symbolic link is not followed."""
    fix = "remove it or set SYMGRAD_CACHE_DIR to a directory you own"
    try:
        fd = os.open(path, OPEN_FLAGS)
    except (FileNotFoundError, NotADirectoryError):   # absent (writing it will tell)
        return None
    except OSError as exc:
        warn_once(path, f"cannot be read ({exc.strerror or exc}); rebuilding", fix)
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            warn_once(path, "is not a regular file; rebuilding", fix)
            return None
        data = read_all(fd, MAX_MODULE_BYTES + 1)
    except OSError as exc:
        warn_once(path, f"cannot be read ({exc.strerror or exc}); rebuilding", fix)
        return None
    finally:
        os.close(fd)
    source = None if len(data) > MAX_MODULE_BYTES else unsealed(name, data)
    if source is None:
        warn_once(path, "is not a module this user's symgrad wrote (truncated, corrupted or "
                  "foreign); rebuilding", "nothing to do: it is replaced")
    return source


def _prepare(directory: Path) -> None:
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not directory.is_dir():
        raise NotADirectoryError(20, "not a directory", str(directory))


def _write(path: Path, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def write_bytes(path: Path, data: bytes) -> None:
    """Write atomically: a temporary file in the same directory, then ``os.replace`` (which
    also replaces a FIFO, a link or a device planted at ``path``, never writing through it)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.stem, suffix=".tmp")
    try:
        try:
            write_all(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
