"""sg.odeint: values against closed forms and scipy's solve_ivp, gradients (continuous
adjoint; forward sensitivities for the stiff method) against closed forms and finite
differences, forward mode against reverse, sg.ConvergenceError past max_steps, input
errors naming sg.odeint, and compiled results equal to sg.evaluate's."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg

scipy_integrate = pytest.importorskip("scipy.integrate")


def decay(y, t, k):
    return -k * y


def lotka_volterra(y, t, p):
    return sg.stack([p[0] * y[0] - p[1] * y[0] * y[1], p[2] * y[0] * y[1] - p[3] * y[1]])


def lv_numpy(t, y, p):
    return [p[0] * y[0] - p[1] * y[0] * y[1], p[2] * y[0] * y[1] - p[3] * y[1]]


def robertson(y, t, k):
    return sg.stack([-k[0] * y[0] + k[2] * y[1] * y[2],
                     k[0] * y[0] - k[2] * y[1] * y[2] - k[1] * y[1] ** 2,
                     k[1] * y[1] ** 2])


def robertson_numpy(t, y, k):
    return [-k[0] * y[0] + k[2] * y[1] * y[2],
            k[0] * y[0] - k[2] * y[1] * y[2] - k[1] * y[1] ** 2, k[1] * y[1] ** 2]


P_LV = np.array([1.1, 0.4, 0.1, 0.4])
Y_LV = np.array([10.0, 5.0])
T_LV = np.array([0.0, 1.0, 2.5, 4.0])
W_LV = np.array([[0.3, -0.2], [1.0, 0.5], [-0.7, 0.2], [0.4, 1.1]])


def _fd(fun, x, eps=1e-6):
    x = np.asarray(x, dtype=float)
    out = np.zeros(x.shape)
    for i in np.ndindex(x.shape):
        e = np.zeros(x.shape)
        e[i] = eps * max(1.0, abs(x[i]))
        out[i] = (fun(x + e) - fun(x - e)) / (2 * e[i])
    return out


# --- exponential decay: closed forms --------------------------------------------------
def test_decay_values_and_gradients_are_the_closed_form():
    k, y0, t = sg.placeholder("k"), sg.placeholder("y0", shape=(2,)), sg.placeholder(
        "t", shape=(3,))
    ys = sg.odeint(decay, y0, t, k)
    loss = sg.reduce_sum(ys * ys)
    grads = sg.gradients(loss, [k, y0, t])
    kv, yv, tv = 0.7, np.array([1.0, 2.0]), np.array([0.1, 0.5, 1.3])
    out = sg.evaluate([ys] + grads, {k: kv, y0: yv, t: tv})
    e = np.exp(-kv * (tv - tv[0]))
    np.testing.assert_allclose(out[0], yv[None] * e[:, None], rtol=1e-7)
    d = tv - tv[0]
    sq = (yv ** 2).sum()
    np.testing.assert_allclose(out[1], sq * np.sum(-2 * d * e ** 2), rtol=1e-6)
    np.testing.assert_allclose(out[2], 2 * yv * np.sum(e ** 2), rtol=1e-6)
    dt = -2 * kv * sq * e ** 2
    np.testing.assert_allclose(out[3], [-dt[1:].sum(), dt[1], dt[2]], rtol=1e-6)


def test_a_single_time_returns_y0_and_identity_gradients():
    y0 = sg.placeholder("y0", shape=(2,))
    ys = sg.odeint(lambda y, t: -y, y0, [0.5])
    (g,) = sg.gradients(sg.reduce_sum(ys * np.array([[2.0, 3.0]])), y0)
    out, grad = sg.evaluate([ys, g], {y0: [1.0, 4.0]})
    np.testing.assert_allclose(out, [[1.0, 4.0]])
    np.testing.assert_allclose(grad, [2.0, 3.0])


# --- Lotka–Volterra: scipy's values, finite-difference gradients -----------------------
def _lv_graph():
    p, y0, t = (sg.placeholder("p", shape=(4,)), sg.placeholder("y0", shape=(2,)),
                sg.placeholder("t", shape=(4,)))
    ys = sg.odeint(lotka_volterra, y0, t, p, rtol=1e-10, atol=1e-10)
    return (p, y0, t), ys, sg.reduce_sum(ys * W_LV)


def test_lotka_volterra_values_match_solve_ivp():
    (p, y0, t), ys, _ = _lv_graph()
    got = sg.evaluate(ys, {p: P_LV, y0: Y_LV, t: T_LV})
    ref = scipy_integrate.solve_ivp(lv_numpy, (0, 4), Y_LV, t_eval=T_LV, args=(P_LV,),
                                    method="DOP853", rtol=1e-13, atol=1e-13).y.T
    np.testing.assert_allclose(got, ref, rtol=1e-8)


def test_lotka_volterra_gradients_match_finite_differences():
    (p, y0, t), ys, loss = _lv_graph()
    grads = sg.evaluate(sg.gradients(loss, [p, y0, t]), {p: P_LV, y0: Y_LV, t: T_LV})

    def L(pv=P_LV, yv=Y_LV, tv=T_LV):
        sol = scipy_integrate.solve_ivp(lv_numpy, (tv[0], tv[-1]), yv, t_eval=tv,
                                        args=(pv,), method="DOP853", rtol=1e-13,
                                        atol=1e-13)
        return float((sol.y.T * W_LV).sum())

    np.testing.assert_allclose(grads[0], _fd(lambda v: L(pv=v), P_LV), rtol=1e-5)
    np.testing.assert_allclose(grads[1], _fd(lambda v: L(yv=v), Y_LV), rtol=1e-5)
    np.testing.assert_allclose(grads[2], _fd(lambda v: L(tv=v), T_LV), rtol=1e-5,
                               atol=1e-6)


def test_gradient_wrt_a_captured_tensor():
    a = sg.placeholder("a")
    ys = sg.odeint(lambda y, t: -a * y * y, 1.0, [0.0, 2.0])      # y = 1 / (1 + a t)
    (g,) = sg.gradients(ys[1], a)
    value, grad = sg.evaluate([ys[1], g], {a: 0.5})
    np.testing.assert_allclose(value, 0.5, rtol=1e-7)
    np.testing.assert_allclose(grad, -2.0 / (1 + 0.5 * 2) ** 2, rtol=1e-6)


def test_time_dependent_rhs_gradients_wrt_t():
    t = sg.placeholder("t", shape=(2,))
    ys = sg.odeint(lambda y, tt: sg.cos(tt) * y, 1.0, t)         # y = exp(sin t - sin t0)
    (g,) = sg.gradients(ys[1], t)
    tv = np.array([0.3, 1.7])
    value, grad = sg.evaluate([ys[1], g], {t: tv})
    exact = np.exp(np.sin(tv[1]) - np.sin(tv[0]))
    np.testing.assert_allclose(value, exact, rtol=1e-7)
    np.testing.assert_allclose(grad, [-np.cos(tv[0]) * exact, np.cos(tv[1]) * exact],
                               rtol=1e-6)


# --- forward mode ----------------------------------------------------------------------
def test_forward_mode_equals_reverse_mode():
    (p, y0, t), ys, loss = _lv_graph()
    feed = {p: P_LV, y0: Y_LV, t: T_LV}
    tangents = [np.array([0.1, -0.2, 0.3, 0.05]), np.array([0.5, -1.0]),
                np.array([0.0, 0.1, -0.2, 0.3])]
    (dy,) = sg.jvp([ys], [p, y0, t], tangents)
    grads = sg.evaluate(sg.gradients(loss, [p, y0, t]), feed)
    forward = float((sg.evaluate(dy, feed) * W_LV).sum())
    reverse = sum(float(np.dot(g, v)) for g, v in zip(grads, tangents))
    np.testing.assert_allclose(forward, reverse, rtol=1e-6)


# --- errors ----------------------------------------------------------------------------
def test_max_steps_raises_convergence_error():
    ys = sg.odeint(decay, 1.0, [0.0, 10.0], 1.0, max_steps=3)
    with pytest.raises(sg.ConvergenceError, match=r"sg.odeint: .*max_steps=3"):
        sg.evaluate(ys, {})


def test_decreasing_times_raise():
    t = sg.placeholder("t", shape=(2,))
    ys = sg.odeint(decay, 1.0, t, 1.0)
    with pytest.raises(ValueError, match="sg.odeint: t must be nondecreasing"):
        sg.evaluate(ys, {t: [1.0, 0.0]})


@pytest.mark.parametrize("call, error, match", [
    (lambda: sg.odeint(lambda y, t: sg.stack([y[0]]), np.ones(2), [0.0, 1.0]),
     sg.ShapeError if hasattr(sg, "ShapeError") else ValueError, "returned shape"),
    (lambda: sg.odeint(lambda y, t: -y, np.ones(2), np.ones((2, 2))), ValueError,
     "expected a 1-D array"),
    (lambda: sg.odeint(lambda y, t: -y, sg.placeholder("i", shape=(2,), dtype="int64"),
                       [0.0, 1.0]), TypeError, "dtype int64"),
    (lambda: sg.odeint(lambda y, t: -y, 1.0, [0.0, 1.0], method="euler"), ValueError,
     "method='euler'"),
    (lambda: sg.odeint(lambda y, t: -y, 1.0, [0.0, 1.0], max_steps=0), ValueError,
     "max_steps=0"),
    (lambda: sg.odeint(3.0, 1.0, [0.0, 1.0]), TypeError, "f must be callable"),
])
def test_bad_input_names_odeint(call, error, match):
    with pytest.raises(error, match=match) as info:
        call()
    assert "sg.odeint" in str(info.value)


# --- compiled ---------------------------------------------------------------------------
def test_compiled_equals_evaluate():
    (p, y0, t), ys, loss = _lv_graph()
    outputs = [ys] + sg.gradients(loss, [p, y0])
    feed = {p: P_LV, y0: Y_LV, t: T_LV}
    want = sg.evaluate(outputs, feed)
    got = sg.function([p, y0, t], outputs)(P_LV, Y_LV, T_LV)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)


def test_step_count_is_reported():
    ys, info = sg.odeint(decay, 1.0, [0.0, 1.0], 1.0, full_output=True)
    out, steps = sg.evaluate([ys, info["steps"]], {})
    assert steps.dtype == np.int64 and 3 <= int(steps) <= 40
    _, loose = sg.odeint(decay, 1.0, [0.0, 1.0], 1.0, rtol=1e-4, atol=1e-4,
                         full_output=True)
    assert int(sg.evaluate(loose["steps"], {})) < int(steps)


# --- stiff: Robertson's kinetics with method="bdf" (Rodas4) ---------------------------
K_ROB = np.array([0.04, 3e7, 1e4])


def _robertson_reference(k, times):
    return scipy_integrate.solve_ivp(robertson_numpy, (times[0], times[-1]), [1.0, 0.0, 0.0],
                                     method="Radau", t_eval=times, args=(k,), rtol=1e-12,
                                     atol=1e-16).y.T


def test_robertson_bdf_values_match_solve_ivp_with_few_steps():
    k = sg.placeholder("k", shape=(3,))
    times = np.array([0.0, 0.4, 4.0, 40.0])
    ys, info = sg.odeint(robertson, np.array([1.0, 0.0, 0.0]), times, k, method="bdf",
                         rtol=1e-6, atol=1e-10, full_output=True)
    got, steps = sg.evaluate([ys, info["steps"]], {k: K_ROB})
    ref = _robertson_reference(K_ROB, times)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-10)
    assert int(steps) < 300                    # dopri5 would need ~10^5 steps here


def test_robertson_bdf_gradient_wrt_rates_matches_finite_differences():
    k = sg.placeholder("k", shape=(3,))
    times = np.array([0.0, 0.01])
    weights = np.array([1.0, 1e4, 1.0])
    ys = sg.odeint(robertson, np.array([1.0, 0.0, 0.0]), times, k, method="bdf",
                   rtol=1e-7, atol=1e-12)
    (g,) = sg.gradients(sg.reduce_sum(ys[-1] * weights), k)
    got = sg.evaluate(g, {k: K_ROB})

    def L(kv):
        return float((_robertson_reference(kv, times)[-1] * weights).sum())

    fd = [(L(K_ROB * (1 + 1e-6 * e)) - L(K_ROB * (1 - 1e-6 * e))) / (2e-6 * K_ROB[i])
          for i, e in enumerate(np.eye(3))]
    np.testing.assert_allclose(got, fd, rtol=1e-4)


# --- a 2-D reaction–diffusion system on a small grid ------------------------------------
def _laplacian(u):
    """Periodic 5-point Laplacian of a (4, 4) grid (unit spacing)."""
    up = sg.concat([u[1:], u[:1]], 0)
    down = sg.concat([u[-1:], u[:-1]], 0)
    right = sg.concat([u[:, 1:], u[:, :1]], 1)
    left = sg.concat([u[:, -1:], u[:, :-1]], 1)
    return up + down + left + right - 4.0 * u


def brusselator(y, t, d):
    u, v = y[0], y[1]
    du = 1.0 + u * u * v - 4.0 * u + d[0] * _laplacian(u)
    dv = 3.0 * u - u * u * v + d[1] * _laplacian(v)
    return sg.stack([du, dv])


def brusselator_numpy(t, flat, d):
    u, v = flat.reshape(2, 4, 4)
    lap = lambda w: (np.roll(w, -1, 0) + np.roll(w, 1, 0) + np.roll(w, -1, 1)
                     + np.roll(w, 1, 1) - 4 * w)
    return np.stack([1 + u * u * v - 4 * u + d[0] * lap(u),
                     3 * u - u * u * v + d[1] * lap(v)]).ravel()


def test_reaction_diffusion_values_and_gradient():
    rng = np.random.default_rng(0)
    y0v = np.stack([1.0 + 0.1 * rng.standard_normal((4, 4)),
                    3.0 + 0.1 * rng.standard_normal((4, 4))])
    dv = np.array([0.2, 0.1])
    d = sg.placeholder("d", shape=(2,))
    times = np.array([0.0, 0.5, 1.0])
    ys = sg.odeint(brusselator, y0v, times, d, rtol=1e-9, atol=1e-9)
    weights = np.cos(np.arange(2 * 16)).reshape(2, 4, 4)
    (g,) = sg.gradients(sg.reduce_sum(ys[-1] * weights), d)
    got, grad = sg.evaluate([ys, g], {d: dv})

    def solve(dd):
        return scipy_integrate.solve_ivp(brusselator_numpy, (0, 1), y0v.ravel(), args=(dd,),
                                         t_eval=times, method="DOP853", rtol=1e-12,
                                         atol=1e-12).y.T.reshape(3, 2, 4, 4)

    np.testing.assert_allclose(got, solve(dv), rtol=1e-6, atol=1e-8)
    fd = _fd(lambda dd: float((solve(dd)[-1] * weights).sum()), dv)
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-7)


def test_second_derivative_by_the_adjoint_of_the_adjoint():
    k = sg.placeholder("k")
    ys = sg.odeint(decay, 1.0, [0.0, 1.5], k)
    (g,) = sg.gradients(ys[1], k)
    (h,) = sg.gradients(g, k)
    got = sg.evaluate([g, h], {k: 0.7})
    np.testing.assert_allclose(got, [-1.5 * np.exp(-1.05), 1.5 ** 2 * np.exp(-1.05)],
                               rtol=1e-6)

