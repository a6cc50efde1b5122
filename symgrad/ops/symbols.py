"""Positional sympy symbols for the inputs of an elementwise op, and numpy evaluation of
sympy expressions (used by the reference interpreter for ``expr`` nodes)."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import sympy as sp

from ..dtypes import is_bool, is_integer


@lru_cache(maxsize=None)
def input_symbol(index: int, kind: str) -> sp.Symbol:
    """Symbol ``_<index>``: real for floats, integer for ints, a plain Boolean for bools."""
    if kind == "f":
        return sp.Symbol(f"_{index}", real=True)
    if kind == "i":
        return sp.Symbol(f"_{index}", integer=True)
    return sp.Symbol(f"_{index}")


def dtype_kind(dtype) -> str:
    return "b" if is_bool(dtype) else "i" if is_integer(dtype) else "f"


def input_symbols(dtypes) -> tuple:
    return tuple(input_symbol(i, dtype_kind(d)) for i, d in enumerate(dtypes))


def _sigmoid(x):
    x = np.asarray(x)
    return np.exp(-np.logaddexp(0, -x)).astype(np.result_type(x, np.float32), copy=False)


def _softplus(x):
    x = np.asarray(x)
    return np.logaddexp(np.zeros((), np.result_type(x, np.float32)), x)


_erf_scalar = np.vectorize(math.erf, otypes=[np.float64])


def _erf(x):
    x = np.asarray(x)
    return _erf_scalar(x).astype(np.result_type(x, np.float32), copy=False)


NUMPY_FUNCTIONS = {
    "TfAbs": np.abs, "TfSign": np.sign, "Relu": lambda x: np.maximum(x, 0),
    "Step": lambda x: (np.asarray(x) > 0).astype(np.result_type(x, np.float32)),
    "Sigmoid": _sigmoid, "Softplus": _softplus, "TfMax": np.maximum, "TfMin": np.minimum,
    "TfPow": np.power, "TfRound": np.round, "erf": _erf, "expm1": np.expm1,
    "log1p": np.log1p,
}


@lru_cache(maxsize=4096)
def numpy_callable(expr: sp.Expr, nargs: int, kinds: tuple):
    """A numpy function of ``nargs`` positional arrays that evaluates ``expr``."""
    symbols = [input_symbol(i, kinds[i]) for i in range(nargs)]
    return sp.lambdify(symbols, expr, modules=[NUMPY_FUNCTIONS, "numpy"])
