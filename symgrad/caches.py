"""``sg.clear_caches()`` and ``sg.cache_info()``: what symgrad keeps in memory between
compiles, and how to drop it (docs/memory.md).

A compiled function keeps nothing of symgrad's once it is dropped (its generated module
leaves ``sys.modules`` and drops its runtime names; numba keeps its machine code for ever,
which no library can free). What stays is bounded memos that make later compiles faster:

>>> import symgrad as sg
>>> sorted(sg.cache_info())[:3]
['derived', 'formulas', 'gradient_rules']
>>> sg.clear_caches()
>>> sg.cache_info()["formulas"]
0
"""

from __future__ import annotations

import functools
import sys

__all__ = ["clear_caches", "cache_info"]


def _lru_caches() -> dict:
    """{name: lru_cache-wrapped function} of symgrad's memoised helpers."""
    from .differentiate import partials, sweep
    from .ops import symbols
    from .ops.elementwise import records
    from . import forward
    found = {}
    for label, module in (("partials", partials), ("sweep", sweep), ("symbols", symbols),
                          ("records", records), ("forward", forward)):
        for name, value in vars(module).items():
            if isinstance(value, functools._lru_cache_wrapper) and \
                    getattr(value, "__module__", None) == module.__name__:
                found[f"{label}.{name}"] = value
    return found


def _loaded(name: str) -> object:
    """symgrad's module ``name`` if this process has loaded it, else None: a compiler module
    not yet loaded holds nothing, and loading it here would load numba (tests/
    test_import_time.py)."""
    return sys.modules.get(f"{__package__}.{name}")


def cache_info() -> dict:
    """Entries held by each of symgrad's in-memory caches: ``formulas`` and ``derived``
    (the fold's formula memo, at most ``rewrite.FORMULA_MEMO`` entries), ``symbols``,
    ``gradient_rules`` (the lru caches of partials, sweep and forward-mode rules, each
    bounded), ``modules`` (generated modules in use), ``pickled`` (functions registered for
    unpickling in this process), ``sympy`` (sympy's own cache)."""
    from .distributed import pickling
    rewrite, modules = _loaded("compile.plan.rewrite"), _loaded("compile.cache.modules")
    info = {"formulas": len(getattr(rewrite, "_FORMULAS", ())),
            "derived": len(getattr(rewrite, "_DERIVED", ())),
            "symbols": len(getattr(rewrite, "_POSITIONAL", ())),
            "modules": len(getattr(modules, "_LOADED", ())),
            "pickled": len(pickling._REGISTRY)}
    info["gradient_rules"] = sum(f.cache_info().currsize for f in _lru_caches().values())
    try:
        from sympy.core.cache import cached_functions   # not in every sympy
        info["sympy"] = sum(f.cache_info().currsize for f in cached_functions)
    except Exception:        # noqa: BLE001 - sympy keeps its cache elsewhere
        info["sympy"] = -1
    return info


def clear_caches() -> None:
    """Drop what symgrad keeps in memory to compile faster: the fold's formula memo and
    slot symbols, the lru caches of gradient rules, partials and symbols, the functions
    registered for unpickling (``symgrad.distributed``), and sympy's cache. Compiled
    functions still held keep working; files on disk (``SYMGRAD_CACHE_DIR``, numba's
    cache) are not touched. numba's machine code of functions already compiled is never
    freed (numba has no way to)."""
    from sympy.core.cache import clear_cache
    from .distributed import pickling
    rewrite = _loaded("compile.plan.rewrite")
    if rewrite is not None:
        rewrite._FORMULAS.clear()
        rewrite._DERIVED.clear()
        rewrite._POSITIONAL.clear()
    for f in _lru_caches().values():
        f.cache_clear()
    with pickling._GUARD:
        pickling._REGISTRY.clear()
    clear_cache()
