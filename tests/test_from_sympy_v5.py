"""sg.from_sympy, issue 30 item 2: sympy models as they come. The functions that lambdify
takes and symgrad had no op for (sinc, sec, cot, acot, coth, sech, Heaviside, gamma, besselj,
LambertW, ...) against ``sympy.lambdify`` values (numpy/scipy) at random points, gradients
against central differences of the lambdified function, and a ``sympy.physics.mechanics``
``KanesMethod`` model (a two-link pendulum on a cart) given in dynamicsymbols."""

from __future__ import annotations

import pathlib
import re

import numpy as np
import pytest
import sympy as sp
from sympy.physics.mechanics import (KanesMethod, Particle, Point, ReferenceFrame,
                                     dynamicsymbols)

import symgrad as sg

x = sp.Symbol("x", real=True)
RNG = np.random.default_rng(30)

# name: (expression, sampling interval); lambdify prints each for numpy/scipy
FUNCTIONS = {
    "sec": (sp.sec(x), (-1.3, 1.3)), "csc": (sp.csc(x), (0.2, 3.0)),
    "cot": (sp.cot(x), (0.2, 3.0)), "acot": (sp.acot(x), (-3.0, 3.0)),
    "coth": (sp.coth(x), (0.2, 3.0)), "sech": (sp.sech(x), (-3.0, 3.0)),
    "csch": (sp.csch(x), (0.2, 3.0)), "asec": (sp.asec(x), (1.1, 4.0)),
    "acoth": (sp.acoth(x), (1.1, 4.0)), "sinc": (sp.sinc(x), (-6.0, 6.0)),
    "Heaviside": (sp.Heaviside(x), (-2.0, 2.0)), "gamma": (sp.gamma(x), (-3.9, 6.0)),
    "factorial": (sp.factorial(x), (0.0, 5.0)), "besselj0": (sp.besselj(0, x), (-30.0, 30.0)),
    "besselj3": (sp.besselj(3, x), (-30.0, 30.0)),
    "besselj-2": (sp.besselj(-2, x), (0.0, 90.0)),
    "polygamma2": (sp.polygamma(2, x), (0.3, 5.0)),
    "LambertW": (sp.LambertW(x), (-0.36, 30.0)),
    "model": (sp.gamma(x / 2 + 1) * sp.sinc(x) + sp.LambertW(x ** 2) * sp.sec(x / 3),
              (-1.8, 3.0)),
}


def _points(name: str) -> np.ndarray:
    lo, hi = FUNCTIONS[name][1]
    pts = RNG.uniform(lo, hi, 40)
    if name in ("gamma", "factorial"):
        pts = pts[np.abs(pts - np.round(pts)) > 0.05]       # away from the poles
    if name == "sinc":
        pts[:4] = [0.0, 1e-5, -7e-4, 2e-3]
    if name == "Heaviside":
        pts[:2] = [0.0, -0.0]
    return pts


