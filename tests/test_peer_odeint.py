"""JAX's ``odeint`` tests, ported to ``sg.odeint`` (issue 31, item 6).

Provenance: github:google/jax tests/ode_test.py (class ``ODETest``, at commit
3bd8ca480a5ed0d88c19a821d53324759db0bc35): ``check_against_scipy``, ``test_pend_grads``,
``test_pytree_state``, ``test_weird_time_pendulum_grads``, ``test_decay``, ``test_swoop``,
``test_swoop_bigger``, ``test_odeint_vmap_grad`` (jax#2531),
``test_disable_jit_odeint_with_vmap`` (jax#2598), ``test_grad_closure`` (jax#2718),
``test_grad_closure_with_vmap`` (jax#2718), ``test_forward_mode_error`` (jax#3558),
``test_closure_nondiff`` (jax#3584), ``test_complex_odeint`` (jax#3986, jax#8757),
``test_hmax``. JAX's dynamics, initial values, times, arguments and tolerances (1e-3 in
float64) are kept.

Differences from JAX, by design:
  * ``jtu.check_grads(f, args, modes=["rev"], order=2)`` becomes ``_check_grads``:
    reverse-mode first and second derivatives of ``sum(w * f)`` (w random) against
    central differences of the same graph along random directions (one per argument,
    then one in all: with JAX's single joint direction a 1% error in d/dm of the
    pendulum hides under the y0 gradient at tol 1e-3), on ``sg.evaluate``;
    the first derivatives (and the values) compiled by one ``sg.function`` (cpu) must
    equal ``sg.evaluate``'s. The second order compiles too, but its numba build is
    ~10 s of CPU per test, so it is compiled once (``test_pend_grads``).
  * The dynamics are written once for numpy and once for symgrad (``_np`` is ``NP`` or
    ``SG``: JAX's ``partial(fun, np)`` / ``partial(fun, jnp)``).
  * symgrad has no pytrees: ``y0`` is one tensor (``test_pytree_state`` runs on the
    leaves packed in one vector; the tuple form is an xfail), and an argument is one
    tensor or anything ``np.asarray`` takes (a tuple of floats is an array).
  * ``jax.vmap`` is ``sg.vectorized_map``; ``jax.jit`` is ``sg.function``;
    ``jax.disable_jit`` is ``sg.evaluate``.
  * ``test_forward_mode_error``: JAX's odeint has no forward mode (a TypeError);
    ``sg.odeint`` has one (sensitivities), so the port checks ``sg.jvp`` against finite
    differences and reverse mode instead.
  * ``test_complex_odeint`` is skipped: symgrad's odeint is real (float dtypes only).
  * ``test_hmax``: ``sg.odeint`` has no ``hmax``: an xfail.
  * Added: the cases again with ``method="bdf"`` (Rodas4) where cheap (first order; the
    reverse mode of the stiff method is forward sensitivities), and ``max_steps``
    (JAX's ``mxstep``, which JAX does not test: JAX returns a wrong value silently,
    symgrad raises ``sg.ConvergenceError``).
"""

from __future__ import annotations

import types
import warnings

import numpy as np
import pytest

import symgrad as sg

scipy_integrate = pytest.importorskip("scipy.integrate")

TOL = 1e-3      # JAX's tol for float64


def _sg_array(x):
    return sg.stack(list(x)) if isinstance(x, (list, tuple)) else x


NP = types.SimpleNamespace(sin=np.sin, cos=np.cos, sqrt=np.sqrt, mean=np.mean,
                           array=np.array)
SG = types.SimpleNamespace(sin=sg.sin, cos=sg.cos, sqrt=sg.sqrt, mean=sg.reduce_mean,
                           array=_sg_array)


def check_against_scipy(fun, y0, tspace, *args, tol=1e-1, method="dopri5"):
    """JAX's check_against_scipy: sg.odeint against scipy.integrate.odeint (LSODA)."""
    y0, tspace = np.array(y0, dtype=float), np.array(tspace, dtype=float)
    scipy_result = scipy_integrate.odeint(lambda y, t, *a: fun(NP, y, t, *a), y0, tspace,
                                          args)
    sg_result = sg.evaluate(sg.odeint(lambda y, t, *a: fun(SG, y, t, *a), y0, tspace,
                                      *args, method=method), {})
    np.testing.assert_allclose(sg_result, scipy_result, atol=tol, rtol=tol)


