"""Small static linear algebra inside scalar kernels (compile/scalar/linalg_elements.py):
solve, inv, det, slogdet, cholesky, cholesky_solve and triangular_solve of small matrices,
with their gradients, are straight-line code (LU with partial pivoting as selects,
Cholesky by its formula) and agree with the numpy/LAPACK path; singular matrices raise the
same sg.LinAlgError (or give the same 0 / -inf)."""

import numpy as np
import pytest

import symgrad as sg
from symgrad.compile.scalar import linalg_elements as LE
from symgrad.ops.linalg import records as R

la = sg.linalg
RNG = np.random.default_rng(11)


def _general(n, batch=()):
    return RNG.normal(size=batch + (n, n)) + n * np.eye(n)


def _spd(n, batch=()):
    m = RNG.normal(size=batch + (n, n))
    return m @ np.swapaxes(m, -1, -2) + n * np.eye(n)


def _sym(x):
    return 0.5 * (x + la.matrix_transpose(x))


# name -> (build(a, b) -> outputs, make matrix(n))
PROGRAMS = {
    "solve": (lambda a, b: [la.solve(a, b)], _general),
    "solve_adjoint": (lambda a, b: [la.solve(a, b, adjoint=True)], _general),
    "inv": (lambda a, b: [la.inv(a)], _general),
    "det": (lambda a, b: [la.det(a)], _general),
    "slogdet": (lambda a, b: list(la.slogdet(a)), _general),
    "cholesky": (lambda a, b: [la.cholesky(_sym(a))], _spd),
    "cholesky_solve": (lambda a, b: [la.cholesky_solve(la.cholesky(_sym(a)), b)], _spd),
    "triangular": (lambda a, b: [la.triangular_solve(a, b)], _general),
    "triangular_upper_adjoint": (lambda a, b: [la.triangular_solve(
        a, b, lower=False, adjoint=True)], _general),
}


def _value_and_grads(build, a, b):
    outs = build(a, b)
    last = outs[-1]
    loss = sg.reduce_sum(last * last) if last.ndim else last * last
    grads = [g for g in sg.gradients(loss, [a, b]) if g is not None]
    return outs + grads


def _steps(f) -> list:
    return [line.split()[1] for line in f.explain().splitlines() if line.startswith("step")]


def _linalg_names():
    return {op.name for op in R.RECORDS}


@pytest.mark.parametrize("n", [1, 2, 3, 4, 8])
@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_scalar_kernel_matches_numpy_path(program, n):
    build, make = PROGRAMS[program]
    a = sg.placeholder("a", (n, n))
    b = sg.placeholder("b", (n, 2 if n < 8 else 1))
    outs = _value_and_grads(build, a, b)
    f = sg.function([a, b], outs)
    assert "scalar kernel" in f.explain()
    if n <= 4:   # larger: the cost model may leave an op (the 8x8 adjugate) to LAPACK
        assert not _linalg_names() & set(_steps(f)), f.explain()
    av, bv = make(n), RNG.normal(size=b.shape)
    got = f(av, bv)
    for g, o in zip(got, outs):
        want = sg.evaluate(o, {a: av, b: bv})
        np.testing.assert_allclose(g, want, rtol=1e-9, atol=1e-11)


def test_batched_matrices_and_float32():
    a = sg.placeholder("a", (2, 3, 3), "float32")
    b = sg.placeholder("b", (3, 1), "float32")
    x = la.solve(a, b)
    outs = [x] + sg.gradients(sg.reduce_sum(x * x) + sg.reduce_sum(la.det(a)), [a, b])
    f = sg.function([a, b], outs)
    assert not _linalg_names() & set(_steps(f))
    av, bv = _general(3, (2,)).astype(np.float32), RNG.normal(size=(3, 1)).astype(np.float32)
    for g, o in zip(f(av, bv), outs):
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, sg.evaluate(o, {a: av, b: bv}), rtol=2e-4, atol=1e-5)


def test_partial_pivoting_takes_the_largest_pivot():
    """A zero (and a tiny) leading entry: without pivoting the LU would divide by it."""
    a = sg.placeholder("a", (3, 3))
    b = sg.placeholder("b", (3, 1))
    x = la.solve(a, b)
    f = sg.function([a, b], [x] + sg.gradients(sg.reduce_sum(x * x), [a, b]))
    assert "scalar kernel" in f.explain()
    for m in (np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 3.0], [4.0, 5.0, 0.0]]),
              np.array([[1e-18, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 2.0]])):
        rhs = np.array([[1.0], [2.0], [3.0]])
        np.testing.assert_allclose(f(m, rhs)[0], np.linalg.solve(m, rhs), rtol=1e-12)


