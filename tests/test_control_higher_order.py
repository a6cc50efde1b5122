"""Higher-order derivatives through control flow (issue 30 item 5 a, b): nested ``sg.cond``
gradients of any order, and forward mode and second order through ``sg.scan(checkpoint=k)``.

Each case: values on sg.evaluate, sg.function (cpu, parallel) and, where it applies, the
tape, against finite differences and the same program without the control-flow op
(an unrolled Python loop, ``sg.where`` for a branch)."""

import numpy as np
import pytest

import symgrad as sg

TARGETS = ("cpu", "parallel")


def _all_engines(inputs: list, outputs: list, values: list, rtol=1e-12,
                 targets=TARGETS) -> list:
    """sg.evaluate's values, checked equal on every compiled target."""
    got = sg.evaluate(outputs, dict(zip(inputs, values)))
    for target in targets:
        compiled = sg.function(inputs, outputs, target=target)(*values)
        for a, b in zip(compiled, got):
            np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-13, err_msg=target)
    return got


def _d(f, x, eps=1e-4):
    """Central difference of a scalar function of a scalar."""
    return (f(x + eps) - f(x - eps)) / (2 * eps)


# --- (a) nested cond gradients -------------------------------------------------------------
XS = np.array([1.0, 2.0, -0.5])


def _cond_step(x):
    return lambda c, xi: (sg.cond(c > 0, lambda: c * sg.sin(x * xi), lambda: c * x + xi), None)


def _where_step(x):
    return lambda c, xi: sg.where(c > 0, c * sg.sin(x * xi), c * x + xi)


def _np_loop(x):
    c = x
    for xi in XS:
        c = c * np.sin(x * xi) if c > 0 else c * x + xi
    return c


def test_cond_in_scan_second_derivative():
    x = sg.placeholder("x")
    c, _ = sg.scan(_cond_step(x), x, sg.constant(XS))
    (g,) = sg.gradients(c, [x])
    (h,) = sg.gradients(g, [x])
    u = x                                   # the same program unrolled, cond as sg.where
    for xi in XS:
        u = _where_step(x)(u, sg.constant(xi))
    (gu,) = sg.gradients(u, [x])
    (hu,) = sg.gradients(gu, [x])
    for xv in (0.7, 1.3):
        got = _all_engines([x], [c, g, h], [xv])
        np.testing.assert_allclose(got, sg.evaluate([u, gu, hu], {x: xv}), rtol=1e-12)
        np.testing.assert_allclose(got[0], _np_loop(xv), rtol=1e-12)
        np.testing.assert_allclose(got[1], _d(_np_loop, xv, 1e-6), rtol=1e-7)
        np.testing.assert_allclose(got[2], _d(lambda q: _d(_np_loop, q, 1e-5), xv, 1e-4),
                                   rtol=1e-5)
        xe = sg.Variable(xv)
        with sg.GradientTape() as outer:
            with sg.GradientTape() as inner:
                ce, _ = sg.scan(_cond_step(xe), xe, XS)
            ge = inner.gradient(ce, xe)
        np.testing.assert_allclose([ge.numpy(), outer.gradient(ge, xe).numpy()], got[1:],
                                   rtol=1e-12)


def _branchy(x):
    return sg.cond(x > 0, lambda: sg.sin(x) * x * x, lambda: sg.exp(x) * x)


def _branchy_np(x):
    return np.sin(x) * x * x if x > 0 else np.exp(x) * x


def test_cond_grad_ys_placeholder_made_after_then_differentiated_again():
    x = sg.placeholder("x")
    y = _branchy(x)
    v = sg.placeholder("v")                 # made after the cond
    (g,) = sg.gradients(y, [x], grad_ys=v)
    (h,) = sg.gradients(g, [x])
    (hv,) = sg.gradients(g, [v])
    yw = sg.where(x > 0, sg.sin(x) * x * x, sg.exp(x) * x)
    (gw,) = sg.gradients(yw, [x], grad_ys=v)
    (hw,) = sg.gradients(gw, [x])
    for xv in (0.8, -0.6):
        got = _all_engines([x, v], [g, h, hv], [xv, 2.5])
        np.testing.assert_allclose(got[:2], sg.evaluate([gw, hw], {x: xv, v: 2.5}), rtol=1e-12)
        np.testing.assert_allclose(got[0], 2.5 * _d(_branchy_np, xv, 1e-6), rtol=1e-7)
        np.testing.assert_allclose(got[1], 2.5 * _d(lambda q: _d(_branchy_np, q, 1e-5), xv),
                                   rtol=1e-5)
        np.testing.assert_allclose(got[2], got[0] / 2.5, rtol=1e-12)


