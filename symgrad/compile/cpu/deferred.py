"""A scalar kernel's numba forms compiled from the generated module's text when first used.

A scalar kernel written as IR (``scalar/source.py``: ``_s<i>_k``, called through
``_s<i>_native``) keeps numba's forms of the same kernel: ``_s<i>`` (run where the IR
kernel declines its arguments, and by a while loop's njit driver), ``_s<i>_into`` (a fused
scan's step) and the LLVM body they call. Most functions never use them, so the module
holds their text in a string literal, ``deferred_(globals(), names, '''...''')``, and a
stub under each name: Python compiles 10,000 lines of element reads and writes of a
100 x 100 Jacobian only where one is called (0.17 s of a mass-action build). The text is
compiled with the line numbers it has inside the module file, so numba's cache and
``inspect`` read the function's own lines; its dispatchers get the module's cache guard.

Inside the module a stub is called by name (``_s<i>_native`` calls ``_s<i>``); from
outside, the module (a ``DeferringModule``) hands out the compiled function on attribute
access (``module._s<i>_into.py_func`` in a fused loop, ``B_._s<i>`` in a while loop's).

>>> import sys, types
>>> m = types.ModuleType("deferred_demo")
>>> sys.modules[m.__name__] = m
>>> m.__symgrad_source__ = "x = 1\\ndeferred_(globals(), ('f',), '''\\ndef f(a):\\n    return a + 1\\n''')\\n"
>>> deferred(m.__dict__, ("f",), "\\ndef f(a):\\n    return a + 1\\n")
>>> type(m.__dict__["f"]).__name__, m.f(2), m.f.__code__.co_firstlineno
('Deferred', 3, 3)
>>> del sys.modules[m.__name__]
"""

from __future__ import annotations

import sys
import threading
import types
from pathlib import Path

__all__ = ["Deferred", "DeferringModule", "deferred"]

_LOCK = threading.RLock()


class _Group:
    """The names one literal defines, compiled together once."""

    __slots__ = ("namespace", "names", "text", "done")

    def __init__(self, namespace: dict, names: tuple, text: str):
        self.namespace, self.names, self.text, self.done = namespace, names, text, False

    def made(self, name: str):
        ns = self.namespace
        with _LOCK:
            if not self.done:
                code = compile("\n" * self._line() + self.text, ns.get("__file__", "<symgrad>"),
                               "exec", dont_inherit=True)
                exec(code, ns)
                if ns.get("NUMBA_CACHE") and ns.get("__file__"):
                    from ..cache.numba_files import guard_dispatcher
                    where = Path(ns["__file__"]).parent / "__pycache__"
                    for n in self.names:
                        guard_dispatcher(ns.get(n), where)
                self.done = True
        return ns[name]

    def _line(self) -> int:
        """The lines of the module before the literal's opening line (0 if not found)."""
        ns = self.namespace
        source = ns.get("__symgrad_source__")
        if source is None and ns.get("__file__"):
            try:
                source = Path(ns["__file__"]).read_text()
            except OSError:
                source = None
        at = -1 if source is None else source.find(f"deferred_(globals(), {self.names!r}, '''")
        return 0 if at < 0 else source.count("\n", 0, at)


class Deferred:
    """The stub of one deferred name: calling it compiles its group and calls the function."""

    __slots__ = ("group", "name")

    def __init__(self, group: _Group, name: str):
        self.group, self.name = group, name

    def __call__(self, *args, **kwargs):
        return self.group.made(self.name)(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<deferred {self.name} (compiled when first used)>"


class DeferringModule(types.ModuleType):
    """A generated module whose deferred names compile when read from outside."""

    def __getattribute__(self, name: str):
        value = types.ModuleType.__getattribute__(self, name)
        if type(value) is Deferred:
            return value.group.made(value.name)
        return value


def deferred(namespace: dict, names: tuple, text: str) -> None:
    """Stubs for ``names`` in ``namespace`` (a generated module's globals), defined by
    ``text`` (the literal at ``deferred_(globals(), names, '''``) when first used."""
    group = _Group(namespace, tuple(names), text)
    for name in group.names:
        namespace[name] = Deferred(group, name)
    module = sys.modules.get(namespace.get("__name__"))
    if module is not None and module.__dict__ is namespace and \
            type(module) is types.ModuleType:
        module.__class__ = DeferringModule
