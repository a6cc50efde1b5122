"""``sg.vectorized_map`` over 10^5 small ODE steps, with a gradient: one RK4 step of a
damped pendulum written for ONE state and its own parameters, mapped over every state,
against the same step written with arrays (columns of the batch). Both are compiled with
``sg.function`` (value and gradient with respect to every state's parameters) and timed.

    python examples/vmap_ode_steps.py [--states N] [--quick] [--no-plot] [--out DIR]

The pendulum of state i: theta'' = -w_i^2 sin(theta) - c_i theta'. The loss is the mean
squared distance of the stepped states to targets; its gradient has one row per state
(d loss / d(w_i, c_i)).

Figure (with matplotlib): a sample of the states over 60 mapped steps in the phase plane.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import symgrad as sg

H = 0.05


def pendulum(y, p):
    """The right-hand side for one state y = (theta, omega), p = (w, c)."""
    return sg.stack([y[1], -p[0] * p[0] * sg.sin(y[0]) - p[1] * y[1]])


def rk4(y, p):
    k1 = pendulum(y, p)
    k2 = pendulum(y + H / 2 * k1, p)
    k3 = pendulum(y + H / 2 * k2, p)
    k4 = pendulum(y + H * k3, p)
    return y + H / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def rk4_arrays(y, p):
    """The same step on the whole batch at once: columns instead of one state."""
    def f(theta, omega):
        return omega, -p[:, 0] * p[:, 0] * sg.sin(theta) - p[:, 1] * omega
    theta, omega = y[:, 0], y[:, 1]
    a1, b1 = f(theta, omega)
    a2, b2 = f(theta + H / 2 * a1, omega + H / 2 * b1)
    a3, b3 = f(theta + H / 2 * a2, omega + H / 2 * b2)
    a4, b4 = f(theta + H * a3, omega + H * b3)
    return sg.stack([theta + H / 6 * (a1 + 2 * a2 + 2 * a3 + a4),
                     omega + H / 6 * (b1 + 2 * b2 + 2 * b3 + b4)], axis=1)


def compiled(n: int, mapped: bool):
    """sg.function of (states, params, targets) -> (next states, loss, d loss / d params)."""
    y = sg.placeholder("states", (n, 2))
    p = sg.placeholder("params", (n, 2))
    target = sg.placeholder("target", (n, 2))
    nxt = sg.vectorized_map(lambda e: rk4(e[0], e[1]), (y, p)) if mapped else rk4_arrays(y, p)
    loss = sg.reduce_mean(sg.square(nxt - target))
    (grad,) = sg.gradients(loss, [p])
    return sg.function([y, p, target], [nxt, loss, grad])


def best_time(f, args, repeats: int) -> float:
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        f(*args)
        best = min(best, time.perf_counter() - start)
    return best


def run(n: int, repeats: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    states = np.column_stack([rng.uniform(-2.5, 2.5, n), rng.uniform(-1.0, 1.0, n)])
    params = np.column_stack([rng.uniform(0.5, 2.0, n), rng.uniform(0.0, 0.5, n)])
    target = states + 0.01 * rng.normal(size=(n, 2))
    out = {"n": n, "states": states, "params": params}
    for name, mapped in (("map", True), ("arrays", False)):
        start = time.perf_counter()
        f = compiled(n, mapped)
        out[name] = f(states, params, target)
        out[f"{name}_build"] = time.perf_counter() - start
        out[f"{name}_time"] = best_time(f, (states, params, target), repeats)
        out[f"{name}_f"] = f
    # state k's gradient by central differences of its next state (the loss is the mean of
    # squares, so d loss / d p_k = 2 / (2 n) * sum_j (next_kj - target_kj) d next_kj / d p_k)
    f, k, eps = out["map_f"], 7, 1e-6
    residual = out["map"][0][k] - target[k]
    fd = []
    for j in range(2):
        moved = [params.copy(), params.copy()]
        moved[0][k, j] += eps
        moved[1][k, j] -= eps
        up, down = f(states, moved[0], target)[0][k], f(states, moved[1], target)[0][k]
        d_next = (up - down) / (2 * eps)
        fd.append(np.sum(residual * d_next) / n)
    out["fd_error"] = np.max(np.abs(np.array(fd) - out["map"][2][k])) / np.max(np.abs(fd))
    return out


def plot(out: dict, plt):
    f, params, shown = out["map_f"], out["params"], slice(0, 400, 8)
    states, path = out["states"], [out["states"][shown]]
    for _ in range(60):                         # the compiled map, stepped 60 times
        states = f(states, params, states)[0]
        path.append(states[shown])
    path = np.array(path)
    fig, ax = plt.subplots(figsize=(6, 4.5))
    for i in range(path.shape[1]):
        ax.plot(path[:, i, 0], path[:, i, 1], lw=0.8,
                color=plt.cm.viridis(params[shown][i, 1] / 0.5))
    ax.plot(path[0, :, 0], path[0, :, 1], ".", ms=3, color="k")
    ax.set(xlabel="theta", ylabel="omega",
           title=f"damped pendulums: 60 mapped RK4 steps (of {out['n']} states; colour: damping)")
    return fig


if __name__ == "__main__":
    from _figures import add_arguments, pyplot, save  # examples/: --no-plot, --out

    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--states", type=int, default=100_000, help="states (default 1e5)")
    parser.add_argument("--quick", action="store_true", help="10^4 states, fewer timings")
    args = add_arguments(parser).parse_args()
    n, repeats = (10_000, 3) if args.quick else (args.states, 10)
    out = run(n, repeats)
    same = [np.max(np.abs(a - b)) for a, b in zip(out["map"], out["arrays"])]
    print(f"{n} states, one RK4 step each, value + gradient wrt each state's (w, c)")
    print(f"vectorized_map vs arrays: largest difference {max(same):.1e} "
          "(next states, loss, gradient)")
    print(f"gradient vs central differences (state 7): relative error {out['fd_error']:.1e}")
    print(f"build: vectorized_map {out['map_build']:.1f} s, arrays {out['arrays_build']:.1f} s")
    print(f"per call (best of {repeats}): vectorized_map {out['map_time'] * 1e3:.2f} ms, "
          f"arrays {out['arrays_time'] * 1e3:.2f} ms, ratio "
          f"{out['map_time'] / out['arrays_time']:.2f}")
    assert max(same) < 1e-12, "vectorized_map and the array version disagree"
    assert out["fd_error"] < 1e-6, "the gradient disagrees with finite differences"
    plt = pyplot(args)
    if plt:
        save(plot(out, plt), args, "vmap_ode_steps.png")
