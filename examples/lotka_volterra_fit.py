"""Fit the 4 parameters of a Lotka-Volterra model to noisy data: RK4 through ``sg.scan``,
value and gradient compiled once with ``sg.function``, minimised with scipy's L-BFGS-B.

    python examples/lotka_volterra_fit.py [steps] [--no-plot] [--out DIR]

Figure (with matplotlib): the noisy data, the true and the fitted trajectories.
"""

from __future__ import annotations

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
    return {"true": true, "fitted": result.x, "loss": float(result.fun), "iterations": result.nit,
            "data": noisy, "clean": clean, "trajectory": sg.evaluate(states, {p: result.x})}


def plot(out: dict, plt):
    t = H * np.arange(1, len(out["data"]) + 1)
    fig, ax = plt.subplots(figsize=(7, 3.5))
    for k, (name, colour) in enumerate((("prey x", "tab:blue"), ("predator y", "tab:red"))):
        ax.plot(t, out["data"][:, k], ".", color=colour, alpha=0.35, ms=4, label=f"{name}: data")
        ax.plot(t, out["clean"][:, k], ":", color="k", lw=1)
        ax.plot(t, out["trajectory"][:, k], color=colour, lw=2, label=f"{name}: fitted")
    ax.set(xlabel="t", ylabel="population",
           title="Lotka-Volterra fitted through sg.scan (dotted: true)")
    ax.set_ylim(0, 1.3 * out["data"].max())        # room for the legend above the peaks
    ax.legend(ncol=2, fontsize=8, loc="upper center")
    return fig


if __name__ == "__main__":
    from _figures import arguments, pyplot, save  # examples/: --no-plot, --out, the figure

    args = arguments(__doc__, size=("steps", 200, "RK4 steps of the trajectory (default 200)"))
    out = fit(args.steps)
    error = np.abs(out["fitted"] / out["true"] - 1.0).max()
    print(f"true   {out['true']}\nfitted {np.round(out['fitted'], 3)}  "
          f"(largest relative error {error:.1%})\n"
          f"loss {out['loss']:.4g} after {out['iterations']} L-BFGS-B iterations")
    assert error < 0.1, "parameters not recovered within 10%"
    plt = pyplot(args)
    if plt:
        save(plot(out, plt), args, "lotka_volterra_fit.png")
