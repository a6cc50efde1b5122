"""What a loop compiles (issue 29: build time; issue 30 item 4): a fused scan compiles its
kernel's ``_into`` form and its loop, not the body's own driver; the reverse body reads
the forward body's captures, not one capture per small loop invariant; a y that is a view
of the carry stays in the fused loop; a scan that cannot be fused says why."""

import numpy as np
import pytest

import symgrad as sg
from symgrad.compile.cpu.native_kernels import kernels as native_kernels
from symgrad.compile.loops import fused
from symgrad.control.records import SCAN
from tests.helpers import fused_matches_python_loop, loop_bodies, python_loop

H = 0.01
P = np.array([1.0, 0.5, 1.0, 0.3])


def _f(p, u):
    x, y = u[0], u[1]
    return sg.stack([p[0] * x - p[1] * x * y, p[3] * x * y - p[2] * y])


def _euler(p, u, n):
    for _ in range(n):
        u = u + H / n * _f(p, u)
    return u


def _bodies(outputs) -> dict:
    return loop_bodies(outputs, SCAN)


def _python_loop(f, outputs, args):
    return python_loop(f, outputs, args, SCAN)


def _places(f) -> list:
    return [line for line in f.explain().splitlines() if line.startswith("step      scan")]


def _check(inputs, outputs, args):
    """The compiled function (whether its loops fuse or not) equals its Python loop and
    sg.evaluate (the tests ask ``_places`` where a loop runs)."""
    return fused_matches_python_loop(inputs, outputs, args, SCAN, fused_expected=False)[0]


@pytest.mark.parametrize("view", ["u[0]", "u[1:]", "u[::-1]", "u[None]"])
def test_y_view_of_the_new_carry_stays_fused(view):
    p = sg.placeholder("p", (4,))

    def step(u, _):
        u = u + H * _f(p, u)
        return u, eval(view)

    c, ys = sg.scan(step, sg.constant([1.0, 1.0]), length=30)
    loss = sg.reduce_sum(ys * ys) + sg.reduce_sum(c * c)
    f = _check([p], [c, ys, loss, sg.gradients(loss, [p])[0]], [P])
    places = _places(f)
    assert places and all("one njit loop" in line for line in places), places


def test_y_view_of_a_matrix_carry_stays_fused():
    a = sg.placeholder("a", (2, 2))

    def step(m, x):          # entry by entry: one scalar kernel
        e = [m[0, 0], m[0, 1], m[1, 0], m[1, 1]]
        new = [sg.tanh(e[0] * a[0, 0] * x + e[3]), e[1] * a[1, 0] - e[2], e[2] * x,
               e[3] * a[1, 1] + e[0] * 0.1]
        m = sg.reshape(sg.stack(new), (2, 2))
        return m, (m[0, 1], sg.transpose(m), m[:, 0])

    m, (ya, yb, yc) = sg.scan(step, sg.constant(np.eye(2)), sg.constant([1.0, 0.5, 2.0]))
    loss = sg.reduce_sum(ya) + sg.reduce_sum(yb * yc[:, :, None]) + sg.reduce_sum(m)
    args = [np.array([[0.3, -0.2], [0.4, 0.1]])]
    f = _check([a], [m, ya, yb, yc, loss, sg.gradients(loss, [a])[0]], args)
    assert all("one njit loop" in line for line in _places(f)), _places(f)


def test_a_carry_that_is_a_view_of_a_kernel_result_stays_fused():
    p = sg.placeholder("p", (4,))
    c, _ = sg.scan(lambda u, _: ((u + H * _f(p, u))[::-1], None), sg.constant([1.0, 2.0]),
                   length=5)
    loss = sg.reduce_sum(c * c)
    f = _check([p], [c, loss, sg.gradients(loss, [p])[0]], [P])
    assert all("one njit loop" in line for line in _places(f)), _places(f)


@pytest.mark.parametrize("into", [True, False])
def test_a_carry_that_is_a_view_of_a_carry(into):
    """Staged before the carries are written (into buffers); with new arrays a step (no
    ``_into`` form) the Python loop runs and f.explain() says why."""
    p = sg.placeholder("p", (4,))
    old = fused.INTO
    fused.INTO = into
    try:
        (c, d), _ = sg.scan(lambda c, _: ((c[1][::-1], c[1] + H * _f(p, c[0])), None),
                            (sg.constant([1.0, 2.0]), sg.constant([0.5, 1.0])), length=5)
        loss = sg.reduce_sum(c * d)
        f = _check([p], [c, d, loss, sg.gradients(loss, [p])[0]], [P])
    finally:
        fused.INTO = old
    forward = [line for line in _places(f) if "'scan_" in line]
    assert forward
    if into:
        assert all("one njit loop" in line for line in _places(f)), _places(f)
    else:
        assert all("Python loop over the compiled body: carry 0 is a view (getitem) of a "
                   "body value and the kernel has no _into form" in line
                   for line in forward), forward


