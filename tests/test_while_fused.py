"""An sg.while_loop whose cond and body drivers run under numba is one njit loop
(compile/loops/fused_while.py): values, histories and gradients equal the Python loop over
the compiled bodies and sg.evaluate; maximum_iterations and zero iterations as TF's."""

import numpy as np
import pytest

import symgrad as sg
from symgrad.compile.loops import fused_while
from symgrad.compile.runtime.compiled import CompiledFunction
from symgrad.control.records import WHILE
from tests.helpers import (forget_loop_results, fused_matches_python_loop, fused_states,
                           loop_nodes)


@pytest.fixture(autouse=True)
def _fuse_at_once(monkeypatch):
    """These tests check the fused loop: fuse on the first call (not after PAYBACK_S)."""
    monkeypatch.setattr(fused_while, "PAYBACK_S", 0.0)


def _loops(outputs) -> list:
    return loop_nodes(outputs, WHILE)


def _states(outputs) -> list:
    return fused_states(outputs, WHILE)


def _forget(outputs):
    forget_loop_results(outputs, WHILE)


def _check(inputs, outputs, args, fused_expected=True):
    return fused_matches_python_loop(inputs, outputs, args, WHILE, fused_expected)


def _halving(limit=None):
    """x <- 0.5 x + c until |x| sums under tol; i counts (int carry), a bool-free cond."""
    x0 = sg.placeholder("x0", shape=(3,))
    c = sg.placeholder("c", shape=(3,))
    tol = sg.placeholder("tol")
    i, x = sg.while_loop(lambda i, x: sg.reduce_sum(sg.abs(x - 2.0 * c)) > tol,
                         lambda i, x: (i + 1, 0.5 * x + c),
                         [sg.constant(np.int64(0)), x0], maximum_iterations=limit)
    return [x0, c, tol], [i, x]


def test_fused_while_equals_python_loop_and_evaluate():
    inputs, outputs = _halving()
    args = (np.array([8.0, -3.0, 1.0]), np.array([0.1, 0.2, 0.3]), 1e-9)
    f, (i, x), states = _check(inputs, outputs, args)
    assert int(i) > 20 and np.allclose(x, 2 * args[1])
    assert "one njit loop over the cond's and body's drivers" in f.explain()


def test_maximum_iterations_and_zero_iterations():
    inputs, outputs = _halving(limit=5)
    args = (np.array([8.0, -3.0, 1.0]), np.array([0.1, 0.2, 0.3]), 1e-9)
    _, (i, _), _ = _check(inputs, outputs, args)
    assert int(i) == 5
    inputs, outputs = _halving(limit=0)
    _, (i, x), _ = _check(inputs, outputs, args)
    assert int(i) == 0 and np.array_equal(x, args[0])
    inputs, outputs = _halving()
    _, (i, x), _ = _check(inputs, outputs, (args[0], args[1], 1e9))   # cond false at once
    assert int(i) == 0 and np.array_equal(x, args[0])


def test_history_past_the_first_capacity_and_gradients():
    """100 iterations (the history arrays grow past FIRST_CAPACITY); the gradient through
    the loop reads the history."""
    assert fused_while.FIRST_CAPACITY < 100
    a = sg.placeholder("a")
    x0 = sg.placeholder("x0", shape=(2,))
    _, x = sg.while_loop(lambda i, x: i < 100,
                         lambda i, x: (i + 1, sg.stack([x[0] + 0.01 * a * sg.sin(x[1]),
                                                        x[1] - 0.01 * x[0]])),
                         [sg.constant(np.int64(0)), x0])
    (g,) = sg.gradients(sg.reduce_sum(x * x), a)
    _check([a, x0], [x, g], (0.7, np.array([1.0, 0.5])))


def test_root_newton_loops_fuse_small_and_with_a_lapack_solve():
    for n in (3, 20):          # n <= 16: the solve is scalar code; 20: LAPACK from njit
        p = sg.placeholder("p", shape=(n,))
        x = sg.root(lambda x: x + 0.1 * x * x * x - p, np.zeros(n))
        (g,) = sg.gradients(sg.reduce_sum(x * x), p)
        v = np.linspace(0.5, 2.0, n)
        _, (root, grad), _ = _check([p], [x, g], (v,))
        np.testing.assert_allclose(root + 0.1 * root ** 3, v, atol=1e-12)
        np.testing.assert_allclose(grad, 2 * root / (1 + 0.3 * root ** 2), rtol=1e-10)


