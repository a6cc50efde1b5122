"""``sg.vectorized_map`` of an RK4 step over 10^5 states against the same step written with
arrays (issue 31's target: <= 1.2x), for three natural ways of writing the per-state step:

* ``stack``: the state is a vector, the right-hand side ``sg.stack``s it, ``y[0]`` reads it
  (``examples/vmap_ode_steps.py``),
* ``tensors``: each component its own tensor (fn gets and returns a tuple of scalars),
* ``unstack``: the state is a vector, read with ``sg.unstack``;

and, without a map, ``vectors``: the batch's step on ``(n, 2)`` arrays whose right-hand
side stacks columns (``compile/plan/selects.py`` folds the indexing back through them).

Each is compiled with ``sg.function`` (next states, loss, gradient wrt every state's
parameters) and timed interleaved with the array version, best of ``--repeats`` calls;
kernel counts from the compiled plans; the results are checked equal to the arrays'.

    python benchmarks/vmap_fusion.py [--states N] [--repeats R] [--forward]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
import symgrad as sg                                         # noqa: E402
from vmap_ode_steps import H, rk4, rk4_arrays                # noqa: E402


def rk4_tensors(theta, omega, w, c):
    """The step with each component its own scalar tensor."""
    def f(a, b):
        return b, -w * w * sg.sin(a) - c * b
    a1, b1 = f(theta, omega)
    a2, b2 = f(theta + H / 2 * a1, omega + H / 2 * b1)
    a3, b3 = f(theta + H / 2 * a2, omega + H / 2 * b2)
    a4, b4 = f(theta + H * a3, omega + H * b3)
    return (theta + H / 6 * (a1 + 2 * a2 + 2 * a3 + a4),
            omega + H / 6 * (b1 + 2 * b2 + 2 * b3 + b4))


def pendulum_unstack(y, p):
    theta, omega = sg.unstack(y)
    w, c = sg.unstack(p)
    return sg.stack([omega, -w * w * sg.sin(theta) - c * omega])


def rk4_unstack(y, p):
    k1 = pendulum_unstack(y, p)
    k2 = pendulum_unstack(y + H / 2 * k1, p)
    k3 = pendulum_unstack(y + H / 2 * k2, p)
    k4 = pendulum_unstack(y + H * k3, p)
    return y + H / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def pendulum_vectors(y, p):
    """The batch's right-hand side written on (n, 2) arrays: columns stacked."""
    return sg.stack([y[:, 1], -p[:, 0] * p[:, 0] * sg.sin(y[:, 0]) - p[:, 1] * y[:, 1]],
                    axis=1)


def rk4_vectors(y, p):
    k1 = pendulum_vectors(y, p)
    k2 = pendulum_vectors(y + H / 2 * k1, p)
    k3 = pendulum_vectors(y + H / 2 * k2, p)
    k4 = pendulum_vectors(y + H * k3, p)
    return y + H / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def step(kind: str, y, p):
    if kind == "arrays":
        return rk4_arrays(y, p)
    if kind == "vectors":
        return rk4_vectors(y, p)
    if kind == "stack":
        return sg.vectorized_map(lambda e: rk4(e[0], e[1]), (y, p))
    if kind == "unstack":
        return sg.vectorized_map(lambda e: rk4_unstack(e[0], e[1]), (y, p))
    parts = (y[:, 0], y[:, 1], p[:, 0], p[:, 1])
    return sg.stack(sg.vectorized_map(lambda e: rk4_tensors(*e), parts), axis=1)


def compiled(kind: str, n: int, forward: bool):
    y = sg.placeholder("states", (n, 2))
    p = sg.placeholder("params", (n, 2))
    target = sg.placeholder("target", (n, 2))
    nxt = step(kind, y, p)
    if forward:
        return sg.function([y, p, target], [nxt])
    loss = sg.reduce_mean(sg.square(nxt - target))
    (grad,) = sg.gradients(loss, [p])
    return sg.function([y, p, target], [nxt, loss, grad])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--states", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--forward", action="store_true", help="next states only")
    args = parser.parse_args()
    n, rng = args.states, np.random.default_rng(0)
    states = np.column_stack([rng.uniform(-2.5, 2.5, n), rng.uniform(-1.0, 1.0, n)])
    params = np.column_stack([rng.uniform(0.5, 2.0, n), rng.uniform(0.0, 0.5, n)])
    call = (states, params, states + 0.01 * rng.normal(size=(n, 2)))
    kinds = ("arrays", "stack", "tensors", "unstack", "vectors")
    fns = {k: compiled(k, n, args.forward) for k in kinds}
    ref = fns["arrays"](*call)
    for k in kinds:
        diff = max(np.max(np.abs(np.asarray(a) - b)) for a, b in zip(fns[k](*call), ref))
        assert diff < 1e-12, f"{k} disagrees with arrays by {diff}"
    best = {k: [np.inf, np.inf] for k in kinds}     # wall, CPU (process_time)
    for _ in range(args.repeats):                 # interleaved: the same machine load
        for k in kinds:
            wall, cpu = time.perf_counter(), time.process_time()
            fns[k](*call)
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            best[k] = [min(best[k][0], wall), min(best[k][1], cpu)]
    what = "next states" if args.forward else "next states, loss, gradient wrt params"
    print(f"{n} states, one RK4 step, {what}; best of {args.repeats} (interleaved)")
    ref = best["arrays"]
    for k in kinds:
        print(f"  {k:8s} {len(fns[k].plan.kernels):2d} kernels  wall {best[k][0] * 1e3:6.2f} ms "
              f"(x{best[k][0] / ref[0]:.2f})  CPU {best[k][1] * 1e3:6.2f} ms "
              f"(x{best[k][1] / ref[1]:.2f})")


if __name__ == "__main__":
    main()
