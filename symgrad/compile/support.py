"""Scalar helpers that generated kernels call (compiled once, cached by numba).

Each follows the numpy forward of its op exactly (NaN propagation, ties, half-to-even),
and takes typed constants (``one``, ``zero``) from the caller so that float32 kernels
stay in float32.
"""

from __future__ import annotations

import math

import numba
import numpy as np

_OPTIONS = dict(cache=True, error_model="numpy", nogil=True, inline="always")


@numba.njit(**_OPTIONS)
def sign_(x, one):
    """np.sign: +-1, and x itself for 0 and NaN."""
    if x > 0:
        return one
    if x < 0:
        return -one
    return x * one


@numba.njit(**_OPTIONS)
def relu_(x, zero):
    """np.maximum(x, 0): NaN propagates."""
    return zero if x <= zero else x


@numba.njit(**_OPTIONS)
def sigmoid_(x, one):
    """1 / (1 + exp(-x)), without overflow for large |x|."""
    if x >= 0:
        return one / (one + math.exp(-x))
    e = math.exp(x)
    return e / (one + e)


@numba.njit(**_OPTIONS)
def softplus_(x, zero, one):
    """log(1 + exp(x)) as np.logaddexp(0, x)."""
    if x != x:
        return x
    m = x if x > zero else zero
    return m + math.log1p(math.exp(-abs(x)))


@numba.njit(**_OPTIONS)
def max_(x, y):
    """np.maximum: NaN in either argument propagates."""
    if x >= y or x != x:
        return x
    return y


@numba.njit(**_OPTIONS)
def min_(x, y):
    """np.minimum: NaN in either argument propagates."""
    if x <= y or x != x:
        return x
    return y


@numba.njit(**_OPTIONS)
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
