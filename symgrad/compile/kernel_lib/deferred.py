"""numba's names in a generated module, made only when the module first needs numba.

A generated module defines numba functions (``@numba.njit``) beside the kernels written
as LLVM IR (``native_kernels``, ``native_loops``), which run without numba: numba's
function of such a kernel runs only where the IR declines its arguments. Importing numba
costs about 0.2 s CPU, more than the whole build of a small function, so where numba is
not imported yet, the module's header binds stand-ins from here: ``numba`` (whose
``njit(...)`` makes a ``Deferred``), ``always_inline`` and the names it imports from
numba modules (``deferred_names``). The first call of a ``Deferred`` (or a look at one of
its attributes) makes the module real: ``materialize`` imports numba, makes every
deferred object of the module's namespace as the plain header would have made it, in the
order the module bound them, and binds the real ``numba``, ``always_inline`` and
``NumbaError_``. Where numba is imported already the stand-ins make the real objects at
once: the module is what it always was.

>>> ns = {}
>>> exec("from symgrad.compile.kernel_lib.deferred import numba, deferred_names\\n"
...      "deferred_names(globals(), 'math', ('floor',))\\n"
...      "@numba.njit(cache=False)\\n"
...      "def f(x):\\n    return floor(x) + 1.0", ns)
>>> ns["f"](2.5)                      # the first call makes f numba's (numba imported now)
3.0
>>> pending(ns), ns["floor"].__name__
(False, 'floor')
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
from typing import Any, Callable, Optional

_LOCK = threading.RLock()


def numba_imported() -> bool:
    return "numba" in sys.modules


def jit_disabled() -> bool:
    """numba's ``config.DISABLE_JIT``, read without importing numba where it is not yet
    (then only the environment can have set it)."""
    if numba_imported():
        from numba import config

        return bool(config.DISABLE_JIT)
    return os.environ.get("NUMBA_DISABLE_JIT", "0").strip() not in ("", "0")


class Deferred:
    """An object of a generated module that needs numba: ``make()`` makes it. Calling it,
    or reading a public attribute, makes the whole module's numba objects
    (``materialize``); a private one (``_cache``, ``__wrapped__``: a probe) is absent."""

    __slots__ = ("make", "namespace", "order", "made")
    _count = [0]

    def __init__(self, make: Callable[[], Any], namespace: Optional[dict]):
        self.make, self.namespace, self.made = make, namespace, None
        Deferred._count[0] += 1
        self.order = Deferred._count[0]

    def real(self) -> Any:
        if self.namespace is None:
            raise RuntimeError("symgrad: a deferred numba object outside a module namespace")
        materialize(self.namespace)
        with _LOCK:
            if self.made is None:        # no longer bound in the namespace: made alone
                self.made = self.make()
        return self.made

    def __call__(self, *args, **kwargs):
        return self.real()(*args, **kwargs)

    def __getattr__(self, name: str):
        if name.startswith("_"):     # probes of private names (caches, wrappers) make nothing
            raise AttributeError(name)
        return getattr(self.real(), name)

    def __repr__(self) -> str:
        return "<symgrad deferred numba object>"


class Later:
    """A value known only when the module needs numba (``NUMBA_CACHE``: whether numba may
    cache there, a check of numba's cache directories that reads numba's settings)."""

    def __init__(self, compute: Callable[[], Any]):
        self.compute, self.done, self.value = compute, False, None

    def get(self) -> Any:
        if not self.done:
            self.value, self.done = self.compute(), True
        return self.value


def _resolved(options: dict) -> dict:
    return {k: v.get() if isinstance(v, Later) else v for k, v in options.items()}


class _Numba:
    """The ``numba`` of a generated module's header while numba is not imported."""

    def njit(self, *args, **options):
        if args and callable(args[0]):
            return self.njit(*args[1:], **options)(args[0])

        def decorate(fn):
            if numba_imported():    # the function's own globals read numba's module
                if isinstance(fn.__globals__.get("numba"), _Numba):
                    fn.__globals__["numba"] = _real_numba()
                return _real_numba().njit(*args, **_resolved(options))(fn)
            return Deferred(lambda: _real_numba().njit(*args, **_resolved(options))(fn),
                            fn.__globals__)
        return decorate

    def __getattr__(self, name: str):
        return getattr(_real_numba(), name)


def _real_numba():
    import numba

    return numba


numba = _Numba()


def always_inline(dispatcher):
    """``support.always_inline``, deferred with what it wraps."""
    if isinstance(dispatcher, Deferred):
        inner = dispatcher.make
        return Deferred(lambda: _support().always_inline(inner()), dispatcher.namespace)
    return _support().always_inline(dispatcher)


def _support():
    from . import support

    return support


def deferred_names(namespace: dict, module: str, names: tuple) -> None:
    """Bind ``names`` of ``module`` in ``namespace`` (``from module import names``; a name
    may read ``"name as alias"``), as ``Deferred`` objects while numba is not imported."""
    pairs = [(n.partition(" as ")[0], n.partition(" as ")[2] or n) for n in names]
    if numba_imported():
        source = importlib.import_module(module)
        namespace.update({alias: getattr(source, n) for n, alias in pairs})
        return
    for n, alias in pairs:
        namespace[alias] = Deferred(lambda n=n: getattr(importlib.import_module(module), n),
                                    namespace)


def pending(namespace: dict) -> bool:
    """Whether ``namespace`` still holds deferred objects."""
    return any(isinstance(v, Deferred) for v in list(namespace.values()))


def materialize(namespace: dict) -> None:
    """Make every deferred object of ``namespace`` (imports numba), in binding order."""
    with _LOCK:
        found = sorted(((v.order, k, v) for k, v in list(namespace.items())
                        if isinstance(v, Deferred)), key=lambda t: t[0])
        if not found and not isinstance(namespace.get("numba"), _Numba) and \
                "ON_NUMBA_" not in namespace and not isinstance(namespace.get("NUMBA_CACHE"),
                                                                 Later):
            return
        real = _real_numba()
        from numba.core.errors import NumbaError

        if isinstance(namespace.get("numba"), _Numba):
            namespace["numba"] = real
        if namespace.get("always_inline") is always_inline:
            namespace["always_inline"] = _support().always_inline
        if "NumbaError_" in namespace:
            namespace["NumbaError_"] = NumbaError
        if isinstance(namespace.get("NUMBA_CACHE"), Later):
            namespace["NUMBA_CACHE"] = namespace["NUMBA_CACHE"].get()
        if namespace.get("NTHREADS") is None and "NTHREADS" in namespace:
            namespace["NTHREADS"] = real.get_num_threads()
        for _, name, value in found:
            made = value.made = value.make()
            if namespace.get(name) is value:
                namespace[name] = made
        guard = namespace.pop("ON_NUMBA_", None)    # the module's numba cache and locks
        if guard is not None:
            guard()
