import numpy as np, symgrad as sg
from symgrad.testing import check_gradients
la = sg.linalg
rng = np.random.default_rng(1)
def spd(x):
    n = x.shape[-1]
    return sg.matmul(x, la.matrix_transpose(x)) + n * np.eye(n)
def sym(x):
    return 0.5 * (x + la.matrix_transpose(x))
W = rng.normal(size=(2, 3, 3))
cases = {
 "cholesky": (lambda x: sg.sin(la.cholesky(spd(x))), [rng.normal(size=(2, 3, 3))]),
 "cholesky_solve": (lambda x, b: la.cholesky_solve(la.cholesky(spd(x)), b), [rng.normal(size=(2, 3, 3)), rng.normal(size=(2,3,2))]),
 "tri_lower": (lambda a, b: la.triangular_solve(a, b), [rng.normal(size=(2,3,3)) + 4*np.eye(3), rng.normal(size=(2,3,2))]),
 "tri_upper_adj": (lambda a, b: la.triangular_solve(a, b, lower=False, adjoint=True), [rng.normal(size=(2,3,3)) + 4*np.eye(3), rng.normal(size=(3,2))]),
 "solve": (lambda a, b: la.solve(a, b), [rng.normal(size=(2,3,3)) + 3*np.eye(3), rng.normal(size=(2,3,2))]),
 "solve_adj": (lambda a, b: la.solve(a, b, adjoint=True), [rng.normal(size=(3,3)) + 3*np.eye(3), rng.normal(size=(2,3,2))]),
 "inv": (lambda a: la.inv(a), [rng.normal(size=(2,3,3)) + 3*np.eye(3)]),
 "det": (lambda a: la.det(a), [rng.normal(size=(2,3,3))]),
 "slogdet": (lambda a: la.slogdet(a)[1], [rng.normal(size=(2,3,3))]),
 "eigh_e": (lambda a: la.eigh(sym(a))[0], [rng.normal(size=(2,3,3))]),
 "eigh_v": (lambda a: la.eigh(sym(a))[1] ** 2 * W, [rng.normal(size=(2,3,3))]),
 "qr_deep": (lambda a: sg.add_n(list(la.qr(a))) if False else la.qr(a)[0] * 2.0 + sg.reduce_sum(la.qr(a)[1]), [rng.normal(size=(2,4,3))]),
 "qr_wide": (lambda a: sg.reduce_sum(la.qr(a)[0]) + la.qr(a)[1], [rng.normal(size=(3,5))]),
 "lstsq": (lambda a, b: la.lstsq(a, b), [rng.normal(size=(5,3)), rng.normal(size=(5,2))]),
 "lstsq_wide": (lambda a, b: la.lstsq(a, b, l2_regularizer=0.1), [rng.normal(size=(2,4)), rng.normal(size=(2,2))]),
}
import sys
for name, (fn, arrays) in cases.items():
    if len(sys.argv) > 1 and name not in sys.argv[1:]: continue
    try:
        r = check_gradients(fn, *arrays, compiled=True)
        print(name, "OK" if r.ok else r)
    except Exception as e:
        import traceback; traceback.print_exc()
