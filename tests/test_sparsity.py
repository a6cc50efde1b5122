"""sg.sparsity / sg.hessian_sparsity against numeric detection, colourings, and compressed
sparse Jacobians and Hessians against dense ones (sg.evaluate and one sg.function)."""

import numpy as np
import pytest
import scipy.sparse as sparse

import symgrad as sg
from symgrad.errors import ShapeError
from symgrad.sparse import sparse_hessian, sparse_jacobian
from symgrad.sparse.colouring import column_colouring, is_valid, row_colouring
from symgrad.testing_fuzz import generate

RNG = np.random.default_rng(0)
X = sg.placeholder("x", shape=(3, 4))
XV = RNG.uniform(0.5, 1.5, (3, 4))
M = np.zeros((4, 4))
M[0, 1], M[2, 3], M[3, 3] = 1.0, 2.0, 1.0


def numeric_pattern(y, x, xv, h=1e-6):
    """Entries of y that change when one entry of x moves (central differences)."""
    cols = []
    for j in range(xv.size):
        e = np.zeros(xv.size)
        e[j] = h
        up = sg.evaluate(y, {x: xv + e.reshape(xv.shape)})
        down = sg.evaluate(y, {x: xv - e.reshape(xv.shape)})
        cols.append(np.ravel(up) != np.ravel(down))
    return np.array(cols).T.reshape(-1, xv.size)


