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


BUMP = sg.define_op("bump", lambda a, b: a * sp.exp(-b ** 2))

CASES = {  # each: (x, z, s, v) -> list of outputs; run on placeholders and on Variables
    "arithmetic": lambda x, z, s, v: [
        sg.sin(x) * sg.exp(z) + x / (z * z + 1.0) - x ** 3],
    "kinks": lambda x, z, s, v: [
        sg.abs(x) + sg.relu(z) + sg.maximum(x, z) + sg.minimum(x, 0.3)],
    "where": lambda x, z, s, v: [
        sg.where(x > 0, sg.log(sg.abs(x) + 1e-3), x * z)],
    "pow_atan2": lambda x, z, s, v: [
        sg.pow(sg.abs(x) + 0.5, z) + sg.arctan2(x, z + 3.0)],
    "smooth": lambda x, z, s, v: [
        sg.sigmoid(x) + sg.softplus(z) + sg.erf(x) + sg.tanh(z) * sg.cosh(x)],
    "v2_elementwise": lambda x, z, s, v: [
        sg.mul_no_nan(x, z) + sg.div_no_nan(x, z) + sg.xlogy(x, sg.abs(z) + 0.5)
        + sg.hypot(x, z) + sg.logaddexp(x, z) + sg.gelu(x)],
    "composites": lambda x, z, s, v: [
        sg.softmax(x), sg.log_softmax(z, axis=0), sg.reduce_logsumexp(x, axis=1),
        sg.norm(z, axis=0), sg.clip_by_value(x, -0.5, 0.5), sg.reduce_std(x)],
    "reductions": lambda x, z, s, v: [
        sg.reduce_sum(x * z, axis=1), sg.reduce_mean(x, axis=0, keepdims=True),
        sg.reduce_prod(z, axis=1), sg.reduce_prod(x), sg.reduce_max(x, axis=0),
        sg.reduce_min(z * x)],
    "contractions": lambda x, z, s, v: [
        sg.matmul(x, s), x @ v, sg.einsum("ij,kj->ik", x, z), sg.einsum("ii->i", s),
        sg.tensordot(x, s, 1), sg.einsum("ij,jk,k->i", x, s, v)],
    "slicing": lambda x, z, s, v: [
        x[1:, ::2], x[:, 1], z[[2, 0, 2]], sg.gather(z, [1, 1, 0], axis=1),
        sg.reshape(x, (4, 3)), sg.transpose(z), x.T @ z],
    "layout": lambda x, z, s, v: [
        sg.concat([x, z], axis=1), sg.stack([x, z], axis=-1), sg.unstack(x)[1],
        sg.split(z, 2, axis=1)[1], sg.squeeze(sg.expand_dims(x, 0)),
        sg.broadcast_to(v, (3, 4)), sg.tile(x, (2, 1)),
        sg.pad(z, [[1, 0], [0, 2]], constant_values=3.0), sg.reverse(x, axis=1),
        sg.roll(z, 1, axis=0)],
    "band": lambda x, z, s, v: [
        sg.tril(s), sg.triu(s, 1), sg.diag(v), sg.diag_part(s), sg.trace(s)],
    "scans": lambda x, z, s, v: [
        sg.cumsum(x, axis=1), sg.cumprod(z, axis=1), sg.cumprod(x, axis=0, exclusive=True),
        sg.cumprod(z, axis=1, reverse=True),
        sg.cumprod(x, axis=1, exclusive=True, reverse=True),
        sg.cumsum(z, axis=0, exclusive=True, reverse=True)],
    "cast": lambda x, z, s, v: [
        sg.cast(sg.cast(x, "float32") * 2.0, "float64") + sg.cast(sg.floor(z), "float64")
        + sg.stop_gradient(z)],
    "custom_gradient": lambda x, z, s, v: [_clipped_square(x) * z],
    "define_op": lambda x, z, s, v: [BUMP(x, z)],
}


