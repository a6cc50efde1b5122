"""Forward mode: ``sg.jvp``, ``sg.hvp`` and ``sg.ForwardAccumulator``.

The main check is the dot-product identity ``<J v, w> = <v, J^T w>`` between forward mode
and ``sg.gradients`` (reverse mode), on hand-written graphs of every op family and on the
fuzzer's random programs; then finite differences, dense Hessians, second order, compiled
functions and the errors.
"""

import numpy as np
import pytest
import sympy as sp

import symgrad as sg
from symgrad.ops.jvp import JVP_RULES
from symgrad.ops.registry import REGISTRY
from symgrad.testing_fuzz import generate

RNG = np.random.default_rng(17)


def _value(shape, low=-1.5, high=1.5):
    return RNG.uniform(low, high, shape)


def _dot(values, weights) -> float:
    return float(sum(np.sum(np.asarray(a, np.float64) * np.asarray(b, np.float64))
                     for a, b in zip(values, weights) if a is not None))


def identity_sides(ys, xs, feed, seed=0):
    """(<J v, w>, <v, J^T w>) with random v and w."""
    rng = np.random.default_rng(seed)
    shapes = [np.shape(v) for v in sg.evaluate(list(ys), feed)]
    vs = [rng.standard_normal(np.shape(feed[x])).astype(x.dtype) for x in xs]
    ws = [rng.standard_normal(s).astype(y.dtype) for s, y in zip(shapes, ys)]
    forward = sg.jvp(ys, xs, vs)
    reverse = sg.gradients(ys, xs, grad_ys=ws)
    wanted = [g for g in reverse if g is not None]
    with np.errstate(all="ignore"):
        values = sg.evaluate(forward + wanted, feed)
    jv, it = values[:len(ys)], iter(values[len(ys):])
    vj = [None if g is None else next(it) for g in reverse]
    return _dot(jv, ws), _dot(vj, vs)


def assert_identity(ys, xs, feed, rtol=1e-9):
    lhs, rhs = identity_sides(ys, xs, feed)
    assert np.isclose(lhs, rhs, rtol=rtol, atol=1e-9), (lhs, rhs)


# --- hand-written graphs: one per op family ------------------------------------------------
X = sg.placeholder("x", shape=(3, 4))
Z = sg.placeholder("z", shape=(3, 4))
S = sg.placeholder("s", shape=(4, 4))
V = sg.placeholder("v", shape=(4,))


@sg.custom_gradient
def _clipped_square(x):
    def grad(upstream):
        return upstream * 2.0 * sg.minimum(x, 1.0)
    return x * x, grad