def _lambdified(name: str):
    fn = sp.lambdify(x, FUNCTIONS[name][0], modules=["scipy", "numpy"])
    return lambda v: np.real(fn(v)).astype(float)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_values_match_lambdify_on_evaluate_compiled_and_eager(name):
    pts = _points(name)
    want = _lambdified(name)(pts)
    X = sg.placeholder("X", shape=(None,))
    t = sg.from_sympy(FUNCTIONS[name][0], {x: X})
    scale = 1.0 + np.abs(want)
    results = {"evaluate": sg.evaluate(t, {X: pts}),
               "cpu": sg.function([X], [t])(pts)[0],
               "eager": sg.from_sympy(FUNCTIONS[name][0], {x: sg.Variable(pts)}).numpy()}
    for engine, got in results.items():
        assert np.max(np.abs(got - want) / scale) < 1e-12, engine


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_gradients_match_central_differences_of_lambdify(name):
    pts = _points(name)
    if name == "Heaviside":
        pts = pts[np.abs(pts) > 1e-3]
    fn, eps = _lambdified(name), 1e-6
    want = (fn(pts + eps) - fn(pts - eps)) / (2 * eps)
    X = sg.placeholder("X", shape=(None,))
    (g,) = sg.gradients(sg.reduce_sum(sg.from_sympy(FUNCTIONS[name][0], {x: X})), [X])
    got = sg.evaluate(g, {X: pts})
    np.testing.assert_allclose(got, want, rtol=2e-7, atol=2e-7 * np.max(np.abs(want) + 1))
    v = sg.Variable(pts)
    with sg.GradientTape() as tape:
        out = sg.reduce_sum(sg.from_sympy(FUNCTIONS[name][0], {x: v}))
    np.testing.assert_allclose(tape.gradient(out, v).numpy(), got, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("expr,second", [
    (sp.LambertW(x), lambda v: -sp.LambertW(v) ** 2 * (sp.LambertW(v) + 2)
     / (v ** 2 * (1 + sp.LambertW(v)) ** 3)),
    (sp.sinc(x), None), (sp.gamma(x), None), (sp.besselj(1, x), None),
])
def test_second_derivatives_match_sympy(expr, second):
    pts = np.array([0.0, 0.4, 1.7, 3.2]) if expr.func is not sp.gamma else \
        np.array([0.4, 1.7, 3.2, -1.5])
    X = sg.placeholder("X", shape=(4,))
    t = sg.from_sympy(expr, {x: X})
    (g,) = sg.gradients(sg.reduce_sum(t), [X])
    (h,) = sg.gradients(sg.reduce_sum(g), [X])
    d2 = sp.diff(expr, x, 2)
    want = np.array([float(sp.limit(d2, x, 0) if p == 0 else d2.subs(x, p).evalf(20))
                     for p in pts])
    np.testing.assert_allclose(sg.evaluate(h, {X: pts}), want, rtol=1e-9, atol=1e-10)


def test_heaviside_takes_its_value_at_zero_and_has_zero_gradient():
    X = sg.placeholder("X", shape=(3,))
    pts = np.array([-1.0, 0.0, 2.0])
    for h0, middle in ((None, 0.5), (1, 1.0), (0, 0.0)):
        expr = sp.Heaviside(x) if h0 is None else sp.Heaviside(x, h0)
        t = sg.from_sympy(expr, {x: X})
        np.testing.assert_array_equal(sg.evaluate(t, {X: pts}), [0.0, middle, 1.0])
        (g,) = sg.gradients(sg.reduce_sum(t * X), [X])
        np.testing.assert_array_equal(sg.evaluate(g, {X: pts}), [0.0, middle, 1.0])


def test_lambertw_below_the_branch_point_is_nan_and_float32_stays_float32():
    X = sg.placeholder("X", shape=(3,), dtype="float32")
    t = sg.from_sympy(sp.LambertW(x), {x: X})
    assert t.dtype == np.float32
    got = sg.evaluate(t, {X: np.array([-0.5, -1 / np.e, 1.0], np.float32)})
    assert np.isnan(got[0])
    np.testing.assert_allclose(got[1:], [-1.0, 0.5671433], rtol=2e-3)


# --- dynamicsymbols -------------------------------------------------------------------------
def test_dynamicsymbols_and_their_derivatives_are_mapping_keys():
    q, u = dynamicsymbols("q u")
    t = dynamicsymbols._t
    expr = sp.sin(q) * q.diff(t) ** 2 + u * q.diff(t, 2) + u.diff(t)
    Q = sg.placeholder("Q", shape=(5,))
    mapping = {q: Q[0], q.diff(t): Q[1], q.diff(t, 2): Q[2], u: Q[3], u.diff(t): Q[4]}
    out = sg.from_sympy(expr, mapping)
    vals = np.array([0.3, -1.2, 0.7, 2.0, 0.1])
    plain = sp.symbols("a0:5")
    subs = dict(zip([q.diff(t, 2), q.diff(t), u.diff(t), q, u],
                    [plain[2], plain[1], plain[4], plain[0], plain[3]]))
    want = sp.lambdify(plain, expr.subs(subs))(*vals)
    assert float(sg.evaluate(out, {Q: vals})) == pytest.approx(want, rel=1e-14)
    (g,) = sg.gradients(out, [Q])
    dq = 2 * np.sin(vals[0]) * vals[1]
    np.testing.assert_allclose(sg.evaluate(g, {Q: vals}),
                               [np.cos(vals[0]) * vals[1] ** 2, dq, vals[3], vals[2], 1.0])
    assert len(mapping) == 5 and q in mapping      # the user's mapping is not modified


def cart_pendulum(links: int = 2):
    """A ``links``-link pendulum on a cart pushed by ``f(t)``, by KanesMethod."""
    q = dynamicsymbols(f"q:{links + 1}")
    u = dynamicsymbols(f"u:{links + 1}")
    force = dynamicsymbols("f")
    m = sp.symbols(f"m:{links + 1}")
    lengths = sp.symbols(f"l:{links}")
    g = sp.Symbol("g")
    t = dynamicsymbols._t
    frame = ReferenceFrame("I")
    origin = Point("O")
    origin.set_vel(frame, 0)
    cart = Point("P0")
    cart.set_pos(origin, q[0] * frame.x)
    cart.set_vel(frame, u[0] * frame.x)
    particles = [Particle("Pa0", cart, m[0])]
    loads = [(cart, force * frame.x - m[0] * g * frame.y)]
    kinematics = [q[0].diff(t) - u[0]]
    points = [cart]
    for i in range(links):
        link = frame.orientnew(f"B{i}", "Axis", [q[i + 1], frame.z])
        link.set_ang_vel(frame, u[i + 1] * frame.z)
        point = points[-1].locatenew(f"P{i + 1}", lengths[i] * link.x)
        point.v2pt_theory(points[-1], frame, link)
        particles.append(Particle(f"Pa{i + 1}", point, m[i + 1]))
        loads.append((point, -m[i + 1] * g * frame.y))
        kinematics.append(q[i + 1].diff(t) - u[i + 1])
        points.append(point)
    kane = KanesMethod(frame, q_ind=q, u_ind=u, kd_eqs=kinematics)
    kane.kanes_equations(particles, loads)
    return kane, q, u, force, list(m) + list(lengths) + [g]


PARAMETERS = [1.0, 0.5, 0.3, 1.2, 0.7, 9.81]


def test_kanes_method_model_rhs_and_jacobian_match_lambdify():
    kane, q, u, force, params = cart_pendulum()
    M, F = kane.mass_matrix_full, kane.forcing_full
    y = sg.placeholder("y", shape=(6,))
    push = sg.placeholder("push", shape=())
    mapping = {**{q[i]: y[i] for i in range(3)}, **{u[i]: y[3 + i] for i in range(3)},
               force: push, **dict(zip(params, PARAMETERS))}
    Mt, Ft = sg.from_sympy(M, mapping), sg.from_sympy(F, mapping)
    assert Mt.shape == (6, 6) and Ft.shape == (6, 1)
    rhs = sg.linalg.solve(Mt, Ft)[:, 0]
    jac = sg.jacobian(rhs, y)

    args = list(q) + list(u) + [force] + params
    mass, forcing = sp.lambdify(args, M), sp.lambdify(args, F)

    def reference(state, f):
        values = list(state) + [f] + PARAMETERS
        return np.linalg.solve(mass(*values), forcing(*values))[:, 0]

    fn = sg.function([y, push], [rhs, jac])
    for state in RNG.uniform(-1.5, 1.5, (3, 6)):
        want = reference(state, 2.0)
        eps = 1e-6
        differences = np.stack([(reference(state + eps * e, 2.0)
                                 - reference(state - eps * e, 2.0)) / (2 * eps)
                                for e in np.eye(6)], axis=1)
        for got_rhs, got_jac in (sg.evaluate([rhs, jac], {y: state, push: 2.0}),
                                 fn(state, 2.0)):
            np.testing.assert_allclose(got_rhs, want, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(got_jac, differences, rtol=1e-6, atol=1e-6)


def test_docs_list_every_composite_and_their_python_blocks_run():
    from symgrad.interop.sympy_composites import COMPOSITES
    text = (pathlib.Path(__file__).resolve().parent.parent / "docs" / "from_sympy.md").read_text()
    table = text[text.index("Written with several ops"):text.index("Not covered")]
    missing = [head.__name__ for head in COMPOSITES if f"`{head.__name__}`" not in table]
    assert missing == []
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 2
    for block in blocks:
        exec(compile(block, "docs/from_sympy.md", "exec"), {})


@pytest.mark.cuda
@pytest.mark.parametrize("target", ["parallel", "cuda"])
def test_composites_compile_on_parallel_and_cuda(target):
    from .helpers import to_host
    expr = FUNCTIONS["model"][0] + sp.besselj(2, x) + sp.Heaviside(x) + sp.acot(x)
    X = sg.placeholder("X", shape=(None,))
    t = sg.from_sympy(expr, {x: X})
    (g,) = sg.gradients(sg.reduce_sum(t), [X])
    pts = np.linspace(-1.5, 3.0, 7)
    want = sg.evaluate([t, g], {X: pts})
    got = sg.function([X], [t, g], target=target)(pts)
    for a, b in zip(got, want):
        np.testing.assert_allclose(to_host(a), b, rtol=1e-12, atol=1e-12)