def _feed(seed=17):
    """The same values whatever ran before in this process (xdist's order varies)."""
    rng = np.random.default_rng(seed)
    return {x: rng.uniform(-1.5, 1.5, shape) for x, shape in
            ((X, (3, 4)), (Z, (3, 4)), (S, (4, 4)), (V, (4,)))}


@pytest.mark.parametrize("case", sorted(CASES))
def test_jvp_matches_vjp(case):
    rtol = 1e-5 if case == "cast" else 1e-9  # float32 rounding in "cast"
    assert_identity(CASES[case](X, Z, S, V), [X, Z, S, V], _feed(), rtol=rtol)


def test_jvp_of_gradient_graph_matches_vjp():
    """The gradient graph (getitem_grad, unbroadcast, gather_grad, tile_grad, concat_part,
    diag_fill, prod_others, linrec, shift, expr nodes...) has forward rules too."""
    for cases, rtol in ((sorted(set(CASES) - {"cast"}), 1e-9), (["cast"], 1e-5)):
        ys = [y for case in cases for y in CASES[case](X, Z, S, V)]
        total = sum(sg.reduce_sum(y * y) for y in ys)
        grads = [g for g in sg.gradients(total, [X, Z, S, V]) if g is not None]
        for seed in range(3):       # float32 rounding in "cast", as in test_jvp_matches_vjp
            assert_identity(grads, [X, Z, S, V], _feed(seed), rtol=rtol)


def test_jvp_against_finite_differences():
    feed = _feed()
    ys = [y for case in ("arithmetic", "scans", "contractions") for y in CASES[case](X, Z, S, V)]
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
    assert REGISTRY["custom_gradient"] not in JVP_RULES  # the fallback's own test case


EXAMPLES = [(name, k) for name, op in sorted(REGISTRY.items())
            if op.kind == "structural" and op.public and op.differentiable
            for k in range(len(op.examples))]


@pytest.mark.parametrize("name, k", EXAMPLES)
def test_registry_examples_match_vjp(name, k):
    """Every structural op's declared examples (ops added later included, with a forward
    rule or through the fallback)."""
    ex = REGISTRY[name].examples[k]
    public = getattr(sg, ex.public or name)
    xs = [sg.placeholder(f"r{j}", shape=shape) for j, shape in enumerate(ex.shapes)]
    out = public(list(xs), **ex.kwargs) if ex.listed else public(*xs, **ex.kwargs)
    ys = list(out) if isinstance(out, (list, tuple)) else [out]
    feed = {x: np.random.default_rng(j).uniform(0.5, 1.5, x.shape) for j, x in enumerate(xs)}
    assert_identity(ys, xs, feed)


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
    program = generate(seed, n_ops=12)
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


def test_unknown_dims_and_selected_branches():
    x = sg.placeholder("xu", shape=(None, 3))
    t = sg.placeholder("tu", shape=(None, 3))
    (d,) = sg.jvp([sg.reduce_sum(x * x, axis=1)], [x], [t])
    assert d.shape == (None,)
    np.testing.assert_array_equal(sg.evaluate(d, {x: np.ones((2, 3)), t: np.ones((2, 3))}),
                                  [6.0, 6.0])
    # where() selects the tangent: the infinite/nan tangent of sqrt at 0 and below is not
    # multiplied by 0 (TF's select), on graphs and on the accumulator
    w = sg.placeholder("w", shape=(3,))
    (d,) = sg.jvp([sg.where(w > 0, sg.sqrt(w), 0.0)], [w], [np.ones(3)])
    np.testing.assert_array_equal(sg.evaluate(d, {w: [-1.0, 0.0, 4.0]}), [0.0, 0.0, 0.25])
    v = sg.Variable([-1.0, 0.0, 4.0])
    with np.errstate(all="ignore"), sg.ForwardAccumulator(v, np.ones(3)) as acc:
        y = sg.where(v > 0, sg.sqrt(v), 0.0)
    np.testing.assert_array_equal(acc.jvp(y).numpy(), [0.0, 0.0, 0.25])


