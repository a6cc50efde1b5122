"""TensorFlow's own linalg gradient tests, ported to plain pytest on symgrad's engines.

Sources: ``tensorflow/python/kernel_tests/linalg/linalg_grad_test.py`` (ShapeTest,
MatrixBinaryFunctorGradientTest for MatrixSolve, MatrixTriangularSolve and MatrixSolveLs,
DetGradSingularMatrixTest's invertible cases) and ``cholesky_op_test.py`` (CholeskyGradTest,
float64 cases). TF's ``gradient_checker_v2.compute_gradient`` compares the full Jacobian
with central differences at ``delta = eps**(1/3)``; so do these tests (``sg.jacobian`` on
``sg.evaluate``), with TF's tolerance for float64 (1e-6; 1e-5 for Cholesky).
"""

import numpy as np
import pytest

import symgrad as sg

la = sg.linalg
DELTA = np.finfo(np.float64).eps ** (1.0 / 3.0)


def _jacobians(fn, x0):
    """(symgrad's Jacobian, central differences) of ``fn`` at ``x0``, both
    ``(out.size, x0.size)``."""
    x = sg.placeholder("x", x0.shape)
    y = fn(x)
    theoretical = sg.evaluate(sg.jacobian(y, x), {x: x0}).reshape(-1, x0.size)
    numerical = np.zeros_like(theoretical)
    for k in range(x0.size):
        step = np.zeros(x0.size)
        step[k] = DELTA
        step = step.reshape(x0.shape)
        hi = sg.evaluate(y, {x: x0 + step})
        lo = sg.evaluate(y, {x: x0 - step})
        numerical[:, k] = ((hi - lo) / (2 * DELTA)).ravel()
    return theoretical, numerical


def _random_input(shape):
    np.random.seed(1)
    return np.random.uniform(low=-1.0, high=1.0, size=np.prod(shape)).reshape(shape)


def _binary_check(functor, shape, **kwargs):
    """TF's _GetMatrixBinaryFunctorGradientTest: both arguments from the same seed."""
    fixed = _random_input(shape)
    tol = 1e-6
    theoretical, numerical = _jacobians(lambda x: functor(x, fixed, **kwargs),
                                        _random_input(shape))
    np.testing.assert_allclose(theoretical, numerical, atol=tol, rtol=tol)
    theoretical, numerical = _jacobians(lambda y: functor(fixed, y, **kwargs),
                                        _random_input(shape))
    np.testing.assert_allclose(theoretical, numerical, atol=tol, rtol=tol)


def _binary_shapes():
    for size in (2, 5, 10):
        for extra in [(), (2,), (3,)] + [(3, 2)] * (size < 10):
            yield extra + (size, size)


BINARY_SHAPES = list(_binary_shapes())


@pytest.mark.parametrize("shape", BINARY_SHAPES, ids=str)
@pytest.mark.parametrize("adjoint", [False, True])
def test_matrix_solve_gradient(shape, adjoint):
    _binary_check(la.solve, shape, adjoint=adjoint)


@pytest.mark.parametrize("shape", [s for s in BINARY_SHAPES if s[-1] < 10 or len(s) < 3],
                         ids=str)
@pytest.mark.parametrize("adjoint", [False, True])
@pytest.mark.parametrize("lower", [True, False])
def test_matrix_triangular_solve_gradient(shape, adjoint, lower):
    _binary_check(la.triangular_solve, shape, adjoint=adjoint, lower=lower)


LS_CASES = [(rows, cols, l2) for rows in (2, 5, 10) for cols in (2, 5, 10)
            for l2 in (1e-6, 0.001, 1.0) if 10 not in (rows, cols) or l2 == 0.001]
"""TF's grid; with a 10 only its middle regularizer (the others take ~12 s each here)."""


@pytest.mark.parametrize("rows,cols,l2", LS_CASES)
def test_matrix_solve_ls_gradient(rows, cols, l2):
    _binary_check(lambda a, b: la.lstsq(a, b, l2), (rows, cols))


