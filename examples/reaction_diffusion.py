"""2-D Gray–Scott reaction–diffusion with symgrad's exact sparse Jacobian in a stiff solver.

    u' = Du ∇²u - u v² + F (1 - u)        v' = Dv ∇²v + u v² - (F + k) v

on a periodic n × n grid (diffusion by ``sg.roll``). The right-hand side and its sparse
Jacobian (``sg.sparse.sparse_jacobian``: exact pattern from the graph, row colouring, one
vector–Jacobian product per colour) are compiled with ``sg.function``; the Jacobian comes
back as a ``scipy.sparse.csr_array`` and goes to ``solve_ivp(method="BDF", jac=...)``,
compared with finite differences given the same pattern (``jac_sparsity=``).

    python examples/reaction_diffusion.py          # 24 x 24 grid (seconds)
    python examples/reaction_diffusion.py --n 128  # 128 x 128 x 2 = 32,768 unknowns

Figure (with matplotlib; ``--no-plot`` skips it, ``--out DIR`` says where): the Jacobian's
sparsity pattern and the v field at the end time.
"""

from __future__ import annotations

import argparse
import time
import timeit

import numpy as np
from scipy.integrate import solve_ivp

import symgrad as sg

DU, DV, FEED, KILL = 0.16, 0.08, 0.035, 0.065


def laplacian(c, h: float):
    """Five-point periodic Laplacian of the (n, n) field ``c``."""
    near = (sg.roll(c, 1, axis=0) + sg.roll(c, -1, axis=0) + sg.roll(c, 1, axis=1)
            + sg.roll(c, -1, axis=1))
    return (near - 4.0 * c) / (h * h)


def gray_scott(n: int):
    """The state placeholder (2 n², u then v) and the right-hand side tensor."""
    y = sg.placeholder("y", shape=(2 * n * n,))
    fields = sg.reshape(y, (2, n, n))
    u, v = fields[0], fields[1]
    h = 2.5 / n
    uvv = u * v * v
    du = DU * laplacian(u, h) - uvv + FEED * (1.0 - u)
    dv = DV * laplacian(v, h) + uvv - (FEED + KILL) * v
    return y, sg.reshape(sg.stack([du, dv]), (-1,))


def initial_state(n: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    u, v = np.ones((n, n)), np.zeros((n, n))
    c = slice(n // 2 - n // 8, n // 2 + n // 8)
    u[c, c], v[c, c] = 0.5, 0.25
    u += 0.02 * rng.standard_normal((n, n))
    v += 0.02 * rng.standard_normal((n, n))
    return np.concatenate([u.ravel(), v.ravel()])


def main(n: int = 24, t_end: float = 20.0) -> dict:
    y, rhs = gray_scott(n)
    start = time.perf_counter()
    pattern = sg.sparsity(rhs, y)
    t_pattern = time.perf_counter() - start
    jac = sg.sparse.sparse_jacobian(rhs, y)
    f = sg.function([y], rhs)
    jf = sg.function([y], jac)
    t_compile = time.perf_counter() - start
    y0 = initial_state(n)
    J = jf(y0)
    t_call = min(timeit.repeat(lambda: jf(y0), number=10, repeat=5)) / 10
    print(f"n={n}: {y0.size} unknowns, nnz {pattern.nnz}, {jac.info['colours']} colours; "
          f"sparsity {t_pattern:.2f} s, pattern + compile {t_compile:.2f} s, "
          f"{t_call * 1e6:.0f} us per Jacobian")
    same = (J.indices == pattern.indices).all() and (J.indptr == pattern.indptr).all()
    assert same, "the Jacobian's CSR structure is not sg.sparsity's pattern"
    dense_check = n <= 32
    if dense_check:   # small grids: against a central-difference Jacobian
        step, fd = 1e-6, np.empty((y0.size, y0.size))
        for j in range(y0.size):
            e = np.zeros(y0.size)
            e[j] = step
            fd[:, j] = (f(y0 + e) - f(y0 - e)) / (2 * step)
        fd_error = float(np.abs(J.toarray() - fd).max())
        print(f"  max |J - central differences| {fd_error:.1e}")
        assert fd_error < 1e-5

    runs = {}
    for label, kw in (("sg jac", {"jac": lambda t, s: jf(s)}),
                      ("jac_sparsity FD", {"jac_sparsity": pattern})):
        t0 = time.perf_counter()
        sol = solve_ivp(lambda t, s: f(s), (0.0, t_end), y0, method="BDF", rtol=1e-6,
                        atol=1e-9, **kw)
        runs[label] = (time.perf_counter() - t0, sol)
        print(f"  BDF with {label:16s} {runs[label][0]:7.2f} s  nfev {sol.nfev:5d}  "
              f"njev {sol.njev:3d}  nlu {sol.nlu:4d}  status {sol.status}")
    diff = float(np.abs(runs["sg jac"][1].y[:, -1] - runs["jac_sparsity FD"][1].y[:, -1]).max())
    print(f"  max |difference| of the final states: {diff:.2e}")
    assert diff < 1e-4, "the two solutions disagree"
    return {"n": n, "t_end": t_end, "diff": diff, "runs": runs, "pattern": pattern}


def plot(result: dict, plt):
    n, pattern = result["n"], result["pattern"]
    solution = result["runs"]["sg jac"][1]
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2))
    axes[0].spy(pattern, markersize=max(0.2, 240.0 / n ** 2), color="tab:blue")
    axes[0].set_title(f"Jacobian pattern: {pattern.shape[0]} x {pattern.shape[1]}, "
                      f"nnz {pattern.nnz}", fontsize=10)
    for ax, column in zip(axes[1:], (0, -1)):
        field = solution.y[:, column].reshape(2, n, n)[1]
        image = ax.imshow(field, cmap="viridis", origin="lower")
        ax.set_title(f"v at t = {solution.t[column]:g} ({n} x {n} grid)", fontsize=10)
        fig.colorbar(image, ax=ax, shrink=0.8)
    fig.tight_layout()
    return fig


if __name__ == "__main__":
    from _figures import add_arguments, pyplot, save  # examples/: --no-plot, --out, the figure

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=24, help="grid points per side (default 24)")
    parser.add_argument("--t-end", type=float, default=20.0, help="end time (default 20)")
    args = add_arguments(parser).parse_args()
    result = main(args.n, args.t_end)
    plt = pyplot(args)
    if plt:
        save(plot(result, plt), args, "reaction_diffusion.png")
