"""Loop kernels compiled from IR without numba's front end, their object code cached.

A generated module keeps each serial loop kernel's numba function (``_k<i>_cpu``) and
binds beside it ``_k<i>_cpu_k = native_loop_(SOURCE, POINT, "_k<i>_cpu_k", globals())``,
a ``NativeLoop``, and the driver calls ``_k<i>_cpu_native``, which runs the IR kernel and,
where it declines its arguments (returns ``NotImplemented``: another dtype, rank or
layout than it was written for), ``NativeLoop.other``: the IR written for those (a strided
view where the first call had a contiguous array), or numba's function (a dtype the IR
writer does not cover). The IR (``codegen/llvm/loops.py``) is
written for the argument types of the first call (``eager.compile_module``'s dry run, or
a real call), compiled by numba's LLVM pipeline and cached sealed as the scalar kernels
are (``native_kernels.build``: ``$SYMGRAD_CACHE_DIR/native``); the builtin function then
replaces the ``NativeLoop`` in the module's namespace. A loop outside the IR writer's
subset stays numba's, and ``f.explain()`` says which path each kernel took and why.

>>> import numpy as np
>>> src = "def f(n0, x0, r0):\\n    for i0 in range(n0):\\n        e0, = g(x0[i0])\\n" \\
...       "        r0[i0] = e0"
>>> ns = {}
>>> k = native_loop(src, ("g", ["a0"], [], ["2.0*a0"]), "k", ns)
>>> x, r = np.arange(3.0), np.zeros(3)
>>> k(3, x, r) is None, r.tolist(), k.path().startswith("LLVM IR")
(True, [0.0, 2.0, 4.0], True)
>>> ns["k"](3, x[::2], r) is NotImplemented      # a strided view: numba's function runs
True
"""

from __future__ import annotations

import logging
from typing import Optional

from ...numba_internals import enabled as internals_enabled
from ..codegen.llvm import native
from ..codegen.llvm.body import Unsupported
from ..codegen.llvm.loops import loop_ir, signature, size
from . import native_kernels

logger = logging.getLogger("symgrad")
ENABLED = True     # False: every loop kernel is numba's (tests compare the two paths)
MORE = 4           # argument types beyond the first call's written as IR per loop
BODY_STATEMENTS = 200
"""Loops whose scalar body has more statements stay numba's (the body itself is IR there,
``templates.llvm_body_source``): the IR loop inlines its body and runs numba's -O3 on the
whole, which grows faster than linearly (a 1,250-term wide sum, 11,000 statements: 55 s
against numba's 2.4 s, whose loop calls the body without inlining it past
``templates.INLINE_STATEMENTS``, also 200)."""


def _refuse(*args):
    return NotImplemented