def test_carries_swapped_stay_fused():
    p = sg.placeholder("p", (4,))
    (a, b), ys = sg.scan(lambda c, _: ((c[1], c[0] + H * _f(p, c[1])), c[0][1]),
                         (sg.constant([1.0, 2.0]), sg.constant([0.5, 1.0])), length=6)
    loss = sg.reduce_sum(a * b) + sg.reduce_sum(ys)
    f = _check([p], [a, b, ys, loss, sg.gradients(loss, [p])[0]], [P])
    assert all("one njit loop" in line for line in _places(f)), _places(f)


def test_reverse_body_reads_the_forward_captures_not_each_invariant():
    p = sg.placeholder("p", (4,))
    u, _ = sg.scan(lambda u, _: (_euler(p, u, 10), None), sg.constant([1.0, 1.0]), length=5)
    loss = sg.reduce_sum(u * u)
    (g,) = sg.gradients(loss, [p])
    bodies = list(_bodies([g]).values())
    assert len(bodies) == 2
    for body in bodies:          # p only: 40 getitems of p stay inside the body
        assert [c.shape for c in body.captures] == [(4,)], [c.name for c in body.captures]
    f = _check([p], [loss, g], [P])
    assert all("one njit loop" in line for line in _places(f))


def test_large_loop_invariants_stay_hoisted_out_of_the_reverse_body():
    w = sg.placeholder("w", (10, 10))

    def step(u, _):          # exp(w): computed inside the body, an invariant of 100 elements
        return sg.tanh(sg.matmul(sg.exp(w) * 0.1, u)), None

    u, _ = sg.scan(step, sg.constant(np.ones((10, 1))), length=3)
    loss = sg.reduce_sum(u)
    (g,) = sg.gradients(loss, [w])
    reverse = [b for b in _bodies([g]).values() if any("adj_carry" in i.name
                                                         for i in b.inputs)]
    assert len(reverse) == 1
    hoisted = [c for c in reverse[0].captures if c.op.name != "placeholder"]
    assert hoisted and all(int(np.prod(c.shape)) > 64 for c in hoisted), \
        [(c.name, c.shape) for c in reverse[0].captures]
    rng = np.random.default_rng(0)
    _check([w], [loss, g], [rng.normal(size=(10, 10)) * 0.1])


def _kernel_signatures(run) -> dict:
    module = run.function_.module
    return {name + suffix: len(getattr(module, name + suffix).signatures)
            for name in module.SCALAR_KERNELS_ for suffix in ("", "_into")
            if hasattr(module, name + suffix)}


def test_fused_scan_compiles_only_the_kernel_it_calls():
    p = sg.placeholder("p", (4,))
    u, _ = sg.scan(lambda u, _: (u + H * _f(p, u), None), sg.constant([1.0, 2.0]), length=7)
    loss = sg.reduce_sum(u * u)
    outputs = [loss, sg.gradients(loss, [p])[0]]
    f = sg.function([p], outputs)
    for body in _bodies(outputs).values():      # the kernel is inlined into the loop
        run = body.compiled["cpu"]
        counts = _kernel_signatures(run)
        assert counts and all(c == 0 for c in counts.values()), counts
        loop = run.function_.fused_scan_[1].loop
        assert len(loop.signatures) == 1
    first = f(P)
    slow = _python_loop(f, outputs, [P])      # the body's driver compiles when it runs
    for a, b in zip(first, slow):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_python_loop_bodies_compile_inside_sg_function():
    p = sg.placeholder("p", (4,))
    u, _ = sg.scan(lambda u, _: (u + H * _f(p, u), None), sg.constant([1.0, 2.0]), length=7)
    fused.ENABLED = False
    try:
        f = sg.function([p], [u])
        (body,) = _bodies([u]).values()
        run = body.compiled["cpu"]
        counts = _kernel_signatures(run)
        plain = [n for n in counts if not n.endswith("_into")]
        native = dict(native_kernels(run.function_.module))
        # each kernel the driver calls is compiled: numba's function, or its LLVM IR form
        assert plain and all(counts[n] == 1 or (native.get(n + "_k") is not None and
                                                native[n + "_k"].function is not None)
                             for n in plain), (counts, native)
        want = sg.evaluate([u], {p: P})[0]
        np.testing.assert_allclose(f(P)[0], want, rtol=1e-12)
    finally:
        fused.ENABLED = True
