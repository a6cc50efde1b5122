"""Compare symgrad's two gradient engines (and finite differences) on a physics function.

The energy of a Lennard-Jones cluster plus springs that tie each atom to an anchor:

    E(P) = sum_{i<j} 4 eps ((s/r_ij)^12 - (s/r_ij)^6) + k/2 sum_i |p_i - a_i|^2

The force is -dE/dP. ``sg.testing.check_gradients`` computes dE/dP four ways (sg.gradients
via sg.evaluate and, when available, sg.function; the eager GradientTape; central finite
differences) and prints a table you can paste into a bug report.

Run: python examples/compare_symbolic_vs_tape.py
"""

from __future__ import annotations

import numpy as np

import symgrad as sg

EPSILON, SIGMA, K = 1.0, 1.0, 0.5


def cluster_energy(positions, anchors):
    """Lennard-Jones pair energy (each pair once) plus harmonic anchor springs."""
    diff = positions[:, None, :] - positions[None, :, :]          # (n, n, 3)
    r2 = sg.reduce_sum(diff * diff, axis=-1)                      # (n, n)
    n = positions.shape[0]
    upper = np.triu(np.ones((n, n), dtype=bool), k=1)
    safe_r2 = sg.where(upper, r2, 1.0)                            # no 1/0 on the diagonal
    inv6 = (SIGMA * SIGMA / safe_r2) ** 3.0
    pair = sg.where(upper, 4.0 * EPSILON * (inv6 * inv6 - inv6), 0.0)
    stretch = positions - anchors
    return sg.reduce_sum(pair) + 0.5 * K * sg.reduce_sum(stretch * stretch)


def main() -> None:
    rng = np.random.default_rng(7)
    anchors = np.array([[0.0, 0.0, 0.0], [1.12, 0.0, 0.0], [0.56, 0.97, 0.0],
                        [0.56, 0.32, 0.92]])
    positions = anchors + 0.05 * rng.standard_normal(anchors.shape)
    report = sg.testing.check_gradients(cluster_energy, positions, anchors, wrt=[0])
    print(report)
    report.assert_ok()

    p = sg.Variable(positions, name="positions")
    with sg.GradientTape() as tape:
        energy = cluster_energy(p, anchors)
    force = -tape.gradient(energy, p)
    print(f"\nenergy {float(energy):.6f}; forces on the atoms:")
    print(np.round(force.numpy(), 4))


if __name__ == "__main__":
    main()