# --- jtu.check_grads(modes=["rev"], order=2) ---------------------------------------------------
def _check_grads(build, args, rtol, atol=None, order=2, seed=0, eps=1e-4, compiled=True,
                 compile_second=False):
    """Reverse first (and, order=2, second) derivatives of ``sum(w * build(*xs))`` against
    central differences of the same graph along random directions (one per argument, then
    one in all), on sg.evaluate; the values and first derivatives (``compile_second``: and
    the second) compiled by sg.function (cpu) equal sg.evaluate's."""
    rng = np.random.default_rng(seed)
    atol = rtol if atol is None else atol
    args = [np.asarray(a, dtype=float) for a in args]
    xs = [sg.placeholder(f"x{k}", a.shape) for k, a in enumerate(args)]
    out = build(*xs)
    w = rng.uniform(0.5, 1.5, size=out.shape)
    loss = sg.reduce_sum(out * w)
    grads = sg.gradients(loss, xs)
    feeds = dict(zip(xs, args))
    outputs = [out] + grads
    if order == 2:
        vs = [rng.normal(size=a.shape) for a in args]
        loss2 = sg.reduce_sum(sg.stack([sg.reduce_sum(g * v) for g, v in zip(grads, vs)]))
        grads2 = sg.gradients(loss2, xs)
        outputs += grads2
    values = sg.evaluate(outputs, feeds)
    if compiled:
        shown = outputs if compile_second else [out] + grads
        got = sg.function(xs, shown)(*args)
        for g, v in zip(got, values):
            np.testing.assert_allclose(g, v, rtol=1e-9, atol=1e-12)

    def shifted(d, sign):
        return {x: a + sign * eps * dd for x, a, dd in zip(xs, args, d)}

    def directions():
        """One random direction per argument (the others held), then one in all: JAX's
        single joint direction lets a large y0 gradient hide a wrong parameter one."""
        for j in range(len(args)):
            yield [rng.normal(size=a.shape) if k == j else np.zeros(a.shape)
                   for k, a in enumerate(args)]
        yield [rng.normal(size=a.shape) for a in args]

    first = values[1:1 + len(xs)]
    for d in directions():
        numerical = (float(sg.evaluate(loss, shifted(d, 1)))
                     - float(sg.evaluate(loss, shifted(d, -1)))) / (2 * eps)
        theoretical = sum(float(np.sum(g * dd)) for g, dd in zip(first, d))
        np.testing.assert_allclose(theoretical, numerical, rtol=rtol, atol=atol)
    if order == 2:
        second = values[1 + len(xs):]
        for d in directions():
            plus, minus = sg.evaluate(grads, shifted(d, 1)), sg.evaluate(grads, shifted(d, -1))
            numerical = sum(float(np.sum((p - m) * v)) for p, m, v in zip(plus, minus, vs)) \
                / (2 * eps)
            theoretical = sum(float(np.sum(g * dd)) for g, dd in zip(second, d))
            np.testing.assert_allclose(theoretical, numerical, rtol=rtol, atol=atol)
    return values


def _integrate(fun, method="dopri5"):
    """JAX's partial(odeint, partial(fun, jnp)): (y0, ts, *args) -> ys."""
    return lambda y0, ts, *args: sg.odeint(lambda y, t, *a: fun(SG, y, t, *a), y0, ts, *args,
                                           method=method)


# --- test_pend_grads -------------------------------------------------------------------------
def pend(_np, y, _, m, g):
    theta, omega = y[0], y[1]
    return _np.array([omega, -m * omega - g * _np.sin(theta)])


PEND = ([np.pi - 0.1, 0.0], np.linspace(0.0, 1.0, 11), 0.25, 9.8)


def test_pend_grads():
    y0, ts, *args = PEND
    check_against_scipy(pend, y0, ts, *args, tol=TOL)
    _check_grads(_integrate(pend), [y0, ts, *args], rtol=TOL, compile_second=True)


def test_pend_grads_bdf():
    y0, ts, *args = PEND
    check_against_scipy(pend, y0, ts, *args, tol=TOL, method="bdf")
    _check_grads(_integrate(pend, "bdf"), [y0, ts, *args], rtol=TOL, order=1)


