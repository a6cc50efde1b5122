"""det's gradient is the adjugate (issue 30, item 5c): at singular matrices of rank n-1
and lower it is finite and agrees with finite differences and stored values, on the
reference engine, the tape and compiled functions."""

import numpy as np
import pytest

import symgrad as sg
from symgrad.ops.linalg import forward as fw

la = sg.linalg

SINGULAR = {
    "2x2": np.array([[1.0, 2.0], [2.0, 4.0]]),
    "3x3_rank2": np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]),
    "3x3_rank1": np.outer([1.0, 2.0, 3.0], [1.0, -1.0, 2.0]),
    "3x3_zero": np.zeros((3, 3)),
}
# adj(a)^T, worked by hand: the cofactor matrices
COFACTORS = {
    "2x2": [[4.0, -2.0], [-2.0, 1.0]],
    "3x3_rank2": [[-3.0, 6.0, -3.0], [6.0, -12.0, 6.0], [-3.0, 6.0, -3.0]],
    "3x3_rank1": np.zeros((3, 3)),
    "3x3_zero": np.zeros((3, 3)),
}


def _fd(a, eps=1e-6):
    out = np.zeros_like(a)
    for index in np.ndindex(*a.shape):
        d = np.zeros_like(a)
        d[index] = eps
        out[index] = (np.linalg.det(a + d) - np.linalg.det(a - d)) / (2 * eps)
    return out


@pytest.mark.parametrize("case", sorted(SINGULAR))
def test_det_gradient_at_singular_matrix(case):
    a = SINGULAR[case]
    m = sg.placeholder("m", a.shape)
    (grad,) = sg.gradients(la.det(m), [m])
    value = sg.evaluate(grad, {m: a})
    np.testing.assert_allclose(value, COFACTORS[case], atol=1e-12)
    np.testing.assert_allclose(value, _fd(a), atol=1e-6)
    np.testing.assert_allclose(sg.function([m], grad)(a), COFACTORS[case], atol=1e-12)
    v = sg.Variable(a)
    with sg.GradientTape() as tape:
        d = la.det(v)
    np.testing.assert_allclose(tape.gradient(d, v).numpy(), COFACTORS[case], atol=1e-12)


def test_adjugate_forward_batched_and_invertible():
    rng = np.random.default_rng(3)
    a = rng.normal(size=(4, 5, 5))
    expect = np.linalg.det(a)[:, None, None] * np.linalg.inv(a)
    np.testing.assert_allclose(fw.adjugate(np, a), expect, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(fw.adjugate(np, np.eye(1)[None]), [[[1.0]]])
    assert fw.adjugate(np, a.astype(np.float32)).dtype == np.float32


def test_det_hessian_invertible_matches_finite_differences():
    rng = np.random.default_rng(4)
    a = rng.normal(size=(3, 3)) + 2 * np.eye(3)
    m = sg.placeholder("m", (3, 3))
    (hess,) = sg.hessians(la.det(m), [m])
    (grad,) = sg.gradients(la.det(m), [m])
    eps = 1e-6
    fd = np.zeros((3, 3, 3, 3))
    for index in np.ndindex(3, 3):
        d = np.zeros((3, 3))
        d[index] = eps
        fd[(...,) + index] = (sg.evaluate(grad, {m: a + d})
                              - sg.evaluate(grad, {m: a - d})) / (2 * eps)
    np.testing.assert_allclose(sg.evaluate(hess, {m: a}), fd, atol=1e-6)
