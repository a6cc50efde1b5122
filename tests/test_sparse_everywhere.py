"""Sparse Jacobians by forward mode, batched jvp, and sparse / batched derivatives
everywhere: the parallel and cuda (simulator) targets, the tape, pickling (issue 17,
items 4 and 6). Few, tiny compiled functions."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import symgrad as sg
from symgrad.errors import ShapeError
from symgrad.sparse.colouring import column_colouring, row_colouring

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _brusselator(n: int = 6):
    y = sg.placeholder("y", shape=(2 * n,))
    u, v = y[:n], y[n:]
    pu = sg.pad(u, [[1, 1]], constant_values=1.0)
    pv = sg.pad(v, [[1, 1]], constant_values=3.0)
    du = 1.0 + u * u * v - 4.0 * u + 2.0 * (pu[2:] - 2.0 * u + pu[:-2])
    dv = 3.0 * u - u * u * v + 2.0 * (pv[2:] - 2.0 * v + pv[:-2])
    return y, sg.concat([du, dv], axis=0)


def _point(n: int = 6) -> np.ndarray:
    return np.concatenate([1.0 + np.sin(np.linspace(0.1, 3.0, n)), np.linspace(2.0, 3.0, n)])


@pytest.fixture(scope="module")
def system():
    y, rhs = _brusselator()
    return y, rhs, sg.evaluate(sg.jacobian(rhs, y), {y: _point()})


# --- forward mode for sparse Jacobians --------------------------------------------------------
@pytest.mark.parametrize("mode", ["forward", "reverse", "auto"])
def test_sparse_jacobian_modes_match_dense(system, mode):
    y, rhs, dense = system
    J = sg.sparse.sparse_jacobian(rhs, y, mode=mode)
    assert J.info["mode"].startswith("forward" if mode != "reverse" else "reverse")
    got = sg.evaluate(J, {y: _point()})
    assert got.nnz == sg.sparsity(rhs, y).nnz
    np.testing.assert_allclose(got.toarray(), dense, rtol=1e-12, atol=1e-12)


def test_auto_picks_fewer_colours_tie_forward():
    x = sg.placeholder("x", shape=(6,))
    wide = sg.reduce_sum(x) * sg.constant(np.ones(3))        # dense rows: 3 x 6
    tall = sg.expand_dims(x, (1,)) * sg.constant(np.ones(4))  # each column reaches 4 rows
    for y, expect in [(wide, "reverse"), (tall, "forward"), (sg.sin(x), "forward")]:
        pattern = sg.sparsity(y, x)
        fwd = column_colouring(pattern).max() + 1
        rev = row_colouring(pattern).max() + 1
        J = sg.sparse.sparse_jacobian(y, x)
        assert J.info["mode"].startswith(expect), (fwd, rev, J.info)
        assert J.info["colours"] == min(fwd, rev)
        dense = sg.evaluate(sg.jacobian(y, x), {x: np.arange(1.0, 7.0)}).reshape(J.shape)
        np.testing.assert_allclose(sg.evaluate(J, {x: np.arange(1.0, 7.0)}).toarray(), dense)
    with pytest.raises(ValueError, match="mode must be one of"):
        sg.sparse.sparse_jacobian(wide, x, mode="sideways")


def test_explain_shows_the_mode(system):
    y, rhs, dense = system
    f = sg.function([y], sg.sparse.sparse_jacobian(rhs, y, mode="forward"))
    text = f.explain()
    assert "forward, distance-2 column colouring" in text and "colours" in text
    np.testing.assert_allclose(f(_point()).toarray(), dense, rtol=1e-12)
    # a compiled function with sparse outputs pickles, and the copy works
    g = pickle.loads(pickle.dumps(f))
    out = g(_point())
    assert type(out).__name__ == "csr_array"
    np.testing.assert_allclose(out.toarray(), dense, rtol=1e-12)
    assert "forward, distance-2 column colouring" in g.explain()


# --- batched jvp ---------------------------------------------------------------------------
def test_batched_jvp_equals_k_jvps_and_vjp_identity():
    x = sg.placeholder("x", shape=(4,))
    z = sg.placeholder("z", shape=(4,))
    y = sg.sin(x[1:]) * x[:-1] ** 2 + sg.exp(-x[1:]) * z[1:]
    rng = np.random.default_rng(0)
    tx, tz = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    dy, dc = sg.jvp([y, sg.constant(np.ones(2))], [x, z], [tx, tz], batched=True)
    assert dy.shape == (3, 3) and dc.shape == (3, 2)
    feed = {x: rng.normal(size=4), z: rng.normal(size=4)}
    value, zero = sg.evaluate([dy, dc], feed)
    assert not zero.any()
    w = rng.normal(size=3)
    gx, gz = sg.evaluate(sg.gradients(y, [x, z], grad_ys=w), feed)
    for i in range(3):
        (one,) = sg.jvp([y], [x, z], [tx[i], tz[i]])
        np.testing.assert_allclose(value[i], sg.evaluate(one, feed), rtol=1e-12)
        assert np.isclose(value[i] @ w, gx @ tx[i] + gz @ tz[i])   # <Jv, w> = <v, J^T w>
    assert sg.jvp([sg.constant(1.0)], [x], [tx], batched=True,
                  unconnected_gradients="none") == [None]


def test_batched_jvp_errors():
    x = sg.placeholder("x", shape=(3,))
    z = sg.placeholder("z", shape=(3,))
    with pytest.raises(ShapeError, match=r"tangents\[0\] has shape \(2,\)"):
        sg.jvp([x * 2.0], [x], [np.ones((4, 2))], batched=True)
    with pytest.raises(ShapeError, match="same static batch length"):
        sg.jvp([x * z], [x, z], [np.ones((2, 3)), np.ones((4, 3))], batched=True)
    with pytest.raises(ShapeError, match="leading batch axis"):
        sg.jvp([x * 2.0], [x], [1.0], batched=True)


# --- everywhere: parallel, cuda (simulator), the tape ------------------------------------------
def _small():
    x = sg.placeholder("x", shape=(5,))
    y = sg.sin(x[1:]) * x[:-1] ** 2 + sg.exp(-x[1:])
    return x, y


@pytest.mark.parametrize("target", ["parallel", pytest.param("cuda", marks=pytest.mark.cuda)])
def test_targets_sparse_and_batched(target):
    x, y = _small()
    point = np.linspace(0.2, 1.0, 5)
    fwd = sg.sparse.sparse_jacobian(y, x, mode="forward")
    rev = sg.sparse.sparse_jacobian(y, x, mode="reverse")
    (hess,) = sg.hessians(sg.reduce_sum(y), x, sparse=True)
    dense = sg.jacobian(y, x)
    (dense_h,) = sg.hessians(sg.reduce_sum(y), x)
    f = sg.function([x], [fwd, rev, hess, dense, dense_h], target=target)
    a, b, h, d, dh = f(point)
    want_d, want_h = sg.evaluate([dense, dense_h], {x: point})
    np.testing.assert_allclose(d, want_d, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dh, want_h, rtol=1e-10, atol=1e-12)
    for s in (a, b):
        np.testing.assert_allclose(s.toarray(), want_d, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(h.toarray(), want_h, rtol=1e-10, atol=1e-12)
    assert (a.indices is f(point)[0].indices)                    # the pattern is shared
    g = pickle.loads(pickle.dumps(f))
    np.testing.assert_allclose(g(point)[2].toarray(), want_h, rtol=1e-10, atol=1e-12)


def test_tape_jacobian_equals_sg_jacobian():
    point = np.linspace(0.2, 1.0, 5)
    x, y = _small()
    want = sg.evaluate(sg.jacobian(y, x), {x: point})
    v = sg.Variable(point)
    with sg.GradientTape() as tape:
        out = sg.sin(v[1:]) * v[:-1] ** 2 + sg.exp(-v[1:])
    np.testing.assert_allclose(tape.jacobian(out, v).numpy(), want, rtol=1e-12)
    rows = sg.Variable(np.stack([point, point[::-1]]))
    with sg.GradientTape() as tape:
        out = sg.sin(rows[:, 1:]) * rows[:, :-1] ** 2 + sg.exp(-rows[:, 1:])
    batch = tape.batch_jacobian(out, rows).numpy()
    np.testing.assert_allclose(batch[0], want, rtol=1e-12)
    want_rev = sg.evaluate(sg.jacobian(y, x), {x: point[::-1]})
    np.testing.assert_allclose(batch[1], want_rev, rtol=1e-12)


# --- one table for both batch axes (vmap and the Dask rows) --------------------------------------
def test_shared_tables_drive_both_batch_axes():
    from symgrad.batching import AXIS_ATTR, BATCH_RULES, PER_AXIS, TRAILING_CORE, batch_graph
    from symgrad.distributed.analysis import analyse
    from symgrad.distributed.axes import RULES
    from symgrad.errors import ChunkError

    assert set(AXIS_ATTR) | set(TRAILING_CORE) | set(PER_AXIS) <= set(BATCH_RULES) & set(RULES)
    rows = sg.placeholder("rows", shape=(None, 3, 3))
    cases = [sg.cumsum(rows, axis=2), sg.reverse(rows, [1]), sg.reduce_max(rows, axis=1),
             sg.tril(rows), sg.diag_part(rows), sg.trace(rows), sg.cast(rows, "float32"),
             sg.pad(rows, [[0, 0], [1, 1], [0, 2]]), sg.tile(rows, [1, 2, 1])]
    for node in cases:
        assert analyse([rows], [node]).axis_of(node) == 0, node.op.name
    assert [c.kind for c in analyse([rows], [sg.reduce_prod(rows, axis=0)]).cuts] == ["prod"]
    for bad, why in [(sg.cumsum(rows, axis=0), "along the batch axis"),
                     (sg.diag_part(sg.transpose(rows, (1, 2, 0))), "last 2 axes"),
                     (sg.pad(rows, [[1, 0], [0, 0], [0, 0]]), "paddings"),
                     (sg.tile(rows, [2, 1, 1]), "multiples")]:
        with pytest.raises(ChunkError, match=why):
            analyse([rows], [bad])
    # vmap of the same ops, analysed by the chunking rules, keeps the rows at axis 0
    x = sg.placeholder("x", shape=(3, 3))
    for build in (lambda t: sg.cumsum(t, axis=1), lambda t: sg.reduce_min(t, axis=0),
                  lambda t: sg.roll(t, 1, axis=0), sg.tril, sg.diag_part, sg.trace, lambda t: sg.pad(t, [[1, 0], [0, 2]]),
                  lambda t: sg.tile(t, [2, 1])):
        node = build(x)
        ((batched, flag),) = batch_graph([node], {id(x): (x, rows)}, None)
        assert flag and analyse([rows], [batched]).axis_of(batched) == 0
        value = np.arange(18.0).reshape(2, 3, 3)
        want = np.stack([sg.evaluate(node, {x: v}) for v in value])
        np.testing.assert_allclose(sg.evaluate(batched, {rows: value}), want)


@pytest.mark.parametrize("mode", ["forward", "reverse", "auto"])
def test_jacobian_sparse_mode_is_passed_through(mode):
    """sg.jacobian(..., sparse=True, mode=...) reaches the compressed evaluation."""
    x = sg.placeholder("x", shape=(6,))
    y = sg.sin(x[1:]) * x[:-1] ** 2
    jac = sg.jacobian(y, x, sparse=True, mode=mode)
    if mode != "auto":
        assert jac.info["mode"].startswith(mode)
    feed = {x: np.linspace(-1.0, 1.0, 6)}
    np.testing.assert_allclose(sg.evaluate(jac, feed).toarray(),
                               sg.evaluate(sg.jacobian(y, x), feed), rtol=1e-12)
