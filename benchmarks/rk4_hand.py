"""RK4 Lotka-Volterra value + gradient written by hand in numba: the forward loop stores
every state, the reverse loop recomputes each step's stages and runs their adjoint (the
yardstick for symgrad's fused loops, benchmarks/programs.py).

>>> import numpy as np
>>> loss, grad = value_and_grad(np.array([1.0, 0.5, 1.0, 0.3]), np.ones(2), 0.01, 3)
>>> round(float(loss), 6)
1.989777
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def _f(p, x, y):
    return p[0] * x - p[1] * x * y, p[3] * x * y - p[2] * y


@numba.njit(cache=True)
def _back(p, x, y, gx, gy, gp):
    """(d/dx, d/dy) of gx*f0 + gy*f1 at (x, y); adds d/dp to gp."""
    gp[0] += gx * x
    gp[1] -= gx * x * y
    gp[2] -= gy * y
    gp[3] += gy * x * y
    return gx * (p[0] - p[1] * y) + gy * p[3] * y, -gx * p[1] * x + gy * (p[3] * x - p[2])


@numba.njit(cache=True)
def value_and_grad(p, u0, h, steps):
    """(sum(u_T ** 2), its gradient with respect to p) after ``steps`` RK4 steps."""
    hist = np.empty((steps, 2))
    x, y = u0[0], u0[1]
    for t in range(steps):
        hist[t, 0] = x
        hist[t, 1] = y
        a0, a1 = _f(p, x, y)
        b0, b1 = _f(p, x + h / 2 * a0, y + h / 2 * a1)
        c0, c1 = _f(p, x + h / 2 * b0, y + h / 2 * b1)
        d0, d1 = _f(p, x + h * c0, y + h * c1)
        x += h / 6 * (a0 + 2 * b0 + 2 * c0 + d0)
        y += h / 6 * (a1 + 2 * b1 + 2 * c1 + d1)
    loss = x * x + y * y
    lx, ly = 2 * x, 2 * y
    gp = np.zeros(4)
    for t in range(steps - 1, -1, -1):
        x, y = hist[t, 0], hist[t, 1]
        a0, a1 = _f(p, x, y)
        x1, y1 = x + h / 2 * a0, y + h / 2 * a1
        b0, b1 = _f(p, x1, y1)
        x2, y2 = x + h / 2 * b0, y + h / 2 * b1
        c0, c1 = _f(p, x2, y2)
        x3, y3 = x + h * c0, y + h * c1
        ga0, ga1 = h / 6 * lx, h / 6 * ly
        gb0, gb1 = h / 3 * lx, h / 3 * ly
        gc0, gc1 = h / 3 * lx, h / 3 * ly
        gd0, gd1 = h / 6 * lx, h / 6 * ly
        gx, gy = lx, ly
        u0_, u1_ = _back(p, x3, y3, gd0, gd1, gp)
        gx += u0_
        gy += u1_
        gc0 += h * u0_
        gc1 += h * u1_
        u0_, u1_ = _back(p, x2, y2, gc0, gc1, gp)
        gx += u0_
        gy += u1_
        gb0 += h / 2 * u0_
        gb1 += h / 2 * u1_
        u0_, u1_ = _back(p, x1, y1, gb0, gb1, gp)
        gx += u0_
        gy += u1_
        ga0 += h / 2 * u0_
        ga1 += h / 2 * u1_
        u0_, u1_ = _back(p, x, y, ga0, ga1, gp)
        lx, ly = gx + u0_, gy + u1_
    return loss, gp
