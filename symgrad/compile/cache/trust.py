"""What symgrad trusts: this user's secret key, and the MACs that bind to it a module's
name and text, and each numba cache file's name and bytes (docs/security.md). Also the one
warning channel of the cache, ``warn_once``.

A key file is opened without following links or blocking and must be this user's regular
32-byte file: one that group or others may read or write is replaced (with a warning); any
other is refused, never overwritten, and a key for this process only is used.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Optional

from ...errors import CacheWarning

MAC_PREFIX = "# symgrad-mac "
KEY_BYTES = 32
OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)

_KEY_GUARD = threading.Lock()
_WARNED: set = set()
_KEY: list = []


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
        fd = os.open(path, OPEN_FLAGS)
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
        key = read_all(fd, KEY_BYTES + 1)
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
            write_all(fd, key)
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


def key_persists() -> bool:
    """Whether this process's key is the one in ``key_file()`` (False for a key for this
    process only: files sealed under it verify in no other process)."""
    key = secret_key()
    try:
        return _read_key(key_file()) == key
    except (OSError, _DisclosedKey):
        return False


def key_tag() -> str:
    """16 hex digits naming this user's key (an HMAC of a fixed text under it, which tells
    nothing of the key): files sealed under two keys can be given two names."""
    return hmac.new(secret_key(), b"symgrad-key-tag", hashlib.sha256).hexdigest()[:16]


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

NUMBA_MAGIC = b"symgrad-sealed-numba-1\n"
MAC_BYTES = 32


def seal_bytes(name: str, payload: bytes) -> bytes:
    r"""The bytes of numba cache file ``name`` (its base name): a magic line, the
    HMAC-SHA256 of the name and ``payload`` under this user's key, then ``payload``.

    >>> data = seal_bytes("m.run-3.py311.nbi", b"numba's pickle")
    >>> unseal_bytes("m.run-3.py311.nbi", data), unseal_bytes("m.run-4.py311.nbi", data)
    (b"numba's pickle", None)
    >>> unseal_bytes("m.run-3.py311.nbi", data[:-1]) is None
    True
    """
    return NUMBA_MAGIC + _numba_mac(name, payload) + payload


def unseal_bytes(name: str, data: bytes) -> Optional[bytes]:
    """The payload inside ``data`` if its MAC verifies for file ``name``, else None."""
    head = len(NUMBA_MAGIC) + MAC_BYTES
    if len(data) < head or not data.startswith(NUMBA_MAGIC):
        return None
    payload = data[head:]
    if not hmac.compare_digest(data[len(NUMBA_MAGIC):head], _numba_mac(name, payload)):
        return None
    return payload


def _numba_mac(name: str, payload: bytes) -> bytes:
    message = b"symgrad-numba\0" + name.encode("utf-8") + b"\0" + payload
    return hmac.new(secret_key(), message, hashlib.sha256).digest()


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def read_regular(path, limit: int) -> Optional[bytes]:
    """Up to ``limit`` bytes of ``path`` if it is a regular file (opened without following a
    link and without blocking on a FIFO), None if it is something else; OS errors (absent
    included) are raised."""
    fd = os.open(path, OPEN_FLAGS)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return read_all(fd, limit)
    finally:
        os.close(fd)


def read_all(fd: int, limit: int) -> bytes:
    """Up to ``limit`` bytes of a regular file (non-blocking reads of one return all)."""
    parts, size = [], 0
    while size < limit:
        part = os.read(fd, min(limit - size, 1 << 20))
        if not part:
            break
        parts.append(part)
        size += len(part)
    return b"".join(parts)
