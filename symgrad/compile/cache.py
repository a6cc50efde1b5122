"""The module cache: generated modules are real files, named by a content hash and
authenticated with a per-user key.

Threat model (docs/security.md): symgrad runs only code it generated. A module file ends
with an HMAC-SHA256 of its module name and text under a secret key that only this user can
read (``$SYMGRAD_KEY_FILE``, default ``~/.config/symgrad/cache.key``, mode 0600). A file is
opened without following links or blocking, must be a regular file of sane size, is read
once, its MAC checked, and the checked bytes are compiled and executed (no import system,
no bytecode read from or written to the cache). numba's own cache files (pickles) are used
only where the directory that holds them is owned by this user and writable by no one else
(OpenSSH's check, up the path; a sticky world-writable parent such as /tmp is accepted);
elsewhere numba caching is off, with a warning. Any fault of the cache (unwritable, full,
a file where a directory should be, a corrupted, truncated or foreign file) degrades to a
compile in memory, with one ``CacheWarning`` per directory.

Threads: one lock per key; a module is published only once it has run completely. numba's
``workqueue`` threading layer aborts the process when two threads enter parallel kernels at
once, so under that layer a module's parallel kernels are serialised by one lock.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
import sys
import tempfile
import threading
import types
import warnings
from pathlib import Path
from typing import Callable, Optional

from ..errors import CacheWarning

MAC_PREFIX = "# symgrad-mac "
KEY_BYTES = 32
MAX_MODULE_BYTES = 64 << 20        # a generated module is far smaller: larger files are foreign
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)

_LOADED: dict = {}                 # module name -> module, complete modules only
_LOCKS: dict = {}
_LOCKS_GUARD = threading.Lock()
_KEY_GUARD = threading.Lock()
_PARALLEL_LOCK = threading.Lock()  # numba's workqueue layer: one parallel launch at a time
_WARNED: set = set()
_KEY: list = []


# --- where ------------------------------------------------------------------------------

def cache_dir() -> Path:
    """``$SYMGRAD_CACHE_DIR``, else ``symgrad`` under the user's cache folder (not created)."""
    env = os.environ.get("SYMGRAD_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "symgrad"


def key_file() -> Path:
    """``$SYMGRAD_KEY_FILE``, else ``symgrad/cache.key`` under the user's config folder."""
    env = os.environ.get("SYMGRAD_KEY_FILE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "symgrad" / "cache.key"


def warn_once(where: object, problem: str, fix: str) -> None:
    """One ``CacheWarning`` per distinct message in this process."""
    text = f"symgrad cache {where}: {problem}; {fix}"
    if text not in _WARNED:
        _WARNED.add(text)
        warnings.warn(text, CacheWarning, stacklevel=4)


# --- the key and the MAC ----------------------------------------------------------------

class _DisclosedKey(PermissionError):
    """The key file is this user's but group or others may read or write it."""


def secret_key() -> bytes:
    """This user's cache key: read from ``key_file()`` (created with mode 0600 when absent;
    replaced, with a warning, when group or others may read or write it). A key file that is
    not this user's regular 32-byte file is refused with a warning, and a key for this
    process only is used (cached modules then do not verify and are rebuilt)."""
    with _KEY_GUARD:
        if not _KEY:
            _KEY.append(_load_key(key_file()))
        return _KEY[0]


def _load_key(path: Path) -> bytes:
    fix = "set SYMGRAD_KEY_FILE to a file only you can read; using a key for this process only"
    try:
        try:
            key = _read_key(path)
        except _DisclosedKey:
            warn_once(path, "the cache key was readable or writable by group or others",
                      "it is replaced by a new key (modules cached with the old one are "
                      "rebuilt)")
            return _create_key(path, replace=True)
        return key if key is not None else _create_key(path, replace=False)
    except OSError as exc:
        warn_once(path, f"the cache key cannot be used ({exc.strerror or exc})", fix)
    return secrets.token_bytes(KEY_BYTES)


def _read_key(path: Path) -> Optional[bytes]:
    """The key in ``path``, None if there is no file; raises if it cannot be trusted."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise PermissionError(0, f"{path} is not a regular file")
        if info.st_uid != os.getuid():
            raise PermissionError(0, f"{path} is owned by another user")
        if info.st_mode & 0o077:
            raise _DisclosedKey()
        key = _read_all(fd, KEY_BYTES + 1)
    finally:
        os.close(fd)
    if len(key) != KEY_BYTES:
        raise PermissionError(0, f"{path} is not a symgrad key ({len(key)} bytes)")
    return key


def _create_key(path: Path, replace: bool) -> bytes:
    """A new key written to ``path`` whole (a private temporary file, then a link or a
    rename): another process never sees a partial key; when two create it, one wins."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    key = secrets.token_bytes(KEY_BYTES)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".symgrad-key-")   # mode 0600
    try:
        try:
            _write_all(fd, key)
        finally:
            os.close(fd)
        if replace:
            os.replace(tmp, path)
            return key
        try:
            os.link(tmp, path)
        except FileExistsError:      # another process created it first: use that one
            return _read_key(path) or key
        return key
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def mac(name: str, source: str) -> str:
    """HMAC-SHA256 of a module's name and source under this user's key: a genuine module
    verifies only under its own name (its own cache key)."""
    message = b"symgrad-module\0" + name.encode("utf-8") + b"\0" + source.encode("utf-8")
    return hmac.new(secret_key(), message, hashlib.sha256).hexdigest()


def sealed(name: str, source: str) -> str:
    r"""The file text of module ``name``: the source, then its MAC line.

    >>> text = sealed("symgrad_gen_a", "x = 1\n")
    >>> text.splitlines()[-1].startswith("# symgrad-mac ")
    True
    >>> unsealed("symgrad_gen_a", text.encode()), unsealed("symgrad_gen_b", text.encode())
    ('x = 1\n', None)
    >>> unsealed("symgrad_gen_a", text.replace("1", "2").encode()) is None
    True
    """
    return source + MAC_PREFIX + mac(name, source) + "\n"


def unsealed(name: str, data: bytes) -> Optional[str]:
    """The source inside a file's bytes if its MAC verifies for module ``name``, else None."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    body, sep, last = text.rstrip("\n").rpartition("\n")
    if not sep or not last.startswith(MAC_PREFIX):
        return None
    source = body + "\n"
    if not hmac.compare_digest(last[len(MAC_PREFIX):].strip(), mac(name, source)):
        return None
    return source


# --- versions and names -----------------------------------------------------------------

_CODE_HASH: list = []


def code_hash() -> str:
    """A hash of this package's own source: a change in the code generator is a new key."""
    if not _CODE_HASH:
        digest = hashlib.sha256()
        for path in sorted(Path(__file__).parent.glob("*.py")):
            digest.update(path.read_bytes())
        _CODE_HASH.append(digest.hexdigest()[:16])
    return _CODE_HASH[0]


def versions() -> str:
    import numba
    import numpy
    import sympy

    from .. import __version__
    return (f"symgrad {__version__} numba {numba.__version__} numpy {numpy.__version__} "
            f"sympy {sympy.__version__} python {sys.version_info[:3]} code {code_hash()}")


def module_name(key: str) -> str:
    """The module (and file) name of a cache key.

    >>> module_name("0123456789abcdef" * 4)
    'symgrad_gen_0123456789abcdef0123456789abcdef'
    """
    return f"symgrad_gen_{key[:32]}"


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


def numba_cache_allowed(module_file: Path) -> bool:
    """Whether numba may keep its cache (pickles it will load and run) for the module in
    ``module_file``: every directory it may use must pass ``safe_directory``. Beside the
    module, ``__pycache__`` is made first (mode 0700), so it cannot be planted after the
    check; elsewhere the nearest existing ancestor is checked."""
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


# --- loading ----------------------------------------------------------------------------

def _lock(name: str) -> threading.Lock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(name, threading.Lock())


def execute(name: str, source: str, filename: str, numba_cache: bool) -> types.ModuleType:
    """Run ``source`` (already verified, or just generated) as module ``name``; it is in
    ``sys.modules`` while it runs (numba's cache needs that), and removed if it fails."""
    module = types.ModuleType(name)
    module.__file__ = filename
    module.__dict__["NUMBA_CACHE"] = numba_cache
    code = compile(source, filename, "exec", dont_inherit=True)
    sys.modules[name] = module
    try:
        exec(code, module.__dict__)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    module.__symgrad_source__ = source
    guard_parallel(module)
    return module


def guard_parallel(module: types.ModuleType) -> None:
    """Under numba's ``workqueue`` threading layer (not thread-safe: numba aborts the
    process when two threads launch parallel kernels at once), route the module's
    ``parallel=True`` kernels through one process-wide lock. tbb and omp need nothing."""
    from numba.core.dispatcher import Dispatcher

    kernels = {k: v for k, v in vars(module).items()
               if isinstance(v, Dispatcher) and v.targetoptions.get("parallel")}
    if not kernels or _threadsafe_layer():
        return
    for attr, kernel in kernels.items():
        setattr(module, attr, _serialised(kernel))


def _threadsafe_layer() -> bool:
    import numba
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


def load_or_build(key: str, build: Callable[[], str]) -> tuple:
    """(module, source, built) for ``key``: the verified cached module, else ``build()``'s
    source, written (when the cache works) and run. Safe from many threads at once."""
    name = module_name(key)
    module = _LOADED.get(name)
    if module is not None:
        return module, module.__symgrad_source__, False
    with _lock(name):
        module = _LOADED.get(name)
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
            return execute(name, source, str(path), numba_cache_allowed(path)), False
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
    return execute(name, source, str(path), numba_cache_allowed(path)), True


def _read_verified(name: str, path: Path) -> Optional[str]:
    """The verified source in ``path``, or None (absent, unreadable, not a regular file, too
    large, or not written by this user's symgrad under this name). Never blocks: a FIFO is
    opened non-blocking and refused; a symbolic link is not followed."""
    fix = "remove it or set SYMGRAD_CACHE_DIR to a directory you own"
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except (FileNotFoundError, NotADirectoryError):   # absent (writing it will tell)
        return None
    except OSError as exc:
        warn_once(path, f"cannot be read ({exc.strerror or exc}); rebuilding", fix)
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            warn_once(path, "is not a regular file; rebuilding", fix)
            return None
        data = _read_all(fd, MAX_MODULE_BYTES + 1)
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
    """Write atomically: a temporary file in the same directory, then ``os.replace`` (which
    also replaces a FIFO, a link or a device planted at ``path``, never writing through it)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.stem, suffix=".tmp")
    try:
        try:
            _write_all(fd, text.encode("utf-8"))
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _read_all(fd: int, limit: int) -> bytes:
    """Up to ``limit`` bytes of a regular file (non-blocking reads of one return all)."""
    parts, size = [], 0
    while size < limit:
        part = os.read(fd, min(limit - size, 1 << 20))
        if not part:
            break
        parts.append(part)
        size += len(part)
    return b"".join(parts)