# --- test_pytree_state -----------------------------------------------------------------------
def test_pytree_state_packed():
    """JAX's y0 = (array(-0.1), array([[[0.1]]])) with dynamics -y: the two leaves packed
    in one vector (symgrad has no pytrees)."""
    y0, ts = np.array([-0.1, 0.1]), np.linspace(0.0, 1.0, 11)
    values = _check_grads(lambda y0, ts: sg.odeint(lambda y, _t: -y, y0, ts), [y0, ts],
                          rtol=TOL, compiled=False)
    np.testing.assert_allclose(values[0], y0[None] * np.exp(-ts)[:, None], rtol=1e-7)


def test_pytree_state():
    """symgrad has no pytree state: a tuple y0 of different shapes is a TypeError naming
    sg.odeint and y0."""
    y0 = (np.array(-0.1), np.array([[[0.1]]]))
    with pytest.raises(TypeError, match=r"sg\.odeint: y0 .*no pytrees"):
        sg.odeint(lambda y, _t: tuple(-leaf for leaf in y), y0, np.linspace(0.0, 1.0, 11))


# --- test_weird_time_pendulum_grads ----------------------------------------------------------
def weird_time_dynamics(_np, y, t):
    return _np.array([y[1] * -t, -1 * y[1] - 9.8 * _np.sin(y[0])])


def test_weird_time_pendulum_grads():
    """Gradients are correct when the dynamics depend on t."""
    y0, ts = [np.pi - 0.1, 0.0], np.linspace(0.0, 1.0, 11)
    check_against_scipy(weird_time_dynamics, y0, ts, tol=TOL)
    _check_grads(_integrate(weird_time_dynamics), [y0, ts], rtol=TOL, compiled=False)


def test_pend_grads_with_negative_times():
    """Added: output times below zero (JAX's t need only increase)."""
    y0, _, *args = PEND
    ts = np.linspace(-1.0, 0.0, 11)
    check_against_scipy(pend, y0, ts, *args, tol=TOL)
    _check_grads(_integrate(pend), [y0, ts, *args], rtol=TOL, compiled=False)


def test_weird_time_pendulum_grads_bdf():
    y0, ts = [np.pi - 0.1, 0.0], np.linspace(0.0, 1.0, 11)
    check_against_scipy(weird_time_dynamics, y0, ts, tol=TOL, method="bdf")
    _check_grads(_integrate(weird_time_dynamics, "bdf"), [y0, ts], rtol=TOL, order=1,
                 compiled=False)


# --- test_decay ------------------------------------------------------------------------------
def decay(_np, y, t, arg1, arg2):
    return -_np.sqrt(t) - y + arg1 - _np.mean((y + arg2) ** 2)


def _decay_case():
    rng = np.random.RandomState(0)
    args = (rng.randn(3), rng.randn(3))
    y0 = rng.randn(3)
    return y0, np.linspace(0.1, 0.2, 4), args


@pytest.mark.parametrize("method", ["dopri5", "bdf"])
def test_decay(method):
    y0, ts, args = _decay_case()
    check_against_scipy(decay, y0, ts, *args, tol=TOL, method=method)
    _check_grads(_integrate(decay, method), [y0, ts, *args], rtol=TOL,
                 order=2 if method == "dopri5" else 1, compiled=method == "dopri5")


# --- test_swoop, test_swoop_bigger -----------------------------------------------------------
def swoop(_np, y, t, arg1, arg2):
    return _np.array(y - _np.sin(t) - _np.cos(t) * arg1 + arg2)


@pytest.mark.parametrize("method", ["dopri5", "bdf"])
@pytest.mark.parametrize("y0, args", [
    (np.linspace(0.1, 0.9, 10), (0.1, 0.2)),          # test_swoop
    (np.linspace(1.1, 10.9, 10), (0.1, 0.3)),         # test_swoop_bigger
], ids=["swoop", "swoop_bigger"])
def test_swoop(y0, args, method):
    ts = np.array([0.1, 0.2])
    check_against_scipy(swoop, y0, ts, *args, tol=TOL, method=method)
    _check_grads(_integrate(swoop, method), [y0, ts, *args], rtol=TOL,
                 order=2 if method == "dopri5" else 1, compiled=False)