def test_singular_solve_in_the_fused_loop_raises_symgrads_error():
    p = sg.placeholder("p", shape=(20,))
    x = sg.root(lambda x: x * x - p, np.zeros(20))     # J = 2 diag(x) = 0 at the start
    f = sg.function([p], [x])
    with pytest.raises(sg.LinAlgError):
        f(np.ones(20))


def test_a_body_that_cannot_fuse_runs_the_python_loop_and_says_why():
    m = sg.placeholder("m", shape=(20, 20))     # inv of 20 x 20: a numpy step
    _, x = sg.while_loop(lambda i, x: i < 3,
                         lambda i, x: (i + 1, 0.5 * (x + sg.linalg.inv(x))), [0, m])
    args = (np.eye(20) * 2.0 + 0.01,)
    f, _, states = _check([m], [x], args, fused_expected=False)
    assert states[0].loop is None and "step" in states[0].reason, states
    assert "Python loop over the compiled body: body:" in f.explain()


def test_warm_build_loads_the_loop_without_reading_the_drivers(monkeypatch):
    inputs, outputs = _halving()
    args = (np.array([8.0, -3.0, 1.0]), np.array([0.1, 0.2, 0.3]), 1e-9)
    f = sg.function(inputs, outputs)
    want = f(*args)
    (node,) = {id(n.attrs["body"]): n for n in _loops(outputs)}.values()
    fb = node.attrs["body"].compiled["cpu"].function_
    if fb.key is None:
        pytest.skip("no cache key (cache off)")
    del fb.fused_while_

    def no_driver(*a, **k):
        raise AssertionError("a warm build read the body's driver")
    monkeypatch.setattr(CompiledFunction, "njit_driver", no_driver)
    _forget(outputs)
    got = sg.function(inputs, outputs)(*args)
    assert _states(outputs)[0].loop is not None
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


def test_a_build_does_not_fuse_the_loop_pays_first(monkeypatch):
    """sg.function never compiles the fused loop; it is compiled once the Python loop has
    run PAYBACK_S seconds (the explain text says so), then gives the same results."""
    monkeypatch.setattr(fused_while, "PAYBACK_S", 1e9)
    inputs, outputs = _halving()
    f = sg.function(inputs, outputs)
    args = (np.array([1.0, -2.0, 3.0]), np.array([0.1, 0.2, 0.3]), np.float64(1e-9))
    first = f(*args)
    assert _states(outputs) and all(s is None for s in _states(outputs))
    assert "fused after" in f.explain()
    monkeypatch.setattr(fused_while, "PAYBACK_S", 0.0)
    _forget(outputs)
    second = f(*args)
    assert all(s is not None and s.loop is not None for s in _states(outputs))
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)


def test_a_parallel_target_fuses_a_body_of_small_kernels_and_says_why_not_a_large_one():
    """The njit driver is written from the plan: a kernel the parallel target runs
    serially (below PARALLEL_THRESHOLD elements) is called in the fused loop; a parallel
    launch is not, and the reason names the kernel."""
    inputs, outputs = _halving()
    args = (np.array([8.0, -3.0, 1.0]), np.array([0.1, 0.2, 0.3]), 1e-9)
    f = sg.function(inputs, outputs, target="parallel")
    got = f(*args)
    states = fused_states(outputs, WHILE, target="parallel")
    assert states and all(s is not None and s.loop is not None for s in states), states
    for a, b in zip(got, sg.evaluate(outputs, dict(zip(inputs, args)))):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    big = sg.placeholder("big", shape=(256, 256))
    _, y = sg.while_loop(lambda i, y: i < 2, lambda i, y: (i + 1, 0.5 * y + 1.0), [0, big])
    sg.function([big], [y], target="parallel")(np.ones((256, 256)))
    (state,) = fused_states([y], WHILE, target="parallel")
    assert state.loop is None and "runs in parallel (65536 elements)" in state.reason, state
