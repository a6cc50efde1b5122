"""W2 Rosenbrock: sum(100*(x[1:]-x[:-1]**2)**2 + (1-x[:-1])**2), grad w.r.t. x."""

import sys

import numba
import numpy as np

from benchmarks import frameworks
from benchmarks.frameworks import FASTMATH

TITLE = "Rosenbrock sum(100(x[1:]-x[:-1]^2)^2 + (1-x[:-1])^2), d/dx"
KIND = "array"
DIFF = ("x",)


def cases(quick):
    return [{"label": "N=1e5", "N": 10**5}] if quick else [{"label": "N=1e6", "N": 10**6}]


def make_data(case):
    rng = np.random.default_rng(2)
    return {"x": rng.uniform(-1.5, 1.5, case["N"])}


def loss(ops, x):
    return ops.sum(100.0 * (x[1:] - x[:-1]**2)**2 + (1.0 - x[:-1])**2)


# --- numpy by hand ----------------------------------------------------------

def numpy_factory(data):
    x = data["x"]

    def call():
        a = x[:-1]
        d = x[1:] - a * a
        om = 1.0 - a
        f = np.sum(100.0 * d * d + om * om)
        g = np.zeros_like(x)
        g[:-1] = -400.0 * a * d - 2.0 * om
        g[1:] += 200.0 * d
        return [f, g]
    return call


# --- numba by hand ----------------------------------------------------------

@numba.njit(fastmath=FASTMATH, cache=True)
def _serial(x, g):
    n = x.shape[0]
    acc = 0.0
    g[n - 1] = 0.0
    g[0] = 0.0
    for i in range(n - 1):
        a = x[i]
        d = x[i + 1] - a * a
        om = 1.0 - a
        acc += 100.0 * d * d + om * om
        g[i] += -400.0 * a * d - 2.0 * om
        g[i + 1] = 200.0 * d
    return acc


def _gather(x, g):
    """Each g[i] from x[i-1], x[i], x[i+1] (no carried value: it vectorises)."""
    n = x.shape[0]
    acc = 0.0
    for i in numba.prange(n):
        gi = 0.0
        if i < n - 1:
            a = x[i]
            d = x[i + 1] - a * a
            om = 1.0 - a
            acc += 100.0 * d * d + om * om
            gi += -400.0 * a * d - 2.0 * om
        if i > 0:
            b = x[i - 1]
            gi += 200.0 * (x[i] - b * b)
        g[i] = gi
    return acc


_gather_serial = numba.njit(fastmath=FASTMATH, cache=True)(_gather)
_prange = numba.njit(fastmath=FASTMATH, parallel=True, cache=True)(_gather)


def _numba_factory(kernel):
    def factory(data):
        x = data["x"]

        def call():
            g = np.empty_like(x)
            f = kernel(x, g)
            return [f, g]
        return call
    return factory


def systems():
    return frameworks.assemble(sys.modules[__name__], {
        "numpy by hand": numpy_factory,
        "numba by hand serial": _numba_factory(_serial),
        "numba by hand gather serial": _numba_factory(_gather_serial),
        "numba by hand prange": _numba_factory(_prange),
    })