# One graph per rule family; True: the structural pattern is exact for generic inputs.
CASES = {
    "elementwise": (lambda x: sg.sin(x) * x[:, :1] + sg.exp(-x), True),
    "expr of gradients": (lambda x: sg.gradients(sg.reduce_sum(x ** 3), x)[0], True),
    "reduce_sum": (lambda x: sg.reduce_sum(x * x, axis=0), True),
    "reduce_mean": (lambda x: sg.reduce_mean(x, axis=1, keepdims=True), True),
    "reduce_prod": (lambda x: sg.reduce_prod(x, axis=0), True),
    "reduce_max": (lambda x: sg.reduce_max(x, axis=1), False),   # value-dependent choice
    "logsumexp": (lambda x: sg.reduce_logsumexp(x, axis=1), True),
    "transpose": (lambda x: sg.transpose(x) * 2.0, True),
    "reshape": (lambda x: sg.reshape(x, (2, 6)) ** 2, True),
    "pad": (lambda x: sg.pad(x, [[1, 1], [0, 2]]) * 3.0, True),
    "concat": (lambda x: sg.concat([x, sg.exp(x)], axis=0), True),
    "stack": (lambda x: sg.stack([x[0], x[1] * x[2]]), True),
    "roll": (lambda x: sg.roll(x, 1, axis=1), True),
    "reverse": (lambda x: sg.reverse(x, axis=0), True),
    "tile": (lambda x: sg.tile(x[:1], (2, 1)), True),
    "gather": (lambda x: sg.gather(x, [2, 0, 0], axis=0), True),
    "getitem": (lambda x: x[::2, 1:3], True),
    "split": (lambda x: sg.split(x, 2, axis=1)[1] * 1.0, True),
    "unstack": (lambda x: sg.unstack(x, axis=0)[2], True),
    "broadcast_to": (lambda x: sg.broadcast_to(x[:, :1], (2, 3, 4)), True),
    "squeeze": (lambda x: sg.squeeze(sg.expand_dims(x, 0)), True),
    "tril": (lambda x: sg.tril(x[:, :3]), True),
    "diag": (lambda x: sg.diag(x[0]), True),
    "trace": (lambda x: sg.trace(sg.reshape(x, (3, 2, 2))) * sg.trace(x[:, :3]), True),
    "diag_part": (lambda x: sg.diag_part(x) ** 2, True),
    "cumsum": (lambda x: sg.cumsum(x, axis=1), True),
    "cumprod exclusive": (lambda x: sg.cumprod(x, axis=0, exclusive=True), True),
    "cumsum reverse": (lambda x: sg.cumsum(x, axis=1, reverse=True), True),
    "matmul constant": (lambda x: sg.matmul(x, sg.constant(M)), True),
    "matmul x x^T": (lambda x: sg.matmul(x, sg.transpose(x)), True),
    "matmul vector": (lambda x: sg.matmul(x, sg.constant(M[:, 3])), True),
    "einsum": (lambda x: sg.einsum("ij,jk->ik", x, sg.constant(M)), True),
    "tensordot": (lambda x: sg.tensordot(x, sg.constant(M), axes=1), True),
    "where": (lambda x: sg.where(x > 1.0, x * x, 0.0), False),
    "cast and comparisons": (lambda x: sg.cast(x > 1.0, "float64") * 2.0 + x, True),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_sparsity_matches_numeric_detection(name):
    build, exact = CASES[name]
    y = build(X)
    pattern = sg.sparsity(y, X)
    assert isinstance(pattern, sparse.csr_array) and pattern.dtype == bool
    assert pattern.shape == (int(np.prod(y.shape)), 12)
    got = pattern.toarray()
    seen = numeric_pattern(y, X, XV)
    assert not (seen & ~got).any(), f"{name}: a numeric nonzero outside the pattern"
    if exact:
        assert (seen == got).all(), f"{name}: pattern not exact"


def test_constant_laplacian_matmul_is_banded():
    n = 8
    lap = np.diag(-2.0 * np.ones(n)) + np.diag(np.ones(n - 1), 1) + np.diag(np.ones(n - 1), -1)
    u = sg.placeholder("u", shape=(n,))
    pattern = sg.sparsity(sg.matmul(sg.constant(lap), u) + u * u, u)
    assert (pattern.toarray() == (lap != 0)).all()


def test_conservative_fallback_covers_everything():
    idx = sg.placeholder("idx", shape=(2,), dtype="int64")
    pattern = sg.sparsity(sg.gather(X, idx, axis=1), X)     # indices known only at run time
    assert pattern.shape == (6, 12) and pattern.nnz == 6 * 12
    value = sg.evaluate(sg.jacobian(sg.gather(X, idx, axis=1), X), {X: XV, idx: [3, 0]})
    assert not ((value.reshape(6, 12) != 0) & ~pattern.toarray()).any()


def test_unconnected_and_errors():
    x = sg.placeholder("x", shape=(3,))
    z = sg.placeholder("z", shape=(2,))
    assert sg.sparsity(z * 2.0, x).nnz == 0
    assert sg.sparsity(z * 2.0, x).shape == (2, 3)
    assert sg.sparsity(sg.floor(x), x).nnz == 0        # no derivative flows
    with pytest.raises(ShapeError, match="sg.sparsity"):
        sg.sparsity(x * 2.0, sg.placeholder("w", shape=(None,)))


def _fuzz_jacobian(y, x, feed):
    rows = [sg.gradients(y[np.unravel_index(i, y.shape)] if y.shape else y, x,
                         unconnected_gradients="zero")[0] for i in range(int(np.prod(y.shape)))]
    if not rows:
        return np.zeros((0, int(np.prod(x.shape))), bool)
    values = sg.evaluate(rows, feed)
    return np.array([np.ravel(v) != 0 for v in values])


@pytest.mark.parametrize("seed", range(30))
def test_sparsity_on_fuzz_graphs(seed):
    program = generate(seed)
    arrays = program.arrays
    xs = [sg.placeholder(f"p{k}", a.shape, a.dtype) for k, a in enumerate(arrays)]
    outputs = program.namespace()["fn"](*xs)
    checked = 0
    for y in outputs:
        if not isinstance(y, sg.Tensor) or y.dtype.kind != "f":
            continue
        for x, xv in zip(xs, arrays):
            if x.dtype.kind != "f" or xv.size == 0:
                continue
            pattern = sg.sparsity(y, x).toarray()
            values = _fuzz_jacobian(y, x, dict(zip(xs, arrays)))
            assert not (values & ~pattern).any(), program.source()
            checked += 1
    assert checked or not any(a.dtype.kind == "f" for a in arrays)


def test_hessian_sparsity_symmetric_and_covers_numeric():
    x = sg.placeholder("x", shape=(6,))
    y = sg.sin(x[1:]) * x[:-1] ** 2 + sg.exp(-x[1:]) + sg.reduce_sum(x[:2]) ** 2
    h = sg.hessian_sparsity(y, x)
    assert (h != h.T).nnz == 0
    g = sg.gradients(sg.reduce_sum(y), x)[0]
    seen = numeric_pattern(g, x, RNG.uniform(0.5, 1.5, 6))
    assert not (seen & ~h.toarray()).any()
    assert (seen | seen.T == h.toarray()).all()


def _stencil(n):
    ids = np.arange(n * n).reshape(n, n)
    rows, cols = [], []
    for shift in ((0, 0), (1, 0), (-1, 0), (0, 1), (0, -1)):
        rows.append(ids.ravel())
        cols.append(np.roll(ids, shift, (0, 1)).ravel())
    return sparse.csr_array((np.ones(5 * n * n, bool), (np.concatenate(rows),
                                                         np.concatenate(cols))))


@pytest.mark.parametrize("order", ["largest_first", "natural"])
def test_colourings_are_valid(order):
    pattern = _stencil(12)
    cols = column_colouring(pattern, order)
    rows = row_colouring(pattern, order)
    assert is_valid(pattern, cols, columns=True) and is_valid(pattern, rows, columns=False)
    assert 5 <= cols.max() + 1 <= 13
    bad = cols.copy()
    bad[1] = bad[0]      # neighbours along a row of the stencil now share a colour
    assert not is_valid(pattern, bad, columns=True)


def test_colouring_32768_unknowns_is_fast():
    import time
    pattern = _stencil(128)
    start = time.perf_counter()
    colours = row_colouring(sparse.block_array([[pattern, sparse.eye_array(128 * 128)],
                                                [sparse.eye_array(128 * 128), pattern]]))
    assert time.perf_counter() - start < 10.0 and colours.max() + 1 <= 16


def _brusselator(n):
    y = sg.placeholder("y", shape=(2 * n,))
    u, v = y[:n], y[n:]
    lap_u = sg.pad(u, [[1, 1]], constant_values=1.0)
    lap_v = sg.pad(v, [[1, 1]], constant_values=3.0)
    du = 1.0 + u * u * v - 4.0 * u + 0.02 * (lap_u[2:] - 2.0 * u + lap_u[:-2])
    dv = 3.0 * u - u * u * v + 0.02 * (lap_v[2:] - 2.0 * v + lap_v[:-2])
    return y, sg.concat([du, dv], axis=0)


def test_sparse_jacobian_matches_dense_evaluate_and_function():
    y, rhs = _brusselator(6)
    yv = RNG.uniform(0.5, 2.0, 12)
    jac = sparse_jacobian(rhs, y)
    dense = sg.evaluate(sg.jacobian(rhs, y), {y: yv})
    got = sg.evaluate(jac, {y: yv})
    assert isinstance(got, sparse.csr_array) and got.shape == (12, 12)
    assert np.allclose(got.toarray(), dense)
    assert got.nnz == sg.sparsity(rhs, y).nnz < 12 * 12
    f = sg.function([y], [rhs, jac], target="cpu")
    value, first = f(yv)
    _, second = f(yv + 0.1)
    assert np.allclose(first.toarray(), dense) and np.allclose(value, sg.evaluate(rhs, {y: yv}))
    assert first.indices is second.indices and first.indptr is second.indptr
    assert (first.indices == jac.indices).all() and (first.indptr == jac.indptr).all()
    assert "colours" in f.explain() and f"nnz {jac.nnz}" in f.explain()


def test_sparse_hessian_matches_dense_and_is_symmetric():
    x = sg.placeholder("x", shape=(7,))
    y = 100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2      # Rosenbrock terms
    xv = RNG.uniform(-1.0, 1.0, 7)
    hess = sparse_hessian(y, x)
    got = sg.evaluate(hess, {x: xv})
    dense = sg.evaluate(sg.hessians(sg.reduce_sum(y), x)[0], {x: xv})
    assert np.allclose(got.toarray(), dense) and abs(got - got.T).max() == 0
    assert hess.nnz == 7 + 2 * 6 and hess.info["colours"] == 3
    from scipy.optimize import rosen_hess
    assert np.allclose(got.toarray(), rosen_hess(xv))


def test_sparse_tensor_checks_and_empty():
    x = sg.placeholder("x", shape=(3,))
    z = sg.placeholder("z", shape=(2,))
    empty = sparse_jacobian(z * 2.0, x)
    result = sg.evaluate([empty, z], {x: np.ones(3), z: np.ones(2)})[0]
    assert result.shape == (2, 3) and result.nnz == 0
    with pytest.raises(ValueError, match="SparseTensor"):
        sg.SparseTensor(x, np.arange(2), np.array([0, 1, 2]), (2, 3))


def test_docs_example_runs():
    import pathlib
    import re
    text = (pathlib.Path(__file__).resolve().parent.parent / "docs" / "sparsity.md").read_text()
    blocks = re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)
    assert blocks
    namespace: dict = {}
    exec(compile(blocks[0], "docs/sparsity.md", "exec"), namespace)    # its asserts hold
    assert namespace["sol"].success


