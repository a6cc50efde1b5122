"""A double pendulum: equations of motion from sympy.physics.mechanics, turned into a
compiled right-hand side and Jacobian by ``sg.from_sympy``, integrated by scipy's BDF.

sympy's ``LagrangesMethod`` gives the mass matrix M(q) and forcing F(q, q') of the first-order
system M y' = F; ``M.LUsolve(F)`` is y' = f(y) as a 4 x 1 sympy Matrix (no simplify). The
dynamic symbols are replaced by plain symbols, ``sg.from_sympy`` maps them to the entries of
one placeholder y = (theta1, theta2, omega1, omega2), and ``sg.jacobian`` differentiates the
graph (not the sympy expression). Both are compiled by ``sg.function`` and handed to
``scipy.integrate.solve_ivp(method="BDF", jac=...)``. The total energy must stay constant.

    python examples/double_pendulum.py [--no-plot] [--out DIR]

Figure (with matplotlib): the path of both bobs, and the relative energy drift over time.
"""

import time

import numpy as np
import sympy as sp
from scipy.integrate import solve_ivp
from sympy.physics.mechanics import (LagrangesMethod, Lagrangian, Particle, Point,
                                     ReferenceFrame, dynamicsymbols)

import symgrad as sg
from _figures import arguments, pyplot, save

args = arguments(__doc__)
start = time.perf_counter()
# --- the model, in sympy ---------------------------------------------------------------------
q1, q2 = dynamicsymbols("q1 q2")
q1d, q2d = dynamicsymbols("q1 q2", 1)
m1, m2, l1, l2, g = sp.symbols("m1 m2 l1 l2 g", positive=True)
frame, origin = ReferenceFrame("N"), Point("O")
origin.set_vel(frame, 0)
p1 = origin.locatenew("P1", l1 * sp.sin(q1) * frame.x - l1 * sp.cos(q1) * frame.y)
p2 = p1.locatenew("P2", l2 * sp.sin(q2) * frame.x - l2 * sp.cos(q2) * frame.y)
for point in (p1, p2):
    point.set_vel(frame, point.pos_from(origin).dt(frame))
bob1, bob2 = Particle("bob1", p1, m1), Particle("bob2", p2, m2)
bob1.potential_energy = m1 * g * p1.pos_from(origin).dot(frame.y)
bob2.potential_energy = m2 * g * p2.pos_from(origin).dot(frame.y)
lagrange = LagrangesMethod(Lagrangian(frame, bob1, bob2), [q1, q2])
lagrange.form_lagranges_equations()
rhs = lagrange.mass_matrix_full.LUsolve(lagrange.forcing_full)      # y' = f(y), 4 x 1
energy = (bob1.kinetic_energy(frame) + bob2.kinetic_energy(frame)
          + bob1.potential_energy + bob2.potential_energy)

th1, th2, w1, w2 = sp.symbols("theta1 theta2 omega1 omega2")
plain = {q1d: w1, q2d: w2}                  # derivatives first: they contain q1(t), q2(t)
rhs = rhs.xreplace(plain).xreplace({q1: th1, q2: th2})
energy = energy.xreplace(plain).xreplace({q1: th1, q2: th2})
derived = time.perf_counter() - start

# --- the same model as a symgrad graph ---------------------------------------------------------
y = sg.placeholder("y", shape=(4,))
mapping = {th1: y[0], th2: y[1], w1: y[2], w2: y[3],
           m1: 1.0, m2: 2.0, l1: 1.0, l2: 0.7, g: 9.81}
f = sg.reshape(sg.from_sympy(rhs, mapping), (4,))
jac = sg.jacobian(f, y)
e_total = sg.from_sympy(energy, mapping)
f_rhs = sg.function([y], [f])
f_jac = sg.function([y], [jac])
f_energy = sg.function([y], [e_total])

y0 = np.array([2.0, -0.5, 0.0, 1.0])
print(f"sympy derivation {derived:.2f} s; f(y0) = {f_rhs(y0)[0]}")

# checks: f against sympy's own numbers, the Jacobian against sympy's and finite differences
numeric = {m1: 1.0, m2: 2.0, l1: 1.0, l2: 0.7, g: 9.81}
sym_f = sp.lambdify((th1, th2, w1, w2), rhs.xreplace(numeric), "numpy")
sym_jac = sp.lambdify((th1, th2, w1, w2),
                      rhs.xreplace(numeric).jacobian([th1, th2, w1, w2]), "numpy")
h = 1e-6
fd = np.stack([(f_rhs(y0 + h * e)[0] - f_rhs(y0 - h * e)[0]) / (2 * h) for e in np.eye(4)],
              axis=1)
errors = {"f - sympy.lambdify": np.abs(f_rhs(y0)[0] - np.ravel(sym_f(*y0))).max(),
          "J - sympy's jacobian": np.abs(f_jac(y0)[0] - np.array(sym_jac(*y0), dtype=float)).max(),
          "J - finite differences": np.abs(f_jac(y0)[0] - fd).max()}
print("max |difference|:", ", ".join(f"{k} {v:.1e}" for k, v in errors.items()))
assert max(errors.values()) < 1e-6, errors

# --- integrate ---------------------------------------------------------------------------------
t_end = 3.0
solution = solve_ivp(lambda t, s: f_rhs(s)[0], (0.0, t_end), y0, method="BDF",
                     jac=lambda t, s: f_jac(s)[0], rtol=1e-10, atol=1e-10,
                     t_eval=np.linspace(0.0, t_end, 400))
energies = np.array([f_energy(s)[0] for s in solution.y.T])
drift = np.max(np.abs(energies - energies[0])) / abs(energies[0])
print(f"BDF to t = {t_end}: {solution.nfev} rhs calls, {solution.njev} Jacobians, "
      f"theta(t_end) = {solution.y[:2, -1]}, relative energy drift {drift:.2e}")
assert solution.success, solution.message
assert drift < 1e-6, f"energy drift {drift:.2e} not small"

plt = pyplot(args)
if plt:
    th1_t, th2_t = solution.y[0], solution.y[1]
    x1, y1 = np.sin(th1_t), -np.cos(th1_t)                       # l1 = 1.0
    x2, y2 = x1 + 0.7 * np.sin(th2_t), y1 - 0.7 * np.cos(th2_t)    # l2 = 0.7
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 4))
    left.plot(x1, y1, lw=1, label="bob 1")
    left.plot(x2, y2, lw=1, label="bob 2")
    left.plot([0, x1[0], x2[0]], [0, y1[0], y2[0]], "ko-", ms=4, label="t = 0")
    left.set(aspect="equal", xlabel="x", ylabel="y", title="double pendulum, BDF")
    left.legend(fontsize=8)
    right.plot(solution.t, (energies - energies[0]) / abs(energies[0]))
    right.set(xlabel="t", ylabel="relative energy change",
              title=f"energy drift (max {drift:.1e})")
    save(fig, args, "double_pendulum.png")