# --- compiled functions ----------------------------------------------------------------------
@pytest.mark.parametrize("target", ["cpu", "parallel"])
def test_compiled_jvp_matches_evaluate(target):
    feed = _feed()
    ys = [y for case in ("arithmetic", "reductions", "slicing") for y in CASES[case](X, Z, S, V)]
    if target == "cpu":
        ys += CASES["scans"](X, Z, S, V) + CASES["where"](X, Z, S, V)
    xs = [X, Z, S, V]
    vs = [sg.placeholder(f"t{k}", shape=x.shape) for k, x in enumerate(xs)]
    tangents = sg.jvp(ys, xs, vs)
    compiled = sg.function(xs + vs, tangents, target=target)
    values = [feed[x] for x in xs] + [RNG.standard_normal(x.shape) for x in xs]
    want = sg.evaluate(tangents, dict(zip(xs + vs, values)))
    for a, b in zip(compiled(*values), want):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("seed, target", [(13, "cpu"), (28, "parallel")])
def test_compiled_jvp_of_random_programs(seed, target):
    program = generate(seed, n_ops=16)
    scope = program.namespace()
    xs, arrays = scope["placeholders"](), scope["arrays"]()
    ys = [y for y in scope["fn"](*xs) if y.dtype.kind == "f"]
    pairs = [(x, a) for x, a in zip(xs, arrays) if x.dtype.kind == "f"]
    assert ys and pairs, "pick a seed with float inputs and outputs"
    ts = [sg.placeholder(f"t{k}", shape=x.shape, dtype=x.dtype) for k, (x, _) in
          enumerate(pairs)]
    tangents = sg.jvp(ys, [x for x, _ in pairs], ts)
    values = [np.random.default_rng(seed).standard_normal(a.shape).astype(a.dtype)
              for _, a in pairs]
    feed = {**dict(zip(xs, arrays)), **dict(zip(ts, values))}
    with np.errstate(all="ignore"):
        want = sg.evaluate(tangents, feed)
        got = sg.function(xs + ts, tangents, target=target)(*(arrays + values))
    rtol = 2e-4 if "float32" in program.source() else 1e-9
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-9)


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
    with pytest.raises(LookupError, match=r"sg.jvp.*Gradient explicitly disabled. Reason: no"):
        sg.jvp([sg.prevent_gradient(X * 2.0, "no")], [X], [np.ones((3, 4))])


# --- sg.ForwardAccumulator (eager) ----------------------------------------------------------
def _eager_sides(fn, arrays, seed=0):
    """(<J v, w>, <v, J^T w>) with the accumulator and the tape on Variables."""
    rng = np.random.default_rng(seed)
    variables = [sg.Variable(a, name=f"x{k}") for k, a in enumerate(arrays)]
    floats = [v for v in variables if v.dtype.kind == "f"]
    vs = [rng.standard_normal(v.shape).astype(v.dtype) for v in floats]
    with np.errstate(all="ignore"):
        with sg.GradientTape() as tape:
            with sg.ForwardAccumulator(floats, vs) as acc:
                ys = [y for y in fn(*variables) if y.dtype.kind == "f"]
        ws = [rng.standard_normal(y.shape).astype(y.dtype) for y in ys]
        jv = acc.jvp(ys, unconnected_gradients="zero")
        vj = tape.gradient(ys, floats, output_gradients=ws)
    return _dot([np.asarray(t) for t in jv], ws), _dot(
        [None if g is None else np.asarray(g) for g in vj], vs), jv


@pytest.mark.parametrize("case", sorted(CASES))
def test_accumulator_matches_tape_and_graph(case):
    feed = _feed()
    arrays = [feed[X], feed[Z], feed[S], feed[V]]
    lhs, rhs, jv = _eager_sides(CASES[case], arrays)
    assert np.isclose(lhs, rhs, rtol=1e-5 if case == "cast" else 1e-9, atol=1e-9)
    rng = np.random.default_rng(0)  # the same tangents as _eager_sides
    vs = [rng.standard_normal(a.shape) for a in arrays]
    graph = sg.evaluate(sg.jvp(CASES[case](X, Z, S, V), [X, Z, S, V], vs), feed)
    for a, b in zip(jv, graph):
        np.testing.assert_allclose(np.asarray(a), b, rtol=1e-5 if case == "cast" else 1e-9,
                                   atol=1e-12)


