"""Loops whose body is one scalar kernel run as one njit loop (compile/loops/fused.py):
values and gradients equal the Python loop over the compiled body and sg.evaluate."""

import numpy as np
import pytest

import symgrad as sg
from symgrad.compile.loops import fused
from symgrad.control.records import SCAN
from tests.helpers import fused_matches_python_loop, fused_states, loop_nodes, python_loop

H = 0.01
P = np.array([1.0, 0.5, 1.0, 0.3])


def _f(p, u):
    x, y = u[0], u[1]
    return sg.stack([p[0] * x - p[1] * x * y, p[3] * x * y - p[2] * y])


def _rk4(p, u, h=H):
    k1 = _f(p, u)
    k2 = _f(p, u + h / 2 * k1)
    k3 = _f(p, u + h / 2 * k2)
    k4 = _f(p, u + h * k3)
    return u + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def _loops(outputs) -> list:
    return loop_nodes(outputs, SCAN)


def _states(outputs) -> list:
    return fused_states(outputs, SCAN)


def _python_loop(f, outputs, args):
    return python_loop(f, outputs, args, SCAN)


def _check(inputs, outputs, args, fused_expected=True):
    _, got, states = fused_matches_python_loop(inputs, outputs, args, SCAN, fused_expected)
    return got, states


def _numpy_rk4(p, u, steps):
    def f(u):
        x, y = u
        return np.array([p[0] * x - p[1] * x * y, p[3] * x * y - p[2] * y])
    for _ in range(steps):
        k1 = f(u)
        k2 = f(u + H / 2 * k1)
        k3 = f(u + H / 2 * k2)
        k4 = f(u + H * k3)
        u = u + H / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return u


@pytest.mark.parametrize("kind", ["scan", "fori_loop"])
@pytest.mark.parametrize("steps", [1, 7, 200])
def test_rk4_value_and_gradient(kind, steps):
    p, u0 = sg.placeholder("p", (4,)), sg.placeholder("u0", (2,))
    if kind == "scan":
        u, _ = sg.scan(lambda u, _: (_rk4(p, u), None), u0, length=steps)
    else:
        u = sg.fori_loop(0, steps, lambda i, u: _rk4(p, u), u0)
    loss = sg.reduce_sum(u * u)
    gp, gu = sg.gradients(loss, [p, u0])
    uv = np.array([1.0, 1.2])
    got, states = _check([p, u0], [loss, u, gp, gu], (P, uv))
    assert len({id(n.attrs["body"]) for n in _loops([gp])}) == 2   # forward and reverse
    np.testing.assert_allclose(got[1], _numpy_rk4(P, uv, steps), rtol=1e-12)
    eps = 1e-6                       # and central differences
    fd = [(np.sum(_numpy_rk4(P + d, uv, steps) ** 2) - np.sum(_numpy_rk4(P - d, uv, steps) ** 2))
          / (2 * eps) for d in np.eye(4) * eps]
    np.testing.assert_allclose(got[2], fd, rtol=1e-5)


@pytest.mark.parametrize("reverse", [False, True])
def test_xs_ys_multiple_carries(reverse):
    p, xs = sg.placeholder("p", (4,)), sg.placeholder("xs", (9, 2))
    s0 = sg.placeholder("s0", ())

    def body(c, x):
        u, s = c
        u = _rk4(p, u + 0.1 * x)
        return (u, s + u[0] * x[1]), (u * s, s)

    (u, s), (ys, ss) = sg.scan(body, (sg.constant([1.0, 0.8]), s0), xs, reverse=reverse)
    loss = sg.reduce_sum(u * u) + s * s + sg.reduce_sum(ys * ys) + sg.reduce_sum(sg.sin(ss))
    grads = sg.gradients(loss, [p, xs, s0])
    rng = np.random.default_rng(1)
    xv = rng.normal(size=(9, 2))
    got, states = _check([p, xs, s0], [loss, u, s, ys, ss] + grads, (P, xv, np.array(0.3)))
    assert got[3].shape == (9, 2) and got[4].shape == (9,)


def test_ys_of_a_carry_input_and_integer_xs():
    """A y that is the carry entering the step, and fori_loop's index used in the body."""
    p = sg.placeholder("p", (4,))
    u = sg.fori_loop(0, 5, lambda i, u: _rk4(p, u) * (1.0 + 0.01 * sg.cast(i, "float64")),
                     sg.constant([1.0, 1.0]))
    c, hist = sg.scan(lambda c, _: (_rk4(p, c), c), u, length=4)
    loss = sg.reduce_sum(c) + sg.reduce_sum(hist * hist)
    _, states = _check([p], [loss, hist, sg.gradients(loss, [p])[0]], (P,),
                       fused_expected=False)
    assert states[0].loop is None and "cast" in states[0].reason   # int -> float: a kernel
    assert any(s.loop is not None for s in states[1:])              # the scan over hist