CASES = {
    "arithmetic": lambda: [sg.sin(X) * sg.exp(Z) + X / (Z * Z + 1.0) - X ** 3],
    "kinks": lambda: [sg.abs(X) + sg.relu(Z) + sg.maximum(X, Z) + sg.minimum(X, 0.3)],
    "where": lambda: [sg.where(X > 0, sg.log(sg.abs(X) + 1e-3), X * Z)],
    "pow_atan2": lambda: [sg.pow(sg.abs(X) + 0.5, Z) + sg.arctan2(X, Z + 3.0)],
    "smooth": lambda: [sg.sigmoid(X) + sg.softplus(Z) + sg.erf(X) + sg.tanh(Z) * sg.cosh(X)],
    "v2_elementwise": lambda: [sg.mul_no_nan(X, Z) + sg.div_no_nan(X, Z) + sg.xlogy(
        X, sg.abs(Z) + 0.5) + sg.hypot(X, Z) + sg.logaddexp(X, Z) + sg.gelu(X)],
    "composites": lambda: [sg.softmax(X), sg.log_softmax(Z, axis=0),
                           sg.reduce_logsumexp(X, axis=1), sg.norm(Z, axis=0),
                           sg.clip_by_value(X, -0.5, 0.5), sg.reduce_std(X)],
    "reductions": lambda: [sg.reduce_sum(X * Z, axis=1), sg.reduce_mean(X, axis=0,
                                                                          keepdims=True),
                           sg.reduce_prod(Z, axis=1), sg.reduce_prod(X),
                           sg.reduce_max(X, axis=0), sg.reduce_min(Z * X)],
    "contractions": lambda: [sg.matmul(X, S), X @ V, sg.einsum("ij,kj->ik", X, Z),
                             sg.einsum("ii->i", S), sg.tensordot(X, S, 1),
                             sg.einsum("ij,jk,k->i", X, S, V)],
    "slicing": lambda: [X[1:, ::2], X[:, 1], Z[[2, 0, 2]], sg.gather(Z, [1, 1, 0], axis=1),
                        sg.reshape(X, (4, 3)), sg.transpose(Z), X.T @ Z],
    "layout": lambda: [sg.concat([X, Z], axis=1), sg.stack([X, Z], axis=-1),
                       sg.unstack(X)[1], sg.split(Z, 2, axis=1)[1],
                       sg.squeeze(sg.expand_dims(X, 0)), sg.broadcast_to(V, (3, 4)),
                       sg.tile(X, (2, 1)), sg.pad(Z, [[1, 0], [0, 2]], constant_values=3.0),
                       sg.reverse(X, axis=1), sg.roll(Z, 1, axis=0)],
    "band": lambda: [sg.tril(S), sg.triu(S, 1), sg.diag(V), sg.diag_part(S), sg.trace(S)],
    "scans": lambda: [sg.cumsum(X, axis=1), sg.cumprod(Z, axis=1),
                      sg.cumprod(X, axis=0, exclusive=True),
                      sg.cumprod(Z, axis=1, reverse=True),
                      sg.cumprod(X, axis=1, exclusive=True, reverse=True),
                      sg.cumsum(Z, axis=0, exclusive=True, reverse=True)],
    "cast": lambda: [sg.cast(sg.cast(X, "float32") * 2.0, "float64") + sg.cast(
        sg.floor(Z), "float64") + sg.stop_gradient(Z)],
    "custom_gradient": lambda: [_clipped_square(X) * Z],
    "define_op": lambda: [sg.define_op("bump", lambda a, b: a * sp.exp(-b ** 2))(X, Z)],
}


def _feed():
    return {X: _value((3, 4)), Z: _value((3, 4)), S: _value((4, 4)), V: _value((4,))}


@pytest.mark.parametrize("case", sorted(CASES))
def test_jvp_matches_vjp(case):
    assert_identity(CASES[case](), [X, Z, S, V], _feed(), rtol=1e-5 if case == "cast" else 1e-9)


def test_jvp_of_gradient_graph_matches_vjp():
    """The gradient graph (getitem_grad, unbroadcast, gather_grad, tile_grad, concat_part,
    diag_fill, prod_others, linrec, shift, expr nodes...) has forward rules too."""
    ys = [y for case in CASES.values() for y in case()]
    total = sum(sg.reduce_sum(y * y) for y in ys)
    grads = sg.gradients(total, [X, Z, S, V])
    assert_identity(grads, [X, Z, S, V], _feed(), rtol=1e-8)


def test_jvp_against_finite_differences():
    feed = _feed()
    ys = CASES["arithmetic"]() + CASES["scans"]() + CASES["contractions"]()
    xs = [X, Z, S, V]
    vs = [RNG.standard_normal(np.shape(feed[x])) for x in xs]
    eps = 1e-6
    plus = sg.evaluate(ys, {x: feed[x] + eps * v for x, v in zip(xs, vs)})
    minus = sg.evaluate(ys, {x: feed[x] - eps * v for x, v in zip(xs, vs)})
    got = sg.evaluate(sg.jvp(ys, xs, vs), feed)
    for a, b, g in zip(plus, minus, got):
        np.testing.assert_allclose(g, (a - b) / (2 * eps), rtol=1e-5, atol=1e-6)


