"""The module cache: generated modules are real files, named by a content hash and
authenticated with a per-user key.

Threat model (README, "Security"): symgrad runs only code it generated. A module file ends
with an HMAC-SHA256 of its text under a secret key that only this user can read
(``$SYMGRAD_KEY_FILE``, default ``~/.config/symgrad/cache.key``, mode 0600). A file is read
once, its MAC checked, and the checked bytes are compiled and executed (no import system,
no bytecode read from or written to the cache). numba's own cache files (pickles) are used
only where the directory that holds them is owned by this user and writable by no one else
(OpenSSH's check, up the path; a sticky world-writable parent such as /tmp is accepted);
elsewhere numba caching is off, with a warning. Any fault of the cache (unwritable, full,
a file where a directory should be, a corrupted, truncated or foreign file) degrades to a
compile in memory, with one ``CacheWarning`` per directory.

Threads: one lock per key; a module is published only once it has run completely.
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

_LOADED: dict = {}                 # module name -> module, complete modules only
_LOCKS: dict = {}
_LOCKS_GUARD = threading.Lock()
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
    env = os.environ.get("SYMGRAD_KEY_FILE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "symgrad" / "cache.key"


def warn_once(where: object, problem: str, fix: str) -> None:
    text = f"symgrad cache {where}: {problem}; {fix}"
    if text not in _WARNED:
        _WARNED.add(text)
        warnings.warn(text, CacheWarning, stacklevel=4)


# --- the key and the MAC ----------------------------------------------------------------

def secret_key() -> bytes:
    """This user's cache key: read from ``key_file()`` (created with mode 0600 when absent).
    A key that cannot be read or created safely is replaced by a key for this process only
    (cached modules then do not verify and are rebuilt)."""
    if _KEY:
        return _KEY[0]
    path = key_file()
    key = None
    try:
        key = _read_key(path)
        if key is None:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(secrets.token_bytes(KEY_BYTES))
            key = _read_key(path)
    except OSError as exc:
        warn_once(path, f"the cache key cannot be read or created ({exc.strerror or exc})",
                  "set SYMGRAD_KEY_FILE to a file only you can write; using a key for this "
                  "process only")
    if key is None:
        key = secrets.token_bytes(KEY_BYTES)
    _KEY.append(key)
    return key


def _read_key(path: Path) -> Optional[bytes]:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if info.st_uid != os.getuid() or info.st_mode & 0o077:
            raise PermissionError(0, f"{path} must be owned by you with mode 0600")
        key = handle.read()
    if len(key) != KEY_BYTES:
        raise PermissionError(0, f"{path} is not a symgrad key")
    return key


def mac(text: str) -> str:
    return hmac.new(secret_key(), text.encode("utf-8"), hashlib.sha256).hexdigest()


def sealed(source: str) -> str:
    """The file text for ``source``: the source, then its MAC line."""
    return source + MAC_PREFIX + mac(source) + "\n"


def unsealed(data: bytes) -> Optional[str]:
    """The source inside a file's bytes if its MAC verifies, else None."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    body, sep, last = text.rstrip("\n").rpartition("\n")
    if not sep or not last.startswith(MAC_PREFIX):
        return None
    source = body + "\n"
    if not hmac.compare_digest(last[len(MAC_PREFIX):].strip(), mac(source)):
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
    return f"symgrad_gen_{key[:32]}"


# --- numba's cache directory ------------------------------------------------------------

def numba_cache_allowed(module_dir: Path) -> bool:
    """Whether numba may keep its cache (pickles it will load) for modules in
    ``module_dir``: the directory it uses must be safe (see ``safe_directory``)."""
    env = os.environ.get("NUMBA_CACHE_DIR")
    target = Path(env) if env else module_dir / "__pycache__"
    probe = target
    while not probe.exists() and probe.parent != probe:     # numba creates it, ours
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
    itself when ``created``: the directory we need will be made inside it), else why not."""
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
    return module


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
    source = _read_verified(path)
    if source is not None:
        try:
            return execute(name, source, str(path), numba_cache_allowed(directory)), False
        except Exception:        # verified but broken (another symgrad version): rebuild
            sys.modules.pop(name, None)
    source = build()
    try:
        _prepare(directory)
        _write(path, sealed(source))
    except OSError as exc:
        warn_once(directory, f"cannot write ({exc.strerror or exc}); compiled in memory",
                  "make it writable, or set SYMGRAD_CACHE_DIR to a directory you own")
        return execute(name, source, f"<symgrad {name}>", False), True
    return execute(name, source, str(path), numba_cache_allowed(directory)), True


def _read_verified(path: Path) -> Optional[str]:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except (FileNotFoundError, NotADirectoryError):   # absent (writing it will tell)
        return None
    except OSError as exc:
        warn_once(path, f"cannot be read ({exc.strerror or exc}); rebuilding",
                  "remove it or set SYMGRAD_CACHE_DIR to a directory you own")
        return None
    try:
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise IsADirectoryError(21, "not a regular file")
            data = handle.read()
    except OSError as exc:
        warn_once(path, f"cannot be read ({exc.strerror or exc}); rebuilding",
                  "remove it or set SYMGRAD_CACHE_DIR to a directory you own")
        return None
    source = unsealed(data)
    if source is None:
        warn_once(path, "is not a module this user's symgrad wrote (truncated, corrupted or "
                  "foreign); rebuilding", "nothing to do: it is replaced")
    return source


def _prepare(directory: Path) -> None:
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not directory.is_dir():
        raise NotADirectoryError(20, "not a directory", str(directory))


def _write(path: Path, text: str) -> None:
    """Write atomically: a temporary file in the same directory, then ``os.replace``."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.stem, suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
