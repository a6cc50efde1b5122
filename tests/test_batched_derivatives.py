"""A batch axis through the derivative graph: ``sg.gradients(batched=True)``, ``sg.jacobian``
and ``sg.hessians`` as one batched sweep, the tape's ``jacobian``/``batch_jacobian``."""

import numpy as np
import pytest

import symgrad as sg
from symgrad.batching import BATCH_RULES, batch_graph, fallback_rule, rule_for
from symgrad.graph.traversal import topological_order
from symgrad.ops.registry import REGISTRY
from symgrad.ops.sources import PLACEHOLDER
from symgrad.testing_fuzz import generate


def _bench_y(x):
    return sg.sin(x[1:]) * x[:-1] ** 2 + sg.exp(-x[1:])


def _rows_jacobian(y, x):
    """The old construction: one sg.gradients call per entry of y, one-hot seeded."""
    n = int(np.prod(y.shape))
    rows = []
    for k in range(n):
        seed = np.zeros(n)
        seed[k] = 1
        (g,) = sg.gradients(y, [x], grad_ys=[seed.reshape(y.shape)])
        rows.append(sg.zeros_like(x) if g is None else g)
    return sg.reshape(sg.stack(rows), tuple(y.shape) + tuple(x.shape))


def _fd_jacobian(fn, x0, eps=1e-6):
    cols = [(fn(x0 + eps * e) - fn(x0 - eps * e)) / (2 * eps) for e in np.eye(x0.size)]
    return np.stack(cols, axis=-1)


# --- batched gradients equal k separate gradients, on the fuzzer's random graphs ---------------
@pytest.mark.parametrize("seed", range(0, 60))
def test_batched_equals_separate_on_random_graphs(seed):
    program = generate(seed)
    ns = program.namespace()
    holders, arrays = ns["placeholders"](), ns["arrays"]()
    outs = ns["fn"](*holders)
    feed = dict(zip(holders, arrays))
    ys = [o for o in outs if isinstance(o, sg.Tensor) and o.dtype.kind == "f"]
    xs = [x for x in holders if x.dtype.kind == "f"]
    if not ys or not xs:
        pytest.skip("no float output or input")
    values = sg.evaluate(ys, feed)
    rng = np.random.default_rng(seed)
    k = 3
    seeds = [rng.standard_normal((k,) + np.shape(v)).astype(y.dtype) for y, v in zip(ys, values)]
    separate = [sg.gradients(ys, xs, grad_ys=[s[i] for s in seeds]) for i in range(k)]
    batched = sg.gradients(ys, xs, grad_ys=seeds, batched=True)
    assert [g is None for g in batched] == [g is None for g in separate[0]]
    for j, g in enumerate(batched):
        if g is None:
            continue
        assert g.shape[0] == k
        want = np.stack([sg.evaluate(separate[i][j], feed) for i in range(k)])
        np.testing.assert_allclose(sg.evaluate(g, feed), want, rtol=1e-7, atol=1e-10,
                                   equal_nan=True)


@pytest.mark.parametrize("seed", range(0, 40))
def test_batched_second_order_on_random_graphs(seed):
    """The batched sweep over a gradient graph: every vjp op (scatters, un-broadcasts,
    concat parts ...) goes through its batching rule."""
    program = generate(seed)
    ns = program.namespace()
    holders, arrays = ns["placeholders"](), ns["arrays"]()
    feed = dict(zip(holders, arrays))
    ys = [o for o in ns["fn"](*holders) if isinstance(o, sg.Tensor) and o.dtype.kind == "f"]
    xs = [x for x in holders if x.dtype.kind == "f"]
    if not ys or not xs:
        pytest.skip("no float output or input")
    firsts = [g for g in sg.gradients(ys, xs) if g is not None]
    if not firsts:
        pytest.skip("unconnected")
    values = sg.evaluate(firsts, feed)
    rng = np.random.default_rng(seed)
    seeds = [rng.standard_normal((2,) + np.shape(v)).astype(g.dtype)
             for g, v in zip(firsts, values)]
    separate = [sg.gradients(firsts, xs, grad_ys=[s[i] for s in seeds]) for i in range(2)]
    batched = sg.gradients(firsts, xs, grad_ys=seeds, batched=True)
    assert [g is None for g in batched] == [g is None for g in separate[0]]
    for j, g in enumerate(batched):
        if g is not None:
            want = np.stack([sg.evaluate(separate[i][j], feed) for i in range(2)])
            np.testing.assert_allclose(sg.evaluate(g, feed), want, rtol=1e-7, atol=1e-10,
                                       equal_nan=True)