def test_swoop_closed_form():
    """swoop is linear, y' = y - sin t - a1 cos t + a2: its exact solution, to the
    solver's tolerance (JAX checks against scipy only)."""
    y0, ts, (a1, a2) = np.linspace(0.1, 0.9, 10), np.array([0.1, 0.2]), (0.1, 0.2)
    # particular solution y_p = A sin t + B cos t + C: y_p' - y_p = -sin t - a1 cos t + a2
    a, b = np.linalg.solve([[-1.0, -1.0], [1.0, -1.0]], [-1.0, -a1])
    c = -a2

    def yp(t):
        return a * np.sin(t) + b * np.cos(t) + c
    exact = (y0 - yp(ts[0]))[None] * np.exp(ts - ts[0])[:, None] + yp(ts)[:, None]
    got = sg.evaluate(_integrate(swoop)(y0, ts, a1, a2), {})
    np.testing.assert_allclose(got, exact, rtol=1e-7, atol=1e-8)


def test_second_derivative_bdf():
    """Added: order 2 through the stiff method (sensitivities of sensitivities) against the
    closed form of y = exp(-k t) (the order-2 check_grads of the cases above costs 20-35 s
    of CPU with method="bdf", so it runs on this scalar)."""
    k = sg.placeholder("k")
    ys = sg.odeint(lambda y, t, k: -k * y, 1.0, [0.0, 1.5], k, method="bdf")
    (g,) = sg.gradients(ys[1], k)
    (h,) = sg.gradients(g, k)
    np.testing.assert_allclose(sg.evaluate([g, h], {k: 0.7}),
                               [-1.5 * np.exp(-1.05), 1.5 ** 2 * np.exp(-1.05)], rtol=1e-5)


# --- args of several kinds (JAX passes any pytree of arrays) ---------------------------------
@pytest.mark.parametrize("args", [
    (0.1, 0.2),                                         # Python floats
    (np.float64(0.1), np.array(0.2)),                   # numpy scalars
    (np.full(10, 0.1), np.full(10, 0.2)),               # arrays of y's shape
    (sg.constant(0.1), sg.constant(np.full(10, 0.2))),  # tensors
], ids=["floats", "numpy_scalars", "arrays", "tensors"])
def test_args_of_several_kinds(args):
    y0, ts = np.linspace(0.1, 0.9, 10), np.array([0.1, 0.2])
    want = scipy_integrate.odeint(lambda y, t: swoop(NP, y, t, 0.1, 0.2), y0, ts,
                                  rtol=1e-10, atol=1e-10)
    got = sg.evaluate(_integrate(swoop)(y0, ts, *args), {})
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_args_a_tuple_of_floats_is_one_array():
    ys = sg.odeint(lambda y, t, p: -p[0] * y + p[1], np.ones(2), [0.0, 1.0], (0.5, 0.1))
    want = 0.2 + 0.8 * np.exp(-0.5)
    np.testing.assert_allclose(sg.evaluate(ys, {})[-1], [want, want], rtol=1e-7)


def test_args_a_tuple_of_tensors():
    """A tuple of tensors as one argument: a TypeError naming sg.odeint and args[0] that
    says to pass the tensors as separate arguments."""
    p = (sg.constant(0.5), sg.constant(np.array([0.1, 0.2])))
    with pytest.raises(TypeError, match=r"sg\.odeint: args\[0\] .*separate arguments"):
        sg.odeint(lambda y, t, p: -p[0] * y + p[1], np.ones(2), [0.0, 1.0], p)


def test_args_a_dict_is_rejected():
    """symgrad has no pytrees: a dict argument is a TypeError (sg.DTypeError)."""
    with pytest.raises(TypeError, match="dtype object"):
        sg.odeint(lambda y, t, p: -p["a"] * y, np.ones(2), [0.0, 1.0], {"a": 0.5})


def test_args_a_dict_names_odeint():
    with pytest.raises(TypeError, match=r"sg\.odeint: args\[0\]"):
        sg.odeint(lambda y, t, p: -p["a"] * y, np.ones(2), [0.0, 1.0], {"a": 0.5})


# --- test_odeint_vmap_grad (jax#2531) --------------------------------------------------------
def dx_dt(x, *args):
    return 0.1 * x


