"""W3 formulations: the same pair sums written the ways people write them.

Seven Lennard-Jones formulations (masks before or after ``sqrt``, ``r**-12`` vs
``(r2**-3)**2``, a triangular ``i < j`` mask vs ``0.5 * sum`` over ``~eye``,
``reduce_sum(D**2, -1)`` vs explicit components, a cutoff by ``where(r < rc, ..)``) and
two other pair sums (a Gaussian kernel sum, Coulomb with a cutoff), each with its
hand-written numba loop over ``i < j`` pairs. ``benchmarks/pair_sums.py`` times them.
"""

import numba
import numpy as np
import symgrad as sg

from benchmarks.frameworks import FASTMATH
from benchmarks.workloads.w3_pair_potential import make_data as _lattice

RC_LJ = 2.5
RC_COULOMB = 3.0


def make_data(n):
    data = _lattice({"N": n})
    data["q"] = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    return data


def _d(P):
    return P[:, None, :] - P[None, :, :]


def _r2(P):
    D = _d(P)
    return sg.reduce_sum(D * D, axis=-1)


def lj_eye_r2(P, c):
    """The benchmark's W3: ``0.5 * sum`` over ``~eye`` of a polynomial in ``r2``."""
    r2 = _r2(P)
    return 0.5 * sg.reduce_sum(sg.where(c["eye"], 4.0 * (r2**-6 - r2**-3), 0.0))


def lj_mask_before_sqrt(P, c):
    r = sg.sqrt(sg.where(c["eye"], _r2(P), 1.0))
    return 0.5 * sg.reduce_sum(sg.where(c["eye"], 4.0 * (r**-12 - r**-6), 0.0))


def lj_mask_after_sqrt(P, c):
    r = sg.sqrt(_r2(P))
    return 0.5 * sg.reduce_sum(sg.where(c["eye"], 4.0 * (r**-12 - r**-6), 0.0))


def lj_pow3_squared(P, c):
    s6 = (1.0 / sg.where(c["eye"], _r2(P), 1.0))**3
    return 0.5 * sg.reduce_sum(sg.where(c["eye"], 4.0 * (s6**2 - s6), 0.0))


def lj_triangular(P, c):
    r2 = _r2(P)
    return sg.reduce_sum(sg.where(c["triu"], 4.0 * (r2**-6 - r2**-3), 0.0))


def lj_components(P, c):
    x, y, z = P[:, 0], P[:, 1], P[:, 2]
    dx, dy, dz = (x[:, None] - x[None, :], y[:, None] - y[None, :], z[:, None] - z[None, :])
    r2 = dx * dx + dy * dy + dz * dz
    return 0.5 * sg.reduce_sum(sg.where(c["eye"], 4.0 * (r2**-6 - r2**-3), 0.0))


def lj_cutoff(P, c):
    r = sg.sqrt(sg.where(c["eye"], _r2(P), 1.0))
    inside = sg.logical_and(c["eye"], r < RC_LJ)
    return 0.5 * sg.reduce_sum(sg.where(inside, 4.0 * (r**-12 - r**-6), 0.0))


def gauss_kernel_sum(P, c):
    return sg.reduce_sum(sg.exp(-0.5 * _r2(P)))


def coulomb_cutoff(P, c):
    r = sg.sqrt(sg.where(c["eye"], _r2(P), 1.0))
    qq = c["q"][:, None] * c["q"][None, :]
    inside = sg.logical_and(c["eye"], r < RC_COULOMB)
    return 0.5 * sg.reduce_sum(sg.where(inside, qq / r, 0.0))


# --- hand loops over i < j: (energy, dE/dr divided by r) per pair --------------------

@numba.njit(fastmath=FASTMATH, inline="always")
def _lj(r2, qi, qj):
    inv = 1.0 / r2
    inv3 = inv * inv * inv
    return 4.0 * (inv3 * inv3 - inv3), 8.0 * inv * (3.0 * inv3 - 6.0 * inv3 * inv3)


@numba.njit(fastmath=FASTMATH, inline="always")
def _lj_cut(r2, qi, qj):
    if r2 >= RC_LJ * RC_LJ:
        return 0.0, 0.0
    return _lj(r2, qi, qj)


@numba.njit(fastmath=FASTMATH, inline="always")
def _gauss(r2, qi, qj):
    e = 2.0 * np.exp(-0.5 * r2)       # pairs (i, j) and (j, i)
    return e, -e


@numba.njit(fastmath=FASTMATH, inline="always")
def _coulomb(r2, qi, qj):
    if r2 >= RC_COULOMB * RC_COULOMB:
        return 0.0, 0.0
    rinv = 1.0 / np.sqrt(r2)
    e = qi * qj * rinv
    return e, -e * rinv * rinv


def _hand(pair, diagonal):
    @numba.njit(fastmath=FASTMATH)
    def loop(P, q, G):
        n = P.shape[0]
        G[:, :] = 0.0
        E = diagonal * n
        for i in range(n):
            xi, yi, zi = P[i, 0], P[i, 1], P[i, 2]
            gx = gy = gz = 0.0
            for j in range(i + 1, n):
                dx = xi - P[j, 0]
                dy = yi - P[j, 1]
                dz = zi - P[j, 2]
                e, c = pair(dx * dx + dy * dy + dz * dz, q[i], q[j])
                E += e
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
    return loop


_HAND_LJ = _hand(_lj, 0.0)
FORMULATIONS = {   # name: (symgrad loss, hand loop)
    "lj: 0.5*sum ~eye, r2**-6 - r2**-3": (lj_eye_r2, _HAND_LJ),
    "lj: mask before sqrt, r**-12 - r**-6": (lj_mask_before_sqrt, _HAND_LJ),
    "lj: mask after sqrt, r**-12 - r**-6": (lj_mask_after_sqrt, _HAND_LJ),
    "lj: (r2**-3)**2 - r2**-3": (lj_pow3_squared, _HAND_LJ),
    "lj: triangular i<j mask": (lj_triangular, _HAND_LJ),
    "lj: explicit components": (lj_components, _HAND_LJ),
    "lj: cutoff where(r < rc)": (lj_cutoff, _hand(_lj_cut, 0.0)),
    "gaussian kernel sum": (gauss_kernel_sum, _hand(_gauss, 1.0)),
    "coulomb, cutoff": (coulomb_cutoff, _hand(_coulomb, 0.0)),
}


def constants(data):
    n = data["P"].shape[0]
    return {"eye": sg.constant(data["mask"]),
            "triu": sg.constant(np.triu(np.ones((n, n), bool), 1)),
            "q": sg.constant(data["q"])}
