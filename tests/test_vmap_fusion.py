"""``sg.vectorized_map`` fuses like the same program written with arrays: small vectors that
``fn`` stacks and indexes are split into scalar components before batching
(``symgrad/components.py``); and a mapped gather index is batched (no scan)."""

from __future__ import annotations

import os
import sys
import warnings

import numpy as np
import pytest

import symgrad as sg
from symgrad.errors import GatherIndexError, IndexRangeError
from symgrad.components import COMPONENTS_MAX, split_components
from symgrad.graph.traversal import topological_order

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
from vmap_fusion import step  # noqa: E402  (the three ways of writing the RK4 step)

N = 100_000    # the kernel plan depends on the length (small ones may become scalar code)


def _ops(outputs) -> list:
    return [t.op.name for t in topological_order(list(outputs))]


def _data(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    states = np.column_stack([rng.uniform(-2.5, 2.5, n), rng.uniform(-1.0, 1.0, n)])
    params = np.column_stack([rng.uniform(0.5, 2.0, n), rng.uniform(0.0, 0.5, n)])
    return states, params, states + 0.01 * rng.normal(size=(n, 2))


def _program(kind: str, n: int, gradient: bool):
    y, p, target = (sg.placeholder(name, (n, 2)) for name in ("states", "params", "target"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # no scan fallback
        nxt = step(kind, y, p)
    if not gradient:
        return sg.function([y, p, target], [nxt])
    loss = sg.reduce_mean(sg.square(nxt - target))
    return sg.function([y, p, target], [nxt, loss] + sg.gradients(loss, [y, p]))


# --- the rewrite on its own ---------------------------------------------------------------
def test_index_of_a_stack_is_the_stacked_value():
    y = sg.placeholder("y", (2,))
    a, b = sg.sin(y[0]), y[1] * 3.0
    x = sg.stack([a, b])
    (out,) = split_components([(x + 1.0)[1] * x[0]], [y])
    assert "stack" not in _ops([out])
    assert _ops([out]).count("getitem") == 2          # y[0] and y[1] only
    assert sg.evaluate(out, {y: [0.5, 2.0]}) == pytest.approx(7.0 * np.sin(0.5))


def test_unstack_concat_transpose_reshape_fold():
    y = sg.placeholder("y", (2, 2))
    rows = sg.unstack(y)
    m = sg.transpose(sg.reshape(sg.concat([rows[1], rows[0] * 2.0], 0), (2, 2)))
    z = sg.expand_dims(m, 0)[0, :, 1] - sg.squeeze(sg.expand_dims(m[:, 0], 1), 1)
    (out,) = split_components([z], [y])
    assert not {"unstack", "concat", "transpose", "reshape"} & set(_ops([out]))
    y0 = np.array([[1.0, 2.0], [3.0, 5.0]])
    rows0 = list(y0)
    m0 = np.concatenate([rows0[1], rows0[0] * 2.0]).reshape(2, 2).T
    np.testing.assert_allclose(sg.evaluate(out, {y: y0}), m0[:, 1] - m0[:, 0])


def test_nothing_to_fold_returns_the_same_graph():
    y = sg.placeholder("y", (2,))
    outs = [sg.sin(y) * y[0]]              # a getitem of the stand-in itself: no stack
    assert split_components(outs, [y]) is outs


def test_an_op_without_a_component_rule_reads_the_stack():
    y = sg.placeholder("y", (3,))
    w = sg.constant(np.arange(9.0).reshape(3, 3))
    v = sg.stack([y[2], y[0], y[1] * y[1]])
    (out,) = split_components([sg.matmul(w, v[:, None])[:, 0][1] + v[0]], [y])
    assert "matmul" in _ops([out])
    y0 = np.array([1.0, 2.0, 3.0])
    v0 = np.array([3.0, 1.0, 4.0])
    assert sg.evaluate(out, {y: y0}) == pytest.approx((np.arange(9.0).reshape(3, 3) @ v0)[1] + 3.0)


def test_large_nodes_are_kept_whole():
    y = sg.placeholder("y", (COMPONENTS_MAX + 1,))
    outs = [sg.stack([y[0], y[1]]) + 1.0, sg.stack([y, y])[1]]
    new = split_components(outs, [y])
    assert _ops([new[1]]).count("stack") == 1       # the (2, 17) stack stays
    y0 = np.arange(COMPONENTS_MAX + 1.0)
    np.testing.assert_allclose(sg.evaluate(new[0], {y: y0}), [1.0, 2.0])
    np.testing.assert_allclose(sg.evaluate(new[1], {y: y0}), y0)


# --- the RK4 step of examples/vmap_ode_steps.py, written three ways -----------------------
@pytest.mark.parametrize("kind", ["stack", "unstack", "tensors"])
def test_mapped_rk4_fuses_like_arrays(kind):
    """Forward: one kernel, as the array program (before the rewrite: 8); value and
    gradient: as many kernels as the arrays (before: 16 against 3)."""
    arrays = _program("arrays", N, gradient=False)
    mapped = _program(kind, N, gradient=False)
    assert len(mapped.plan.kernels) == len(arrays.plan.kernels) == 1
    arrays = _program("arrays", N, gradient=True)
    mapped = _program(kind, N, gradient=True)
    assert len(mapped.plan.kernels) == len(arrays.plan.kernels)
    args = _data(N)
    for got, want in zip(mapped(*args), arrays(*args)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.max(np.abs(want)))


def test_mapped_rk4_gradient_against_finite_differences():
    n, eps = 8, 1e-6
    f = _program("stack", n, gradient=True)
    states, params, target = _data(n, seed=3)
    _, _, g_states, g_params = f(states, params, target)
    for grad, which in ((g_states, 0), (g_params, 1)):
        for k, j in ((0, 0), (5, 1), (7, 0)):
            moved = [[states.copy(), params.copy()] for _ in range(2)]
            moved[0][which][k, j] += eps
            moved[1][which][k, j] -= eps
            up, down = (f(*m, target)[1] for m in moved)
            assert grad[k, j] == pytest.approx((up - down) / (2 * eps), rel=1e-6, abs=1e-12)


# --- gather with a mapped index -----------------------------------------------------------
def test_gather_with_a_mapped_index_is_batched():
    rng = np.random.default_rng(1)
    x0, xb0 = rng.normal(size=(3, 4)), rng.normal(size=(5, 3, 4))
    x, xb = sg.placeholder("x", (3, 4)), sg.placeholder("xb", (5, 3, 4))
    i0 = np.array([[0, 3], [2, 2], [1, 0], [3, 3], [0, 1]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")            # a scan would warn
        shared = sg.vectorized_map(lambda t: sg.gather(x, t, axis=1), sg.constant(i0))
        own = sg.vectorized_map(lambda e: sg.gather(e[0], e[1], axis=1), (xb, sg.constant(i0)))
    assert "scan" not in _ops([shared, own])
    np.testing.assert_array_equal(sg.evaluate(shared, {x: x0}), np.stack([x0[:, t] for t in i0]))
    want = np.stack([xb0[b][:, t] for b, t in enumerate(i0)])
    np.testing.assert_array_equal(sg.function([xb], own)(xb0), want)
    w = rng.normal(size=want.shape)
    (g,) = sg.gradients(sg.reduce_sum(own * w), [xb])
    expected = np.zeros_like(xb0)
    for b, t in enumerate(i0):
        np.add.at(expected[b].T, t, w[b].T)          # duplicates accumulate
    np.testing.assert_allclose(sg.function([xb], g)(xb0), expected, rtol=1e-14)


def test_mapped_gather_index_out_of_range_still_raises():
    xb = sg.placeholder("xb", (3, 4))
    out = sg.vectorized_map(lambda e: sg.gather(e[0], e[1]), (xb, sg.constant([0, 4, 1])))
    with pytest.raises(GatherIndexError, match=r"indices\[1\]"):
        sg.evaluate(out, {xb: np.zeros((3, 4))})


def test_mapped_tensor_index_wraps_negative_entries():
    xb0 = np.arange(12.0).reshape(3, 4)
    xb = sg.placeholder("xb", (3, 4))
    idx = np.array([-1, 0, -4])
    out = sg.vectorized_map(lambda e: e[0][e[1]], (xb, sg.constant(idx)))
    np.testing.assert_array_equal(sg.evaluate(out, {xb: xb0}), xb0[np.arange(3), idx])
    bad = sg.vectorized_map(lambda e: e[0][e[1]], (xb, sg.constant([0, -5, 1])))
    with pytest.raises(IndexRangeError):                # numpy's IndexError, as unmapped
        sg.evaluate(bad, {xb: xb0})


def test_gradient_of_a_gather_inside_the_map():
    """gather_grad with a mapped index (a Jacobian row per mapped index)."""
    x = sg.placeholder("x", (4,))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rows = sg.vectorized_map(lambda t: sg.gradients(sg.gather(x * x, t), [x])[0],
                                 sg.constant(np.array([2, 0, 2])))
    np.testing.assert_array_equal(sg.evaluate(rows, {x: np.arange(4.0)}),
                                  [[0, 0, 4, 0], [0, 0, 0, 0], [0, 0, 4, 0]])


# --- loops and roots inside the map (batching_control.py) ---------------------------------
def test_while_loop_in_the_map_stops_each_instance_at_its_own_count():
    x = sg.placeholder("x", (4,))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        i, v = sg.vectorized_map(
            lambda xi: sg.while_loop(lambda i, v: v < xi, lambda i, v: (i + 1, v * 2.0),
                                     [sg.constant(0), sg.constant(1.0)]), x)
    assert "scan" not in _ops([i, v])
    x0 = np.array([1.0, 5.0, 0.5, 100.0])
    got_i, got_v = sg.function([x], [i, v])(x0)
    np.testing.assert_array_equal(got_i, [0, 3, 0, 7])
    np.testing.assert_array_equal(got_v, [1.0, 8.0, 1.0, 128.0])


def _batched_root_program(n: int):
    p = sg.placeholder("p", (n, 2))
    s = sg.placeholder("s", ())

    def solve(pi):              # x + y = p0, x y = s p1 (the root near (2, 1))
        return sg.root(lambda x: sg.stack([x[0] + x[1] - pi[0], x[0] * x[1] - pi[1] * s]),
                       np.array([3.0, 0.5]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = sg.vectorized_map(solve, p)
    loss = sg.reduce_sum(x[:, 0] ** 2 + 3.0 * x[:, 1])
    return p, s, x, sg.function([p, s], [x, loss] + sg.gradients(loss, [p, s]))


def test_root_in_the_map_is_one_batched_solve_with_implicit_gradients():
    n, eps = 6, 1e-6
    p, s, x, f = _batched_root_program(n)
    assert "scan" not in _ops([x])
    rng = np.random.default_rng(4)
    p0 = np.column_stack([rng.uniform(2.9, 3.1, n), rng.uniform(1.9, 2.1, n)])
    x0, _, g_p, g_s = f(p0, 1.0)
    np.testing.assert_allclose(x0.sum(1), p0[:, 0], atol=1e-9)
    np.testing.assert_allclose(x0.prod(1), p0[:, 1], atol=1e-9)
    for k, j in ((0, 0), (3, 1), (5, 0)):
        up, down = p0.copy(), p0.copy()
        up[k, j] += eps
        down[k, j] -= eps
        assert g_p[k, j] == pytest.approx((f(up, 1.0)[1] - f(down, 1.0)[1]) / (2 * eps), rel=1e-6)
    fd = (f(p0, 1.0 + eps)[1] - f(p0, 1.0 - eps)[1]) / (2 * eps)
    assert g_s == pytest.approx(fd, rel=1e-6)       # a shared capture: summed over the batch
    values = sg.evaluate([x] + sg.gradients(sg.reduce_sum(x[:, 0] ** 2 + 3.0 * x[:, 1]), [p]),
                         {p: p0, s: 1.0})
    np.testing.assert_allclose(values[1], g_p, rtol=1e-10)


def test_root_in_the_map_that_does_not_converge_raises():
    a = sg.placeholder("a", (3,))
    x = sg.map_fn(lambda ai: sg.root(lambda x: x * x * x - ai, 1.0, max_iter=8), a)
    with pytest.raises(sg.ConvergenceError, match="residual norm"):
        sg.evaluate(x, {a: [8.0, 1e6, 27.0]})      # 1e6 is too far for 8 Newton steps
    np.testing.assert_allclose(sg.evaluate(x, {a: [8.0, 1.0, 27.0]}), [2.0, 1.0, 3.0])


# --- the compiler's own fold of selects through stacks (compile/plan/selects.py) ----------
def test_hand_written_stacks_of_columns_compile_like_arrays():
    """RK4 on (n, 2) arrays whose right-hand side stacks columns (no map): as many kernels
    as the columns' program (before the fold: 16 and 8 against 3 and 1)."""
    for gradient in (False, True):
        arrays = _program("arrays", N, gradient)
        vectors = _program("vectors", N, gradient)
        assert len(vectors.plan.kernels) == len(arrays.plan.kernels)
    args = _data(N)
    for got, want in zip(vectors(*args), arrays(*args)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.max(np.abs(want)))


def test_fold_selects_through_stacks_scatters_and_broadcasts():
    from symgrad.compile.plan.selects import fold_selects
    from symgrad.ops.indexing.api import getitem_grad
    x = sg.placeholder("x", (None, 2))
    row, col = sg.placeholder("row", (2,)), sg.placeholder("col", (None, 1))
    s = sg.stack([sg.sin(x[:, 0]), x[:, 1] * 2.0], axis=1)
    v = s * row + col                                   # broadcasts both ways
    g = getitem_grad(x[:, 1], x, (slice(None), 1)) + s      # the gradient of x[:, 1]
    outs = [v[:, 1], sg.unstack(g, axis=1)[0], sg.unstack(g, axis=1)[1]]
    new = fold_selects(outs)
    assert "stack" not in _ops(new) and "getitem_grad" not in _ops(new)
    x0, r0, c0 = np.array([[0.5, 1.0], [2.0, -1.0]]), np.array([3.0, 4.0]), np.array([[1.0], [2.0]])
    feed = {x: x0, row: r0, col: c0}
    for got, want in zip(sg.evaluate(new, feed), sg.evaluate(outs, feed)):
        np.testing.assert_allclose(got, want, rtol=1e-15)
    plain = [sg.sin(x) * row]                           # nothing stacked: untouched
    assert fold_selects(plain) is plain
