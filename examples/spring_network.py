"""A 2-D spring network under load, minimised by Newton's method with the sparse Hessian.

Nodes on a jittered grid, springs between grid neighbours plus random diagonals; the left
column is clamped, the right column pulled down. Each spring e = (i, j) stores
``0.5 * k_e * (|x_i - x_j| - L_e)**2``. The free nodes' positions are scattered into the
full position array (``sg.tensor_scatter_nd_update``), the spring forces are assembled
onto the nodes with ``sg.unsorted_segment_sum`` (checked against ``sg.gradients`` of the
energy), and the Hessian comes back as a ``scipy.sparse.csr_array`` with its exact pattern
(``sg.hessians(..., sparse=True)``) for ``scipy.sparse.linalg.spsolve``.

    python examples/spring_network.py [nodes per side] [--no-plot] [--out DIR]

Figure (with matplotlib): the network at rest and under load, the Hessian's sparsity
pattern and Newton's convergence.
"""

from __future__ import annotations

import time

import numpy as np
from scipy.sparse import identity
from scipy.sparse.linalg import spsolve

import symgrad as sg


def build(side: int, seed: int = 0):
    """Nodes (side x side grid, jittered), springs, clamped and loaded node ids."""
    rng = np.random.default_rng(seed)
    ii, jj = np.meshgrid(np.arange(side), np.arange(side), indexing="ij")
    nodes = np.stack([ii.ravel(), jj.ravel()], 1).astype(float)
    nodes += rng.uniform(-0.15, 0.15, nodes.shape)
    ids = np.arange(side * side).reshape(side, side)
    edges = [np.stack([ids[:-1].ravel(), ids[1:].ravel()], 1),       # grid neighbours
             np.stack([ids[:, :-1].ravel(), ids[:, 1:].ravel()], 1)]
    diag = np.stack([ids[:-1, :-1].ravel(), ids[1:, 1:].ravel()], 1)
    anti = np.stack([ids[:-1, 1:].ravel(), ids[1:, :-1].ravel()], 1)
    pick = rng.random(diag.shape[0]) < 0.5                            # random diagonals
    edges += [diag[pick], anti[~pick]]
    edges = np.concatenate(edges)
    clamped = ids[0]                                                  # the left column
    loaded = ids[-1]                                                  # the right column
    return nodes, edges, clamped, loaded


def energy_graph(nodes, edges, clamped, loaded, load: float):
    """(x placeholder of the free nodes, energy, assembled forces on the free nodes)."""
    n = nodes.shape[0]
    free = np.setdiff1d(np.arange(n), clamped)
    x = sg.placeholder("x", shape=(free.size, 2))
    pos = sg.tensor_scatter_nd_update(sg.constant(nodes), free[:, None], x)
    i, j = edges[:, 0], edges[:, 1]
    rest = np.linalg.norm(nodes[i] - nodes[j], axis=1)
    stiffness = np.random.default_rng(1).uniform(0.5, 2.0, edges.shape[0])
    d = sg.gather(pos, i) - sg.gather(pos, j)                          # (E, 2)
    length = sg.sqrt(sg.reduce_sum(d * d, axis=1))
    stretch = length - rest
    external = np.zeros((n, 2))
    external[loaded, 1] = -load
    energy = sg.reduce_sum(0.5 * stiffness * stretch ** 2) - sg.reduce_sum(pos * external)
    # the spring force on node i is -k (|d| - L) d/|d|, on node j its opposite: assembled
    f = (-stiffness * stretch / length)[:, None] * d
    forces = sg.unsorted_segment_sum(f, i, n) - sg.unsorted_segment_sum(f, j, n) + external
    return x, energy, sg.gather(forces, free), free