def test_batched_unknown_dims_and_policies():
    x = sg.placeholder("x", shape=(None, 3))
    z = sg.placeholder("z", shape=(2,))
    y = sg.reduce_sum(sg.tanh(x) * sg.constant([1.0, 2.0, 3.0]), axis=1) ** 2
    seeds = np.arange(8.0).reshape(2, 4)  # k = 2 seeds for y of runtime shape (4,)
    g, gz = sg.gradients(y, [x, z], grad_ys=[seeds], batched=True,
                         unconnected_gradients="zero")
    assert g.shape == (2, None, 3) and gz.shape == (2, 2)
    xv = np.random.default_rng(0).standard_normal((4, 3))
    got, gotz = sg.evaluate([g, gz], {x: xv, z: np.ones(2)})
    for i in range(2):
        (ref,) = sg.gradients(y, [x], grad_ys=[seeds[i]])
        np.testing.assert_allclose(got[i], sg.evaluate(ref, {x: xv}), rtol=1e-12)
    assert np.all(gotz == 0)
    assert sg.gradients(y, [z], grad_ys=[seeds], batched=True) == [None]
    # the stand-in seeds never reach the result graph
    assert [t for t in topological_order([g]) if t.op is PLACEHOLDER] == [x]


def test_batched_bad_seeds():
    x = sg.placeholder("x", shape=(3,))
    with pytest.raises(ValueError, match="grad_ys"):
        sg.gradients(x * x, [x], batched=True)
    with pytest.raises(ValueError, match="shape"):
        sg.gradients(x * x, [x], grad_ys=[np.ones((2, 4))], batched=True)
    with pytest.raises(ValueError, match="same static batch length"):
        sg.gradients([x, x * 2], [x], grad_ys=[np.ones((2, 3)), np.ones((3, 3))],
                     batched=True)


# --- every op has a batching rule or the generic fallback -------------------------------------
def test_every_registered_op_has_a_rule_or_the_fallback():
    for op in REGISTRY.values():
        if op.kind == "source":
            continue
        assert callable(rule_for(op)), op
    structural = [op for op in REGISTRY.values() if op.kind == "structural"]
    covered = [op for op in structural if op in BATCH_RULES]
    assert len(covered) >= 40  # the fallback is for the few left (argmax, custom_gradient ..)
    assert rule_for(REGISTRY["argmax"]) is fallback_rule


EXAMPLES = [(name, k) for name, op in sorted(REGISTRY.items()) for k in range(len(op.examples))]


@pytest.mark.parametrize("name,k", EXAMPLES)
def test_rule_equals_fallback_on_declared_examples(name, k):
    op = REGISTRY[name]
    ex = op.examples[k]
    rng = np.random.default_rng(k)
    arrays = [rng.standard_normal(s) for s in ex.shapes]
    xs = [sg.placeholder(f"x{i}", s) for i, s in enumerate(ex.shapes)]
    public = getattr(sg, ex.public or name)
    out = public(list(xs), **ex.kwargs) if ex.listed else public(*xs, **ex.kwargs)
    node = out[0] if isinstance(out, list) else out
    batch = 2
    stand_in = xs[0]
    value = sg.constant(rng.standard_normal((batch,) + tuple(ex.shapes[0])))
    ((ruled, flag),) = batch_graph([node], {id(stand_in): (stand_in, value)}, batch)
    assert flag
    extra = list(node.inputs[len(xs):])   # inputs given as kwargs (segment ids): constants
    args = [value] + xs[1:] + extra
    fell = fallback_rule(node, args, (True,) + (False,) * (len(args) - 1), batch)
    feed = dict(zip(xs[1:], arrays[1:]))
    np.testing.assert_allclose(sg.evaluate(ruled, feed), sg.evaluate(fell, feed))


