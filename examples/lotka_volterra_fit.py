"""Fit the 4 parameters of a Lotka-Volterra model to noisy data: RK4 through ``sg.scan``,
value and gradient compiled once with ``sg.function``, minimised with scipy's L-BFGS-B.

    python examples/lotka_volterra_fit.py [steps]
"""

from __future__ import annotations

import sys

import numpy as np
from scipy.optimize import minimize

import symgrad as sg

H = 0.05


def rk4_trajectory(p, u0, steps: int):
    """States after each of ``steps`` RK4 steps of size H: shape (steps, 2)."""
    def f(u):
        x, y = u[0], u[1]
        return sg.stack([p[0] * x - p[1] * x * y, p[3] * x * y - p[2] * y])

    def step(u, _):
        k1 = f(u)
        k2 = f(u + H / 2 * k1)
        k3 = f(u + H / 2 * k2)
        k4 = f(u + H * k3)
        u = u + H / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        return u, u
    _, states = sg.scan(step, u0, length=steps)
    return states


def fit(steps: int = 200, seed: int = 0) -> dict:
    true = np.array([1.0, 0.5, 1.0, 0.3])
    u0 = np.array([2.0, 1.0])
    p = sg.placeholder("p", (4,))
    data = sg.placeholder("data", (steps, 2))
    states = rk4_trajectory(p, sg.constant(u0), steps)
    loss = sg.reduce_mean(sg.square(states - data))
    (grad,) = sg.gradients(loss, [p])
    f = sg.function([p, data], [loss, grad])
    clean = sg.evaluate(states, {p: true})
    noisy = clean + np.random.default_rng(seed).normal(scale=0.05, size=clean.shape)
    result = minimize(lambda q: f(q, noisy), np.array([0.8, 0.6, 1.2, 0.4]), jac=True,
                      method="L-BFGS-B", bounds=[(0.05, 3.0)] * 4)
    return {"true": true, "fitted": result.x, "loss": float(result.fun), "iterations": result.nit}


if __name__ == "__main__":
    out = fit(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
    print(f"true   {out['true']}\nfitted {np.round(out['fitted'], 3)}\n"
          f"loss {out['loss']:.4g} after {out['iterations']} iterations")
    print(f"parameters recovered within 10%: "
          f"{bool(np.allclose(out['fitted'], out['true'], rtol=0.1))}")
