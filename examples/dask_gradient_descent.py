"""Logistic regression fitted by gradient descent on data that is never in memory at once.

The rows are generated chunk by chunk by dask.array's random generator (the same numbers
every time the graph runs), so each gradient step streams over the chunks: the compiled
loss-and-gradient kernel runs once per chunk, and the loss and the parameter gradients
are combined by a tree reduction (exact: the mean is the global sum over the global row
count). Only one chunk per thread is in memory at a time.

    python examples/dask_gradient_descent.py [--rows 1000000] [--chunk 125000] [--steps 12]

Use a dask.distributed Client (``Client(LocalCluster(...))`` or a real cluster) before the
loop to run the same code on worker processes.
"""

import argparse
import time

import dask
import dask.array as da
import numpy as np
from dask.diagnostics import ProgressBar

import symgrad as sg

FEATURES = 8


def model():
    """The loss (binary cross-entropy of a logistic model) and its parameter gradients."""
    X = sg.placeholder("X", shape=(None, FEATURES))     # leading None: the batch axis
    y = sg.placeholder("y", shape=(None,))
    w = sg.placeholder("w", shape=(FEATURES,))
    b = sg.placeholder("b", shape=())
    z = sg.reduce_sum(X * w, axis=1) + b
    loss = sg.reduce_mean(sg.softplus(z) - y * z)
    dw, db = sg.gradients(loss, [w, b])
    return sg.function([X, y, w, b], [loss, dw, db])


def data(rows: int, chunk: int, w_true: np.ndarray, b_true: float) -> tuple:
    """Lazily generated features and labels (nothing is computed here)."""
    rng = da.random.default_rng(2024)
    X = rng.normal(size=(rows, FEATURES), chunks=(chunk, FEATURES))
    p = 1.0 / (1.0 + da.exp(-(X @ w_true + b_true)))
    y = (rng.uniform(size=rows, chunks=chunk) < p).astype(np.float64)
    return X, y


def main(argv=None) -> float:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--chunk", type=int, default=125_000)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--rate", type=float, default=4.0)
    args = ap.parse_args(argv)

    w_true = np.linspace(-1.0, 1.0, FEATURES)
    b_true = 0.5
    f = model()
    X, y = data(args.rows, args.chunk, w_true, b_true)
    w, b = np.zeros(FEATURES), np.zeros(())
    start = time.perf_counter()
    for step in range(args.steps):
        loss, dw, db = f(X, y, w, b)                    # dask arrays: nothing ran yet
        if step in (0, args.steps - 1):
            with ProgressBar():
                loss, dw, db = dask.compute(loss, dw, db)
        else:
            loss, dw, db = dask.compute(loss, dw, db)
        w, b = w - args.rate * dw, b - args.rate * db
        print(f"step {step:2d}  loss {float(loss):.5f}  |w - w_true| "
              f"{np.linalg.norm(w - w_true):.4f}  b {float(b):+.4f}")
    print(f"{args.steps} steps over {args.rows:,} rows in chunks of {args.chunk:,}: "
          f"{time.perf_counter() - start:.1f} s")
    error = float(np.linalg.norm(w - w_true))
    print(f"weights within 0.05 of the true ones: {error < 0.05}")
    lazy = f(X, y, w, b)[0]
    print(f"a call only builds a graph (a dask array, nothing computed): "
          f"{isinstance(lazy, da.Array)}")
    return error


if __name__ == "__main__":
    main()
