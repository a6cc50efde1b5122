"""W5 call latency: a*sin(b) + exp(c*a) and its gradient, Python floats in."""

import math
import sys

import numba
import numpy as np

from benchmarks import frameworks
from benchmarks.frameworks import FASTMATH

TITLE = "latency a*sin(b)+exp(c*a), d/da d/db d/dc, Python floats"
KIND = "latency"
DIFF = ("a", "b", "c")


def cases(quick):
    n = 10_000 if quick else 100_000
    return [{"label": f"{n} calls", "calls": n}]


def make_data(case):
    return {"call_args": (0.7, 1.3, -0.4)}


def loss(ops, a, b, c):
    return a * ops.sin(b) + ops.exp(c * a)


def numpy_factory(data):
    sin, cos, exp = np.sin, np.cos, np.exp

    def call(a, b, c):
        e = exp(c * a)
        sb = sin(b)
        return [a * sb + e, sb + c * e, a * cos(b), a * e]
    return call


def math_factory(data):
    sin, cos, exp = math.sin, math.cos, math.exp

    def call(a, b, c):
        e = exp(c * a)
        sb = sin(b)
        return [a * sb + e, sb + c * e, a * cos(b), a * e]
    return call


@numba.njit(fastmath=FASTMATH, cache=True)
def _serial(a, b, c):
    e = math.exp(c * a)
    sb = math.sin(b)
    return a * sb + e, sb + c * e, a * math.cos(b), a * e


def numba_factory(data):
    return _serial


def systems():
    return frameworks.assemble(sys.modules[__name__], {
        "numpy by hand": numpy_factory,
        "python math by hand": math_factory,
        "numba by hand serial": numba_factory,
    })
