"""Scalar helpers that generated kernels call, and ``always_inline``.

LLVM inlines them into each loop, where they vectorise. They are compiled once and then
loaded from numba's cache, sealed like the generated modules' (``compile/cache/helpers.py``;
a cached function keeps its LLVM bitcode for inlining).

Each follows the numpy forward of its op exactly (NaN propagation, ties, half-to-even),
and takes typed constants (``one``, ``zero``) from the caller so that float32 kernels
stay in float32.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ...numba_internals import enabled


def always_inline(dispatcher):
    """Mark every compiled overload of ``dispatcher`` ``alwaysinline`` for LLVM: a caller
    that links it gets its body inlined (then vectorised with the loop), while the
    instructions keep this function's own strict floating-point flags. (numba's
    ``inline="always"`` inlines at its IR level instead, which costs time quadratic in the
    caller's size and gives the body the caller's fast-math flags.) numba caches an overload
    with its LLVM bitcode, marked before it is saved (``compile/cache/helpers.py``), so a
    helper loaded from the cache is inlined the same way. With
    ``SYMGRAD_NUMBA_INTERNALS=0`` the dispatcher is left as it is (LLVM decides)."""
    if not enabled():
        return dispatcher
    if getattr(dispatcher, "py_func", None) is not None and \
            dispatcher.py_func.__module__.startswith("symgrad_gen_"):
        # a generated scalar body: only its loops call it, so it needs neither of numba's
        # Python and C wrappers (less code and memory per compiled kernel)
        dispatcher.targetoptions.update(no_cpython_wrapper=True, no_cfunc_wrapper=True)
    add = dispatcher.add_overload

    def add_overload(cres):
        name = cres.fndesc.llvm_func_name
        for fn in cres.library._final_module.functions:
            if fn.name == name:
                fn.add_function_attribute("alwaysinline")
        add(cres)
    dispatcher.add_overload = add_overload
    return dispatcher


def _jit(fn):
    return always_inline(numba.njit(cache=False, error_model="numpy", nogil=True)(fn))


@_jit
def sign_(x, one):
    """np.sign: +-1, and x itself for 0 and NaN."""
    if x > 0:
        return one
    if x < 0:
        return -one
    return x * one


@_jit
def relu_(x, zero):
    """np.maximum(x, 0): NaN propagates."""
    return zero if x <= zero else x


@_jit
def sigmoid_(x, one):
    """1 / (1 + exp(-x)), without overflow for large |x|."""
    if x >= 0:
        return one / (one + math.exp(-x))
    e = math.exp(x)
    return e / (one + e)


@_jit
def softplus_(x, zero, one):
    """log(1 + exp(x)) as np.logaddexp(0, x)."""
    if x != x:
        return x
    m = x if x > zero else zero
    return m + math.log1p(math.exp(-abs(x)))


@_jit
def max_(x, y):
    """np.maximum: NaN in either argument propagates."""
    if x >= y or x != x:
        return x
    return y


@_jit
def min_(x, y):
    """np.minimum: NaN in either argument propagates."""
    if x <= y or x != x:
        return x
    return y


@_jit
def round_(x, one):
    """np.round: half to even."""
    r = np.floor(x)
    d = x - r
    half = one / (one + one)
    if d > half:
        return r + one
    if d < half:
        return r
    return r if r % (one + one) == 0 else r + one