def test_third_order_of_a_cond():
    x = sg.placeholder("x")
    y = _branchy(x)
    d1 = sg.gradients(y, [x])[0]
    d2 = sg.gradients(d1, [x])[0]
    d3 = sg.gradients(d2, [x])[0]
    for xv in (0.8, -0.6):
        got = _all_engines([x], [d1, d2, d3], [xv])
        if xv > 0:
            s, c = np.sin(xv), np.cos(xv)
            want = [2 * xv * s + xv * xv * c, 2 * s + 4 * xv * c - xv * xv * s,
                    6 * c - 6 * xv * s - xv * xv * c]
        else:
            want = [np.exp(xv) * (xv + k) for k in (1, 2, 3)]
        np.testing.assert_allclose(got, want, rtol=1e-12)
        fd3 = _d(lambda a: _d(lambda b: _d(_branchy_np, b, 1e-3), a, 1e-3), xv, 1e-3)
        np.testing.assert_allclose(got[2], fd3, rtol=1e-4)
        xe = sg.Variable(xv)
        with sg.GradientTape() as t3:
            with sg.GradientTape() as t2:
                with sg.GradientTape() as t1:
                    ye = _branchy(xe)
                g1 = t1.gradient(ye, xe)
            g2 = t2.gradient(g1, xe)
        np.testing.assert_allclose(t3.gradient(g2, xe).numpy(), want[2], rtol=1e-12)


def test_cond_in_cond_and_in_while_loop_second_order():
    x = sg.placeholder("x")

    def nested(x):
        return sg.cond(x > 0, lambda: sg.cond(x > 1, lambda: x ** 3, lambda: sg.sin(x) * x),
                       lambda: x * x)

    def nested_np(x):
        return (x ** 3 if x > 1 else np.sin(x) * x) if x > 0 else x * x

    y = nested(x)
    i, w = sg.while_loop(lambda i, w: i < 3,
                         lambda i, w: (i + 1, sg.cond(w > 0, lambda: w * sg.cos(x),
                                                      lambda: w + x)),
                         [sg.constant(0), x])

    def loop_np(x):
        w = x
        for _ in range(3):
            w = w * np.cos(x) if w > 0 else w + x
        return w
    outs = [y, w]
    for t in (y, w):
        g = sg.gradients(t, [x])[0]
        outs += [g, sg.gradients(g, [x])[0]]
    for xv in (1.4, 0.6, -0.3):
        got = _all_engines([x], outs, [xv])
        for k, f in ((0, nested_np), (1, loop_np)):
            np.testing.assert_allclose(got[k], f(xv), rtol=1e-12)
            np.testing.assert_allclose(got[2 + 2 * k], _d(f, xv, 1e-6), rtol=1e-7)
            np.testing.assert_allclose(got[3 + 2 * k], _d(lambda q: _d(f, q, 1e-5), xv),
                                       rtol=1e-5, atol=1e-8)


# --- (b) forward mode and second order through checkpoint=k --------------------------------
XV = np.array([0.3, 0.5, -0.4, 0.2, 0.9, 0.1, -0.6])            # 7 steps
PV = np.array([0.3, -0.7])


def _loss(p, checkpoint=None, reverse=False):
    a, b = p[0], p[1]
    c, ys = sg.scan(lambda c, x: (c + 0.3 * sg.sin(c * a + b) * x, c * c * b), a * 0.5, XV,
                    checkpoint=checkpoint, reverse=reverse)
    return sg.reduce_sum(ys) + c * c


def _loss_np(p, reverse=False):
    c, total = p[0] * 0.5, 0.0
    for t in (range(len(XV) - 1, -1, -1) if reverse else range(len(XV))):
        total += c * c * p[1]
        c = c + 0.3 * np.sin(c * p[0] + p[1]) * XV[t]
    return total + c * c


def _loss_unrolled(p, reverse=False):
    c, total = p[0] * 0.5, sg.constant(0.0)
    for t in (range(len(XV) - 1, -1, -1) if reverse else range(len(XV))):
        total = total + c * c * p[1]
        c = c + 0.3 * sg.sin(c * p[0] + p[1]) * XV[t]
    return total + c * c


def _grad_np(p, reverse=False, eps=1e-6):
    return np.array([(_loss_np(p + eps * e, reverse) - _loss_np(p - eps * e, reverse))
                     / (2 * eps) for e in np.eye(2)])