@pytest.mark.parametrize("seed", range(4))
def test_star_colouring_recovers_every_entry(seed):
    from symgrad.sparse.colouring import recovery_map, star_colouring
    rng = np.random.default_rng(seed)
    upper = sparse.random_array((40, 40), density=0.08, rng=rng, format="csr")
    h = (upper + upper.T + sparse.eye_array(40)).tocsr()
    h.sort_indices()
    colours = star_colouring(h != 0)
    assert all(colours[i] != colours[j] for i, j in zip(*(h != 0).nonzero()) if i != j)
    index = recovery_map(h != 0, colours, symmetric=True)
    seeds = np.zeros((colours.max() + 1, 40))
    seeds[colours, np.arange(40)] = 1.0
    compressed = seeds @ h.toarray()                # what the batch of vjps computes
    assert np.allclose(compressed.ravel()[index], h.data)
    assert colours.max() + 1 <= row_colouring(h != 0).max() + 1


def test_sparse_hessian_of_a_2d_stencil_energy_uses_star_colouring():
    n = 6
    u = sg.placeholder("u", shape=(n, n))
    energy = (sg.square(sg.roll(u, 1, axis=0) - u) + sg.square(sg.roll(u, 1, axis=1) - u)
              + 0.1 * u ** 4)
    hess = sparse_hessian(energy, u)
    uv = RNG.uniform(-1.0, 1.0, (n, n))
    got = sg.evaluate(hess, {u: uv}).toarray()
    dense = sg.evaluate(sg.hessians(sg.reduce_sum(energy), u)[0], {u: uv}).reshape(n * n, -1)
    assert np.allclose(got, dense) and np.allclose(got, got.T)
    assert "star" in hess.info["mode"]
    assert hess.info["colours"] < row_colouring(sg.hessian_sparsity(energy, u)).max() + 1


