"""W3 pair potential: E = sum_{i<j} 4 (r^-12 - r^-6), r = |p_i - p_j|, grad w.r.t. P."""

import sys

import numba
import numpy as np

from benchmarks import frameworks
from benchmarks.frameworks import FASTMATH

TITLE = "pair potential sum_{i<j} 4(r^-12 - r^-6), d/dP (N x 3)"
KIND = "array"
DIFF = ("P",)
CONSTS = ("mask",)


def cases(quick):
    if quick:
        return [{"label": "N=300", "N": 300}]
    return [{"label": "N=1000", "N": 1000}, {"label": "N=3000", "N": 3000}]


def make_data(case):
    """Jittered cubic lattice (spacing 1.1), so that no pair is very close."""
    n = case["N"]
    m = int(np.ceil(n ** (1.0 / 3.0)))
    g = np.stack(np.meshgrid(np.arange(m), np.arange(m), np.arange(m), indexing="ij"), -1)
    g = g.reshape(-1, 3)[:n].astype(np.float64) * 1.1
    rng = np.random.default_rng(3)
    P = g + rng.uniform(-0.1, 0.1, g.shape)
    return {"P": np.ascontiguousarray(P), "mask": ~np.eye(n, dtype=bool)}


def symgrad_loss(ops, P, mask):
    """Written the way an array user writes it: the diagonal (r2 = 0, so
    r2**-6 = inf) is masked with a single where; symgrad promises that the
    unselected branch contributes exactly 0 to the gradient."""
    D = P[:, None, :] - P[None, :, :]
    r2 = ops.sum(D * D, axis=-1)
    return 0.5 * ops.sum(ops.where(mask, 4.0 * (r2**-6 - r2**-3), 0.0))


def loss(ops, P, mask):
    """JAX / PyTorch / PyTensor version: these leak 0*inf = NaN through the
    unselected branch of where, so their users need the 'double where' trick."""
    D = P[:, None, :] - P[None, :, :]
    r2 = ops.sum(D * D, axis=-1)
    r2 = ops.where(mask, r2, 1.0)
    return 0.5 * ops.sum(ops.where(mask, 4.0 * (r2**-6 - r2**-3), 0.0))


# --- numpy by hand: materialises N x N x 3 ------------------------------------

def numpy_factory(data):
    P = data["P"]

    def call():
        D = P[:, None, :] - P[None, :, :]
        r2 = np.einsum("ijk,ijk->ij", D, D)
        np.fill_diagonal(r2, 1.0)
        inv = 1.0 / r2
        inv3 = inv * inv * inv
        V = 4.0 * (inv3 * inv3 - inv3)
        np.fill_diagonal(V, 0.0)
        E = 0.5 * V.sum()
        # dV/dr2 = 4 (-6 r2^-7 + 3 r2^-4); dE/dP_i = sum_j dV/dr2 * 2 D_ij
        dV = 4.0 * inv * (3.0 * inv3 - 6.0 * inv3 * inv3)
        np.fill_diagonal(dV, 0.0)
        G = 2.0 * np.einsum("ij,ijk->ik", dV, D)
        return [E, G]
    return call


# --- numba by hand ----------------------------------------------------------

@numba.njit(fastmath=FASTMATH, cache=True)
def _serial(P, G):
    n = P.shape[0]
    G[:, :] = 0.0
    E = 0.0
    for i in range(n):
        xi = P[i, 0]
        yi = P[i, 1]
        zi = P[i, 2]
        gx = 0.0
        gy = 0.0
        gz = 0.0
        for j in range(i + 1, n):
            dx = xi - P[j, 0]
            dy = yi - P[j, 1]
            dz = zi - P[j, 2]
            inv = 1.0 / (dx * dx + dy * dy + dz * dz)
            inv3 = inv * inv * inv
            E += 4.0 * (inv3 * inv3 - inv3)
            c = 8.0 * inv * (3.0 * inv3 - 6.0 * inv3 * inv3)
            gx += c * dx
            gy += c * dy
            gz += c * dz
            G[j, 0] -= c * dx
            G[j, 1] -= c * dy
            G[j, 2] -= c * dz
        G[i, 0] += gx
        G[i, 1] += gy
        G[i, 2] += gz
    return E


@numba.njit(fastmath=FASTMATH, cache=True)
def _row(P, i, G):
    """Pairs (i, j > i): accumulate forces into G, return the energy."""
    n = P.shape[0]
    xi = P[i, 0]
    yi = P[i, 1]
    zi = P[i, 2]
    gx = 0.0
    gy = 0.0
    gz = 0.0
    e = 0.0
    for j in range(i + 1, n):
        dx = xi - P[j, 0]
        dy = yi - P[j, 1]
        dz = zi - P[j, 2]
        inv = 1.0 / (dx * dx + dy * dy + dz * dz)
        inv3 = inv * inv * inv
        e += 4.0 * (inv3 * inv3 - inv3)
        c = 8.0 * inv * (3.0 * inv3 - 6.0 * inv3 * inv3)
        gx += c * dx
        gy += c * dy
        gz += c * dz
        G[j, 0] -= c * dx
        G[j, 1] -= c * dy
        G[j, 2] -= c * dz
    G[i, 0] += gx
    G[i, 1] += gy
    G[i, 2] += gz
    return e


@numba.njit(fastmath=FASTMATH, parallel=True, cache=True)
def _prange(P, G):
    """i<j pairs; rows k and n-1-k go to the same iteration (balanced work);
    per-thread force buffers avoid races."""
    n = P.shape[0]
    nt = numba.get_num_threads()
    Gt = np.zeros((nt, n, 3))
    Et = np.zeros(nt)
    half = (n + 1) // 2
    for k in numba.prange(half):
        t = numba.get_thread_id()
        Gk = Gt[t]
        e = _row(P, k, Gk)
        k2 = n - 1 - k
        if k2 != k:
            e += _row(P, k2, Gk)
        Et[t] += e
    # explicit reduction: Gt.sum(axis=0) is very slow under parallel=True
    for i in range(n):
        for c in range(3):
            acc = 0.0
            for t in range(nt):
                acc += Gt[t, i, c]
            G[i, c] = acc
    return Et.sum()


def _numba_factory(kernel):
    def factory(data):
        P = data["P"]

        def call():
            G = np.empty_like(P)
            E = kernel(P, G)
            return [E, G]
        return call
    return factory


def systems():
    return frameworks.assemble(sys.modules[__name__], {
        "numpy by hand": numpy_factory,
        "numba by hand serial": _numba_factory(_serial),
        "numba by hand prange": _numba_factory(_prange),
    })
