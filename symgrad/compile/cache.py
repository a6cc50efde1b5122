"""The module cache: generated modules are real files, named by a content hash.

A module is written once (to a temporary file, then ``os.replace``, so processes that
compile the same function at once never see half a file), imported under its own name
and registered in ``sys.modules`` before it runs, which numba's ``cache=True`` needs.
A file that does not end with the checksum of its text is rebuilt, not trusted.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
from pathlib import Path

CHECK_PREFIX = "# symgrad-checksum "


def cache_dir() -> Path:
    """``$SYMGRAD_CACHE_DIR``, else ``symgrad`` under the user's cache folder."""
    env = os.environ.get("SYMGRAD_CACHE_DIR")
    if env:
        path = Path(env)
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        path = Path(base) / "symgrad"
    path.mkdir(parents=True, exist_ok=True)
    return path


_CODE_HASH = []


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


def _checksum(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def read_valid(path: Path):
    """The text of a cached module if it is complete and unchanged, else None."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    body, sep, last = text.rstrip("\n").rpartition("\n")
    if not sep or not last.startswith(CHECK_PREFIX):
        return None
    if last[len(CHECK_PREFIX):].strip() != _checksum(body + "\n"):
        return None
    return body + "\n"


def write_module(path: Path, source: str) -> None:
    text = source + CHECK_PREFIX + _checksum(source) + "\n"
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


def import_module(key: str, path: Path):
    """Import the module file under its name (once per process)."""
    name = module_name(key)
    module = sys.modules.get(name)
    if module is not None:
        return module
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def load_or_build(key: str, build) -> tuple:
    """(module, source, built) for ``key``: the cached module, or ``build()``'s source
    written and imported. A corrupted or unimportable file is rebuilt."""
    name = module_name(key)
    if name in sys.modules:
        module = sys.modules[name]
        return module, module.__symgrad_source__, False
    path = cache_dir() / f"{name}.py"
    source = read_valid(path)
    built = False
    if source is None:
        source = build()
        write_module(path, source)
        built = True
    try:
        module = import_module(key, path)
    except Exception:
        if built:
            raise
        source = build()
        write_module(path, source)
        module = import_module(key, path)
        built = True
    module.__symgrad_source__ = source
    return module, source, built
