"""Gaussian-process regression: fit the RBF kernel's hyperparameters by minimising the
negative log marginal likelihood with scipy's L-BFGS-B, its value and gradient compiled once
with ``sg.function``.

For data ``(x, y)``, ``K = s^2 exp(-|x_i - x_j|^2 / (2 l^2)) + sn^2 I`` and
``L = cholesky(K)``:

    nlml = 0.5 |L^{-1} y|^2 + sum(log diag L) + n/2 log(2 pi)

(one Cholesky, one triangular solve; the log-determinant from the factor's diagonal). The
gradient runs through TF's Cholesky and triangular-solve rules (two more triangular solves).

Run: ``python examples/gp_regression.py [n] [--no-plot] [--out DIR]``

Figure (with matplotlib): the data, the posterior mean and its 2-sigma band with the fitted
hyperparameters.
"""

import time

import numpy as np
import scipy.optimize

import symgrad as sg


def build(n: int):
    """The compiled ``(theta, sq_dists, y) -> [nlml, d nlml / d theta]``; ``theta`` holds the
    logs of the lengthscale, signal std and noise std."""
    theta = sg.placeholder("theta", (3,))
    d2 = sg.placeholder("sq_dists", (n, n))
    y = sg.placeholder("y", (n, 1))
    ell, sf, sn = sg.exp(theta[0]), sg.exp(theta[1]), sg.exp(theta[2])
    k = sf ** 2 * sg.exp(-0.5 * d2 / ell ** 2) + (sn ** 2 + 1e-8) * np.eye(n)
    chol = sg.linalg.cholesky(k)
    v = sg.linalg.triangular_solve(chol, y, lower=True)
    nlml = 0.5 * sg.reduce_sum(v ** 2) + sg.reduce_sum(sg.log(sg.linalg.diag_part(chol))) \
        + 0.5 * n * np.log(2 * np.pi)
    (grad,) = sg.gradients(nlml, [theta])
    return sg.function([theta, d2, y], [nlml, grad])


def reference_nlml(theta, d2, y):
    ell, sf, sn = np.exp(theta)
    k = sf ** 2 * np.exp(-0.5 * d2 / ell ** 2) + (sn ** 2 + 1e-8) * np.eye(len(y))
    sign, logdet = np.linalg.slogdet(k)
    fit = float((y.T @ np.linalg.solve(k, y))[0, 0])
    return 0.5 * fit + 0.5 * logdet + 0.5 * len(y) * np.log(2 * np.pi)


def posterior(x, y, grid, ell, sf, sn):
    """The GP's posterior mean and standard deviation on ``grid`` (numpy)."""
    def kernel(a, b):
        return sf ** 2 * np.exp(-0.5 * (a[:, None] - b[None, :]) ** 2 / ell ** 2)
    chol = np.linalg.cholesky(kernel(x, x) + (sn ** 2 + 1e-8) * np.eye(len(x)))
    cross = kernel(grid, x)
    alpha = np.linalg.solve(chol.T, np.linalg.solve(chol, y[:, 0]))
    v = np.linalg.solve(chol, cross.T)
    return cross @ alpha, np.sqrt(np.maximum(sf ** 2 - np.sum(v * v, axis=0), 0.0))


def main(n: int = 200, noise: float = 0.1, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(-3, 3, n))
    y = (np.sin(2 * x) + noise * rng.standard_normal(n))[:, None]
    d2 = (x[:, None] - x[None, :]) ** 2

    start = time.perf_counter()
    f = build(n)
    compile_s = time.perf_counter() - start
    theta0 = np.log([1.0, 1.0, 0.5])
    value, grad = f(theta0, d2, y)

    eps = 1e-6
    fd = [(f(theta0 + eps * e, d2, y)[0] - f(theta0 - eps * e, d2, y)[0]) / (2 * eps)
          for e in np.eye(3)]
    calls = []

    def objective(theta):
        calls.append(1)
        v, g = f(theta, d2, y)
        return float(v), np.asarray(g, dtype=float)

    start = time.perf_counter()
    result = scipy.optimize.minimize(objective, theta0, jac=True, method="L-BFGS-B")
    fit_s = time.perf_counter() - start
    ell, sf, sn = np.exp(result.x)
    print(f"compiled in {compile_s:.2f} s; {len(calls)} value+gradient calls in {fit_s:.3f} s")
    print(f"fitted lengthscale {ell:.3f}, signal std {sf:.3f}, noise std {sn:.4f} "
          f"(true noise {noise})")
    value_error = abs(value / reference_nlml(theta0, d2, y) - 1.0)
    grad_error = float(np.abs(grad - np.array(fd)).max())
    print(f"nlml {value:.3f} -> {result.fun:.3f}; relative error against numpy {value_error:.1e}, "
          f"gradient against finite differences {grad_error:.1e}")
    assert value_error < 1e-10 and grad_error < 1e-6
    assert result.success and result.fun < value - 1.0, result.message
    assert abs(sn - noise) < 0.3 * noise, "noise level not recovered within 30%"

    return {"x": x, "y": y, "noise": noise, "fitted": (ell, sf, sn)}


def plot(result: dict, plt):
    x, y, noise = result["x"], result["y"], result["noise"]
    ell, sf, sn = result["fitted"]
    grid = np.linspace(-3.5, 3.5, 300)
    mean, std = posterior(x, y, grid, ell, sf, sn)
    fig, ax = plt.subplots(figsize=(7, 3.5))
    ax.fill_between(grid, mean - 2 * std, mean + 2 * std, alpha=0.25, label="mean ± 2 sd")
    ax.plot(grid, mean, lw=2, label="posterior mean")
    ax.plot(grid, np.sin(2 * grid), "k:", lw=1, label="sin(2x)")
    ax.plot(x, y[:, 0], ".", ms=3, color="tab:red", label=f"{len(x)} noisy points")
    ax.set(xlabel="x", title=f"GP regression: fitted lengthscale {ell:.2f}, "
           f"noise {sn:.3f} (true {noise})")
    ax.legend(fontsize=8, ncol=2)
    return fig


if __name__ == "__main__":
    from _figures import arguments, pyplot, save  # examples/: --no-plot, --out, the figure

    args = arguments(__doc__, size=("n", 200, "data points (default 200)"))
    result = main(args.n)
    plt = pyplot(args)
    if plt:
        save(plot(result, plt), args, "gp_regression.png")