def test_lists_as_sg_jacobian_and_sg_hessians_pass_them():
    x = sg.placeholder("x", shape=(3,))
    z = sg.placeholder("z", shape=(2,))
    jx, jz = sparse_jacobian(sg.sin(x) * sg.reduce_sum(z), [x, z])
    assert jx.shape == (3, 3) and jz.shape == (3, 2) and jz.nnz == 6
    hx, hz = sparse_hessian([x * x, sg.reduce_sum(z) ** 3], [x, z])
    got = sg.evaluate([hx, hz], {x: np.ones(3), z: np.ones(2)})
    assert np.allclose(got[0].toarray(), 2 * np.eye(3)) and np.allclose(got[1].toarray(), 12.0)


def test_sparse_hessians_of_one_x_is_a_list_as_dense():
    """sg.hessians returns a list for a single x, dense or sparse (tf.hessians)."""
    x = sg.placeholder("x", shape=(4,))
    y = sg.reduce_sum(x[1:] ** 2 * x[:-1])
    (sparse,) = sg.hessians(y, x, sparse=True)
    (dense,) = sg.hessians(y, x)
    feed = {x: np.array([0.5, -1.0, 2.0, 3.0])}
    np.testing.assert_allclose(sg.evaluate(sparse, feed).toarray(), sg.evaluate(dense, feed))
