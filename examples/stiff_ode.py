"""A stiff ODE (Robertson's chemical kinetics) with a compiled right-hand side and Jacobian.

The right-hand side is written component by component (``y[0]``, ``y[1]``, ``y[2]``) and
assembled with ``sg.stack``; its Jacobian is built from the gradients of each component,
stacked into a 3 x 3 matrix. Both are compiled once by ``sg.function`` and handed to
``scipy.integrate.solve_ivp(method="Radau", jac=...)`` when scipy is installed; otherwise a
few backward-Euler steps with Newton iterations use the same compiled functions.

    python examples/stiff_ode.py [--no-plot] [--out DIR]

Figure (with matplotlib): the three concentrations over eleven decades of time.
"""

import numpy as np

import symgrad as sg
from _figures import arguments, pyplot, save

args = arguments(__doc__)

y = sg.placeholder("y", shape=(3,))
k1, k2, k3 = 0.04, 3.0e7, 1.0e4

rhs = sg.stack([
    -k1 * y[0] + k3 * y[1] * y[2],
    k1 * y[0] - k3 * y[1] * y[2] - k2 * y[1] ** 2,
    k2 * y[1] ** 2,
])
# Row i of the Jacobian is the gradient of component i.
jac = sg.stack([sg.gradients(rhs[i], y)[0] for i in range(3)])

f_rhs = sg.function([y], [rhs])
f_jac = sg.function([y], [jac])


def fun(t, state):
    return f_rhs(state)[0]


def jacobian(t, state):
    return f_jac(state)[0]


y0 = np.array([1.0, 0.0, 0.0])
print("J(y0) =\n", jacobian(0.0, y0))
assert np.allclose(jacobian(0.0, y0), sg.evaluate(jac, {y: y0})), "J differs from sg.evaluate"

try:
    from scipy.integrate import solve_ivp
except ImportError:  # the same compiled functions drive a hand-written implicit solver
    solve_ivp = None

if solve_ivp is not None:
    sol = solve_ivp(fun, (0.0, 1.0e5), y0, method="Radau", jac=jacobian, rtol=1e-6,
                    atol=1e-10, t_eval=np.concatenate([[0.0], np.logspace(-5, 5, 60)]))
    print(f"Radau: {sol.nfev} rhs calls, {sol.njev} Jacobians, y(1e5) = {sol.y[:, -1]}")
    final = sol.y[:, -1]
    plt = pyplot(args)
    if plt:
        fig, ax = plt.subplots(figsize=(6.5, 3.5))
        for k, (label, scale) in enumerate((("y1", 1.0), ("y2 x 1e4", 1.0e4), ("y3", 1.0))):
            ax.semilogx(sol.t[1:], scale * sol.y[k, 1:], label=label)
        ax.set(xlabel="t", ylabel="concentration",
               title=f"Robertson kinetics, Radau with the compiled Jacobian ({sol.njev} Jacobians)")
        ax.legend()
        save(fig, args, "stiff_ode.png")
else:
    state, h = y0.copy(), 1.0e-3
    for step in range(200):            # backward Euler: solve s - state - h f(s) = 0
        s = state.copy()
        for _ in range(8):
            residual = s - state - h * fun(0.0, s)
            s -= np.linalg.solve(np.eye(3) - h * jacobian(0.0, s), residual)
        state, h = s, min(h * 1.2, 1.0e3)
    print(f"backward Euler (scipy not installed): y = {state}")
    final = state
print(f"mass conserved: |sum(y) - 1| = {abs(final.sum() - 1.0):.1e}")
assert abs(final.sum() - 1.0) < 1e-6, "mass not conserved"
