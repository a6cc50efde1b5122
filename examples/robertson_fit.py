"""Fit Robertson's three rate constants to noisy concentrations with ``sg.odeint``.

The model is solved by ``sg.odeint(method="bdf")`` (Rodas4, an L-stable Rosenbrock method
with the symbolic Jacobian) and compiled once by ``sg.function`` with its residual
Jacobian: three forward-mode sensitivities (``sg.jvp``), one per log rate constant. The
compiled residual and Jacobian drive ``scipy.optimize.least_squares``.

    python examples/robertson_fit.py [--no-plot] [--out DIR]

Figure (with matplotlib): the data, the fitted trajectories over six decades of time.
"""

import time

import numpy as np

import symgrad as sg
from _figures import arguments, need, pyplot, save

args = arguments(__doc__)
optimize = need("scipy.optimize", "bench")

TRUE = np.array([0.04, 3.0e7, 1.0e4])
TIMES = np.concatenate([[0.0], np.logspace(-4, 2, 13)])
SCALE = np.array([1.0, 1.0e4, 1.0])           # y2 is ~1e-5: weigh it like the others


def robertson(y, t, k):
    return sg.stack([-k[0] * y[0] + k[2] * y[1] * y[2],
                     k[0] * y[0] - k[2] * y[1] * y[2] - k[1] * y[1] ** 2,
                     k[1] * y[1] ** 2])


theta = sg.placeholder("theta", shape=(3,))   # log rate constants
data = sg.placeholder("data", shape=(len(TIMES) - 1, 3))
ys, info = sg.odeint(robertson, np.array([1.0, 0.0, 0.0]), TIMES, sg.exp(theta),
                     method="bdf", rtol=1e-7, atol=1e-12, full_output=True)
residual = sg.reshape((ys[1:] - data) * SCALE, (-1,))
columns = [sg.jvp([residual], [theta], [e])[0] for e in np.eye(3)]
jacobian = sg.stack(columns, axis=1)

start = time.process_time()
model = sg.function([theta, data], [residual, jacobian, info["steps"]])
clean, _, steps = model(np.log(TRUE), np.zeros((len(TIMES) - 1, 3)))
print(f"compiled residual + Jacobian in {time.process_time() - start:.1f} s CPU; "
      f"{int(steps)} Rodas4 steps from t=0 to t={TIMES[-1]:g}")

rng = np.random.default_rng(0)
truth = clean.reshape(-1, 3) / SCALE
observed = truth * (1.0 + 0.01 * rng.standard_normal(truth.shape))

guess = np.log(TRUE * np.array([3.0, 0.3, 2.0]))
start = time.perf_counter()
fit = optimize.least_squares(lambda th: model(th, observed)[0], guess,
                             jac=lambda th: model(th, observed)[1], method="lm")
elapsed = time.perf_counter() - start
fitted = np.exp(fit.x)
print(f"least_squares: {fit.nfev} residual calls, {fit.njev} Jacobians, {elapsed:.2f} s")
for name, true, got in zip(("k1", "k2", "k3"), TRUE, fitted):
    print(f"  {name}: true {true:9.4g}  fitted {got:9.4g}  ({100 * (got / true - 1):+.2f} %)")
assert np.allclose(fitted, TRUE, rtol=0.1), "the fit did not recover the rate constants"

plt = pyplot(args)
if plt:
    curve = model(fit.x, observed)[0].reshape(-1, 3) / SCALE + observed
    fig, ax = plt.subplots(figsize=(6.5, 3.5))
    for j, label in enumerate(("y1", "y2 x 1e4", "y3")):
        ax.semilogx(TIMES[1:], SCALE[j] * observed[:, j], "o", ms=4, label=f"{label} data")
        ax.semilogx(TIMES[1:], SCALE[j] * curve[:, j], "-", label=f"{label} fit")
    ax.set(xlabel="t", ylabel="concentration",
           title="Robertson kinetics: rates fitted through sg.odeint(method='bdf')")
    ax.legend(fontsize=7, ncol=2)
    save(fig, args, "robertson_fit.png")
