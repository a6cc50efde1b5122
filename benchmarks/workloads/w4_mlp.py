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
def _batch(W1, b1, W2, b2, X, Y, lo, hi, scale, gW1, gb1, gW2, gb2):
    """Samples lo..hi-1, accumulating into the given buffers; returns sum r^2."""
    d = X.shape[1]
    h = W1.shape[1]
    z = np.empty(h)
    acc = 0.0
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
    return acc


@numba.njit(fastmath=FASTMATH, cache=True)
def _reduce_into(parts, out):
    for i in range(out.shape[0]):
        acc = 0.0
        for t in range(parts.shape[0]):
            acc += parts[t, i]
        out[i] = acc


@numba.njit(fastmath=FASTMATH, parallel=True, cache=True)
def _prange(W1, b1, W2, b2, X, Y, gW1, gb1, gW2, gb2):
    """Batch split into one chunk per thread, per-thread gradient buffers."""
    n = X.shape[0]
    nt = numba.get_num_threads()
    tW1 = np.zeros((nt,) + W1.shape)
    tb1 = np.zeros((nt,) + b1.shape)
    tW2 = np.zeros((nt,) + W2.shape)
    tb2 = np.zeros((nt,) + b2.shape)
    tacc = np.zeros(nt)
    chunk = (n + nt - 1) // nt
    for t in numba.prange(nt):
        lo = t * chunk
        hi = min(n, lo + chunk)
        tacc[t] = _batch(W1, b1, W2, b2, X, Y, lo, hi, 2.0 / n,
                         tW1[t], tb1[t], tW2[t], tb2[t])
    # explicit reductions: ndarray.sum(axis=0) is very slow under parallel=True
    _reduce_into(tW1.reshape(nt, -1), gW1.reshape(-1))
    _reduce_into(tb1, gb1)
    _reduce_into(tW2.reshape(nt, -1), gW2.reshape(-1))
    _reduce_into(tb2, gb2)
    return tacc.sum() / n


@numba.njit(fastmath=FASTMATH, cache=True)
def _serial(W1, b1, W2, b2, X, Y, gW1, gb1, gW2, gb2):
    n = X.shape[0]
    gW1[:, :] = 0.0
    gb1[:] = 0.0
    gW2[:, :] = 0.0
    gb2[:] = 0.0
    return _batch(W1, b1, W2, b2, X, Y, 0, n, 2.0 / n, gW1, gb1, gW2, gb2) / n


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