def _hess_np(p, reverse=False, eps=1e-4):
    return np.stack([(_grad_np(p + eps * e, reverse) - _grad_np(p - eps * e, reverse))
                     / (2 * eps) for e in np.eye(2)], 1)


@pytest.mark.parametrize("checkpoint", [2, 3])     # 3 does not divide the 7 steps
def test_jvp_through_checkpointed_scan(checkpoint):
    p = sg.placeholder("p", (2,))
    tangent = np.array([1.0, 0.5])
    c, ys = sg.scan(lambda c, x: (c + 0.3 * sg.sin(c * p) * x, c * p), p * 0.5,
                    sg.constant(np.stack([XV, XV[::-1]], 1)), checkpoint=checkpoint)
    jc, jy = sg.jvp([c, ys], [p], [tangent])
    jl = sg.jvp(_loss(p, checkpoint), [p], [tangent])[0]
    plain = sg.jvp([_loss(p)], [p], [tangent])[0]
    got = _all_engines([p], [jc, jy, jl], [PV])
    np.testing.assert_allclose(got[2], sg.evaluate(plain, {p: PV}), rtol=1e-12)
    np.testing.assert_allclose(got[2], _grad_np(PV) @ tangent, rtol=1e-7)
    unrolled = sg.jvp(_loss_unrolled(p), [p], [tangent])[0]
    np.testing.assert_allclose(got[2], sg.evaluate(unrolled, {p: PV}), rtol=1e-12)

    def carry_np(q):
        c, ys = q * 0.5, []
        for x in np.stack([XV, XV[::-1]], 1):
            ys.append(c * q)
            c = c + 0.3 * np.sin(c * q) * x
        return c, np.array(ys)
    eps = 1e-6
    plus, minus = carry_np(PV + eps * tangent), carry_np(PV - eps * tangent)
    np.testing.assert_allclose(got[0], (plus[0] - minus[0]) / (2 * eps), rtol=1e-7)
    np.testing.assert_allclose(got[1], (plus[1] - minus[1]) / (2 * eps), rtol=1e-6, atol=1e-9)
    pe = sg.Variable(PV)
    with sg.ForwardAccumulator(pe, tangent) as acc:
        le = _loss(pe, checkpoint)
    np.testing.assert_allclose(acc.jvp(le).numpy(), got[2], rtol=1e-12)


def test_jvp_through_checkpointed_scan_needs_no_reverse_pass():
    p = sg.placeholder("p", (2,))
    (j,) = sg.jvp([_loss(p, 3)], [p], [np.ones(2)])
    scans = [n for n in sg.graph.traversal.topological_order([j]) if n.op.name == "scan"]
    assert scans and all(n.attrs["replay"] is None and n.attrs["reverse"] is False
                         for n in scans)


@pytest.mark.parametrize("reverse", [False, True])
def test_hessian_hvp_grad_of_grad_through_scan_checkpoint_3(reverse):
    p = sg.placeholder("p", (2,))
    loss = _loss(p, 3, reverse)
    (h,) = sg.hessians(loss, [p])
    hv = sg.hvp(loss, p, np.array([1.0, -2.0]))
    (g,) = sg.gradients(loss, [p])
    (gg,) = sg.gradients(g[0] * g[1], [p])
    plain = _loss(p, None, reverse)
    (gp,) = sg.gradients(plain, [p])
    want = sg.evaluate([sg.hessians(plain, [p])[0], sg.gradients(gp[0] * gp[1], [p])[0]],
                       {p: PV})
    got = _all_engines([p], [h, hv, gg], [PV], targets=() if reverse else ("cpu",))
    if not reverse:                   # compiling second order is slow: hvp alone in parallel
        _all_engines([p], [hv], [PV], targets=("parallel",))
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    np.testing.assert_allclose(got[2], want[1], rtol=1e-12)
    np.testing.assert_allclose(got[1], want[0] @ np.array([1.0, -2.0]), rtol=1e-12)
    np.testing.assert_allclose(got[0], _hess_np(PV, reverse), rtol=1e-5, atol=1e-6)
    assert abs(got[0][0, 1]) > 0.01                 # the components interact
    (hu,) = sg.hessians(_loss_unrolled(p, reverse), [p])
    np.testing.assert_allclose(got[0], sg.evaluate(hu, {p: PV}), rtol=1e-12)


