"""W4 MLP: mean((tanh(X@W1+b1)@W2+b2 - Y)**2), grads w.r.t. W1, b1, W2, b2."""

import math
import sys

import numba
import numpy as np

from benchmarks import frameworks
from benchmarks.frameworks import FASTMATH

TITLE = "MLP mean((tanh(X W1+b1) W2+b2 - Y)^2), d/dW1 d/db1 d/dW2 d/db2"
KIND = "array"
DIFF = ("W1", "b1", "W2", "b2")
INPUTS = ("X", "Y")


def cases(quick):
    if quick:
        return [{"label": "B=512", "B": 512, "D": 64, "H": 256}]
    return [{"label": "B=4096", "B": 4096, "D": 64, "H": 256}]


def make_data(case):
    rng = np.random.default_rng(4)
    b, d, h = case["B"], case["D"], case["H"]
    return {
        "W1": rng.normal(0.0, 1.0 / math.sqrt(d), (d, h)),
        "b1": rng.normal(0.0, 0.1, (h,)),
        "W2": rng.normal(0.0, 1.0 / math.sqrt(h), (h, 1)),
        "b2": rng.normal(0.0, 0.1, (1,)),
        "X": rng.normal(0.0, 1.0, (b, d)),
        "Y": rng.normal(0.0, 1.0, (b, 1)),
    }


def loss(ops, W1, b1, W2, b2, X, Y):
    return ops.mean((ops.tanh(X @ W1 + b1) @ W2 + b2 - Y)**2)


# --- numpy by hand (BLAS via @) ----------------------------------------------

def numpy_factory(data):
    W1, b1, W2, b2, X, Y = (data[k] for k in ("W1", "b1", "W2", "b2", "X", "Y"))
    n = X.shape[0]

    def call():
        H = np.tanh(X @ W1 + b1)
        R = H @ W2 + b2 - Y
        f = np.mean(R * R)
        dout = (2.0 / R.size) * R
        gW2 = H.T @ dout
        gb2 = dout.sum(axis=0)
        dZ = (dout @ W2.T) * (1.0 - H * H)
        gW1 = X.T @ dZ
        gb1 = dZ.sum(axis=0)
        return [f, gW1, gb1, gW2, gb2]
    return call


# --- numba by hand: one fused pass over the batch, no BLAS --------------------

@numba.njit(fastmath=FASTMATH, cache=True)
def _serial(W1, b1, W2, b2, X, Y, gW1, gb1, gW2, gb2):
    n, d = X.shape
    h = W1.shape[1]
    z = np.empty(h)
    gW1[:] = 0.0
    gb1[:] = 0.0
    gW2[:] = 0.0
    gb2[:] = 0.0
    acc = 0.0
    scale = 2.0 / n
    for s in range(n):
        for k in range(h):
            z[k] = b1[k]
        for j in range(d):
            xj = X[s, j]
            for k in range(h):
                z[k] += xj * W1[j, k]
        out = b2[0]
        for k in range(h):
            z[k] = math.tanh(z[k])
            out += z[k] * W2[k, 0]
        r = out - Y[s, 0]
        acc += r * r
        dr = scale * r
        gb2[0] += dr
        for k in range(h):
            t = z[k]
            gW2[k, 0] += dr * t
            z[k] = dr * W2[k, 0] * (1.0 - t * t)   # dZ, reusing the buffer
            gb1[k] += z[k]
        for j in range(d):
            xj = X[s, j]
            for k in range(h):
                gW1[j, k] += xj * z[k]
    return acc / n


@numba.njit(fastmath=FASTMATH, parallel=True, cache=True)
def _prange(W1, b1, W2, b2, X, Y, gW1, gb1, gW2, gb2):
    n, d = X.shape
    h = W1.shape[1]
    nt = numba.get_num_threads()
    # per-thread accumulators, reduced at the end
    tW1 = np.zeros((nt, d, h))
    tb1 = np.zeros((nt, h))
    tW2 = np.zeros((nt, h))
    tb2 = np.zeros(nt)
    tacc = np.zeros(nt)
    scale = 2.0 / n
    chunk = (n + nt - 1) // nt
    for t in numba.prange(nt):
        z = np.empty(h)
        lo = t * chunk
        hi = min(n, lo + chunk)
        for s in range(lo, hi):
            for k in range(h):
                z[k] = b1[k]
            for j in range(d):
                xj = X[s, j]
                for k in range(h):
                    z[k] += xj * W1[j, k]
            out = b2[0]
            for k in range(h):
                z[k] = math.tanh(z[k])
                out += z[k] * W2[k, 0]
            r = out - Y[s, 0]
            tacc[t] += r * r
            dr = scale * r
            tb2[t] += dr
            for k in range(h):
                zk = z[k]
                tW2[t, k] += dr * zk
                z[k] = dr * W2[k, 0] * (1.0 - zk * zk)
                tb1[t, k] += z[k]
            for j in range(d):
                xj = X[s, j]
                for k in range(h):
                    tW1[t, j, k] += xj * z[k]
    gW1[:, :] = tW1.sum(axis=0)
    gb1[:] = tb1.sum(axis=0)
    gW2[:, 0] = tW2.sum(axis=0)
    gb2[0] = tb2.sum()
    return tacc.sum() / n


def _numba_factory(kernel):
    def factory(data):
        W1, b1, W2, b2, X, Y = (data[k] for k in ("W1", "b1", "W2", "b2", "X", "Y"))

        def call():
            gW1 = np.empty_like(W1)
            gb1 = np.empty_like(b1)
            gW2 = np.empty_like(W2)
            gb2 = np.empty_like(b2)
            f = kernel(W1, b1, W2, b2, X, Y, gW1, gb1, gW2, gb2)
            return [f, gW1, gb1, gW2, gb2]
        return call
    return factory


def systems():
    return frameworks.assemble(sys.modules[__name__], {
        "numpy by hand": numpy_factory,
        "numba by hand serial": _numba_factory(_serial),
        "numba by hand prange": _numba_factory(_prange),
    })