@pytest.mark.parametrize("sa,sb", [((3,), (3, 2)), ((2, 3), (3,)), ((3,), (3,)),
                                   ((4, 2, 3), (3, 2)), ((2, 3), (4, 3, 2))])
def test_matmul_rule_all_ranks(sa, sb):
    rng = np.random.default_rng(1)
    a, b = sg.placeholder("a", sa), sg.placeholder("b", sb)
    av, bv = rng.standard_normal(sa), rng.standard_normal(sb)
    y = sg.matmul(a, b)
    seeds = rng.standard_normal((3,) + tuple(y.shape))
    ga, gb = sg.gradients(y, [a, b], grad_ys=[seeds], batched=True)
    for i in range(3):
        ra, rb = sg.gradients(y, [a, b], grad_ys=[seeds[i]])
        got = sg.evaluate([ga, gb], {a: av, b: bv})
        want = sg.evaluate([ra, rb], {a: av, b: bv})
        np.testing.assert_allclose(got[0][i], want[0], rtol=1e-12)
        np.testing.assert_allclose(got[1][i], want[1], rtol=1e-12)


# --- jacobian and hessians ----------------------------------------------------------------------
def test_jacobian_matches_finite_differences_and_rows():
    x = sg.placeholder("x", shape=(6,))
    y = _bench_y(x)
    x0 = np.linspace(0.2, 1.3, 6)
    jac = sg.evaluate(sg.jacobian(y, x), {x: x0})
    assert jac.shape == (5, 6)
    np.testing.assert_allclose(jac, sg.evaluate(_rows_jacobian(y, x), {x: x0}), rtol=1e-13)
    fd = _fd_jacobian(lambda v: sg.evaluate(y, {x: v}), x0)
    np.testing.assert_allclose(jac, fd, rtol=1e-6, atol=1e-8)


def test_jacobian_matrix_shapes_and_list():
    x = sg.placeholder("x", shape=(2, 3))
    z = sg.placeholder("z", shape=())
    y = sg.matmul(sg.transpose(x), x) * z
    jx, jz = sg.jacobian(y, [x, z])
    assert jx.shape == (3, 3, 2, 3) and jz.shape == (3, 3)
    x0 = np.random.default_rng(2).standard_normal((2, 3))
    got = sg.evaluate(jx, {x: x0, z: 1.5})
    np.testing.assert_allclose(got, sg.evaluate(_rows_jacobian(y, x), {x: x0, z: 1.5}),
                               rtol=1e-12)
    w = sg.placeholder("w", shape=(2,))
    assert sg.jacobian(y, w) is None
    assert sg.evaluate(sg.jacobian(y, w, unconnected_gradients="zero"),
                       {}).shape == (3, 3, 2)


def test_jacobian_x_with_unknown_dims():
    x = sg.placeholder("x", shape=(None, 3))
    w = sg.placeholder("w", shape=(None,))
    y = sg.reduce_sum(sg.tanh(x), axis=0) ** 2          # static shape (3,): k = 3
    jac, jw = sg.jacobian(y, [x, w], unconnected_gradients="zero")
    assert jac.shape == (3, None, 3)
    x0 = np.random.default_rng(4).standard_normal((4, 3))
    got, gotw = sg.evaluate([jac, jw], {x: x0, w: np.ones(5)})
    fd = _fd_jacobian(lambda v: sg.evaluate(y, {x: v.reshape(4, 3)}), x0.ravel())
    np.testing.assert_allclose(got.reshape(3, 12), fd, rtol=1e-6, atol=1e-8)
    assert gotw.shape == (3, 5) and not gotw.any()
    scalar = sg.jacobian(sg.reduce_sum(y), x)            # y of rank 0: one -1 in the reshape
    assert sg.evaluate(scalar, {x: x0}).shape == (4, 3)