def test_third_order_through_checkpointed_scan():
    p = sg.placeholder("p")

    def loss(p, k):
        c, _ = sg.scan(lambda c, x: (c * sg.sin(p * x), None), p, sg.constant(XV),
                       checkpoint=k)
        return c
    outs = []
    for k in (None, 3):
        d = loss(p, k)
        for _ in range(3):
            d = sg.gradients(d, [p])[0]
        outs.append(d)
    got = sg.evaluate(outs, {p: 0.9})
    np.testing.assert_allclose(got[1], got[0], rtol=1e-12)

    def f(q):
        c = q
        for x in XV:
            c = c * np.sin(q * x)
        return c
    want = _d(lambda a: _d(lambda b: _d(f, b, 1e-3), a, 1e-3), 0.9, 1e-3)
    np.testing.assert_allclose(got[0], want, rtol=1e-4)


def test_forward_mode_through_cond_in_checkpointed_scan_and_while_loop():
    x = sg.placeholder("x")
    c, ys = sg.scan(lambda c, xi: (sg.cond(c > 0, lambda: c * sg.sin(x * xi),
                                           lambda: c * x + xi), c * x),
                    x, XS, checkpoint=2)
    y = c + sg.reduce_sum(ys)

    def f(x):
        c, total = x, 0.0
        for xi in XS:
            total += c * x
            c = c * np.sin(x * xi) if c > 0 else c * x + xi
        return c + total
    (j,) = sg.jvp([y], [x], [1.0])
    (jj,) = sg.jvp([j], [x], [1.0])                       # forward over forward
    hv = sg.hvp(y, x, 1.0)                                 # forward over reverse
    (h,) = sg.gradients(sg.gradients(y, [x])[0], [x])      # reverse over reverse
    i, w = sg.while_loop(lambda i, w: i < 3,
                         lambda i, w: (i + 1, sg.cond(w > 0, lambda: w * sg.cos(x),
                                                      lambda: w + x)), [sg.constant(0), x])
    (jw,) = sg.jvp([w], [x], [1.0])
    (gw,) = sg.gradients(w, [x])
    for xv in (0.7, 1.3):
        got = _all_engines([x], [j, jj, hv, h, jw], [xv], targets=("cpu",))
        np.testing.assert_allclose(got[0], _d(f, xv, 1e-6), rtol=1e-7)
        np.testing.assert_allclose(got[1], _d(lambda q: _d(f, q, 1e-5), xv), rtol=1e-5)
        np.testing.assert_allclose(got[2:4], [got[1]] * 2, rtol=1e-12)
        np.testing.assert_allclose(got[4], sg.evaluate(gw, {x: xv}), rtol=1e-12)


def test_second_order_through_nested_and_length_only_checkpointed_scans():
    p = sg.placeholder("p")

    def length_only(p, k):
        c, _ = sg.scan(lambda c, _: (c * sg.sin(p + c), None), p, length=5, checkpoint=k)
        return c

    def nested(p, k):
        def outer(c, x):
            d, _ = sg.scan(lambda d, y: (d * sg.cos(p * y + d), None), c,
                           sg.constant([0.5, 1.0, 1.5]), checkpoint=k)
            return d + x * p, None
        c, _ = sg.scan(outer, p, sg.constant([0.1, 0.2, 0.3, 0.4]), checkpoint=k)
        return c

    def length_only_np(p):
        c = p
        for _ in range(5):
            c = c * np.sin(p + c)
        return c

    def nested_np(p):
        c = p
        for x in (0.1, 0.2, 0.3, 0.4):
            for y in (0.5, 1.0, 1.5):
                c = c * np.cos(p * y + c)
            c = c + x * p
        return c
    for f, f_np in ((length_only, length_only_np), (nested, nested_np)):
        outs = []
        for k in (None, 2):
            y = f(p, k)
            g = sg.gradients(y, [p])[0]
            outs += [g, sg.gradients(g, [p])[0], sg.jvp([y], [p], [1.0])[0], sg.hvp(y, p, 1.0)]
        got = sg.evaluate(outs, {p: 0.6})
        np.testing.assert_allclose(got[4:], got[:4], rtol=1e-12)
        np.testing.assert_allclose(got[2], got[0], rtol=1e-12)
        np.testing.assert_allclose(got[0], _d(f_np, 0.6, 1e-6), rtol=1e-7)
        np.testing.assert_allclose(got[1], _d(lambda q: _d(f_np, q, 1e-5), 0.6), rtol=1e-5)
        np.testing.assert_allclose(got[3], got[1], rtol=1e-12)
