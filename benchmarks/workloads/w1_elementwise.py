"""W1 elementwise: f = sum(sin(x)*exp(-y**2) + log1p(x**2*y**2)), grads w.r.t. x, y."""

import math
import sys

import numba
import numpy as np

from benchmarks import frameworks
from benchmarks.frameworks import FASTMATH

TITLE = "elementwise sum(sin(x)*exp(-y^2) + log1p(x^2 y^2)), d/dx, d/dy"
KIND = "array"
DIFF = ("x", "y")


def cases(quick):
    if quick:
        return [{"label": "N=1e5", "N": 10**5}]
    return [{"label": "N=1e6", "N": 10**6}, {"label": "N=1e7", "N": 10**7}]


def make_data(case):
    rng = np.random.default_rng(1)
    n = case["N"]
    return {"x": rng.uniform(-2.0, 2.0, n), "y": rng.uniform(-2.0, 2.0, n)}


def loss(ops, x, y):
    return ops.sum(ops.sin(x) * ops.exp(-y**2) + ops.log1p(x**2 * y**2))


# --- numpy by hand ----------------------------------------------------------

def numpy_factory(data):
    x, y = data["x"], data["y"]

    def call():
        e = np.exp(-y * y)
        s = np.sin(x)
        x2 = x * x
        y2 = y * y
        q = 1.0 / (1.0 + x2 * y2)
        f = np.sum(s * e + np.log1p(x2 * y2))
        gx = np.cos(x) * e + 2.0 * x * y2 * q
        gy = -2.0 * y * s * e + 2.0 * y * x2 * q
        return [f, gx, gy]
    return call


# --- numba by hand ----------------------------------------------------------

@numba.njit(fastmath=FASTMATH, cache=True)
def _serial(x, y, gx, gy):
    acc = 0.0
    for i in range(x.shape[0]):
        xi = x[i]
        yi = y[i]
        e = math.exp(-yi * yi)
        s = math.sin(xi)
        x2 = xi * xi
        y2 = yi * yi
        p = x2 * y2
        q = 1.0 / (1.0 + p)
        acc += s * e + math.log1p(p)
        gx[i] = math.cos(xi) * e + 2.0 * xi * y2 * q
        gy[i] = -2.0 * yi * s * e + 2.0 * yi * x2 * q
    return acc


@numba.njit(fastmath=FASTMATH, parallel=True, cache=True)
def _prange(x, y, gx, gy):
    acc = 0.0
    for i in numba.prange(x.shape[0]):
        xi = x[i]
        yi = y[i]
        e = math.exp(-yi * yi)
        s = math.sin(xi)
        x2 = xi * xi
        y2 = yi * yi
        p = x2 * y2
        q = 1.0 / (1.0 + p)
        acc += s * e + math.log1p(p)
        gx[i] = math.cos(xi) * e + 2.0 * xi * y2 * q
        gy[i] = -2.0 * yi * s * e + 2.0 * yi * x2 * q
    return acc


def _numba_factory(kernel):
    def factory(data):
        x, y = data["x"], data["y"]

        def call():
            gx = np.empty_like(x)
            gy = np.empty_like(y)
            f = kernel(x, y, gx, gy)
            return [f, gx, gy]
        return call
    return factory


def systems():
    return frameworks.assemble(sys.modules[__name__], {
        "numpy by hand": numpy_factory,
        "numba by hand serial": _numba_factory(_serial),
        "numba by hand prange": _numba_factory(_prange),
    })
