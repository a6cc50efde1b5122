"""Optional dependencies: one import that says which extra to install when it is missing.

The base install (sympy, numba, numpy, scipy) never imports them; the code that needs one
(dask arrays in ``symgrad.distributed``, CuPy for ``target="cuda"``, matplotlib for the
examples' figures and the benchmark charts) imports it through ``require``:

>>> require("numpy", extra="test").__name__
'numpy'
>>> require("no_such_module_xyz", extra="dask", why="calls on dask arrays")
Traceback (most recent call last):
  ...
ModuleNotFoundError: no_such_module_xyz is not installed (needed for calls on dask arrays); \
install the 'dask' extra: pip install -e ".[dask]" (or pip install "symgrad[dask]")
"""

from __future__ import annotations

import importlib
import types

EXTRAS = {"dask": "dask", "cuda": "CuPy and numba-cuda", "bench": "matplotlib and psutil"}
"""The optional extras of pyproject.toml -> what each installs."""


def missing_message(module: str, extra: str, why: str = "") -> str:
    """The one line that says what is missing and which extra installs it."""
    if extra not in EXTRAS:
        raise ValueError(f"symgrad.extras: unknown extra {extra!r}; expected one of "
                         f"{sorted(EXTRAS)}")
    because = f" (needed for {why})" if why else ""
    return (f"{module} is not installed{because}; install the '{extra}' extra: "
            f"pip install -e \".[{extra}]\" (or pip install \"symgrad[{extra}]\")")


def require(module: str, extra: str, why: str = "") -> types.ModuleType:
    """``import module``, or a ``ModuleNotFoundError`` naming the extra that installs it.

    ``why`` says what needs it, in the user's terms ("calls on dask arrays"). Errors other
    than the module (or its parent package) missing propagate unchanged."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is not None and not (module == exc.name
                                         or module.startswith(exc.name + ".")):
            raise         # the module is there; something it imports is broken
        raise ModuleNotFoundError(missing_message(module, extra, why), name=module) from exc
