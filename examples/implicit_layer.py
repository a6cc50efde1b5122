"""An implicit layer fitted by gradient descent (Adam): the layer's output is the equilibrium
``z = tanh(W z + U x + b)`` of each input x, found by ``sg.root`` (Newton) inside the loss,
and the gradient of the loss with respect to W, U, b comes from the implicit function
theorem (one linear solve with the Jacobian at the equilibrium), never from the Newton
iterations. Loss and gradient are compiled once with ``sg.function``; the gradient is
compared once with central finite differences of the compiled loss.

    python examples/implicit_layer.py [steps] [--no-plot] [--out DIR]

The layer (a "deep equilibrium" layer) maps a batch of 2-D points to hidden states of
size HIDDEN and reads out ``y = v . z``; it is fitted to y = sin(2 x0) cos(x1). W is kept
contractive (its Frobenius norm below 0.8), so the equilibrium exists and is unique.

Figure (with matplotlib): the loss over the gradient steps, and the fitted against the
target values.
"""

from __future__ import annotations

import time

import numpy as np

import symgrad as sg

HIDDEN, BATCH = 6, 48
SHAPES = {"A": (HIDDEN, HIDDEN), "U": (HIDDEN, 2), "b": (HIDDEN,), "v": (HIDDEN,)}
SIZES = {k: int(np.prod(s)) for k, s in SHAPES.items()}
N_PARAMS = sum(SIZES.values())


def unpack(theta):
    """The layer's parameters from one flat vector (slices of a placeholder)."""
    out, start = {}, 0
    for name, shape in SHAPES.items():
        out[name] = sg.reshape(theta[start:start + SIZES[name]], shape)
        start += SIZES[name]
    return out


def equilibrium(theta, x):
    """z*(x) = tanh(W z* + U x + b) for each input row: one sg.root of HIDDEN unknowns per
    input, mapped over the batch by sg.map_fn (one batched Newton solve over the inputs,
    each with its own implicit derivative: symgrad/batching_control.py)."""
    p = unpack(theta)
    w = 0.8 * p["A"] / sg.sqrt(1.0 + sg.reduce_sum(p["A"] * p["A"]))   # ||W||_F < 0.8

    def layer(x_i):
        drive = sg.reduce_sum(p["U"] * x_i, axis=1) + p["b"]

        def residual(z):
            return z - sg.tanh(sg.reduce_sum(w * z, axis=1) + drive)
        return sg.root(residual, np.zeros(HIDDEN), tol=1e-12)
    return sg.map_fn(layer, x), p


def build():
    theta = sg.placeholder("theta", (N_PARAMS,))
    x = sg.placeholder("x", (BATCH, 2))
    y = sg.placeholder("y", (BATCH,))
    z, p = equilibrium(theta, x)
    prediction = sg.reduce_sum(z * p["v"], axis=1)
    loss = sg.reduce_mean(sg.square(prediction - y))
    (grad,) = sg.gradients(loss, [theta])
    return sg.function([theta, x, y], [loss, grad, prediction])


def fit(steps: int = 300, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.5, 1.5, size=(BATCH, 2))
    y = np.sin(2 * x[:, 0]) * np.cos(x[:, 1])
    start = time.perf_counter()
    f = build()
    theta = 0.5 * rng.normal(size=N_PARAMS)
    loss0, grad0, _ = f(theta, x, y)
    built = time.perf_counter() - start

    # the implicit gradient against central differences of the compiled loss
    eps = 1e-6
    fd = np.array([(f(theta + eps * e, x, y)[0] - f(theta - eps * e, x, y)[0]) / (2 * eps)
                   for e in np.eye(N_PARAMS)])
    fd_error = np.max(np.abs(fd - grad0)) / np.max(np.abs(grad0))

    # gradient descent (Adam's steps)
    losses, m, v, rate = [float(loss0)], np.zeros(N_PARAMS), np.zeros(N_PARAMS), 0.05
    start = time.perf_counter()
    for k in range(1, steps + 1):
        loss, grad, _ = f(theta, x, y)
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad * grad
        theta = theta - rate * (m / (1 - 0.9 ** k)) / (np.sqrt(v / (1 - 0.999 ** k)) + 1e-8)
        losses.append(float(loss))
    per_call = (time.perf_counter() - start) / steps
    loss, _, prediction = f(theta, x, y)
    losses[-1] = float(loss)
    return {"losses": np.array(losses), "fd_error": fd_error, "built": built,
            "per_call": per_call, "x": x, "y": y, "prediction": prediction}


def plot(out: dict, plt):
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.5))
    a.semilogy(out["losses"])
    a.set(xlabel="gradient step", ylabel="mean squared error",
          title="an implicit layer (sg.root) fitted")
    b.plot(out["y"], out["prediction"], "o", ms=4)
    lo, hi = out["y"].min(), out["y"].max()
    b.plot([lo, hi], [lo, hi], "k:", lw=1)
    b.set(xlabel="target", ylabel="v . z*(x)", title="fitted vs target")
    fig.tight_layout()
    return fig


if __name__ == "__main__":
    from _figures import arguments, pyplot, save  # examples/: --no-plot, --out, the figure

    args = arguments(__doc__, size=("steps", 150, "gradient steps (default 150)"))
    out = fit(args.steps)
    print(f"{N_PARAMS} parameters, {BATCH} inputs, hidden size {HIDDEN}: one sg.root of "
          f"{HIDDEN} unknowns per input (sg.map_fn)")
    print(f"built and first call {out['built']:.1f} s; {out['per_call'] * 1e3:.2f} ms per "
          "compiled loss + implicit gradient")
    print(f"implicit gradient vs central differences: largest error {out['fd_error']:.1e} "
          "(relative to the largest entry)")
    print(f"loss {out['losses'][0]:.4f} -> {out['losses'][-1]:.4f} after {args.steps} steps")
    assert out["fd_error"] < 1e-6, "the implicit gradient disagrees with finite differences"
    assert out["losses"][-1] < 0.25 * out["losses"][0], "the loss did not decrease"
    plt = pyplot(args)
    if plt:
        save(plot(out, plt), args, "implicit_layer.png")