def test_float32():
    p = sg.placeholder("p", (4,), "float32")
    u, _ = sg.scan(lambda u, _: (_rk4(p, u, np.float32(H)), None),
                   sg.constant(np.array([1.0, 1.0], np.float32)), length=20)
    loss = sg.reduce_sum(u * u)
    g = sg.gradients(loss, [p])[0]
    f = sg.function([p], [loss, g])
    pv = P.astype(np.float32)
    got = f(pv)
    assert got[0].dtype == np.float32 and got[1].dtype == np.float32
    assert all(s.loop is not None for s in _states([loss, g]))
    slow = _python_loop(f, [loss, g], (pv,))
    want = sg.evaluate([loss, g], {p: pv})
    for a, b, c in zip(got, slow, want):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(a, c, rtol=1e-5)


def test_large_carry_falls_back():
    w = sg.placeholder("w", (1000,))
    c, _ = sg.scan(lambda c, _: (c * sg.sin(w) + 0.1, None), sg.constant(np.ones(1000)),
                   length=5)
    loss = sg.reduce_sum(c * c)
    g = sg.gradients(loss, [w])[0]
    wv = np.linspace(0, 1, 1000)
    f = sg.function([w], [loss, g])
    got = f(wv)
    states = _states([loss, g])
    assert states and all(s.loop is None for s in states)
    assert "scalar kernel" in states[0].reason
    want = sg.evaluate([loss, g], {w: wv})
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12)


@pytest.mark.parametrize("reverse", [False, True])
def test_checkpoint(reverse):
    p = sg.placeholder("p", (4,))
    u, _ = sg.scan(lambda u, _: (_rk4(p, u), None), sg.constant([1.0, 1.0]), length=23,
                   reverse=reverse, checkpoint=5)
    loss = sg.reduce_sum(u * u)
    g = sg.gradients(loss, [p])[0]
    _check([p], [loss, g], (P,), fused_expected=False)
    f = sg.function([p], [loss, g])
    f(P * 1.01)
    states = _states([loss, g])
    assert states[0].loop is not None           # the forward scan (its checkpoints)
    assert states[-1] is None                   # the reverse scan replays: Python loop


def test_new_values_each_call():
    p = sg.placeholder("p", (4,))
    u, _ = sg.scan(lambda u, _: (_rk4(p, u), None), sg.constant([1.0, 1.0]), length=30)
    f = sg.function([p], [u])
    for scale in (1.0, 1.1, 0.9):
        np.testing.assert_allclose(f(P * scale)[0], _numpy_rk4(P * scale, np.ones(2), 30),
                                   rtol=1e-12)


@pytest.mark.parametrize("target", ["cpu", "parallel"])
def test_explain_names_the_loop(target):
    p = sg.placeholder("p", (4,))
    u, _ = sg.scan(lambda u, _: (_rk4(p, u), None), sg.constant([1.0, 1.0]), length=12)
    loss = sg.reduce_sum(u * u)
    outs = [loss, sg.gradients(loss, [p])[0]]
    f = sg.function([p], outs, target=target)
    text = f.explain()
    assert text.count("one njit loop over the body's scalar kernel") == 3, text
    got = f(P)
    want = sg.evaluate(outs, {p: P})
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    w = sg.placeholder("w", (100,))
    c, _ = sg.scan(lambda c, _: (c * sg.sin(w), None), sg.constant(np.ones(100)), length=3)
    g = sg.function([w], [c], target=target)
    assert "Python loop over the compiled body: the body compiled to 0 scalar kernels" in \
        g.explain()


@pytest.mark.parametrize("into", [True, False])
def test_results_into_buffers_or_new_arrays(into):
    """The kernel's ``_into`` form (buffers made once) and its allocating form agree."""
    p, xs = sg.placeholder("p", (4,)), sg.placeholder("xs", (6,))
    old = fused.INTO
    fused.INTO = into
    try:
        def body(c, x):
            return (_rk4(p, c[0]) * (1.0 + 0.1 * x), c[1] * x + c[0][1]), c[1] * c[0]
        (u, s), ys = sg.scan(body, (sg.constant([1.0, 0.9]), sg.constant(0.5)), xs)
        loss = sg.reduce_sum(u * u) + s + sg.reduce_sum(ys)
        outs = [loss, u, s, ys] + sg.gradients(loss, [p, xs])
        _, states = _check([p, xs], outs, (P, np.linspace(0.1, 0.6, 6)))
    finally:
        fused.INTO = old
    assert all(st.into == into for st in states)


def test_a_loop_numba_cannot_compile_falls_back(monkeypatch):
    """A fused loop whose compile fails leaves the Python loop running, with the reason."""
    from numba.core.errors import TypingError

    def broken(*args):
        raise TypingError("no")
    made = fused._make

    def make(*args):
        out = made(*args)
        if out.loop is not None:
            out.loop = broken
        return out
    monkeypatch.setattr(fused, "_make", make)
    p = sg.placeholder("p", (4,))
    u, _ = sg.scan(lambda u, _: (_rk4(p, u) * 0.999, None), sg.constant([1.0, 1.0]), length=9)
    f = sg.function([p], [u])
    np.testing.assert_allclose(f(P)[0], sg.evaluate(u, {p: P}), rtol=1e-12)
    (state,) = {id(s): s for s in _states([u])}.values()
    assert state.loop is None and "numba could not compile" in state.reason