def test_hessian_symmetric_and_finite_differences():
    x = sg.placeholder("x", shape=(7,))
    f = sg.reduce_sum(_bench_y(x))
    (h,) = sg.hessians(f, x)
    x0 = np.linspace(-0.5, 1.0, 7)
    hv = sg.evaluate(h, {x: x0})
    np.testing.assert_allclose(hv, hv.T, rtol=1e-12, atol=1e-14)
    (g,) = sg.gradients(f, [x])
    fd = _fd_jacobian(lambda v: sg.evaluate(g, {x: v}), x0)
    np.testing.assert_allclose(hv, fd, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(hv, sg.evaluate(_rows_jacobian(g, x), {x: x0}), rtol=1e-13)


def test_hessians_tf_semantics():
    x = sg.placeholder("x", shape=(2,))
    z = sg.placeholder("z", shape=())
    w = sg.placeholder("w", shape=(3,))
    hx, hz, hw = sg.hessians(sg.reduce_sum(x) * z * z, [x, z, w])
    assert hw is None
    got = sg.evaluate([hx, hz], {x: [1.0, 2.0], z: 3.0})
    np.testing.assert_array_equal(got[0], np.zeros((2, 2)))  # linear in x: zeros
    assert float(got[1]) == 6.0


def test_hessians_invalid_dimension_raises_value_error():  # TF's testHessianInvalidDimension
    for shape in [(None,), (None, 10)]:
        x = sg.placeholder("x", shape=shape, dtype="float32")
        with pytest.raises(ValueError, match="static shape"):
            sg.hessians(x, x)
    with pytest.raises(ValueError):
        sg.hessians(sg.reduce_sum(x * x), [np.ones(2)])


def test_graph_size_independent_of_n():
    def sizes(n):
        x = sg.placeholder("x", shape=(n,))
        y = _bench_y(x)
        (h,) = sg.hessians(sg.reduce_sum(y), x)
        return len(topological_order([sg.jacobian(y, x)])), len(topological_order([h]))
    assert sizes(8) == sizes(64)


def test_evaluate_compiled_and_tape_agree():
    n = 9
    x = sg.placeholder("x", shape=(n,))
    y = _bench_y(x)
    jac = sg.jacobian(y, x)
    (h,) = sg.hessians(sg.reduce_sum(y), x)
    x0 = np.linspace(0.1, 0.9, n)
    want = sg.evaluate([jac, h], {x: x0})
    got = sg.function([x], [jac, h])(x0)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-13)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-13)
    v = sg.Variable(x0)
    with sg.GradientTape(persistent=True) as tape:
        with sg.GradientTape() as inner:
            yt = _bench_y(v)
            ft = sg.reduce_sum(yt)
        gt = inner.gradient(ft, v)
    np.testing.assert_allclose(tape.jacobian(yt, v).numpy(), want[0], rtol=1e-13)
    np.testing.assert_allclose(tape.jacobian(gt, v).numpy(), want[1], rtol=1e-12)


