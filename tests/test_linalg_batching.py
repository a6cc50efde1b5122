"""Batching rules of the linalg records (symgrad/ops/linalg/batching.py): Jacobians and
Hessians through every sg.linalg op equal the unbatched gradients and finite differences,
and a Jacobian through a fixed matrix's solve is one solve with N right-hand sides."""

import numpy as np
import pytest

import symgrad as sg
from symgrad.graph.traversal import topological_order
from symgrad.ops.linalg import records as R

RNG = np.random.default_rng(7)
SPD = (lambda m: m @ m.T + 3 * np.eye(3))(RNG.normal(size=(3, 3)))
GENERAL = RNG.normal(size=(3, 3)) + 3 * np.eye(3)
RHS = RNG.normal(size=(3, 2))


def _sym(x):
    return 0.5 * (x + sg.linalg.matrix_transpose(x))


# name -> (build(x) -> y, x0): y's Jacobian in x is checked
CASES = {
    "solve_rhs": (lambda x: sg.linalg.solve(GENERAL, x), RHS),
    "solve_matrix": (lambda x: sg.linalg.solve(x, RHS), GENERAL),
    "solve_adjoint": (lambda x: sg.linalg.solve(x, RHS, adjoint=True), GENERAL),
    "triangular_rhs": (lambda x: sg.linalg.triangular_solve(np.tril(GENERAL), x), RHS),
    "triangular_matrix": (lambda x: sg.linalg.triangular_solve(
        x, RHS, lower=False, adjoint=True), GENERAL),
    "cholesky": (lambda x: sg.linalg.cholesky(_sym(x)), SPD),
    "cholesky_solve": (lambda x: sg.linalg.cholesky_solve(
        sg.linalg.cholesky(_sym(x)), RHS), SPD),
    "inv": (lambda x: sg.linalg.inv(x), GENERAL),
    "det": (lambda x: sg.linalg.det(x), GENERAL),
    "logdet": (lambda x: sg.linalg.slogdet(x)[1], GENERAL),
    "eigh_values": (lambda x: sg.linalg.eigh(_sym(x))[0], SPD),
    "eigh_vectors": (lambda x: sg.linalg.eigh(_sym(x))[1] ** 2, SPD),
    "qr": (lambda x: sg.linalg.qr(x)[1], GENERAL),
    "lstsq": (lambda x: sg.linalg.lstsq(x, RHS), GENERAL),
    "batched_solve": (lambda x: sg.linalg.solve(x, RHS), np.stack([GENERAL, SPD])),
    "batched_inv": (lambda x: sg.linalg.inv(x), np.stack([GENERAL, SPD])),
}


def _fd_jacobian(build, x0, eps=1e-6):
    x = sg.placeholder("x", x0.shape)
    y = build(x)
    cols = []
    for index in np.ndindex(*x0.shape):
        d = np.zeros_like(x0)
        d[index] = eps
        plus, minus = sg.evaluate(y, {x: x0 + d}), sg.evaluate(y, {x: x0 - d})
        cols.append((plus - minus) / (2 * eps))
    return np.stack(cols, -1).reshape(np.shape(cols[0]) + x0.shape)


def _unbatched_jacobian(y, x, feed):
    rows = []
    flat = sg.reshape(y, (-1,))
    for i in range(int(np.prod(y.shape))):
        (g,) = sg.gradients(flat[i], [x])
        rows.append(sg.evaluate(g, feed))
    return np.stack(rows).reshape(tuple(y.shape) + tuple(x.shape))


@pytest.mark.parametrize("case", sorted(CASES))
def test_jacobian_equals_unbatched_and_finite_differences(case):
    build, x0 = CASES[case]
    x = sg.placeholder("x", x0.shape)
    y = build(x)
    jac = sg.evaluate(sg.jacobian(y, x), {x: x0})
    assert np.allclose(jac, _unbatched_jacobian(y, x, {x: x0}), rtol=1e-10, atol=1e-12)
    assert np.allclose(jac, _fd_jacobian(build, x0), rtol=1e-5, atol=1e-6)


def _linalg_nodes(outputs):
    return [n for n in topological_order(outputs) if n.op in R.RECORDS]


@pytest.mark.parametrize("case", sorted(CASES))
def test_jacobian_graph_has_no_per_column_copies(case):
    """The fallback would apply a record once per seed; the rules apply it once."""
    build, x0 = CASES[case]
    x = sg.placeholder("x", x0.shape)
    y = build(x)
    forward = len(_linalg_nodes([y]))
    jac = sg.jacobian(y, x)
    # the gradient graph has a bounded number of linalg nodes, independent of y's size
    assert len(_linalg_nodes([jac])) <= 3 * forward + 3


@pytest.mark.parametrize("n", [4, 16])
def test_jacobian_through_solve_is_one_solve(n):
    a = sg.placeholder("a", (n, n))
    b = sg.placeholder("b", (n, 1))
    jac = sg.jacobian(sg.linalg.solve(a, b), b)
    solves = [t for t in topological_order([jac]) if t.op is R.solve_op]
    assert len(solves) == 1
    assert solves[0].shape == (n, n)          # n right-hand sides in one solve
    f = sg.function([a, b], jac)
    assert f.explain().count(" solve ") == 1
    m = RNG.normal(size=(n, n)) + n * np.eye(n)
    assert np.allclose(f(m, np.ones((n, 1))).reshape(n, n), np.linalg.inv(m))


def test_batched_seed_and_batched_matrix_broadcast():
    """A batched matrix (the batch axis in front of the matrix's own batch dims) against an
    rhs with batch dims of its own."""
    a = sg.placeholder("a", (3, 3))
    b = sg.placeholder("b", (2, 3, 1))
    y = sg.linalg.solve(a, b)
    jac = sg.evaluate(sg.jacobian(y, a), {a: GENERAL, b: RHS.T[:, :, None]})
    ref = _unbatched_jacobian(y, a, {a: GENERAL, b: RHS.T[:, :, None]})
    assert jac.shape == (2, 3, 1, 3, 3)
    assert np.allclose(jac, ref)


@pytest.mark.parametrize("case", ["solve_matrix", "cholesky", "inv", "det", "logdet",
                                  "eigh_values", "triangular_matrix"])
def test_hessian_matches_finite_differences(case):
    build, x0 = CASES[case]
    w = RNG.normal(size=build(sg.placeholder("x", x0.shape)).shape)
    x = sg.placeholder("x", x0.shape)
    loss = sg.reduce_sum(build(x) * w)
    (hess,) = sg.hessians(loss, [x])
    h = sg.evaluate(hess, {x: x0})
    (g,) = sg.gradients(loss, [x])
    fd = _fd_jacobian(lambda t: sg.gradients(sg.reduce_sum(build(t) * w), [t])[0], x0)
    assert np.allclose(h, fd, rtol=1e-4, atol=1e-5)
    assert np.allclose(sg.evaluate(g, {x: x0}), _fd_jacobian(
        lambda t: sg.reduce_sum(build(t) * w), x0), rtol=1e-5, atol=1e-6)


def test_compiled_jacobian_matches_evaluate():
    build, x0 = CASES["cholesky_solve"]
    x = sg.placeholder("x", x0.shape)
    jac = sg.jacobian(build(x), x)
    assert np.allclose(sg.function([x], jac)(x0), sg.evaluate(jac, {x: x0}))