def solve(side: int = 12, load: float = 0.01, verbose: bool = True) -> dict:
    nodes, edges, clamped, loaded = build(side)
    x, energy, forces, free = energy_graph(nodes, edges, clamped, loaded, load)
    (grad,) = sg.gradients(energy, [x])
    (hess,) = sg.hessians(energy, [x], sparse=True)
    start = time.perf_counter()
    value_grad = sg.function([x], [energy, grad, forces])
    hessian = sg.function([x], hess)
    point = nodes[free].copy()
    value_grad(point), hessian(point)
    compile_s = time.perf_counter() - start
    pattern = sg.hessian_sparsity(energy, x)
    history, shift = [], 0.0
    eye = identity(2 * free.size, format="csc")
    for _ in range(60):
        value, g, fo = value_grad(point)
        history.append((float(value), float(np.abs(g).max())))
        if np.abs(g).max() < 1e-10:
            break
        h = hessian(point).tocsc()
        while True:   # Newton; far from the minimum (H indefinite) shifted by a multiple of I
            step = spsolve(h + shift * eye, g.ravel()).reshape(point.shape)
            if value_grad(point - step)[0] <= value:
                shift = shift / 10.0 if shift > 1e-8 else 0.0
                break
            shift = max(10.0 * shift, 1e-6)
        point = point - step
    value, g, fo = value_grad(point)
    h = hessian(point)
    deformed = sg.evaluate(sg.tensor_scatter_nd_update(sg.constant(nodes), free[:, None],
                                                       sg.constant(point)), {})
    result = {
        "nodes": nodes.shape[0], "springs": edges.shape[0], "newton_steps": len(history),
        "gradient_norm": float(np.abs(g).max()), "hessian_nnz": h.nnz,
        "pattern_nnz": pattern.nnz, "compile_s": compile_s,
        "forces_are_minus_gradient": bool(np.allclose(fo, -g, atol=1e-12)),
        "pattern_is_exact": bool((h.indices == pattern.indices).all()
                                 and (h.indptr == pattern.indptr).all()),
        "converged": bool(np.abs(g).max() < 1e-9),
        "tip_drop": float(nodes[loaded, 1].mean() - deformed[loaded, 1].mean()),
        "rest": nodes, "deformed": deformed, "edges": edges, "hessian": h, "history": history,
    }
    if verbose:
        print(f"{result['nodes']} nodes, {result['springs']} springs; Hessian "
              f"{2 * free.size}x{2 * free.size}, nnz {h.nnz}; compiled in {compile_s:.1f} s")
        for k, (value, gmax) in enumerate(history):
            print(f"  Newton step {k}: energy {value:+.10f}  max |gradient| {gmax:.2e}")
        print(f"mean drop of the loaded column: {result['tip_drop']:.4f}")
    for key in ("forces_are_minus_gradient", "pattern_is_exact", "converged"):
        assert result[key], f"{key} is False"
    return result


def plot(result: dict, plt):
    from matplotlib.collections import LineCollection

    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2), gridspec_kw={"width_ratios": [1.3, 1, 1]})
    rest, moved, edges = result["rest"], result["deformed"], result["edges"]
    axes[0].add_collection(LineCollection(rest[edges], colors="0.8", lw=0.8))
    axes[0].add_collection(LineCollection(moved[edges], colors="tab:blue", lw=0.9))
    axes[0].plot(*rest[: int(np.sqrt(len(rest)))].T, "k>", ms=4, label="clamped")
    axes[0].autoscale()
    axes[0].set(aspect="equal", title=f"at rest (grey) and loaded: drop {result['tip_drop']:.3f}")
    axes[0].legend(fontsize=8, loc="lower left")
    axes[1].spy(result["hessian"], markersize=0.6)
    axes[1].set_title(f"sparse Hessian, nnz {result['hessian_nnz']}", fontsize=10)
    axes[2].semilogy([max(gmax, 1e-16) for _, gmax in result["history"]], "o-")
    axes[2].set(xlabel="Newton step", title="Newton convergence: max |gradient|")
    fig.tight_layout()
    return fig


if __name__ == "__main__":
    from _figures import arguments, pyplot, save  # examples/: --no-plot, --out, the figure

    args = arguments(__doc__, size=("side", 12, "nodes per side (default 12)"))
    outcome = solve(args.side)
    plt = pyplot(args)
    if plt:
        save(plot(outcome, plt), args, "spring_network.png")