# --- the tape ---------------------------------------------------------------------------------
def test_tape_batch_jacobian_matches_per_example():
    rng = np.random.default_rng(3)
    b = sg.Variable(rng.standard_normal((4, 3)))
    w = rng.standard_normal((3, 2))
    with sg.GradientTape() as tape:
        y = sg.tanh(sg.matmul(b, w))
    got = tape.batch_jacobian(y, b).numpy()
    want = np.stack([(1 - np.tanh(r @ w) ** 2)[:, None] * w.T for r in b.numpy()])
    assert got.shape == (4, 2, 3)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_tape_jacobian_second_order_still_recorded():
    x = sg.Variable([0.3, 0.7, 1.1])
    with sg.GradientTape() as outer:
        with sg.GradientTape() as inner:
            y = sg.sin(x) * x[::-1]
        j = inner.jacobian(y, x)
        s = sg.reduce_sum(j * j)
    xs = sg.placeholder("xs", shape=(3,))
    ref = sg.gradients(sg.reduce_sum(sg.jacobian(sg.sin(xs) * xs[::-1], xs) ** 2), [xs])[0]
    np.testing.assert_allclose(outer.gradient(s, x).numpy(),
                               sg.evaluate(ref, {xs: x.numpy()}), rtol=1e-12)


def test_batch_jacobian_rank_at_least_2():  # TF's testBatchJacobianBadShapes ... rank
    x = sg.Variable([1.0, 2.0])
    with sg.GradientTape(persistent=True) as tape:
        y = x * x
        m = sg.reshape(x, (2, 1)) * 2.0
    with pytest.raises(ValueError, match="must have rank at least 2"):
        tape.batch_jacobian(y, x)
    with pytest.raises(ValueError, match="must have rank at least 2"):
        tape.batch_jacobian(m, x)


def test_batch_jacobian_twice_non_persistent():  # TF's testPforNonPersistent-style check
    x = sg.Variable(np.ones((2, 2)))
    with sg.GradientTape() as tape:
        y = x * x
    tape.batch_jacobian(y, x)
    with pytest.raises(RuntimeError, match="persistent"):
        tape.batch_jacobian(y, x)


def test_compiled_stencils_pads_concat_matmul_agree_with_evaluate():
    """Fused scatters (a batched slice gradient's ``like`` is a constant), pads, concat,
    strided and reversed slices, matmul: compiled equals the numpy engine."""
    u = sg.placeholder("u", shape=(5, 4))
    lap = u[1:-1, 1:-1] * 4 - u[:-2, 1:-1] - u[2:, 1:-1] - u[1:-1, :-2] - u[1:-1, 2:]
    y1 = sg.tanh(lap) * u[1:-1, 1:-1]
    v = sg.placeholder("v", shape=(8,))
    p = sg.pad(v, [[1, 1]])
    y2 = sg.concat([p[2:] - 2 * p[1:-1] + p[:-2], v[::2] ** 2, v[::-1][:3]], axis=0)
    y2 = y2 * sg.sin(sg.reduce_sum(v))
    y3 = sg.matmul(sg.reshape(v, (2, 4)), sg.constant(np.arange(12.0).reshape(4, 3))) ** 2
    outs = [sg.jacobian(y1, u), sg.jacobian(y2, v), sg.jacobian(y3, v)]
    rng = np.random.default_rng(0)
    feed = {u: rng.standard_normal((5, 4)), v: rng.standard_normal(8)}
    want = sg.evaluate(outs, feed)
    got = sg.function([u, v], outs)(feed[u], feed[v])
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)


def test_jacobians_built_in_threads_agree():
    """Batched sweeps built at once in several threads: each thread keeps its own memo."""
    from concurrent.futures import ThreadPoolExecutor

    def build(n):
        x = sg.placeholder("x", shape=(n,))
        y = sg.sin(x[1:]) * x[:-1] ** 2 + sg.exp(-x[1:])
        return x, sg.jacobian(y, x)

    with ThreadPoolExecutor(4) as pool:
        built = list(pool.map(build, [5, 6, 7, 8] * 3))
    for x, jac in built:
        n = x.shape[0]
        value = np.linspace(-1.0, 1.0, n)
        expected = np.zeros((n - 1, n))
        rows = np.arange(n - 1)
        expected[rows, rows + 1] = np.cos(value[1:]) * value[:-1] ** 2 - np.exp(-value[1:])
        expected[rows, rows] = 2 * np.sin(value[1:]) * value[:-1]
        np.testing.assert_allclose(sg.evaluate(jac, {x: value}), expected, rtol=1e-12)
