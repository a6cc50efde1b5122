"""Positional sympy symbols for the inputs of an elementwise op, and numpy evaluation of
sympy expressions (used by the reference interpreter for ``expr`` nodes)."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import sympy as sp

from ..dtypes import is_bool, is_integer
from .elementwise.scalar import SCALAR_FUNCTIONS


@lru_cache(maxsize=None)
def input_symbol(index: int, kind: str) -> sp.Symbol:
    """Symbol ``_<index>``: real for floats, integer for ints, a plain Boolean for bools."""
    if kind == "f":
        return sp.Symbol(f"_{index}", real=True)
    if kind == "i":
        return sp.Symbol(f"_{index}", integer=True)
    return sp.Symbol(f"_{index}")


def dtype_kind(dtype) -> str:
    found = _KIND_OF.get(dtype) if isinstance(dtype, np.dtype) else None
    if found is None:
        found = "b" if is_bool(dtype) else "i" if is_integer(dtype) else "f"
        if isinstance(dtype, np.dtype):
            _KIND_OF[dtype] = found
    return found


_KIND_OF: dict = {}     # dtype -> dtype_kind (a dtype's kind goes through np.dtype twice)


def input_symbols(dtypes) -> tuple:
    return tuple(input_symbol(i, dtype_kind(d)) for i, d in enumerate(dtypes))


_erf_scalar = np.vectorize(math.erf, otypes=[np.float64])


def _erf(x):
    x = np.asarray(x)
    return _erf_scalar(x).astype(np.result_type(x, np.float32), copy=False)


# Plain sympy functions whose numpy form lambdify's "numpy" module lacks (one base table).
BASE_NUMPY_FUNCTIONS = {"erf": _erf, "expm1": np.expm1, "log1p": np.log1p}


def numpy_forms(classes) -> dict:
    """{class name: numpy_form} for the function classes that carry one."""
    return {cls.__name__: cls.numpy_form for cls in classes
            if getattr(cls, "numpy_form", None) is not None}


NUMPY_FUNCTIONS = {**BASE_NUMPY_FUNCTIONS, **numpy_forms(SCALAR_FUNCTIONS.values())}
"""The lambdify namespace: the base table plus every registered scalar function's form
(a snapshot at import; ``numpy_callable`` also adds the forms of the functions in its
expression, so a scalar function defined later works too)."""


@lru_cache(maxsize=4096)
def numpy_callable(expr: sp.Expr, nargs: int, kinds: tuple):
    """A numpy function of ``nargs`` positional arrays that evaluates ``expr``."""
    symbols = [input_symbol(i, kinds[i]) for i in range(nargs)]
    return sp.lambdify(symbols, expr, modules=[numpy_namespace(expr), "numpy"])


def numpy_namespace(expr) -> dict:
    """NUMPY_FUNCTIONS plus the numpy forms of the function classes used in ``expr``."""
    used = {type(f) for f in expr.atoms(sp.Function)} if isinstance(expr, sp.Basic) else ()
    extra = numpy_forms(cls for cls in used if cls.__name__ not in NUMPY_FUNCTIONS)
    return {**NUMPY_FUNCTIONS, **extra} if extra else NUMPY_FUNCTIONS
