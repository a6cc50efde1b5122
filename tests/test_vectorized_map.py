"""sg.vectorized_map and sg.map_fn (TF): values against a Python loop on every CPU engine,
gradients against finite differences and the same program written with arrays, captured
tensors, nested structures, the scan fallback and its warning, error messages."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import symgrad as sg
from symgrad.control.records import SCAN
from symgrad.graph.traversal import topological_order

RNG = np.random.default_rng(0)
ENGINES = ["evaluate", "cpu", "parallel"]


def _run(engine, inputs, outputs, feeds):
    if engine == "evaluate":
        return sg.evaluate(outputs, dict(zip(inputs, feeds)))
    return sg.function(inputs, outputs, target=engine)(*feeds)


def _ops(outputs):
    return {node.op for node in topological_order(list(outputs))}


def _row_fn(w):
    return lambda row: sg.reduce_sum(sg.sin(row) * w) + sg.tanh(row[0]) * row


@pytest.mark.parametrize("engine", ENGINES)
def test_values_and_gradients_match_a_python_loop(engine):
    x = sg.placeholder("x", shape=(5, 3))
    w = sg.placeholder("w", shape=(3,))
    y = sg.vectorized_map(_row_fn(w), x)
    loop = sg.stack([_row_fn(w)(x[i]) for i in range(5)], 0)
    loss, loop_loss = sg.reduce_sum(y * y), sg.reduce_sum(loop * loop)
    grads = sg.gradients(loss, [x, w])
    loop_grads = sg.gradients(loop_loss, [x, w])
    xv, wv = RNG.normal(size=(5, 3)), RNG.normal(size=3)
    got = _run(engine, [x, w], [y] + grads, [xv, wv])
    want = sg.evaluate([loop] + loop_grads, {x: xv, w: wv})
    assert y.shape == (5, 3)
    for g, e in zip(got, want):
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)
    assert SCAN not in _ops([y] + grads)


def _fd(f, v, eps=1e-6):
    out = np.zeros_like(v)
    for i in np.ndindex(v.shape):
        d = np.zeros_like(v)
        d[i] = eps
        out[i] = (f(v + d) - f(v - d)) / (2 * eps)
    return out


def test_gradient_wrt_captured_parameter_sums_over_batch_and_matches_fd():
    x = sg.placeholder("x", shape=(4, 2))
    theta = sg.placeholder("theta", shape=(2,))
    y = sg.vectorized_map(lambda e: sg.exp(-theta * e) * sg.cos(e @ theta), x)
    loss = sg.reduce_sum(y ** 2)
    gx, gt = sg.gradients(loss, [x, theta])
    xv, tv = RNG.normal(size=(4, 2)), RNG.normal(size=2)
    f = sg.function([x, theta], [loss, gx, gt])
    _, gxv, gtv = f(xv, tv)
    np.testing.assert_allclose(gtv, _fd(lambda t: f(xv, t)[0], tv), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gxv, _fd(lambda a: f(a, tv)[0], xv), rtol=1e-6, atol=1e-8)
    per = [sg.evaluate(sg.gradients(sg.reduce_sum((sg.exp(-theta * xv[i])
                                                   * sg.cos(sg.constant(xv[i]) @ theta)) ** 2),
                                    [theta])[0], {theta: tv}) for i in range(4)]
    np.testing.assert_allclose(gtv, np.sum(per, axis=0), rtol=1e-10)


def test_nested_tuple_elems_and_outputs():
    a = sg.placeholder("a", shape=(3,))
    b = sg.placeholder("b", shape=(3, 2))
    c = sg.placeholder("c", shape=(3, 2, 2))

    def fn(e):
        s, (v, m) = e
        return {"vec": m @ v * s, "pair": (sg.reduce_sum(v) + s, [sg.transpose(m)])}
    out = sg.vectorized_map(fn, (a, (b, c)))
    assert set(out) == {"vec", "pair"} and isinstance(out["pair"], tuple)
    av, bv, cv = RNG.normal(size=3), RNG.normal(size=(3, 2)), RNG.normal(size=(3, 2, 2))
    feeds = {a: av, b: bv, c: cv}
    vec, s, mt = sg.evaluate([out["vec"], out["pair"][0], out["pair"][1][0]], feeds)
    for i in range(3):
        np.testing.assert_allclose(vec[i], cv[i] @ bv[i] * av[i])
        np.testing.assert_allclose(s[i], bv[i].sum() + av[i])
        np.testing.assert_allclose(mt[i], cv[i].T)
    gb, gc = sg.gradients(sg.reduce_sum(out["vec"]), [b, c])
    gbv, gcv = sg.evaluate([gb, gc], feeds)
    np.testing.assert_allclose(gbv, np.einsum("kij,k->kj", cv, av))
    np.testing.assert_allclose(gcv, np.einsum("kj,k->kj", bv, av)[:, None, :]
                               * np.ones((3, 2, 1)))


def _rk4(f, y, h):
    k1 = f(y)
    k2 = f(y + h / 2 * k1)
    k3 = f(y + h / 2 * k2)
    k4 = f(y + h * k3)
    return y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def test_rk4_step_over_1000_states_matches_the_array_version():
    n = 1000
    states = sg.placeholder("states", shape=(n, 2))
    mu = sg.placeholder("mu", shape=())

    def vdp(y):   # one state (2,): van der Pol
        return sg.stack([y[1], mu * (1 - y[0] ** 2) * y[1] - y[0]], 0)

    def vdp_rows(y):   # the same, written with arrays (n, 2)
        return sg.stack([y[:, 1], mu * (1 - y[:, 0] ** 2) * y[:, 1] - y[:, 0]], 1)
    mapped = sg.vectorized_map(lambda y: _rk4(vdp, y, 0.1), states)
    arrays = _rk4(vdp_rows, states, 0.1)
    assert SCAN not in _ops([mapped])
    grads = sg.gradients(sg.reduce_sum(mapped ** 2), [states, mu])
    array_grads = sg.gradients(sg.reduce_sum(arrays ** 2), [states, mu])
    sv = RNG.normal(size=(n, 2))
    got = sg.function([states, mu], [mapped] + grads)(sv, 1.5)
    want = sg.function([states, mu], [arrays] + array_grads)(sv, 1.5)
    for g, e in zip(got, want):
        np.testing.assert_allclose(g, e, rtol=1e-11, atol=1e-12)


def test_fallback_warns_naming_the_op_and_uses_a_scan():
    x = sg.placeholder("x", shape=(4, 3))
    with pytest.warns(UserWarning, match=r"sg.vectorized_map: op 'argmax' has no batching"):
        y = sg.vectorized_map(lambda r: sg.cast(sg.argmax(r, 0), "float64") * sg.sin(r), x)
    assert SCAN in _ops([y])
    xv = RNG.normal(size=(4, 3))
    want = np.stack([np.argmax(r) * np.sin(r) for r in xv])
    np.testing.assert_allclose(sg.evaluate(y, {x: xv}), want)
    np.testing.assert_allclose(sg.function([x], [y])(xv)[0], want)
    (g,) = sg.gradients(sg.reduce_sum(y), [x])
    np.testing.assert_allclose(sg.evaluate(g, {x: xv}),
                               np.argmax(xv, 1)[:, None] * np.cos(xv))
    with pytest.raises(ValueError, match="'argmax' has no batching rule"):
        sg.vectorized_map(lambda r: sg.argmax(r, 0), x, fallback_to_while_loop=False)


def test_map_fn_falls_back_silently_and_casts_to_the_signature():
    x = sg.placeholder("x", shape=(3, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        i = sg.map_fn(lambda r: sg.argmax(r, 0), x, fn_output_signature="int32")
        s = sg.map_fn(lambda r: (r * 2, sg.reduce_max(r)), x)
    assert i.dtype == np.int32 and isinstance(s, tuple)
    xv = RNG.normal(size=(3, 4))
    iv, dv, mv = sg.evaluate([i, s[0], s[1]], {x: xv})
    np.testing.assert_array_equal(iv, np.argmax(xv, 1))
    np.testing.assert_allclose(dv, 2 * xv)
    np.testing.assert_allclose(mv, xv.max(1))
    with pytest.raises(ValueError, match="not both"):
        sg.map_fn(lambda r: r, x, dtype="float32", fn_output_signature="float32")


def test_identity_constants_and_unbatched_outputs():
    x = sg.placeholder("x", shape=(3, 2))
    same, one, cap = sg.vectorized_map(lambda r: (r, 1.0, sg.reduce_sum(x)), x)
    xv = RNG.normal(size=(3, 2))
    sv, ov, cv = sg.evaluate([same, one, cap], {x: xv})
    np.testing.assert_array_equal(sv, xv)
    np.testing.assert_array_equal(ov, np.ones(3))
    np.testing.assert_allclose(cv, np.full(3, xv.sum()))


def test_numpy_elems_and_unknown_leading_length():
    y = sg.vectorized_map(lambda r: r * 2.0, np.arange(3.0))
    np.testing.assert_array_equal(sg.evaluate(y, {}), [0.0, 2.0, 4.0])
    x = sg.placeholder("x", shape=(None, 2))
    z = sg.vectorized_map(lambda r: sg.reduce_sum(r ** 2), x)
    xv = RNG.normal(size=(5, 2))
    np.testing.assert_allclose(sg.evaluate(z, {x: xv}), (xv ** 2).sum(1))


def test_mismatched_leading_lengths_name_api_tensors_and_lengths():
    a = sg.placeholder("alpha", shape=(3, 2))
    b = sg.placeholder("beta", shape=(4,))
    with pytest.raises(sg.ShapeError, match=r"sg.vectorized_map: .*'alpha' has 3.*'beta' has 4"):
        sg.vectorized_map(lambda e: e[0] * e[1], (a, b))
    with pytest.raises(sg.ShapeError, match=r"sg.map_fn: .*'alpha' has 3.*'beta' has 4"):
        sg.map_fn(lambda e: e[0] * e[1], [a, b])
    with pytest.raises(sg.ShapeError, match=r"sg.vectorized_map: elems\[0\] 's' is a scalar"):
        sg.vectorized_map(lambda e: e, sg.placeholder("s"))


def test_check_gradients_graph_compiled_tape_and_fd():
    report = sg.testing.check_gradients(
        lambda x, w: sg.vectorized_map(lambda r: sg.sin(r) * r[0] + w * r, x),
        RNG.normal(size=(3, 2)), RNG.normal(size=2))
    assert report.ok, str(report)


def test_a_loop_inside_fn_falls_back_to_a_scan_with_gradients():
    x, w = sg.placeholder("x", shape=(4,)), sg.placeholder("w")
    with pytest.warns(UserWarning, match="op 'scan' has no batching rule"):
        y = sg.vectorized_map(
            lambda e: sg.fori_loop(0, 3, lambda i, c: c * e * w, sg.constant(1.0)), x)
    gx, gw = sg.gradients(sg.reduce_sum(y), [x, w])
    xv = np.array([1.0, 2.0, 3.0, 0.5])
    yv, gxv, gwv = sg.function([x, w], [y, gx, gw])(xv, 2.0)
    np.testing.assert_allclose(yv, (2 * xv) ** 3)
    np.testing.assert_allclose(gxv, 24 * xv ** 2)
    np.testing.assert_allclose(gwv, (12 * xv ** 3).sum())