def _compiled(build, n, extra_steps=True):
    a = sg.placeholder("a", (n, n))
    b = sg.placeholder("b", (n, 1))
    outs = _value_and_grads(build, a, b)
    f = sg.function([a, b], outs)
    assert "scalar kernel" in f.explain() and not _linalg_names() & set(_steps(f))
    return f


@pytest.mark.parametrize("program,matrix,message", [
    ("solve", np.array([[1.0, 2.0], [2.0, 4.0]]), "sg.linalg.solve: the input matrix is "
     "singular"),
    ("solve", np.zeros((2, 2)), "singular"),
    ("inv", np.array([[1.0, 2.0], [2.0, 4.0]]), "sg.linalg.inv: the input matrix is singular"),
    ("cholesky", -np.eye(2), "sg.linalg.cholesky: the input matrix is not positive definite"),
    ("cholesky", np.array([[1.0, 2.0], [2.0, 1.0]]), "not positive definite"),
    ("triangular", np.array([[1.0, 0.0], [5.0, 0.0]]), "sg.linalg.triangular_solve"),
])
def test_singular_raises_as_the_numpy_path(program, matrix, message):
    build = PROGRAMS[program][0]
    f = _compiled(build, 2)
    a = sg.placeholder("a", (2, 2))
    b = sg.placeholder("b", (2, 1))
    with pytest.raises(sg.LinAlgError):          # the numpy path raises too
        sg.evaluate(build(a, b)[0], {a: matrix, b: np.ones((2, 1))})
    with pytest.raises(sg.LinAlgError, match=message):
        f(matrix, np.ones((2, 1)))
    assert np.all(np.isfinite(f(np.eye(2), np.ones((2, 1)))[0]))   # still usable


@pytest.mark.parametrize("matrix", [np.array([[1.0, 2.0], [2.0, 4.0]]),
                                    np.outer([1.0, 2.0, 3.0], [1.0, -1.0, 2.0]),
                                    np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0],
                                              [7.0, 8.0, 9.0]]),
                                    np.zeros((3, 3))])
def test_singular_det_slogdet_and_det_gradient(matrix):
    n = matrix.shape[0]
    a = sg.placeholder("a", (n, n))
    det = la.det(a)
    sign, logdet = la.slogdet(a)
    (grad,) = sg.gradients(det, [a])
    f = sg.function([a], [det, sign, logdet, grad])
    assert not _linalg_names() & set(_steps(f))
    d, s, ld, g = f(matrix)
    assert abs(d) < 1e-12 and abs(np.linalg.det(matrix)) < 1e-12
    num_sign, num_logdet = np.linalg.slogdet(matrix)
    # exactly singular: (0, -inf) as numpy; else rounding leaves a tiny last pivot in both
    assert (s, ld) == (num_sign, num_logdet) or (ld < -30 and num_logdet < -30)
    np.testing.assert_allclose(g, sg.evaluate(grad, {a: matrix}), atol=1e-12)   # adjugate


def test_statement_estimates():
    def node(op_fn, n):
        return op_fn(sg.placeholder("a", (n, n)))
    small = LE.statements(node(la.inv, 3))
    assert 0 < small < LE.statements(node(la.inv, 8))
    assert LE.statements(node(la.inv, 17)) is None           # above MAX_N: LAPACK
    assert LE.statements(node(la.det, 4)) > 0
    assert LE.statements(la.inv(sg.placeholder("a", (None, 3, 3)))) is None
    assert LE.statements(la.inv(sg.placeholder("a", (5, 3, 3)))) == 5 * small
    for op in (R.solve_op, R.inv, R.det, R.slogdet, R.cholesky, R.triangular, R.adjugate):
        assert LE.LINALG_RULES[op].statements is LE.statements


def test_estimate_is_near_the_emitted_count():
    import sympy as sp
    from symgrad.compile.scalar.elements import ElementCode
    for n in (2, 4, 8):
        a = sg.placeholder("a", (n, n))
        b = sg.placeholder("b", (n, n))
        x = la.solve(a, b)
        code = ElementCode()
        mats = [np.array([[f"{k}_{i}_{j}" for j in range(n)] for i in range(n)])
                for k in "ab"]
        args = [np.vectorize(lambda s: sp.Symbol(s, real=True), otypes=[object])(m)
                for m in mats]
        LE.LINALG_RULES[R.solve_op](x, args, code)
        est = LE.statements(x)
        assert 0.5 * est <= len(code.statements) <= 1.5 * est, (n, est, len(code.statements))
