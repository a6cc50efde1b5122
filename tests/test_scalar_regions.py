"""Small-state code compiled as one scalar kernel (issue 25 item 1, compile/scalar,
docs/scalar_code.md): values and gradients against ``sg.evaluate``, finite differences
and the tape; what ``f.explain()`` says; small and large tensors in one function; seeded
random small graphs; the threshold."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
from symgrad.compile.scalar import SCALAR_KERNEL, settings

U0 = np.array([1.0, 0.5])
P = np.array([1.5, 1.0, 3.0, 1.0])


def _rhs(p, u):
    return sg.stack([p[0] * u[0] - p[1] * u[0] * u[1], p[2] * u[0] * u[1] - p[3] * u[1]])


def _rk4(u, p, steps, dt=0.01):
    for _ in range(steps):
        k1 = _rhs(p, u)
        k2 = _rhs(p, u + dt / 2 * k1)
        k3 = _rhs(p, u + dt / 2 * k2)
        k4 = _rhs(p, u + dt * k3)
        u = u + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return u


def _loss(u):
    return sg.reduce_sum(u * u)


def _lv(steps):
    u0 = sg.placeholder("u0", shape=(2,))
    p = sg.placeholder("p", shape=(4,))
    u = _rk4(u0, p, steps)
    loss = _loss(u)
    return [u0, p], [loss, u] + sg.gradients(loss, [u0, p])


def _scalar_kernels(f) -> int:
    return sum(getattr(u, "node", None) is not None and u.node.op is SCALAR_KERNEL
               for u in f.plan.units)


def _numpy_rk4(u, p, steps, dt=0.01):
    def rhs(u):
        return np.array([p[0] * u[0] - p[1] * u[0] * u[1], p[2] * u[0] * u[1] - p[3] * u[1]])
    for _ in range(steps):
        k1 = rhs(u)
        k2 = rhs(u + dt / 2 * k1)
        k3 = rhs(u + dt / 2 * k2)
        k4 = rhs(u + dt * k3)
        u = u + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return u


@pytest.mark.parametrize("steps", [1, 2, 10])
def test_rk4_lotka_volterra_is_one_scalar_kernel(steps):
    inputs, outputs = _lv(steps)
    f = sg.function(inputs, outputs)
    loss, u, gu, gp = f(U0, P)
    ref = sg.evaluate(outputs, {inputs[0]: U0, inputs[1]: P})
    for got, want in zip([loss, u, gu, gp], ref):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    # an independent value: the same steps in numpy
    np.testing.assert_allclose(u, _numpy_rk4(U0, P, steps), rtol=1e-12)
    # gradients by central differences of the numpy steps
    def numpy_loss(u0, p):
        return float(np.sum(_numpy_rk4(u0, p, steps) ** 2))
    h = 1e-6
    for x, g, which in ((U0, gu, 0), (P, gp, 1)):
        for k in range(x.size):
            e = np.zeros_like(x)
            e[k] = h
            args_hi = [U0 + e, P] if which == 0 else [U0, P + e]
            args_lo = [U0 - e, P] if which == 0 else [U0, P - e]
            fd = (numpy_loss(*args_hi) - numpy_loss(*args_lo)) / (2 * h)
            assert abs(g[k] - fd) < 1e-6 * max(1.0, abs(fd))
    # the plan: one scalar kernel, nothing between kernels
    assert _scalar_kernels(f) == 1 and f.plan.kernels == []
    head = f.explain().splitlines()[0]
    assert "0 kernels, 1 scalar kernel, 0 steps" in head
    assert "  cost: scalar ~" in f.explain()      # the cost model's numbers
    decided = {r.name: r.decided for r in f.passes}
    assert decided["scalar"].startswith("1 scalar kernel of ")
    assert "_s" in f.source and "llvm_body_" in f.source   # one straight-line function


def test_rk4_gradients_agree_with_the_tape():
    steps = 2
    inputs, outputs = _lv(steps)
    f = sg.function(inputs, outputs)
    _, _, gu, gp = f(U0, P)
    u0 = sg.Variable(U0.copy())
    p = sg.Variable(P.copy())
    with sg.GradientTape() as tape:
        loss = _loss(_rk4(u0, p, steps))
    tu, tp = tape.gradient(loss, [u0, p])
    np.testing.assert_allclose(gu, np.asarray(tu), rtol=1e-12)
    np.testing.assert_allclose(gp, np.asarray(tp), rtol=1e-12)


def test_calls_do_not_modify_inputs_and_return_fresh_arrays():
    inputs, outputs = _lv(1)
    f = sg.function(inputs, outputs)
    u0, p = U0.copy(), P.copy()
    first = f(u0, p)
    assert np.array_equal(u0, U0) and np.array_equal(p, P)
    first[1][:] = 0.0
    second = f(u0, p)
    assert not np.array_equal(second[1], first[1])


def test_small_and_large_tensors_in_one_function():
    """A small region (coefficients from a 3-vector) feeds a large loop, whose sum feeds
    a second small region."""
    c = sg.placeholder("c", shape=(3,))
    x = sg.placeholder("x", shape=(1000,))
    coef = sg.stack([c[0] * c[1], c[2] - c[0], sg.sin(c[1])])
    big = coef[0] * sg.sin(x) + coef[1] * x * x + coef[2]
    s = sg.reduce_sum(big * big)
    out = sg.stack([s * c[0], s + c[2]])
    loss = sg.reduce_sum(out * out)
    outputs = [loss, out] + sg.gradients(loss, [c, x])
    f = sg.function([c, x], outputs)
    rng = np.random.default_rng(3)
    cv, xv = rng.normal(size=3), rng.normal(size=1000) * 0.1
    got = f(cv, xv)
    ref = sg.evaluate(outputs, {c: cv, x: xv})
    for a, b in zip(got, ref):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    assert _scalar_kernels(f) >= 1 and len(f.plan.kernels) >= 1
    text = f.explain()
    assert "scalar kernel 0" in text and "kernel 0  loop (1000,)" in text


def _random_graph(rng, depth: int):
    """A small graph over a (2, 3) and a (3,) placeholder through getitem, stack, concat,
    reshape, transpose, expand_dims, matmul, reductions and elementwise ops."""
    a = sg.placeholder("a", shape=(2, 3))
    b = sg.placeholder("b", shape=(3,))
    pool = [a, b]
    for _ in range(depth):
        x = pool[rng.integers(len(pool))]
        y = pool[rng.integers(len(pool))]
        choice = rng.integers(9)
        if choice == 0 and x.shape:
            new = x[int(rng.integers(x.shape[0]))] * sg.reduce_sum(y)
        elif choice == 1:
            new = sg.stack([sg.reduce_sum(x), sg.reduce_sum(y) * 2.0, sg.reduce_sum(x * x)])
        elif choice == 2 and len(x.shape) == 2:
            new = sg.concat([x, sg.reshape(sg.sin(x), x.shape)], axis=0)
        elif choice == 3 and len(x.shape) == 2:
            new = sg.matmul(x, sg.transpose(x)) + 0.5
        elif choice == 4 and x.shape:
            new = sg.reshape(sg.tanh(x), (-1,))
        elif choice == 5 and len(x.shape) == 1:
            new = sg.expand_dims(x, 0) * sg.expand_dims(x, 1)
        elif choice == 6 and len(x.shape) == 2:
            new = sg.reduce_sum(x * sg.cos(x), axis=1)
        elif choice == 7 and x.shape and x.shape[-1] >= 2:
            new = x[..., 1:] - x[..., :-1] * 3.0
        else:
            new = sg.exp(-x * x) + sg.reduce_mean(y)
        pool.append(new)
    loss = sg.reduce_sum(a)
    for t in pool[2:]:
        loss = loss + sg.reduce_sum(t * t)
    return [a, b], [loss] + sg.gradients(loss, [a, b]) + pool[2:]


@pytest.mark.parametrize("seed", range(6))
def test_random_small_graphs_match_evaluate(seed):
    rng = np.random.default_rng(seed)
    inputs, outputs = _random_graph(rng, 6)
    f = sg.function(inputs, outputs)
    feeds = [rng.normal(size=(2, 3)) * 0.5, rng.normal(size=(3,)) * 0.5]
    got = f(*feeds)
    ref = sg.evaluate(outputs, dict(zip(inputs, feeds)))
    assert len(got) == len(ref)
    for a, b in zip(got, ref):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    assert _scalar_kernels(f) >= 1


def test_nan_and_inf_as_evaluate():
    """A zero gradient fill times an infinite value stays NaN (exact zeros are never
    folded into products)."""
    u = sg.placeholder("u", shape=(2,))
    y = sg.stack([u[0] * u[1], sg.log(u[1]) - u[0]])
    loss = sg.reduce_sum(y * y)
    outputs = [loss, y] + sg.gradients(loss, [u])
    f = sg.function([u], outputs)
    assert _scalar_kernels(f) == 1
    for value in ([np.inf, 1.0], [1.0, 0.0], [np.nan, 2.0], [1.0, -1.0]):
        v = np.array(value)
        got = f(v)
        ref = sg.evaluate(outputs, {u: v})
        for a, b in zip(got, ref):
            np.testing.assert_allclose(a, b, rtol=1e-12, equal_nan=True)


def test_above_the_threshold_the_loop_plan_is_used(monkeypatch):
    inputs, outputs = _lv(1)
    ref = sg.evaluate(outputs, {inputs[0]: U0, inputs[1]: P})
    monkeypatch.setattr(settings, "SCALAR_ELEMENTS", 1)   # u0 has 2 elements, p 4
    f = sg.function(inputs, outputs)
    assert _scalar_kernels(f) == 0 and len(f.plan.kernels) > 1
    assert "scalar kernel" not in f.explain()
    for a, b in zip(f(U0, P), ref):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    monkeypatch.setattr(settings, "SCALAR_ELEMENTS", 3)   # the state per element, p not
    f = sg.function(inputs, outputs)
    assert _scalar_kernels(f) >= 1 and len(f.plan.kernels) >= 1
    assert all(n.shape != (4,) for r in f.plan.units if getattr(r, "node", None) is not None
               and r.node.op is SCALAR_KERNEL for n in r.node.attrs["region"].members)
    for a, b in zip(f(U0, P), ref):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    monkeypatch.setattr(settings, "SCALAR_ELEMENTS", 64)
    assert _scalar_kernels(sg.function(inputs, outputs)) == 1


def test_the_old_threshold_can_be_forced(monkeypatch):
    """``SCALAR_ELEMENTS = 64`` is the rule before the cost model (65 elements: loops);
    by cost the same graph is one scalar kernel (tests/test_scalar_cost.py)."""
    x = sg.placeholder("x", shape=(65,))
    y = sg.reduce_sum(sg.stack([x[1:] * x[:-1], x[:-1]]))
    outputs = [y] + sg.gradients(y, [x])
    assert _scalar_kernels(sg.function([x], outputs)) == 1
    monkeypatch.setattr(settings, "SCALAR_ELEMENTS", 64)
    f = sg.function([x], outputs)
    assert _scalar_kernels(f) == 0
    x8 = sg.placeholder("x", shape=(8, 8))   # 64 elements: per element
    y8 = sg.reduce_sum(sg.matmul(x8, sg.transpose(x8))[1:])
    f8 = sg.function([x8], [y8] + sg.gradients(y8, [x8]))
    assert _scalar_kernels(f8) == 1
    v = np.random.default_rng(0).normal(size=(8, 8))
    for a, b in zip(f8(v), sg.evaluate([y8] + sg.gradients(y8, [x8]), {x8: v})):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_turned_off_and_unknown_shapes_keep_the_loop_plan(monkeypatch):
    u = sg.placeholder("u", shape=(None,))
    y = sg.reduce_sum(sg.stack([u[0] * u[1], u[1] - u[0]]))
    assert _scalar_kernels(sg.function([u], y)) == 0
    inputs, outputs = _lv(1)
    monkeypatch.setattr(settings, "ENABLED", False)
    f = sg.function(inputs, outputs)
    assert _scalar_kernels(f) == 0
    assert {r.name: r.decided for r in f.passes}["scalar"] == "none: turned off"


def test_conditions_bool_and_integer_inputs():
    """where/maximum/relu forms (comparisons inside a statement), a bool input read as a
    condition and an integer input read through a cast."""
    u = sg.placeholder("u", shape=(3,))
    m = sg.placeholder("m", shape=(3,), dtype="bool")
    k = sg.placeholder("k", shape=(3,), dtype="int64")
    kf = sg.cast(k, "float64")
    y = sg.stack([sg.maximum(u[0], u[1]) * kf[2], sg.relu(u[2] - u[0]), u[1] * kf[0]])
    z = sg.where(m, y * y, sg.abs(y)) + sg.concat([u[1:], u[:1]], axis=0)
    loss = sg.reduce_sum(z * sg.sin(z))
    outputs = [loss, z] + sg.gradients(loss, [u])
    f = sg.function([u, m, k], outputs)
    assert _scalar_kernels(f) >= 1
    rng = np.random.default_rng(7)
    for _ in range(4):
        feeds = [rng.normal(size=3), rng.random(3) > 0.5, rng.integers(-3, 4, size=3)]
        got = f(*feeds)
        ref = sg.evaluate(outputs, dict(zip([u, m, k], feeds)))
        for a, b in zip(got, ref):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_every_structural_rule_against_evaluate():
    """einsum (2 and 3 operands), tensordot, tile and its gradient, reduce_mean, split,
    reverse, concat, squeeze, expand_dims, roll: one scalar kernel, as evaluate."""
    a = sg.placeholder("a", shape=(2, 3))
    b = sg.placeholder("b", shape=(3, 2))
    c = sg.placeholder("c", shape=(2,))
    ys = [sg.einsum("ij,jk->ik", a, b), sg.einsum("ij,jk,k->i", a, b, c),
          sg.reduce_mean(sg.tile(a, (2, 1)) * 2.0, axis=0),
          sg.split(sg.reverse(sg.concat([c, c * 3.0], 0), 0), 2)[1],
          sg.tensordot(a, b, 1), sg.squeeze(sg.expand_dims(c, 0)) + sg.roll(c, 1, 0)]
    loss = sg.reduce_sum(ys[0] * sg.sin(ys[0]))
    for y in ys[1:]:
        loss = loss + sg.reduce_sum(y * sg.sin(y))
    outputs = [loss] + sg.gradients(loss, [a, b, c]) + ys
    f = sg.function([a, b, c], outputs)
    assert _scalar_kernels(f) == 1 and f.plan.kernels == []
    rng = np.random.default_rng(1)
    feeds = [rng.normal(size=(2, 3)), rng.normal(size=(3, 2)), rng.normal(size=2)]
    for got, want in zip(f(*feeds), sg.evaluate(outputs, dict(zip([a, b, c], feeds)))):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)


def test_float32_region_keeps_float32():
    """float32 statements are numba statements (the IR bodies are float64 here)."""
    u = sg.placeholder("u", shape=(2,), dtype="float32")
    p = sg.placeholder("p", shape=(4,), dtype="float32")
    y = _rhs(p, u) * 0.5
    loss = sg.reduce_sum(y * sg.exp(y))
    outputs = [loss, y] + sg.gradients(loss, [u, p])
    f = sg.function([u, p], outputs)
    assert _scalar_kernels(f) == 1 and "llvm_body_" not in f.source
    feeds = [U0.astype(np.float32), P.astype(np.float32)]
    for got, want in zip(f(*feeds), sg.evaluate(outputs, dict(zip([u, p], feeds)))):
        assert got.dtype == want.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=2e-6)


def _mixed_graph(rng, depth: int):
    """Small values (a (3,) and a (2, 2) placeholder) and a large one ((2000,): loops by
    run time; at (200,) the IR path's build constants now make it scalar too) feeding
    each other: sums of the large vector become small values, small values scale it."""
    s = sg.placeholder("s", shape=(3,))
    m = sg.placeholder("m", shape=(2, 2))
    big = sg.placeholder("big", shape=(2000,))
    small, large = [s, m], [big]
    for _ in range(depth):
        x = small[rng.integers(len(small))]
        g = large[rng.integers(len(large))]
        choice = rng.integers(5)
        if choice == 0:       # large -> small
            small.append(sg.stack([sg.reduce_sum(g * g) * 1e-3, sg.reduce_sum(x)]))
        elif choice == 1:     # small -> large
            large.append(sg.sin(g) * sg.reshape(x, (-1,))[0] + sg.reduce_sum(x))
        elif choice == 2 and len(x.shape) == 2:
            small.append(sg.matmul(x, sg.transpose(x))[0])
        elif choice == 3:
            small.append(sg.concat([sg.reshape(x, (-1,)), sg.reshape(x, (-1,))[:1]], 0) * 0.5)
        else:
            small.append(sg.tanh(x) * sg.reduce_mean(g))
    loss = sg.reduce_sum(small[-1] * small[-1]) + sg.reduce_sum(large[-1]) * 1e-2
    outputs = [loss] + sg.gradients(loss, [s, m, big]) + small[2:]
    return [s, m, big], outputs


@pytest.mark.parametrize("seed", range(4))
def test_random_mixed_graphs_match_evaluate(seed):
    rng = np.random.default_rng(100 + seed)
    inputs, outputs = _mixed_graph(rng, 10)
    f = sg.function(inputs, outputs)
    assert _scalar_kernels(f) >= 1 and len(f.plan.kernels) >= 1   # both kinds, mixed
    feeds = [rng.normal(size=3), rng.normal(size=(2, 2)), rng.normal(size=2000)]
    got = f(*feeds)
    ref = sg.evaluate(outputs, dict(zip(inputs, feeds)))
    for a, b in zip(got, ref):
        if b is None:
            assert a is None
        else:
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_float32_and_float64_in_one_region():
    """Mixed float32/float64 values (fuzz seed 3): numba statements, each value in its
    own dtype, as evaluate."""
    a = sg.placeholder("a", shape=(4,), dtype="float32")
    b = sg.placeholder("b", shape=(2, 3))
    m = sg.reduce_mean(sg.arctanh(-0.9 + 1.8 * sg.sigmoid(a)))
    y = sg.stack([m * b[0, 1], sg.cos(b[1, 2]) + m]) * sg.reshape(b, (-1,))[:2]
    loss = sg.reduce_sum(y * y)
    outputs = [loss, y, m] + sg.gradients(loss, [a, b])
    f = sg.function([a, b], outputs)
    assert _scalar_kernels(f) >= 1 and f.plan.kernels == []   # a cast (a step) between
    feeds = [np.array([-0.08, -1.36, 0.94, -1.54], np.float32),
             np.array([[0.347, 0.951, 1.825], [-0.863, 0.594, 0.785]])]
    for got, want in zip(f(*feeds), sg.evaluate(outputs, dict(zip([a, b], feeds)))):
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6)