def test_batch_gradient_unknown_size():
    """TF's ShapeTest.testBatchGradientUnknownSize: d sum(det(I)) / dI = I, with the batch
    and matrix sizes unknown when the graph is built."""
    m = sg.placeholder("m", (None, None, None))
    (grad,) = sg.gradients(sg.reduce_sum(la.det(m)), [m])
    batch_identity = np.tile(np.eye(4)[None], (3, 1, 1))
    np.testing.assert_allclose(sg.evaluate(grad, {m: batch_identity}), batch_identity)
    f = sg.function([m], grad)
    np.testing.assert_allclose(f(batch_identity), batch_identity)


def test_det_grad_invertible_2x2():
    """DetGradSingularMatrixTest.testDetGradInvertible2x2: the adjugate's transpose."""
    m = np.array([[1.0, 2.0], [3.0, 4.0]])
    theoretical, numerical = _jacobians(la.det, m)
    np.testing.assert_allclose(theoretical, [[4.0, -3.0, -2.0, 1.0]], atol=1e-12)
    np.testing.assert_allclose(theoretical, numerical, atol=1e-6)


def test_det_grad_near_singular_numerical():
    m = np.array([[1.0, 1.0], [1.0, 1.0 + 1e-6]])
    theoretical, numerical = _jacobians(la.det, m)
    np.testing.assert_allclose(theoretical, numerical, atol=1e-6)


def test_slogdet_grad_invertible_is_inverse_transpose():
    """DetGradSingularMatrixTest.testSlogdetGradInvertibleUnchanged (real case)."""
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    v = sg.Variable(a)
    with sg.GradientTape() as tape:
        _, log_abs_det = la.slogdet(v)
    np.testing.assert_allclose(tape.gradient(log_abs_det, v).numpy(), np.linalg.inv(a).T,
                               atol=1e-10)


def test_det_grad_singular_is_the_adjugate():
    """DetGradSingularMatrixTest.testDetGradSingular2x2 (newer TF, JAX): at a singular
    matrix det's gradient is the adjugate's transpose, not an error (docs/linalg.md)."""
    m = sg.placeholder("m", (2, 2))
    (grad,) = sg.gradients(la.det(m), [m])
    value = sg.evaluate(grad, {m: np.array([[1.0, 2.0], [2.0, 4.0]])})
    np.testing.assert_allclose(value, [[4.0, -2.0], [-2.0, 1.0]], atol=1e-12)


def test_slogdet_grad_singular_raises_naming_inv():
    """log|det| is -inf at a singular matrix and its gradient unbounded: the gradient
    (``inv(a)^T``) raises sg.LinAlgError naming inv (docs/linalg.md)."""
    m = sg.placeholder("m", (2, 2))
    (grad,) = sg.gradients(la.slogdet(m)[1], [m])
    with pytest.raises(sg.LinAlgError, match="inv"):
        sg.evaluate(grad, {m: np.array([[1.0, 2.0], [2.0, 4.0]])})


# --- cholesky_op_test.py: CholeskyGradTest --------------------------------------------------
def _cholesky_case(shape, batch, scalar_test):
    x0 = np.random.randn(shape[0], shape[1])

    def compute(x):
        a = sg.matmul(x, sg.transpose(x)) / shape[0]
        if batch:
            a = sg.tile(sg.expand_dims(a, 0), [2, 1, 1])
        c = la.cholesky(a)
        return sg.reduce_mean(c) if scalar_test else c
    theoretical, numerical = _jacobians(compute, x0)
    np.testing.assert_allclose(theoretical, numerical, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("batch", [False, True])
def test_cholesky_grad_small_matrices(batch):
    np.random.seed(0)
    for n in (1, 2, 10):
        _cholesky_case((n, int(np.floor(1.2 * n))), batch, False)


@pytest.mark.parametrize("n", [17, 33])
def test_cholesky_grad_block_matrices(n):
    np.random.seed(0)
    for batch in (False, True):
        _cholesky_case((n, int(np.floor(1.2 * n))), batch, True)