def test_odeint_vmap_grad():
    def f(x, y):
        y0 = sg.stack([x, y])
        return sg.reduce_sum(sg.odeint(dx_dt, y0, [0.0, 5.0])[-1])

    x = sg.placeholder("x")
    y0_arr = sg.stack([sg.stack([x, 0.0 * x + 0.1]), sg.stack([x, 0.0 * x + 0.2])])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = sg.vectorized_map(lambda y0: sg.odeint(dx_dt, y0, [0.0, 5.0]), y0_arr)
    (ans,) = sg.gradients(sg.reduce_sum(y[:, -1]), x)
    y1, y2 = sg.placeholder("y1"), sg.placeholder("y2")
    expected = sg.gradients(f(x, y1), x)[0] + sg.gradients(f(x, y2), x)[0]
    got, want = sg.evaluate([ans, expected], {x: 2.0, y1: 0.1, y2: 0.2})
    np.testing.assert_allclose(got, want, rtol=2e-15, atol=5e-15)     # JAX's tolerances
    np.testing.assert_allclose(got, 2 * np.exp(0.5), rtol=1e-7)       # d/dx 2 x e^0.5
    # jax.jit(jax.grad(g)): the gradient of the mapped solve, compiled
    (compiled,) = sg.function([x], [ans])(2.0)
    np.testing.assert_allclose(compiled, got, rtol=1e-12)


