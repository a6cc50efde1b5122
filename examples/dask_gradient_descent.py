"""Logistic regression fitted by gradient descent on data that is never in memory at once.

The rows are generated chunk by chunk by dask.array's random generator (the same numbers
every time the graph runs), so each gradient step streams over the chunks: the compiled
loss-and-gradient kernel runs once per chunk, and the loss and the parameter gradients
are combined by a tree reduction (exact: the mean is the global sum over the global row
count). Only one chunk per thread is in memory at a time.

    python examples/dask_gradient_descent.py [--rows 1000000] [--chunk 125000] [--steps 12]
                                             [--no-plot] [--out DIR]

Needs the dask extra: ``pip install -e ".[dask]"``. Figure (with matplotlib): the loss and
the distance to the true weights per step.

Use a dask.distributed Client (``Client(LocalCluster(...))`` or a real cluster) before the
loop to run the same code on worker processes.
"""

import argparse
import time

import numpy as np

import symgrad as sg
from _figures import add_arguments, need, pyplot, save

dask = need("dask", extra="dask")          # one line and exit code 2 when dask is missing
da = need("dask.array", extra="dask")
from dask.diagnostics import ProgressBar  # noqa: E402

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
    args = add_arguments(ap).parse_args(argv)

    w_true = np.linspace(-1.0, 1.0, FEATURES)
    b_true = 0.5
    f = model()
    X, y = data(args.rows, args.chunk, w_true, b_true)
    w, b = np.zeros(FEATURES), np.zeros(())
    start = time.perf_counter()
    history = []
    for step in range(args.steps):
        loss, dw, db = f(X, y, w, b)                    # dask arrays: nothing ran yet
        if step in (0, args.steps - 1):
            with ProgressBar():
                loss, dw, db = dask.compute(loss, dw, db)
        else:
            loss, dw, db = dask.compute(loss, dw, db)
        w, b = w - args.rate * dw, b - args.rate * db
        history.append((float(loss), float(np.linalg.norm(w - w_true))))
        print(f"step {step:2d}  loss {float(loss):.5f}  |w - w_true| "
              f"{np.linalg.norm(w - w_true):.4f}  b {float(b):+.4f}")
    print(f"{args.steps} steps over {args.rows:,} rows in chunks of {args.chunk:,}: "
          f"{time.perf_counter() - start:.1f} s")
    error = float(np.linalg.norm(w - w_true))
    assert error < 0.05, f"weights {error:.3f} from the true ones"
    lazy = f(X, y, w, b)[0]
    assert isinstance(lazy, da.Array), "a call should only build a graph (a dask array)"
    plt = pyplot(args)
    if plt:
        fig, ax = plt.subplots(figsize=(6, 3.5))
        ax.plot([h[0] for h in history], "o-", label="loss (cross-entropy)")
        ax.plot([h[1] for h in history], "s--", label="|w - w_true|")
        ax.set(xlabel="gradient step", title=f"gradient descent over {args.rows:,} rows "
               f"in {-(-args.rows // args.chunk)} dask chunks")
        ax.legend()
        save(fig, args, "dask_gradient_descent.png")
    return error


if __name__ == "__main__":
    main()
