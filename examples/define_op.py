"""sg.define_op: a Morse pair potential from one sympy formula, its forces and stiffness.

The formula is written once; symgrad takes every derivative from it with sympy.diff, fuses
the op into compiled kernels, prints it in LaTeX, and the tape derives its own reverse
rules from the same partials. Run: ``python examples/define_op.py`` (a few seconds).
"""

import numpy as np
import sympy as sp

import symgrad as sg

# V(r; D, a, r0) = D (1 - exp(-a (r - r0)))^2, elementwise over pair distances r.
morse = sg.define_op("morse", lambda r, D, a, r0: D * (1 - sp.exp(-a * (r - r0)))**2)

# Three atoms on a line; the energy is the sum over the pairs (i < j).
x = sg.placeholder("x", shape=(3,))
i, j = np.array([0, 0, 1]), np.array([1, 2, 2])
r = sg.abs(sg.gather(x, j) - sg.gather(x, i))
energy = sg.reduce_sum(morse(r, 1.0, 1.5, 1.0))
(force,) = sg.gradients(-energy, x)
(stiffness,) = sg.hessians(energy, x)

s, D, a, r0 = (sg.placeholder(name) for name in ("r", "D", "a", "r_0"))
print("V(r)   =", sg.latex(morse(s, D, a, r0)))
print("V'(r)  =", sg.latex(sg.gradients(morse(s, D, a, r0), s)[0]))

positions = np.array([0.0, 1.1, 2.05])
compiled = sg.function([x], [energy, force, stiffness])   # fused numba kernels
e, f, k = compiled(positions)
print("energy =", round(float(e), 6))
print("forces =", f.round(6), "(they sum to", round(float(f.sum()), 12), ")")
print("stiffness (Hessian) =\n", k.round(5))

# Check against central differences and the eager tape.
eps = 1e-6
numeric = np.array([(compiled(positions - eps * d)[0] - compiled(positions + eps * d)[0])
                    / (2 * eps) for d in np.eye(3)])
v = sg.Variable(positions)
with sg.GradientTape() as tape:
    rv = sg.abs(sg.gather(v, j) - sg.gather(v, i))
    ev = sg.reduce_sum(morse(rv, 1.0, 1.5, 1.0))
fd_error = float(np.abs(f - numeric).max())
tape_error = float(np.abs(f + tape.gradient(ev, v).numpy()).max())
print("max |force - finite differences| =", fd_error)
print("max |force - tape|               =", tape_error)
print("max |K - K^T| (Hessian symmetry)  =", float(np.abs(k - k.T).max()))
assert fd_error < 1e-7 and tape_error < 1e-12, "forces disagree with finite differences or tape"
assert np.allclose(k, k.T, rtol=1e-12, atol=1e-14), "the Hessian is not symmetric"

# The op's name is only displayed; the generated code names it by a hash of its formula.
print("op:", morse)
kernel = [line for line in compiled.source.splitlines() if line.startswith("# kernel")]
print("kernels:", *kernel, sep="\n  ")
assert "morse" not in compiled.source, "the op's name reached the generated code"
