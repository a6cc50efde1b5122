"""W7 2-D stencil: the Dirichlet energy of a grid (u^T L u, L the discrete Laplacian),
E = sum((u[1:,1:]-u[:-1,1:])^2 + (u[1:,1:]-u[1:,:-1])^2), grad w.r.t. u (2 L u)."""

import sys

import numba
import numpy as np

from benchmarks import frameworks
from benchmarks.frameworks import FASTMATH

TITLE = "2-D Laplacian energy sum((u[1:,1:]-u[:-1,1:])^2 + (u[1:,1:]-u[1:,:-1])^2), d/du"
KIND = "array"
DIFF = ("u",)


def cases(quick):
    if quick:
        return [{"label": "512^2", "N": 512}]
    return [{"label": "4096^2", "N": 4096}]


def make_data(case):
    rng = np.random.default_rng(7)
    return {"u": rng.standard_normal((case["N"], case["N"]))}


def loss(ops, u):
    c = u[1:, 1:]
    return ops.sum((c - u[:-1, 1:])**2 + (c - u[1:, :-1])**2)


# --- numpy by hand ----------------------------------------------------------

def numpy_factory(data):
    u = data["u"]

    def call():
        c = u[1:, 1:]
        a = c - u[:-1, 1:]
        b = c - u[1:, :-1]
        E = np.sum(a * a + b * b)
        g = np.zeros_like(u)
        g[1:, 1:] += 2.0 * (a + b)
        g[:-1, 1:] -= 2.0 * a
        g[1:, :-1] -= 2.0 * b
        return [E, g]
    return call


# --- numba by hand: each g[i, j] gathered from its neighbours ---------------

@numba.njit(fastmath=FASTMATH, inline="always")
def _point(u, i, j, n, m):
    """(energy of cell (i, j), g[i, j]) with the edge tests."""
    e = 0.0
    g = 0.0
    if i >= 1 and j >= 1:
        a = u[i, j] - u[i - 1, j]
        b = u[i, j] - u[i, j - 1]
        e = a * a + b * b
        g = 2.0 * (a + b)
    if i + 1 < n and j >= 1:
        g -= 2.0 * (u[i + 1, j] - u[i, j])
    if i >= 1 and j + 1 < m:
        g -= 2.0 * (u[i, j + 1] - u[i, j])
    return e, g


@numba.njit(fastmath=FASTMATH, inline="always")
def _row(u, g, i):
    """Row i of the gradient; returns the row's energy (interior unguarded)."""
    n, m = u.shape
    acc = 0.0
    if i == 0 or i == n - 1:
        for j in range(m):
            e, gij = _point(u, i, j, n, m)
            acc += e
            g[i, j] = gij
        return acc
    e, gij = _point(u, i, 0, n, m)
    g[i, 0] = gij
    for j in range(1, m - 1):
        c = u[i, j]
        a = c - u[i - 1, j]
        b = c - u[i, j - 1]
        acc += a * a + b * b
        g[i, j] = 2.0 * (a + b) - 2.0 * (u[i + 1, j] - c) - 2.0 * (u[i, j + 1] - c)
    e, gij = _point(u, i, m - 1, n, m)
    g[i, m - 1] = gij
    return acc + e


@numba.njit(fastmath=FASTMATH, cache=True)
def _serial(u, g):
    acc = 0.0
    for i in range(u.shape[0]):
        acc += _row(u, g, i)
    return acc


@numba.njit(fastmath=FASTMATH, parallel=True, cache=True)
def _prange(u, g):
    acc = 0.0
    for i in numba.prange(u.shape[0]):
        acc += _row(u, g, i)
    return acc


def _numba_factory(kernel):
    def factory(data):
        u = data["u"]

        def call():
            g = np.empty_like(u)
            e = kernel(u, g)
            return [e, g]
        return call
    return factory


def systems():
    return frameworks.assemble(sys.modules[__name__], {
        "numpy by hand": numpy_factory,
        "numba by hand serial": _numba_factory(_serial),
        "numba by hand prange": _numba_factory(_prange),
    })