def test_every_differentiable_op_has_a_forward_rule():
    """A rule in ops/jvp.py, the elementwise partials, or the transposition fallback (which
    needs the op's vjp rule)."""
    missing = [name for name, op in REGISTRY.items()
               if op.kind == "structural" and op.differentiable
               and op not in JVP_RULES and op.vjp is None]
    assert missing == []
    fallback = sorted(name for name, op in REGISTRY.items() if op.kind == "structural"
                      and op.differentiable and op not in JVP_RULES)
    assert fallback == ["custom_gradient"]


def test_transposition_fallback_covers_ops_without_rules(monkeypatch):
    """With the rules of matmul, cumprod and gather removed, the fallback gives the same."""
    feed = _feed()
    ys = [sg.matmul(X, S), sg.cumprod(Z, axis=1), sg.gather(Z, [2, 0])]
    before = sg.evaluate(sg.jvp(ys, [X, Z, S], [feed[X], feed[Z], feed[S]]), feed)
    for name in ("matmul", "cumprod", "gather"):
        monkeypatch.delitem(JVP_RULES, REGISTRY[name])
    after = sg.evaluate(sg.jvp(ys, [X, Z, S], [feed[X], feed[Z], feed[S]]), feed)
    for a, b in zip(before, after):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    assert_identity(ys, [X, Z, S], feed)


@pytest.mark.parametrize("seed", range(24))
def test_jvp_matches_vjp_on_random_programs(seed):
    program = generate(seed)
    scope = program.namespace()
    xs, arrays = scope["placeholders"](), scope["arrays"]()
    ys = [y for y in scope["fn"](*xs) if y.dtype.kind == "f"]
    float_xs = [x for x in xs if x.dtype.kind == "f"]
    if not ys or not float_xs:
        pytest.skip("no float output or input")
    feed = dict(zip(xs, arrays))
    lhs, rhs = identity_sides(ys, float_xs, feed, seed)
    if not (np.isfinite(lhs) and np.isfinite(rhs)):
        assert np.isfinite(lhs) == np.isfinite(rhs), (lhs, rhs)
        return
    rtol = 2e-4 if "float32" in program.source() else 1e-7
    assert np.isclose(lhs, rhs, rtol=rtol, atol=1e-7), (lhs, rhs, program.source())


# --- Hessian-vector products and second order ---------------------------------------------
def _rosenbrock(x):
    return sg.reduce_sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def test_hvp_matches_dense_hessian():
    x = sg.placeholder("x", shape=(6,))
    y = _rosenbrock(x) + sg.reduce_prod(sg.sin(x)) + sg.reduce_max(x * x)
    (h,) = sg.hessians(y, x)
    value, v = _value(6), RNG.standard_normal(6)
    got, dense = sg.evaluate([sg.hvp(y, x, v), h], {x: value})
    np.testing.assert_allclose(got, dense @ v, rtol=1e-10, atol=1e-10)


def test_hvp_of_rosenbrock_matches_scipy():
    from scipy.optimize import rosen_hess_prod

    x = sg.placeholder("x", shape=(50,))
    value, v = _value(50), RNG.standard_normal(50)
    got = sg.evaluate(sg.hvp(_rosenbrock(x), x, v), {x: value})
    np.testing.assert_allclose(got, rosen_hess_prod(value, v), rtol=1e-10)


def test_hvp_unconnected_is_zeros():
    x = sg.placeholder("x", shape=(2,))
    np.testing.assert_array_equal(sg.evaluate(sg.hvp(sg.constant(1.0), x, [1.0, 2.0]),
                                              {x: [1.0, 1.0]}), [0.0, 0.0])
    linear = sg.evaluate(sg.hvp(sg.reduce_sum(3.0 * x), x, [1.0, 2.0]), {x: [1.0, 1.0]})
    np.testing.assert_array_equal(linear, [0.0, 0.0])