class NativeLoop:
    """A loop kernel written as IR for the argument types of its first call."""

    def __init__(self, source: str, point: tuple, name: str, namespace: dict):
        self.source, self.point, self.name, self.namespace = source, point, name, namespace
        self.function = None
        self.reason = ""
        self.instructions = 0
        self.more: dict = {}          # other argument types -> their function

    def compile_for(self, args: tuple) -> bool:
        """Make the builtin function for arguments like ``args`` (the first call's); False
        where the kernel is numba's (``reason`` says why)."""
        if self.function is None:
            self.function = self._make(args)
            if self.namespace.get(self.name) is self:
                self.namespace[self.name] = self.function
        return self.function is not _refuse

    def _make(self, args: tuple):
        if not ENABLED:
            self.reason = "symgrad.compile.cpu.native_loops.ENABLED is False"
            return _refuse
        if not internals_enabled():
            self.reason = "SYMGRAD_NUMBA_INTERNALS=0: the IR path uses numba's LLVM layer"
            return _refuse
        if not native.layout_ok():
            self.reason = "numpy's array layout is not the one the IR reads"
            return _refuse
        types = signature(tuple(args))
        if types is None:
            self.reason = f"argument {_first_other(args)} of the first call is not an int " \
                "or an aligned float64/bool array in native byte order"
            return _refuse
        return self._compile(types)

    def _compile(self, types: tuple):
        try:
            text = loop_ir(self.source, self.point, types)
        except Unsupported as exc:
            self.reason = f"outside the IR writer's subset: {exc}"
            return _refuse
        self.instructions = size(text)
        try:
            return native_kernels.build(text, (), self.levels())
        except Exception as exc:    # noqa: BLE001 - numba's function still runs
            logger.warning("symgrad: a loop kernel's IR did not compile (%s: %s); numba "
                           "compiles it instead", type(exc).__name__, exc)
            self.reason = f"LLVM did not compile its IR ({type(exc).__name__})"
            return _refuse

    def other(self, *args) -> None:
        """Where the first call's function declines ``args`` (another layout or rank): the
        IR written for their types (up to ``MORE`` of them), else numba's function."""
        types = None if self.reason else signature(args)
        fn = self.more.get(types)
        if fn is None and types is not None and len(self.more) < MORE:
            fn = self.more[types] = self._compile(types)
        if fn is None or fn(*args) is not None:
            self.namespace[self.name[:-2]](*args)

    def __call__(self, *args):
        self.compile_for(args)
        return self.function(*args)

    def levels(self) -> int:
        """The size ``native`` chooses LLVM's levels by: numba's (-O3 passes and code
        generation) for every loop, whose bodies are small and run many times."""
        return min(self.instructions, native.CODEGEN_O3)

    def path(self) -> Optional[str]:
        """How the kernel runs, for ``f.explain()`` (None before its first call)."""
        if self.function is None:
            return None
        if self.reason:
            return f"numba function ({self.reason})"
        n = self.levels()
        return (f"LLVM IR compiled by llvmlite, no numba front end (loop and body, "
                f"{self.instructions} instructions, passes -O{native.opt_level(n)}, code "
                f"generation -O{native.codegen_level(n)})")


def _first_other(args: tuple) -> str:
    """The position and type of the first argument ``signature`` does not take."""
    for k, a in enumerate(args):
        if signature((a,)) is None:
            what = getattr(a, "dtype", None)
            flags = getattr(a, "flags", None)
            layout = "" if flags is None else \
                (" C-contiguous" if flags.c_contiguous else " strided")
            return f"{k} ({type(a).__name__}{layout}{'' if what is None else ' ' + str(what)})"
    return "?"


def native_loop(source: str, point: tuple, name: str, namespace: dict) -> NativeLoop:
    """What a generated module binds for a loop kernel written as IR (``native_loop_``):
    ``source`` the loop function's text, ``point`` (the scalar body's name, parameter
    names, printed statements, printed results)."""
    loop = NativeLoop(source, point, name, namespace)
    namespace.setdefault("NATIVE_LOOPS_", {})[name] = loop
    namespace.setdefault(name, loop)
    return loop


def loops(module) -> list:
    """The ``NativeLoop``s of a generated module, by name."""
    return sorted(getattr(module, "NATIVE_LOOPS_", {}).items())


def paths(module) -> dict:
    """{("kernel", index): how it runs} of the module's loop kernels (``f.explain()``)."""
    out = {}
    for name, loop in loops(module):       # "_k<i>_cpu_k"
        path = loop.path()
        if path is not None:
            out[("kernel", int(name[2:].split("_")[0]))] = path
    for index, why in getattr(module, "LOOP_REASONS_", {}).items():
        out[("kernel", index)] = f"numba function ({why})"
    return out


def section(fn: str, loop_text: str, point: tuple) -> str:
    """The generated lines binding ``<fn>_k`` and the wrapper ``<fn>_native`` the driver
    calls (the parameters are the loop function's)."""
    params = loop_text.split("def ", 1)[1].split("(", 1)[1].split(")", 1)[0]
    return "\n".join([
        f"# {fn}_k: the loop and its body as LLVM IR, written for the argument types of "
        "the first call and compiled without the front end of numba",
        "from symgrad.compile.cpu.native_loops import native_loop as native_loop_",
        f"{fn}_k = native_loop_({loop_text!r},", f"    {point!r},",
        f"    {fn + '_k'!r}, globals())", f"{fn}_k_other = {fn}_k.other", "", "",
        f"def {fn}_native({params}):",
        f"    if {fn}_k({params}) is not None:",
        f"        {fn}_k_other({params})   # other arrays than it was written for"])