@pytest.mark.parametrize("seed", range(12))
def test_accumulator_matches_tape_on_random_programs(seed):
    program = generate(seed, n_ops=12)
    scope = program.namespace()
    if not any(a.dtype.kind == "f" for a in scope["arrays"]()):
        pytest.skip("no float input")
    lhs, rhs, _ = _eager_sides(scope["fn"], scope["arrays"](), seed)
    if not (np.isfinite(lhs) and np.isfinite(rhs)):
        assert np.isfinite(lhs) == np.isfinite(rhs), (lhs, rhs)
        return
    rtol = 2e-4 if "float32" in program.source() else 1e-7
    assert np.isclose(lhs, rhs, rtol=rtol, atol=1e-7), (lhs, rhs, program.source())


def _eager_loss(x):
    return sg.reduce_sum(sg.sin(x) * sg.cumprod(x)) + sg.reduce_logsumexp(x * x)


def _dense_hessian(value):
    x = sg.placeholder("xh", shape=value.shape)
    (h,) = sg.hessians(_eager_loss(x), x)
    return sg.evaluate(h, {x: value})


def test_nested_accumulators_give_hessian_products():
    value, u, v = _value(4), RNG.standard_normal(4), RNG.standard_normal(4)
    x = sg.Variable(value)
    with sg.ForwardAccumulator(x, v) as outer:
        with sg.ForwardAccumulator(x, u) as inner:
            y = _eager_loss(x)
        first = inner.jvp(y)
    assert outer.jvp(y) is not None
    assert inner.jvp(outer.jvp(y)) is None  # inner never sees the outer's tangents
    np.testing.assert_allclose(float(outer.jvp(first)), u @ _dense_hessian(value) @ v,
                               rtol=1e-10)


def test_forward_over_backward_and_backward_over_forward():
    value, v = _value(4), RNG.standard_normal(4)
    dense = _dense_hessian(value)
    x = sg.Variable(value)
    with sg.ForwardAccumulator(x, v) as acc:  # the jvp of the tape's gradient
        with sg.GradientTape() as tape:
            y = _eager_loss(x)
        grad = tape.gradient(y, x)
    np.testing.assert_allclose(acc.jvp(grad).numpy(), dense @ v, rtol=1e-10)
    with sg.GradientTape() as tape:  # the gradient of the jvp
        with sg.ForwardAccumulator(x, v) as acc:
            y = _eager_loss(x)
        tangent = acc.jvp(y)
    np.testing.assert_allclose(tape.gradient(tangent, x).numpy(), dense @ v, rtol=1e-10)


def test_accumulator_watches_only_its_primals_inside():
    x, z = sg.Variable([1.0, 2.0]), sg.Variable([3.0, 4.0])
    before = x * 2.0
    with sg.ForwardAccumulator(x, [1.0, 1.0]) as acc:
        y = x * z
        w = z * 2.0
        n = sg.cast(x, "int64")
    after = x * 3.0
    np.testing.assert_array_equal(acc.jvp(y).numpy(), [3.0, 4.0])
    np.testing.assert_array_equal(acc.jvp(x).numpy(), [1.0, 1.0])
    assert acc.jvp(before) is None and acc.jvp(after) is None and acc.jvp(w) is None
    assert acc.jvp(n) is None
    np.testing.assert_array_equal(acc.jvp([w], unconnected_gradients="zero")[0].numpy(),
                                  [0.0, 0.0])
    with pytest.raises(sg.UnconnectedGradientError):
        acc.jvp(w, unconnected_gradients="raise")


