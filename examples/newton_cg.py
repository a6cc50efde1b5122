"""Newton-CG on the extended Rosenbrock function with a compiled Hessian-vector product.

``scipy.optimize.minimize(method="Newton-CG")`` needs the gradient and, for each CG step,
the Hessian times a vector: it never forms the Hessian. ``sg.hvp`` builds that product
as forward mode over the reverse-mode gradient (one graph, the size of the gradient's),
and ``sg.function`` compiles the value with its gradient and the product as two kernels.

    python examples/newton_cg.py [n] [--no-plot] [--out DIR]

Figure (with matplotlib): the convergence curve, f and the largest gradient entry per
Newton-CG iteration.
"""

import time

import numpy as np
from scipy.optimize import minimize, rosen, rosen_der, rosen_hess_prod

import symgrad as sg
from _figures import arguments, pyplot, save

args = arguments(__doc__, size=("n", 1000, "variables (default 1000)"))
n = args.n
x = sg.placeholder("x", shape=(n,))
v = sg.placeholder("v", shape=(n,))

f = sg.reduce_sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
(g,) = sg.gradients(f, x)
hv = sg.hvp(f, x, v)

start = time.perf_counter()
value_and_grad = sg.function([x], [f, g])
hessp = sg.function([x, v], hv)
value_and_grad(np.ones(n)), hessp(np.ones(n), np.ones(n))  # numba compiles at first call
print(f"value+gradient and hvp for n={n}: sg.function and first calls in "
      f"{time.perf_counter() - start:.2f} s")


def fun(point):
    value, grad = value_and_grad(point)
    return float(value), grad


rng = np.random.default_rng(0)
probe, direction = rng.uniform(-2.0, 2.0, n), rng.standard_normal(n)
value_error = abs(fun(probe)[0] / rosen(probe) - 1.0)
reference = rosen_hess_prod(probe, direction)
hvp_error = np.abs(hessp(probe, direction) - reference).max() / np.abs(reference).max()
print(f"relative error against scipy.optimize.rosen {value_error:.1e}, "
      f"against rosen_hess_prod {hvp_error:.1e}")
assert value_error < 1e-12 and hvp_error < 1e-12

x0 = np.tile([1.3, 0.7, 0.8, 1.9, 1.2], n // 5 + 1)[:n]  # scipy's tutorial start
options = {"xtol": 1e-10, "maxiter": 500}
trace = [fun(x0)]
start = time.perf_counter()
result = minimize(fun, x0, jac=True, hessp=hessp, method="Newton-CG", options=options,
                  callback=lambda xk: trace.append(fun(xk)))
elapsed = time.perf_counter() - start
print(f"Newton-CG: {result.nit} iterations, {result.nfev} function, {result.njev} gradient "
      f"and {result.nhev} hvp evaluations in {elapsed:.3f} s; f = {result.fun:.3e}")
print(f"max |x - 1| at the end: {np.abs(result.x - 1.0).max():.1e}")
assert np.allclose(result.x, 1.0, atol=1e-6), "did not converge to the minimum x = 1"

start = time.perf_counter()
analytic = minimize(rosen, x0, jac=rosen_der, hessp=rosen_hess_prod, method="Newton-CG",
                    options=options)
print(f"scipy's analytic rosen_der and rosen_hess_prod: {analytic.nit} iterations in "
      f"{time.perf_counter() - start:.3f} s")
assert analytic.nit == result.nit, "not the same iterations as scipy's analytic derivatives"

plt = pyplot(args)
if plt:
    fig, ax = plt.subplots(figsize=(6, 3.5))
    values = np.array([max(v, 1e-300) for v, _ in trace])
    ax.semilogy(values, "o-", label="f(x)")
    ax.semilogy([np.abs(g).max() for _, g in trace], "s--", label="max |gradient|")
    ax.set(xlabel="Newton-CG iteration",
           title=f"Extended Rosenbrock, n = {n}: compiled gradient and hvp")
    ax.legend()
    save(fig, args, "newton_cg.png")
