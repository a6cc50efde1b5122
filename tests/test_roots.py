"""sg.root and sg.custom_root: values, implicit derivatives (closed form, finite
differences, an unrolled Newton loop differentiated step by step), second order, the
gradient graph free of the loop's reverse, and sg.ConvergenceError, on sg.evaluate and
compiled cpu."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
from symgrad.control.records import SCAN, WHILE
from symgrad.errors import EagerMixError
from symgrad.graph.traversal import topological_order

N = 10
A = 4.0 * np.eye(N) - np.eye(N, k=1) - np.eye(N, k=-1)
B = np.linspace(0.5, 1.5, N)
W = np.cos(np.arange(N))
P = np.array([0.7, 0.3, 1.2])


def cube_root(a):
    return sg.root(lambda x: x * x * x - a, 1.0)


def system(p):
    """A 10-unknown nonlinear system with 3 parameters (its Jacobian is diagonally
    dominant, so Newton converges from 0)."""
    def f(x):
        linear = sg.reduce_sum(sg.constant(A) * x, axis=1)
        return linear + p[0] * sg.tanh(x) + 0.1 * p[1] * x * x * x - p[2] * sg.constant(B)
    return f


def _ops(tensors):
    return {node.op for node in topological_order(list(tensors))}


# --- the scalar root x^3 = a ---------------------------------------------------------------
@pytest.mark.parametrize("engine", ["evaluate", "cpu"])
def test_cube_root_value_and_derivative_are_the_closed_form(engine):
    a = sg.placeholder("a")
    x = cube_root(a)
    (g,) = sg.gradients(x, a)
    outputs = [x, g]
    for value in (8.0, 2.0, 1000.0):
        got = (sg.evaluate(outputs, {a: value}) if engine == "evaluate"
               else sg.function([a], outputs)(value))
        np.testing.assert_allclose(got[0], value ** (1 / 3), rtol=1e-12)
        np.testing.assert_allclose(got[1], value ** (-2 / 3) / 3.0, rtol=1e-10)


def test_cube_root_second_derivative_is_the_closed_form():
    a = sg.placeholder("a")
    x = cube_root(a)
    (g,) = sg.gradients(x, a)
    (h,) = sg.gradients(g, a)
    for value in (8.0, 3.0):
        got = sg.evaluate(h, {a: value})
        np.testing.assert_allclose(got, -2.0 / 9.0 * value ** (-5 / 3), rtol=1e-9)
    np.testing.assert_allclose(sg.function([a], h)(3.0), -2.0 / 9.0 * 3.0 ** (-5 / 3),
                               rtol=1e-9)


def test_the_gradient_graph_has_no_reverse_of_the_loop():
    a = sg.placeholder("a")
    x = cube_root(a)
    (g,) = sg.gradients(x, a)
    assert WHILE in _ops([x])
    assert SCAN not in _ops([g])           # a while loop's reverse is a scan
    # the same Newton loop differentiated directly does contain its reverse scan
    _, unrolled = sg.while_loop(lambda i, x: i < 20, lambda i, x: (i + 1, x - (x * x * x - a)
                                / (3.0 * x * x)), [sg.constant(0), sg.constant(1.0)])
    (g_unrolled,) = sg.gradients(unrolled, a)
    assert SCAN in _ops([g_unrolled])
    np.testing.assert_allclose(*sg.evaluate([g, g_unrolled], {a: 5.0}), rtol=1e-10)


# --- a 10-unknown system with 3 parameters ----------------------------------------------------
def _system_loss(p):
    x = sg.root(system(p), np.zeros(N))
    return x, sg.reduce_sum(sg.constant(W) * x)


def _unrolled_loss(p, steps=12):
    """Newton written by hand as a fori_loop and differentiated through every step."""
    f = system(p)

    def step(i, x):
        r = f(x)
        J = sg.jacobian(r, x)
        return x - sg.reshape(sg.linalg.solve(J, sg.reshape(r, (N, 1))), (N,))
    x = sg.fori_loop(0, steps, step, sg.constant(np.zeros(N)))
    return sg.reduce_sum(sg.constant(W) * x)


def test_system_root_solves_f_and_matches_scipy():
    from scipy.optimize import fsolve
    p = sg.placeholder("p", shape=(3,))
    x, _ = _system_loss(p)
    got = sg.evaluate(x, {p: P})

    def f(v):
        return A @ v + P[0] * np.tanh(v) + 0.1 * P[1] * v ** 3 - P[2] * B
    np.testing.assert_allclose(f(got), 0.0, atol=1e-10)
    np.testing.assert_allclose(got, fsolve(f, np.zeros(N), xtol=1e-13), rtol=1e-9)


@pytest.mark.parametrize("engine", ["evaluate", "cpu"])
def test_system_gradient_matches_finite_differences_and_the_unrolled_loop(engine):
    p = sg.placeholder("p", shape=(3,))
    _, loss = _system_loss(p)
    (g,) = sg.gradients(loss, p)
    (g_unrolled,) = sg.gradients(_unrolled_loss(p), p)
    outputs = [loss, g, g_unrolled]
    run = ((lambda v: sg.evaluate(outputs, {p: v})) if engine == "evaluate"
           else sg.function([p], outputs))
    value, grad, grad_unrolled = run(P)
    eps = 1e-6
    fd = np.array([(run(P + eps * e)[0] - run(P - eps * e)[0]) / (2 * eps)
                   for e in np.eye(3)])
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(grad, grad_unrolled, rtol=1e-9, atol=1e-12)
    assert SCAN not in _ops([g])


def test_system_hessian_matches_finite_differences_of_the_gradient():
    p = sg.placeholder("p", shape=(3,))
    _, loss = _system_loss(p)
    (g,) = sg.gradients(loss, p)
    (H,) = sg.hessians(loss, p)
    got = sg.evaluate(H, {p: P})
    eps = 1e-5
    fd = np.array([(sg.evaluate(g, {p: P + eps * e}) - sg.evaluate(g, {p: P - eps * e}))
                   / (2 * eps) for e in np.eye(3)])
    assert np.abs(got).max() > 1e-3
    np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(got, got.T, atol=1e-14)


def test_system_forward_is_one_while_loop_not_unrolled():
    p = sg.placeholder("p", shape=(3,))
    x, _ = _system_loss(p)
    order = topological_order([x])
    whiles = [n for n in order if n.op is WHILE]
    assert len({id(n.attrs["body"]) for n in whiles}) == 1   # one loop (a node per output)
    assert len(order) < 60                        # not 50 unrolled Newton steps


# --- custom_root with the user's solve ----------------------------------------------------------
def _newton(f, x0):
    def step(i, x):
        r = f(x)
        J = sg.jacobian(r, x)
        return i + 1, x - sg.reshape(sg.linalg.solve(J, sg.reshape(r, (N, 1))), (N,))
    return sg.while_loop(lambda i, x: i < 30, step, [sg.constant(0), x0])[1]


def _dense_tangent_solve(g, y):
    columns = [g(sg.constant(e)) for e in np.eye(N)]      # g(e_k): column k of g's matrix
    matrix = sg.transpose(sg.stack(columns))
    return sg.reshape(sg.linalg.solve(matrix, sg.reshape(y, (N, 1))), (N,))


@pytest.mark.parametrize("engine", ["evaluate", "cpu"])
def test_custom_root_with_a_user_solve_matches_root(engine):
    p = sg.placeholder("p", shape=(3,))
    x = sg.custom_root(system(p), sg.constant(np.zeros(N)), _newton, _dense_tangent_solve)
    loss = sg.reduce_sum(sg.constant(W) * x)
    (g,) = sg.gradients(loss, p)
    _, loss_root = _system_loss(p)
    (g_root,) = sg.gradients(loss_root, p)
    outputs = [loss, g, loss_root, g_root]
    got = (sg.evaluate(outputs, {p: P}) if engine == "evaluate"
           else sg.function([p], outputs)(P))
    np.testing.assert_allclose(got[0], got[2], rtol=1e-9)   # root stops at |f| <= 1e-10
    np.testing.assert_allclose(got[1], got[3], rtol=1e-9)
    assert SCAN not in _ops([g])


def test_custom_root_scalar_tangent_solve_as_in_jax():
    a = sg.placeholder("a")

    def solve(f, x0):
        return sg.fori_loop(0, 40, lambda i, x: x - f(x) / (3.0 * x * x), x0)
    x = sg.custom_root(lambda x: x * x * x - a, 1.0, solve, lambda g, y: y / g(1.0))
    (g,) = sg.gradients(sg.sin(x), a)
    got = sg.evaluate(g, {a: 5.0})
    root = 5.0 ** (1 / 3)
    np.testing.assert_allclose(got, np.cos(root) / (3 * root * root), rtol=1e-10)


def test_custom_root_without_captures_has_a_zero_gradient_in_the_guess():
    x0 = sg.placeholder("x0")
    x = sg.custom_root(lambda x: x * x - 2.0, x0,
                       lambda f, s: sg.fori_loop(0, 30, lambda i, x: x - f(x) / (2 * x), s),
                       lambda g, y: y / g(1.0))
    (g,) = sg.gradients(x, x0, unconnected_gradients="zero")
    got = sg.evaluate([x, g], {x0: 1.0})
    np.testing.assert_allclose(got[0], np.sqrt(2.0), rtol=1e-14)
    assert float(got[1]) == 0.0


# --- errors -----------------------------------------------------------------------------------
@pytest.mark.parametrize("engine", ["evaluate", "cpu"])
def test_no_root_raises_convergence_error_naming_norm_and_iterations(engine):
    c = sg.placeholder("c")
    x = sg.root(lambda x: x * x + c, 0.5, max_iter=25)
    with pytest.raises(sg.ConvergenceError) as info:
        if engine == "evaluate":
            sg.evaluate(x, {c: 1.0})
        else:
            sg.function([c], x)(1.0)
    message = str(info.value)
    assert "sg.root" in message and "25 iteration(s)" in message
    assert "residual norm is" in message and "tol=1e-10" in message
    assert isinstance(info.value, sg.SymgradError) and isinstance(info.value, RuntimeError)
    # with a root (c = -4), the same graph converges
    np.testing.assert_allclose(sg.evaluate(x, {c: -4.0}), 2.0, rtol=1e-12)


def test_argument_errors():
    a = sg.placeholder("a")
    with pytest.raises(ValueError, match="method='broyden'"):
        sg.root(lambda x: x - a, 1.0, method="broyden")
    with pytest.raises(sg.ShapeError, match="f must return a residual of x's shape"):
        sg.root(lambda x: sg.stack([x, x]), 1.0)
    with pytest.raises(EagerMixError, match="roots are graph ops"):
        sg.root(lambda x: x - 1.0, sg.Variable(1.0))
    with pytest.raises(sg.DTypeError, match=r"^sg\.root: the initial guess .*no pytrees"):
        sg.root(lambda x: x - 1.0, [[1.0, 2.0], [3.0]])            # ragged: not one array
    with pytest.raises(sg.DTypeError, match=r"^sg\.custom_root: the initial guess has dtype "
                                            r"complex128"):
        sg.custom_root(lambda x: x, 1j, lambda f, x: x, lambda g, y: y)
    assert sg.root(lambda x: x - 1.0, np.float32(0.5)).dtype == np.float64   # as before


def test_a_computed_capture_and_forward_mode():
    """f closes over exp(t), a node of the outer graph: the gradient goes on through it;
    sg.jvp (custom_gradient's transposed-vjp rule) agrees. x = exp(t)^(1/3)."""
    t = sg.placeholder("t")
    a = sg.exp(t)
    x = sg.root(lambda x: x * x * x - a, 1.0)
    (g,) = sg.gradients(x, t)
    (j,) = sg.jvp([x], [t], [sg.constant(1.0)])
    got = sg.evaluate([x, g, j], {t: np.log(8.0)})
    np.testing.assert_allclose(got, [2.0, 2.0 / 3.0, 2.0 / 3.0], rtol=1e-10)
