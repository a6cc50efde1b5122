"""Scalar kernels compiled from IR without numba's front end, their object code cached.

A generated module binds each such kernel as ``_s<i>_k = native_kernel_(IR, helpers,
statements, "_s<i>_k", globals())``: a ``NativeKernel`` that, at ``compile()`` (run by
``eager.compile_module``) or at its first call, makes the builtin function
(``codegen/llvm/native.py``) and puts it in the module's namespace in its own place, so
the driver's calls then go straight to compiled code.

The object code is kept on disk under ``$SYMGRAD_CACHE_DIR/native``, named by a hash of
the IR, the versions (symgrad's code included), the host CPU and this user's key tag, and
sealed with the user's key (``trust.seal_bytes``, docs/security.md): a file that does not
verify is never loaded (a warning, then an in-memory compile that replaces it); a cache
directory that is not the user's own, or an unwritable one, leaves the kernel compiled in
memory (a warning once).
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Optional

from ...numba_internals import enabled as internals_enabled
from ..cache.helpers import cache_helpers
from ..cache.modules import cache_dir, versions, write_bytes
from ..cache.numba_files import safe_directory
from ..cache.trust import key_tag, read_regular, seal_bytes, unseal_bytes, warn_once
from ..codegen.llvm import jit, native
from ..codegen.llvm.chunks import chunking

logger = logging.getLogger("symgrad")

MAX_BYTES = 1 << 30
STATS = {"compiled": 0, "loaded": 0}   # kernels of this process (tests, benchmarks)


def _directory() -> Optional[Path]:
    folder = cache_dir() / "native"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        warn_once(folder, f"compiled kernels are not cached ({exc.strerror})",
                  "set SYMGRAD_CACHE_DIR to a directory you can write")
        return None
    problem = safe_directory(folder)
    if problem:
        warn_once(folder, f"compiled kernels are not cached: {problem}",
                  "use a cache directory that only you own and can write (chmod go-w)")
        return None
    return folder


def _file_name(ir_text: str, statements: int) -> str:
    import llvmlite.binding as ll

    opt, machine = native.levels(ir_text, statements)
    text = "\0".join(["symgrad native kernel", versions(), ll.get_host_cpu_name(),
                      ll.get_host_cpu_features().flatten(), str(opt), str(machine),
                      ir_text])
    return hashlib.sha256(text.encode()).hexdigest()[:40] + "-" + key_tag() + ".o"


_LIVE: dict = {}     # IR text -> builtin function made in this process


def build(ir_text: str, helpers: tuple, statements: int):
    """The builtin function of a kernel: the one this process made of the same IR, else
    from the cache when a sealed file verifies, else compiled (and stored)."""
    fn = _LIVE.get(ir_text)
    if fn is None:
        fn = _LIVE[ir_text] = _build(ir_text, helpers, statements)
    return fn


def _build(ir_text: str, helpers: tuple, statements: int):
    folder = _directory()
    path = None if folder is None else folder / _file_name(ir_text, statements)
    if path is not None:
        try:
            data = read_regular(path, MAX_BYTES)
        except FileNotFoundError:
            data = None
        except OSError as exc:
            data = None
            warn_once(path, f"a cached kernel could not be read ({exc.strerror})",
                      "remove the file")
        if data is not None:
            payload = unseal_bytes(path.name, data)
            fn = None if payload is None else native.load_kernel(ir_text, payload)
            if fn is not None:
                STATS["loaded"] += 1
                return fn
            warn_once(path, "a cached kernel did not verify and was not loaded; it is "
                      "compiled again", "nothing to do (it is replaced)")
    if helpers:       # numba compiles them to link: numba's sealed cache first (a module
        cache_helpers()   # whose numba names are deferred has not set it up yet)
    fn, payload = native.compile_kernel(ir_text, helpers, statements)
    STATS["compiled"] += 1
    if path is not None:
        try:
            write_bytes(path, seal_bytes(path.name, payload))
        except OSError as exc:
            warn_once(path.parent, f"compiled kernels are not cached ({exc.strerror})",
                      "set SYMGRAD_CACHE_DIR to a directory you can write")
    return fn


def _refuse(*args):
    return NotImplemented


class NativeKernel:
    """A kernel compiled at ``compile()`` or at its first call; it then replaces itself in
    ``namespace`` (the generated module's globals) by its builtin function."""

    def __init__(self, ir_text: str, helpers: tuple, statements: int, name: str,
                 namespace: dict, size: int = 0):
        self.ir_text, self.helpers, self.statements = ir_text, helpers, statements
        self.size = size or statements    # statements, reads and writes: LLVM's levels
        self.name, self.namespace = name, namespace
        self.function = None
        self.reason = ""          # why the kernel runs numba's function instead (explain)

    def compile(self):
        if self.function is None:
            if not internals_enabled():
                self.reason = "SYMGRAD_NUMBA_INTERNALS=0: the IR path uses numba's LLVM layer"
                self.function = _refuse
            elif not native.layout_ok():
                self.reason = "numpy's array layout is not the one the IR reads"
                self.function = _refuse
            else:
                try:
                    self.function = build(self.ir_text, self.helpers, self.size)
                except Exception as exc:    # noqa: BLE001 - numba's function still runs
                    logger.warning("symgrad: a scalar kernel's IR did not compile (%s: %s);"
                                   " numba compiles it instead", type(exc).__name__, exc)
                    self.reason = f"LLVM did not compile its IR ({type(exc).__name__})"
                    self.function = _refuse
            if self.namespace.get(self.name) is self:
                self.namespace[self.name] = self.function
        return self.function

    def __call__(self, *args):
        return self.compile()(*args)


def native_kernel(ir_text: str, helpers: tuple, statements: int, name: str,
                  namespace: dict, size: int = 0) -> NativeKernel:
    """What a generated module binds for a kernel written as IR (``native_kernel_``);
    ``size``: its statements, element reads and element writes (LLVM's levels)."""
    return NativeKernel(ir_text, helpers, statements, name, namespace, size)


def kernels(module) -> list:
    """The ``NativeKernel``s of a generated module (compiled or not), by name."""
    return [(name, k) for name, k in sorted(getattr(module, "NATIVE_KERNELS_", {}).items())]


def paths(module) -> dict:
    """{scalar kernel node index: how it runs} for ``f.explain()``: LLVM IR compiled by
    LLVM alone, or numba's function and why."""
    out = {}
    for name, kernel in kernels(module):
        index = int(name[2:-2])              # "_s<i>_k"
        if kernel.reason:
            out[index] = f"numba function ({kernel.reason})"
        else:
            opt, machine = native.levels(kernel.ir_text, kernel.size)
            shape = chunking(kernel.ir_text)
            passes = f"-O{opt}" if isinstance(opt, int) else \
                ", ".join(jit.SHORT_PASSES)
            split = "" if shape is None else \
                f", in {shape[0]} chunks of at most {shape[1]} (one LLVM function each)"
            out[index] = (f"LLVM IR compiled by llvmlite, no numba front end "
                          f"({kernel.statements} statements, {kernel.size} with reads and "
                          f"writes{split}, passes {passes}, code generation -O{machine})")
    for index, why in getattr(module, "NUMBA_REASONS_", {}).items():
        out[index] = f"numba function ({why})"
    return out