# --- test_disable_jit_odeint_with_vmap (jax#2598) --------------------------------------------
def test_disable_jit_odeint_with_vmap():
    x0 = sg.placeholder("x0", (5, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ys = sg.vectorized_map(lambda x: sg.odeint(lambda x, _t: x, x, [0.0, 1.0]), x0)
    assert tuple(ys.shape) == (5, 2, 2)
    x0v = np.arange(10.0).reshape(5, 2) / 10
    got = sg.evaluate(ys, {x0: x0v})                  # doesn't crash (and is right)
    np.testing.assert_allclose(got[:, 0], x0v)
    np.testing.assert_allclose(got[:, 1], x0v * np.e, rtol=1e-7)


# --- test_grad_closure (jax#2718) ------------------------------------------------------------
def experiment(x):
    def model(y, t):
        return -x * y
    history = sg.odeint(model, 1.0, np.arange(0, 10, 0.1))
    return history[-1]


def test_grad_closure():
    _check_grads(experiment, [0.01], rtol=1e-5, order=1, compiled=False)
    x = sg.placeholder("x")
    (g,) = sg.gradients(experiment(x), x)
    np.testing.assert_allclose(sg.evaluate(g, {x: 0.01}), -9.9 * np.exp(-0.099), rtol=1e-6)


def test_grad_closure_with_vmap():
    """jax.vmap(jax.value_and_grad(jax.jit(experiment)))(t): the value and gradient mapped
    over x. JAX maps 100 values of x and checks the twelfth; symgrad's map of an odeint
    gradient is a scan (no batching rule), ~1 s an element on one core: 12 values here."""
    def value_and_grad(x):
        h = experiment(x)
        (g,) = sg.gradients(h, x)
        return sg.stack([h, g])

    t = np.arange(0.0, 0.12, 0.01)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hg = sg.vectorized_map(value_and_grad, sg.constant(t))
    h, g = sg.evaluate(hg, {})[11]
    x = sg.placeholder("x")
    expected_h = float(sg.evaluate(experiment(x), {x: t[11]}))
    expected_g = (float(sg.evaluate(experiment(x), {x: t[11] + 1e-5})) - expected_h) / 1e-5
    np.testing.assert_allclose([h, g], [expected_h, expected_g], atol=1e-2, rtol=1e-2)
    np.testing.assert_allclose([h, g], [np.exp(-9.9 * t[11]), -9.9 * np.exp(-9.9 * t[11])],
                               rtol=1e-6)


# --- test_forward_mode_error (jax#3558): symgrad HAS forward mode ----------------------------
def test_forward_mode():
    """JAX: jax.jacfwd of odeint is a TypeError ("can't apply forward-mode"). sg.odeint's
    forward mode is sensitivities: sg.jvp equals the closed form, reverse mode, and
    finite differences."""
    k = sg.placeholder("k")
    ts = np.linspace(0, 1.0, 50)
    s = sg.reduce_sum(sg.odeint(lambda x, t: k * x, 1.0, ts))
    (tangent,) = sg.jvp([s], [k], [1.0])
    (grad,) = sg.gradients(s, k)
    value, forward, reverse = sg.evaluate([s, tangent, grad], {k: 3.0})
    np.testing.assert_allclose(value, np.exp(3.0 * ts).sum(), rtol=1e-7)
    np.testing.assert_allclose(forward, (ts * np.exp(3.0 * ts)).sum(), rtol=1e-6)
    np.testing.assert_allclose(forward, reverse, rtol=1e-6)


# --- test_closure_nondiff (jax#3584) ---------------------------------------------------------
@pytest.mark.parametrize("method", ["dopri5", "bdf"])
def test_closure_nondiff(method):
    def dz_dt(z, t):
        return sg.stack([z[0], z[1]])

    z = sg.placeholder("z", (2,))
    y = sg.odeint(dz_dt, z, np.arange(10.0), method=method)
    (g,) = sg.gradients(sg.reduce_sum(y), z)          # doesn't crash
    np.testing.assert_allclose(sg.evaluate(g, {z: np.ones(2)}),
                               np.full(2, np.exp(np.arange(10.0)).sum()), rtol=1e-6)


# --- test_complex_odeint (jax#3986, jax#8757) ------------------------------------------------
@pytest.mark.skip(reason="symgrad's odeint is real: y0, t and f's result must be float "
                         "tensors (complex dtypes are not supported)")
def test_complex_odeint():
    pass


def test_complex_y0_is_rejected():
    with pytest.raises(TypeError, match="complex128"):
        sg.odeint(lambda y, t: -y, np.array(1 + 2j), [0.0, 1.0])


def test_complex_y0_names_odeint():
    with pytest.raises(TypeError, match=r"sg\.odeint: y0 has dtype complex"):
        sg.odeint(lambda y, t: -y, np.array(1 + 2j), [0.0, 1.0])


# --- test_hmax ---------------------------------------------------------------------------------
@pytest.mark.xfail(strict=True, raises=TypeError,
                   reason="sg.odeint has no hmax (JAX's maximum step size); without it an "
                          "adaptive step may jump over a pulse of the rhs")
def test_hmax():
    def rhs(y, t):
        return sg.where(t <= 2.0, 1.0, sg.where((t >= 5.0) & (t <= 7.0), -1.0, 0.0)) + 0.0 * y

    ys = sg.odeint(rhs, 0.0, [0.0, 5.0, 10.0], hmax=1.0)
    got = sg.evaluate(ys, {})
    assert abs(got[1] - 2.0) < 1e-4 and abs(got[2]) < 1e-4


# --- max_steps (JAX's mxstep) ----------------------------------------------------------------
@pytest.mark.parametrize("method", ["dopri5", "bdf"])
def test_max_steps_raises_in_evaluate_and_compiled(method):
    y0, ts, *args = PEND
    theta = sg.placeholder("theta", (2,))
    ys = sg.odeint(lambda y, t, *a: pend(SG, y, t, *a), theta, ts, *args, method=method,
                   max_steps=4)
    with pytest.raises(sg.ConvergenceError, match=r"sg.odeint: .*max_steps=4"):
        sg.evaluate(ys, {theta: y0})
    (g,) = sg.gradients(sg.reduce_sum(ys), theta)
    with pytest.raises(sg.ConvergenceError, match=r"max_steps=4"):
        sg.evaluate(g, {theta: y0})
    fn = sg.function([theta], [ys])
    with pytest.raises(sg.ConvergenceError, match=r"max_steps=4"):
        fn(np.array(y0))


def test_max_steps_enough_steps_pass():
    y0, ts, *args = PEND
    ys, info = sg.odeint(lambda y, t, *a: pend(SG, y, t, *a), y0, ts, *args,
                         full_output=True)
    steps = int(sg.evaluate(info["steps"], {}))
    exact = sg.odeint(lambda y, t, *a: pend(SG, y, t, *a), y0, ts, *args, max_steps=steps)
    short = sg.odeint(lambda y, t, *a: pend(SG, y, t, *a), y0, ts, *args,
                      max_steps=steps - 1)
    np.testing.assert_allclose(sg.evaluate(exact, {}), sg.evaluate(ys, {}), rtol=1e-12)
    with pytest.raises(sg.ConvergenceError, match=rf"max_steps={steps - 1}"):
        sg.evaluate(short, {})