def test_second_order_jvp_of_jvp_and_gradient_of_jvp():
    x = sg.placeholder("x", shape=(4,))
    y = sg.reduce_sum(sg.sin(x) * sg.cumprod(x)) + sg.reduce_logsumexp(x * x)
    (h,) = sg.hessians(y, x)
    u, v, value = RNG.standard_normal(4), RNG.standard_normal(4), _value(4)
    (first,) = sg.jvp([y], [x], [u])
    (second,) = sg.jvp([first], [x], [v])
    (grad_of_jvp,) = sg.gradients(first, x)
    got_second, got_grad, dense = sg.evaluate([second, grad_of_jvp, h], {x: value})
    np.testing.assert_allclose(got_second, u @ dense @ v, rtol=1e-10)
    np.testing.assert_allclose(got_grad, dense @ u, rtol=1e-10)


def test_tangent_of_an_intermediate_x_adds_to_the_flowing_one():
    x = sg.placeholder("x", shape=())
    b = x * x
    (t,) = sg.jvp([b * 3.0], [x, b], [1.0, 10.0])
    assert float(sg.evaluate(t, {x: 2.0})) == pytest.approx(3.0 * (4.0 + 10.0))


# --- compiled functions ----------------------------------------------------------------------
@pytest.mark.parametrize("target", ["cpu", "parallel"])
def test_compiled_jvp_matches_evaluate(target):
    feed = _feed()
    ys = CASES["arithmetic"]() + CASES["reductions"]() + CASES["slicing"]()
    if target == "cpu":
        ys += CASES["scans"]() + CASES["where"]()
    xs = [X, Z, S, V]
    vs = [sg.placeholder(f"t{k}", shape=x.shape) for k, x in enumerate(xs)]
    tangents = sg.jvp(ys, xs, vs)
    compiled = sg.function(xs + vs, tangents, target=target)
    values = [feed[x] for x in xs] + [RNG.standard_normal(x.shape) for x in xs]
    want = sg.evaluate(tangents, dict(zip(xs + vs, values)))
    for a, b in zip(compiled(*values), want):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


# --- errors and policies ------------------------------------------------------------------------
def test_tangent_shape_mismatch_is_a_value_error():
    with pytest.raises(ValueError, match=r"sg.jvp: tangents\[0\] has shape \(4,\) but xs\[0\] "
                                         r"'x'.*shape \(3, 4\)"):
        sg.jvp([X * 2.0], [X], [np.ones(4)])
    with pytest.raises(ValueError, match="exactly its primal's shape"):
        sg.jvp([X * 2.0], [X], [sg.placeholder("t", shape=(1, 4))])


def test_non_float_primal_is_a_type_error():
    n = sg.placeholder("n", shape=(2,), dtype="int64")
    with pytest.raises(TypeError, match=r"sg.jvp: xs\[0\] 'n'.*not a float"):
        sg.jvp([sg.cast(n, "float64")], [n], [np.ones(2)])
    with pytest.raises(TypeError, match="sg.hvp"):
        sg.hvp(sg.cast(n, "float64"), n, np.ones(2))


def test_tangent_count_and_types():
    with pytest.raises(ValueError, match="2 tangents for 1 xs"):
        sg.jvp([X], [X], [np.ones((3, 4))] * 2)
    with pytest.raises(TypeError, match=r"ys\[0\]"):
        sg.jvp([np.ones(2)], [X], [np.ones((3, 4))])


def test_unconnected_policies():
    y = sg.reduce_sum(Z)
    (zero,) = sg.jvp([y], [X], [np.ones((3, 4))])
    assert float(sg.evaluate(zero, {Z: np.ones((3, 4))})) == 0.0
    assert sg.jvp([y], [X], [np.ones((3, 4))], unconnected_gradients="none") == [None]
    with pytest.raises(sg.UnconnectedGradientError, match="does not depend"):
        sg.jvp([y], [X], [np.ones((3, 4))], unconnected_gradients="raise")
    (stopped,) = sg.jvp([sg.stop_gradient(X) * 2.0], [X], [np.ones((3, 4))],
                        unconnected_gradients="none")
    assert stopped is None


def test_prevent_gradient_raises_lookup_error():
    with pytest.raises(LookupError, match="sg.jvp: Gradient explicitly disabled. Reason: no"):
        sg.jvp([sg.prevent_gradient(X * 2.0, "no")], [X], [np.ones((3, 4))])
