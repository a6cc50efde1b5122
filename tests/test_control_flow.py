"""sg.scan, sg.fori_loop, sg.while_loop, sg.cond: values and gradients against the unrolled
Python loop and finite differences, on sg.evaluate, sg.function (cpu) and the tape."""

import numpy as np
import pytest

import symgrad as sg


def _fd(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for k in range(x.size):
        d = np.zeros_like(x)
        d.flat[k] = eps
        g.flat[k] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


def _step(c, x, p):
    return c + 0.3 * sg.sin(c * p) * x


def _scan_loss(p, xs, reverse=False, checkpoint=None):
    c, ys = sg.scan(lambda c, x: (_step(c, x, p), c * c), p * 0.5, xs, reverse=reverse,
                    checkpoint=checkpoint)
    return sg.reduce_sum(ys) + sg.reduce_sum(c * c)


def _unrolled(pv, xv, reverse=False):
    c, total = pv * 0.5, 0.0
    for t in (range(len(xv) - 1, -1, -1) if reverse else range(len(xv))):
        total = total + np.sum(c * c)
        c = c + 0.3 * np.sin(c * pv) * xv[t]
    return total + np.sum(c * c)


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_value_and_gradient_three_engines(reverse):
    rng = np.random.default_rng(0)
    pv, xv = rng.normal(size=3), rng.normal(size=(6, 3))
    p, xs = sg.placeholder("p", (3,)), sg.placeholder("xs", (6, 3))
    loss = _scan_loss(p, xs, reverse)
    gp, gx = sg.gradients(loss, [p, xs])
    want = _unrolled(pv, xv, reverse)
    got = sg.evaluate([loss, gp, gx], {p: pv, xs: xv})
    np.testing.assert_allclose(got[0], want, rtol=1e-12)
    np.testing.assert_allclose(got[1], _fd(lambda q: _unrolled(q, xv, reverse), pv), rtol=1e-6)
    np.testing.assert_allclose(got[2], _fd(lambda q: _unrolled(pv, q, reverse), xv), rtol=1e-6,
                               atol=1e-8)
    compiled = sg.function([p, xs], [loss, gp, gx])(pv, xv)
    for a, b in zip(compiled, got):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    pe = sg.Variable(pv)
    with sg.GradientTape() as tape:
        le = _scan_loss(pe, sg.constant(xv) if False else xv, reverse)
    np.testing.assert_allclose(tape.gradient(le, pe).numpy(), got[1], rtol=1e-12)


@pytest.mark.parametrize("reverse", [False, True])
def test_checkpoint_gives_same_gradients(reverse):
    rng = np.random.default_rng(1)
    pv, xv = rng.normal(size=3), rng.normal(size=(7, 3))
    p, xs = sg.placeholder("p", (3,)), sg.placeholder("xs", (7, 3))
    a = sg.gradients(_scan_loss(p, xs, reverse), [p, xs])
    outs = [a[0], a[1]]
    for k in (1, 2, 3, 7, 10):
        outs += sg.gradients(_scan_loss(p, xs, reverse, checkpoint=k), [p, xs])
    got = sg.evaluate(outs, {p: pv, xs: xv})
    for g in got[2:]:
        np.testing.assert_allclose(g, got[len(g.shape) - 1], rtol=1e-12)
    compiled = sg.function([p, xs], outs[:2] + outs[6:8])(pv, xv)   # k = 3
    np.testing.assert_allclose(compiled[2], got[0], rtol=1e-12)
    np.testing.assert_allclose(compiled[3], got[1], rtol=1e-12)


def test_checkpointed_history_is_every_kth_carry():
    c, _ = sg.scan(lambda c, _: (c + 1.0, None), sg.constant(0.0), length=7, checkpoint=3)
    hist = sg.ops.registry.apply(c.op, c.inputs, {**c.attrs, "index": 1})
    assert hist.shape == (3,)
    np.testing.assert_allclose(sg.evaluate(hist, {}), [0.0, 3.0, 6.0])


def test_fori_loop_closure_gradient_and_hessian():
    x = sg.placeholder("x")
    y = sg.fori_loop(0, 4, lambda i, c: c * x + sg.cast(i, "float64"), sg.constant(1.0))
    (g,) = sg.gradients(y, [x])
    (h,) = sg.gradients(g, [x])

    def ref(v):
        c = 1.0
        for i in range(4):
            c = c * v + i
        return c
    v = 1.3
    got = sg.evaluate([y, g, h], {x: v})
    np.testing.assert_allclose(got[0], ref(v))
    np.testing.assert_allclose(got[1], _fd(lambda q: ref(q[0]), np.array([v]))[0], rtol=1e-7)
    d2 = (ref(v + 1e-4) - 2 * ref(v) + ref(v - 1e-4)) / 1e-8
    np.testing.assert_allclose(got[2], d2, rtol=1e-4)
    np.testing.assert_allclose(sg.function([x], [y, g, h])(v), got, rtol=1e-12)


def test_while_loop_data_dependent_trip_count():
    x = sg.placeholder("x")
    i, s = sg.while_loop(lambda i, s: s < 100.0, lambda i, s: (i + 1, s * x),
                         [sg.constant(0), sg.constant(1.0)])
    (g,) = sg.gradients(s, [x])
    for v in (1.5, 3.0, 11.0):
        n = 0
        val = 1.0
        while val < 100.0:
            val, n = val * v, n + 1
        got = sg.evaluate([i, s, g], {x: v})
        assert int(got[0]) == n
        np.testing.assert_allclose(got[1], val)
        np.testing.assert_allclose(got[2], n * v ** (n - 1))
        np.testing.assert_allclose(sg.function([x], [i, s, g])(v)[2], got[2], rtol=1e-12)


def test_while_loop_maximum_iterations():
    out = sg.while_loop(lambda i: i < 100, lambda i: i + 1, [sg.constant(0)],
                        maximum_iterations=7)
    assert int(sg.evaluate(out, {})[0]) == 7


def test_cond_picks_branch_and_no_nan_leaks():
    x = sg.placeholder("x")
    y = sg.cond(x > 0, lambda: sg.sqrt(x) * sg.log(x), lambda: x * x)
    (g,) = sg.gradients(y, [x])
    got = sg.evaluate([y, g], {x: -2.0})
    np.testing.assert_allclose(got, [4.0, -4.0])
    got = sg.evaluate([y, g], {x: 4.0})
    np.testing.assert_allclose(got, [2 * np.log(4), np.log(4) / 4 + 0.5])
    got = sg.function([x], [y, g])(-2.0)
    np.testing.assert_allclose(got, [4.0, -4.0])
    assert np.all(np.isfinite(got))


def test_nested_scan():
    p = sg.placeholder("p")

    def outer(c, _):
        inner, _ = sg.scan(lambda d, _: (d * p + 1.0, None), c, length=3)
        return inner, None
    c, _ = sg.scan(outer, sg.constant(0.5), length=2)
    (g,) = sg.gradients(c, [p])

    def ref(v):
        d = 0.5
        for _ in range(6):
            d = d * v + 1.0
        return d
    got = sg.evaluate([c, g], {p: 0.7})
    np.testing.assert_allclose(got[0], ref(0.7))
    np.testing.assert_allclose(got[1], _fd(lambda q: ref(q[0]), np.array([0.7]))[0], rtol=1e-7)
    np.testing.assert_allclose(sg.function([p], [c, g])(0.7), got, rtol=1e-12)


def test_jvp_through_scan():
    p = sg.placeholder("p")
    c, _ = sg.scan(lambda c, _: (c * p, None), sg.constant(1.0), length=3)
    (t,) = sg.jvp([c], [p], [sg.constant(1.0)])
    np.testing.assert_allclose(sg.evaluate(t, {p: 2.0}), 12.0)


def test_build_time_errors():
    x = sg.placeholder("x", (2,))
    with pytest.raises(sg.ShapeError, match="carry"):
        sg.scan(lambda c, _: (sg.concat([c, c], 0), None), x, length=2)
    with pytest.raises(sg.DTypeError, match="carry"):
        sg.scan(lambda c, _: (sg.cast(c, "float32"), None), x, length=2)
    with pytest.raises(sg.ShapeError, match="unequal"):
        sg.scan(lambda c, v: (c, None), x, [sg.constant(np.ones(3)), sg.constant(np.ones(4))])
    with pytest.raises(sg.ShapeError, match="scalar"):
        sg.cond(x > 0, lambda: x, lambda: x)
    with pytest.raises(sg.ShapeError, match="loop_vars"):
        sg.while_loop(lambda v: sg.reduce_sum(v) < 3, lambda v: v[0], [x])


# --- ported from TensorFlow's while_v2_test.py / cond_v2_test.py (plain pytest) ----------------
def test_tf_while_v2_single_loop_var_gradient():
    # testSingleLoopVar: ret = while_loop(v < 8, v**2, [x]) at x=2: 16, gradient 4 * x**3 = 32
    x = sg.placeholder("x")
    (ret,) = sg.while_loop(lambda v: v < 8.0, lambda v: v ** 2, [x])
    (g,) = sg.gradients(ret, [x])
    np.testing.assert_allclose(sg.evaluate([ret, g], {x: 2.0}), [16.0, 32.0])


def test_tf_while_v2_multiple_loop_vars_gradient():
    # testMultipleLoopVarsBasic: ret = while_loop(v < 8, (v * y, y)) at x=5, y=3
    x, y = sg.placeholder("x"), sg.placeholder("y")
    ret = sg.while_loop(lambda v, u: v < 8.0, lambda v, u: (v * u, u), [x, y])
    gx, gy = sg.gradients(ret[0], [x, y])
    np.testing.assert_allclose(sg.evaluate([ret[0], gx, gy], {x: 5.0, y: 3.0}),
                               [15.0, 3.0, 5.0])


def test_tf_cond_v2_basic_gradient():
    # cond_v2_test testBasic: cond(pred, x * 2, y * 3) and its gradients
    x, y = sg.placeholder("x"), sg.placeholder("y")
    for pred, want in ((True, [2.0, 0.0]), (False, [0.0, 3.0])):
        out = sg.cond(sg.constant(pred), lambda: x * 2.0, lambda: y * 3.0)
        np.testing.assert_allclose(sg.evaluate(sg.gradients(out, [x, y], unconnected_gradients="zero"),
                                               {x: 1.0, y: 2.0}), want)


def test_tape_fori_and_while_and_cond():
    v = sg.Variable(np.array(1.5))
    with sg.GradientTape(persistent=True) as tape:
        a = sg.fori_loop(0, 3, lambda i, c: c * v, sg.constant(1.0) if False else v * 1.0)
        b = sg.cond(v > 1.0, lambda: v * v, lambda: v)
    np.testing.assert_allclose(tape.gradient(a, v).numpy(), 4 * 1.5 ** 3)
    np.testing.assert_allclose(tape.gradient(b, v).numpy(), 3.0)


def test_lotka_volterra_example_small():
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).resolve().parent.parent / "examples" / "lotka_volterra_fit.py"
    spec = importlib.util.spec_from_file_location("lotka_volterra_fit", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = module.fit(steps=80)
    np.testing.assert_allclose(out["fitted"], out["true"], rtol=0.15)


@pytest.mark.cuda
def test_cuda_target_runs_loops_on_the_host():
    x = sg.placeholder("x", (3,))
    c, _ = sg.scan(lambda c, _: (c * x + 1.0, None), x, length=4)
    g = sg.gradients(sg.reduce_sum(c), [x])[0]
    y = sg.cond(x[0] > 0, lambda: x * 2.0, lambda: x)
    gy = sg.gradients(sg.reduce_sum(y), [x])[0]
    a = np.array([0.1, 0.2, 0.3])
    got = sg.function([x], [c, g, y, gy], target="cuda")(a)
    for u, v in zip(got, sg.evaluate([c, g, y, gy], {x: a})):
        np.testing.assert_allclose(np.asarray(u), v, rtol=1e-12)


def test_jacobian_hessian_hvp_through_scan():
    p = sg.placeholder("p", (2,))
    c, ys = sg.scan(lambda c, x: (c * p + x, sg.reduce_sum(c * c)), p,
                    sg.constant(np.ones((3, 2))))
    jac = sg.jacobian(c, p)
    hess = sg.hessians(sg.reduce_sum(ys), [p])[0]
    hv = sg.hvp(sg.reduce_sum(ys), p, sg.constant([1.0, 0.0]))
    pv = np.array([0.3, -0.6])

    def fwd(q):
        c, total = q.copy(), 0.0
        for _ in range(3):
            total += np.sum(c * c)
            c = c * q + 1
        return c, total
    got_j, got_h, got_v = sg.evaluate([jac, hess, hv], {p: pv})
    eps = 1e-5
    want_j = np.stack([(fwd(pv + eps * e)[0] - fwd(pv - eps * e)[0]) / (2 * eps)
                       for e in np.eye(2)], 1)
    np.testing.assert_allclose(got_j, want_j, atol=1e-7)

    def grad(q):
        return np.array([(fwd(q + eps * e)[1] - fwd(q - eps * e)[1]) / (2 * eps)
                         for e in np.eye(2)])
    want_h = np.stack([(grad(pv + 1e-4 * e) - grad(pv - 1e-4 * e)) / 2e-4 for e in np.eye(2)], 1)
    np.testing.assert_allclose(got_h, want_h, atol=1e-4)
    np.testing.assert_allclose(got_v, want_h[:, 0], atol=1e-4)


def test_docs_control_flow_examples_run():
    import pathlib
    import re
    text = (pathlib.Path(__file__).resolve().parent.parent / "docs" / "control_flow.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, "docs/control_flow.md", "exec"), {})