def test_accumulator_on_eager_tensors_and_custom_gradient():
    t = sg.Variable([0.5, 2.0]) * 1.0  # an eager tensor, not a Variable
    with sg.ForwardAccumulator(t, np.array([1.0, 1.0])) as acc:
        y = _clipped_square(t)
    np.testing.assert_allclose(acc.jvp(y).numpy(), [1.0, 2.0])  # grad_fn: 2 min(t, 1)


def test_accumulator_errors():
    x = sg.Variable([1.0, 2.0], name="x")
    with pytest.raises(ValueError, match=r"sg.ForwardAccumulator: tangents\[0\] has shape "
                                         r"\(3,\) but primals\[0\] 'x' has shape \(2,\)"):
        sg.ForwardAccumulator(x, np.ones(3))
    with pytest.raises(TypeError, match="float primals"):
        sg.ForwardAccumulator(sg.Variable([1, 2]), [1, 1])
    with pytest.raises(TypeError, match="symbolic Tensor"):
        sg.ForwardAccumulator(X, np.ones((3, 4)))
    with pytest.raises(ValueError, match="2 tangents for 1 primals"):
        sg.ForwardAccumulator([x], [np.ones(2), np.ones(2)])
    acc = sg.ForwardAccumulator(x, [1.0, 0.0])
    with acc:
        with pytest.raises(sg.TapeError, match="already active"):
            acc.__enter__()
    with pytest.raises(LookupError, match="Gradient explicitly disabled"):
        with sg.ForwardAccumulator(x, [1.0, 0.0]):
            sg.prevent_gradient(x * 2.0, "no")


def test_every_differentiable_elementwise_op_matches_vjp():
    """Registry-driven: each public elementwise op on inputs in its test domain, on graphs
    (sympy partials) and with the accumulator (its vjp rule)."""
    from symgrad.testing_fuzz import elementwise_menu

    checked = 0
    for op, n, kinds in elementwise_menu():
        if not op.differentiable or ("f",) * n not in kinds:
            continue
        low, high = op.domain
        arrays = [np.random.default_rng(k).uniform(low, high, (3,)) for k in range(n)]
        xs = [sg.placeholder(f"e{k}", shape=(3,)) for k in range(n)]
        ys = [getattr(sg, op.name)(*xs)]
        lhs, rhs = identity_sides(ys, xs, dict(zip(xs, arrays)))
        assert np.isclose(lhs, rhs, rtol=1e-9, atol=1e-9), op.name
        lhs, rhs, _ = _eager_sides(lambda *a: [getattr(sg, op.name)(*a)], arrays)
        assert np.isclose(lhs, rhs, rtol=1e-9, atol=1e-9), op.name
        checked += 1
    assert checked > 50


def test_docs_page_examples_run():
    from tests.test_docs import python_blocks

    blocks = python_blocks("docs/jacobians.md")   # forward mode is a section of it now
    assert len(blocks) >= 3
    namespace: dict = {"__name__": "__docs__"}
    for line, code in blocks:
        exec(compile(code, f"docs/jacobians.md:{line}", "exec"), namespace)  # noqa: S102


@pytest.mark.cuda
def test_cuda_target_hvp_and_jvp():
    """target="cuda" (the simulator without a GPU): tiny sizes."""
    import os

    if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
        from numba import cuda
        if not cuda.is_available():
            pytest.skip("no GPU and NUMBA_ENABLE_CUDASIM is not 1")
    x = sg.placeholder("xc", shape=(8,))
    v = sg.placeholder("vc", shape=(8,))
    f = _rosenbrock(x) + sg.reduce_max(sg.sin(x))
    outputs = [sg.hvp(f, x, v)] + sg.jvp([sg.cumprod(x) * sg.exp(x)], [x], [v])
    value, direction = _value(8), RNG.standard_normal(8)
    got = sg.function([x, v], outputs, target="cuda")(value, direction)
    want = sg.evaluate(outputs, {x: value, v: direction})
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
