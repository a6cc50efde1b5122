"""TensorFlow's SVD and matrix-exponential tests, ported to ``sg.linalg.svd`` and
``sg.linalg.expm`` (issue 31, item 6).

Provenance (read from github:tensorflow/tensorflow):
  * tensorflow/python/kernel_tests/linalg/svd_op_test.py: ``SvdOpTest.testWrongDimensions``,
    ``testExecuteMultipleWithoutError``, ``testEmptyBatches``, the generated
    ``_GetSvdOpTest`` values tests (``CompareSingularValues``, ``CompareSingularVectors``,
    ``CheckApproximation``, ``CheckUnitary``), ``_NormalizingSvd``, the generated
    ``SvdGradOpTest`` (``_GetSvdGradOpTest``) and ``SvdGradGradOpTest``
    (``_GetSvdGradGradOpTest``) with TF's shapes, ``delta`` and tolerances.
  * tensorflow/python/kernel_tests/linalg/matrix_exponential_op_test.py:
    ``ExponentialOpTest`` (``np_expm``, ``testNonsymmetricReal``,
    ``testSymmetricPositiveDefiniteReal``, ``testNonSquareMatrix``, ``testWrongDimensions``,
    ``testInfinite``, ``testEmpty``, ``testDynamic``, ``testConcurrentExecutesWithoutError``,
    ``_TestRandomSmall``, ``_TestL1Norms``).
  * tensorflow/python/kernel_tests/linalg/linalg_grad_test.py:
    ``MatrixUnaryFunctorGradientTest`` 'MatrixExponentialGradient' (``delta = eps^(1/3)``,
    tol 1e-6 float64 / 0.05 float32, sizes 2, 5, 10 with batch dims).

What does not apply: complex dtypes (symgrad's linalg is real), TF's GPU tolerances,
sessions. TF's gradient_checker compares whole Jacobians; here each case compares the
reverse gradient of ``sum(W * f(a))`` (W random) with central differences of the same
graph along random directions, and the tape and a compiled ``sg.function`` with
``sg.evaluate``.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import symgrad as sg

la = sg.linalg


# --- SvdOpTest ---------------------------------------------------------------------------------
def test_svd_wrong_dimensions():
    """testWrongDimensions: rank 0 and rank 1 inputs are rejected, naming the rank."""
    for value in (sg.constant(1.0), sg.constant([1.0, 2.0])):
        with pytest.raises(ValueError, match=r"rank >= 2"):
            la.svd(value)


def test_svd_execute_multiple_without_error():
    """testExecuteMultipleWithoutError: the same input gives bitwise-equal results."""
    x = np.random.default_rng(42).normal(size=(6, 5))
    outputs = []
    for compute_uv, full_matrices in itertools.product((True, False), (True, False)):
        for _ in range(2):
            got = la.svd(sg.constant(x), compute_uv=compute_uv, full_matrices=full_matrices)
            outputs.append(list(got) if compute_uv else [got])
    values = sg.evaluate(sum(outputs, []), {})
    sizes = [len(o) for o in outputs]
    groups = [values[sum(sizes[:k]):sum(sizes[:k + 1])] for k in range(len(sizes))]
    for first, second in zip(groups[0::2], groups[1::2]):
        for a, b in zip(first, second):
            assert np.array_equal(a, b)


def test_svd_empty_batches():
    """testEmptyBatches: a (0, 2, 2) batch gives empty s, u, v."""
    s, u, v = sg.evaluate(list(la.svd(sg.constant(np.ones((0, 2, 2))))), {})
    assert s.shape == (0, 2) and u.shape == (0, 2, 2) and v.shape == (0, 2, 2)


def _compare_singular_vectors(x, y, rank, tol):
    """TF's CompareSingularVectors: the first ``rank`` columns, up to sign."""
    x, y = x[..., :rank].copy(), y[..., :rank]
    sum_of_ratios = np.sum(np.divide(y, x), -2, keepdims=True)
    x *= sum_of_ratios / np.abs(sum_of_ratios)
    np.testing.assert_allclose(x, y, atol=2 * tol)


def _check_approximation(a, u, s, v, full_matrices, tol):
    """TF's CheckApproximation: a ~= u diag(s) v^T (diag padded to (m, n) when full)."""
    m, n = a.shape[-2:]
    k = min(m, n)
    diag = np.zeros(a.shape[:-2] + ((m, n) if full_matrices else (k, k)), a.dtype)
    diag[..., np.arange(k), np.arange(k)] = s
    recon = u @ diag @ np.swapaxes(v, -1, -2)
    np.testing.assert_allclose(recon, a, rtol=tol, atol=tol)


def _check_unitary(x, tol):
    xx = np.swapaxes(x, -1, -2) @ x
    np.testing.assert_allclose(xx, np.broadcast_to(np.eye(x.shape[-1]), xx.shape), atol=tol)


# TF's generated SvdOpTest: rows, cols in 0, 1, 2, 5, 10, 32, 100 with batch dims (), (3,),
# (3, 2) (the last only for max(rows, cols) < 10); here rows, cols in 0, 1, 2, 5, 10, 32.
SVD_VALUE_SHAPES = [batch + (rows, cols)
                    for rows, cols in itertools.product((0, 1, 2, 5, 10, 32), repeat=2)
                    for batch in [(), (3,)] + [(3, 2)] * (max(rows, cols) < 10)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("compute_uv,full_matrices",
                         [(False, False), (False, True), (True, False), (True, True)])
def test_svd_values_match_numpy(dtype, compute_uv, full_matrices):
    """_GetSvdOpTest (static and unknown shapes) for every shape of SVD_VALUE_SHAPES."""
    tol = 3e-4 if dtype == np.float32 else 1e-12
    np.random.seed(42)
    for shape in SVD_VALUE_SHAPES:
        x_np = np.random.uniform(-1.0, 1.0, size=np.prod(shape)).reshape(shape).astype(dtype)
        for static in (True, False):
            x = sg.placeholder("x", shape if static else (None,) * len(shape), dtype)
            got = la.svd(x, compute_uv=compute_uv, full_matrices=full_matrices)
            got = sg.evaluate(list(got) if compute_uv else [got], {x: x_np})
            s = got[0]
            assert s.dtype == dtype
            s_np = np.linalg.svd(x_np, compute_uv=False).reshape(s.shape)
            atol = (s_np.reshape(-1)[0] + s.reshape(-1)[0]) * tol if s.size else tol
            np.testing.assert_allclose(s_np, s, atol=atol, err_msg=str(shape))
            if not compute_uv:
                continue
            u, v = got[1], got[2]
            u_np, _, vh_np = np.linalg.svd(x_np, full_matrices=full_matrices)
            rank = min(shape[-2:])
            _compare_singular_vectors(u_np, u, rank, tol)
            _compare_singular_vectors(np.swapaxes(vh_np, -1, -2), v, rank, tol)
            _check_approximation(x_np, u, s, v, full_matrices, tol)
            _check_unitary(u, tol)
            _check_unitary(v, tol)


# --- SvdGradOpTest, SvdGradGradOpTest ------------------------------------------------------------
def _add_n(terms):
    total = terms[0]
    for term in terms[1:]:
        total = total + term
    return total


def _normalizing_svd(a, full_matrices):
    """TF's _NormalizingSvd: signs fixed so that the first row of u (m >= n) or v has
    non-negative entries."""
    s, u, v = la.svd(a, compute_uv=True, full_matrices=full_matrices)
    m, n = a.shape[-2:]
    top_rows = u[..., 0:1, :] if m >= n else v[..., 0:1, :]
    phase = sg.sign(top_rows)
    return s, u * phase[..., :m], v * phase[..., :n]


def _svd_grad_cases():
    cases = []
    for compute_uv, full_matrices in itertools.product((False, True), (False, True)):
        shapes = [(10, 11), (11, 10), (11, 11), (2, 2, 2, 3)]
        if not full_matrices or not compute_uv:
            shapes += [(5, 11), (11, 5)]
        for dtype in (np.float32, np.float64):
            for shape, batch in itertools.product(shapes, [(), (3,)]):
                cases.append((dtype, batch + shape, compute_uv, full_matrices))
    return cases


SVD_GRAD_CASES = _svd_grad_cases()


def _case_id(case):
    dtype, shape, compute_uv, full = case
    return f"{dtype.__name__}_{'_'.join(map(str, shape))}_uv{int(compute_uv)}_full{int(full)}"


def _directional_check(build, a0, delta, tol, rng, directions=3, tape=True):
    """The gradient of ``sum(W * build(a))`` on sg.evaluate (and the tape) against central
    differences of the same graph along random unit directions (TF's step ``delta``)."""
    dtype = a0.dtype
    a = sg.placeholder("a", a0.shape, dtype)
    out = build(a)
    w = rng.uniform(-1.0, 1.0, size=out.shape).astype(dtype)
    loss = sg.reduce_sum(out * w)
    (g,) = sg.gradients(loss, [a])
    grad = sg.evaluate(g, {a: a0})
    assert grad.dtype == dtype
    if tape:
        variable = sg.Variable(a0)
        with sg.GradientTape() as t:
            eager = sg.reduce_sum(build(variable) * w)
        np.testing.assert_allclose(np.asarray(t.gradient(eager, variable)), grad,
                                   rtol=1e-5 if dtype == np.float32 else 1e-10,
                                   atol=1e-5 if dtype == np.float32 else 1e-10)
    a64 = a0.astype(np.float64)
    for _ in range(directions):
        e = rng.normal(size=a0.shape)
        e /= np.linalg.norm(e)
        up = float(sg.evaluate(loss, {a: (a64 + delta * e).astype(dtype)}))
        down = float(sg.evaluate(loss, {a: (a64 - delta * e).astype(dtype)}))
        numerical = (up - down) / (2 * delta)
        theoretical = float(np.sum(grad.astype(np.float64) * e))
        np.testing.assert_allclose(theoretical, numerical, atol=tol, rtol=tol)


@pytest.mark.parametrize("case", SVD_GRAD_CASES, ids=[_case_id(c) for c in SVD_GRAD_CASES])
def test_svd_gradients_match_finite_differences(case):
    """_GetSvdGradOpTest: each of s, u, v (normalized) against central differences with
    TF's delta = 0.25 eps^(1/3) and tol 1e-6 (float64) / 3e-2 (float32)."""
    dtype, shape, compute_uv, full_matrices = case
    np.random.seed(42)
    a0 = np.random.uniform(-1.0, 1.0, size=shape).astype(dtype)
    delta = 0.25 * np.finfo(dtype).eps ** (1.0 / 3.0)
    tol = 3e-2 if dtype == np.float32 else 1e-6
    rng = np.random.default_rng(7)
    if compute_uv:
        funcs = [lambda a, k=k: _normalizing_svd(a, full_matrices)[k] for k in range(3)]
    else:
        funcs = [lambda a: la.svd(a, compute_uv=False)]
    for build in funcs:
        # float32: differences in float32 carry ~eps32/delta noise; TF's tol covers it
        _directional_check(build, a0, delta, tol, rng, tape=len(shape) == 2)


SVD_GRADGRAD_CASES = [c for c in SVD_GRAD_CASES if c[0] == np.float64 and len(c[1]) == 2]


@pytest.mark.parametrize("case", SVD_GRADGRAD_CASES,
                         ids=[_case_id(c) for c in SVD_GRADGRAD_CASES])
def test_svd_second_order_matches_finite_differences(case):
    """_GetSvdGradGradOpTest (float64; unbatched shapes here): the gradient of
    sum(s) + sum(u) + sum(v) differentiated again, at a second random point, against
    central differences of that gradient (delta = 0.1 eps^(1/3), tol 1e-5)."""
    dtype, shape, compute_uv, full_matrices = case
    np.random.seed(42)
    np.random.uniform(-1.0, 1.0, size=shape)
    x_init = np.random.uniform(-1.0, 1.0, size=shape).astype(dtype)

    def first_gradient(a):
        outputs = (_normalizing_svd(a, full_matrices) if compute_uv
                   else [la.svd(a, compute_uv=False)])
        total = _add_n([sg.reduce_sum(o) for o in outputs])
        return sg.gradients(total, [a])[0]

    delta = 0.1 * np.finfo(dtype).eps ** (1.0 / 3.0)
    _directional_check(first_gradient, x_init, delta, 1e-5, np.random.default_rng(3),
                       tape=False)


@pytest.mark.compiled
def test_svd_gradients_compiled_match_evaluate():
    """A few SvdGradOpTest cases in one compiled sg.function (cpu) against sg.evaluate."""
    rng = np.random.default_rng(0)
    inputs, outputs, args = [], [], []
    for k, (shape, compute_uv, full) in enumerate([((10, 11), True, False),
                                                   ((3, 11, 10), True, True),
                                                   ((5, 11), False, False)]):
        a0 = rng.uniform(-1.0, 1.0, size=shape)
        a = sg.placeholder(f"a{k}", shape)
        outs = _normalizing_svd(a, full) if compute_uv else [la.svd(a, compute_uv=False)]
        loss = _add_n([sg.reduce_sum(o * rng.uniform(-1, 1, size=o.shape)) for o in outs])
        inputs.append(a)
        args.append(a0)
        outputs += [loss, sg.gradients(loss, [a])[0]]
    got = sg.function(inputs, outputs)(*args)
    want = sg.evaluate(outputs, dict(zip(inputs, args)))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


# --- ExponentialOpTest ---------------------------------------------------------------------------
def np_expm(x):
    """TF's np_expm: a slow but accurate Taylor series (40 terms)."""
    y = np.zeros(x.shape, dtype=x.dtype)
    xn = np.eye(x.shape[0], dtype=x.dtype)
    for n in range(40):
        if n > 0:
            xn /= float(n)
        y += xn
        xn = np.dot(xn, x)
    return y


def _verify_exponential(x, dtype):
    """TF's _verifyExponential: sg.evaluate and the tape against np_expm, rtol=atol=1e-3."""
    inp = x.astype(dtype)
    if x.size == 0:
        want = np.empty(x.shape, dtype=dtype)
    else:
        want = np.zeros(inp.shape, dtype=dtype)
        for i in itertools.product(*[range(k) for k in inp.shape[:-2]]):
            want[i] = np_expm(inp[i])
    placeholder = sg.placeholder("x", inp.shape, dtype)
    got = sg.evaluate(la.expm(placeholder), {placeholder: inp})
    eager = la.expm(sg.Variable(inp)).numpy()
    for out in (got, eager):
        assert out.dtype == dtype and out.shape == inp.shape
        np.testing.assert_allclose(out, want, rtol=1e-3, atol=1e-3)


def _verify_exponential_real(x):
    for dtype in (np.float32, np.float64):
        _verify_exponential(x, dtype)


def _make_batch(matrix1, matrix2):
    return np.tile(np.concatenate([matrix1[None], matrix2[None]]), [2, 3, 1, 1])


def test_expm_nonsymmetric_real():
    matrix1 = np.array([[1.0, 2.0], [3.0, 4.0]])
    matrix2 = np.array([[1.0, 3.0], [3.0, 5.0]])
    _verify_exponential_real(matrix1)
    _verify_exponential_real(matrix2)
    _verify_exponential_real(_make_batch(matrix1, matrix2))


def test_expm_symmetric_positive_definite_real():
    matrix1 = np.array([[2.0, 1.0], [1.0, 2.0]])
    matrix2 = np.array([[3.0, -1.0], [-1.0, 3.0]])
    _verify_exponential_real(matrix1)
    _verify_exponential_real(matrix2)
    _verify_exponential_real(_make_batch(matrix1, matrix2))


def test_expm_non_square_and_wrong_dimensions():
    """testNonSquareMatrix, testWrongDimensions: ValueError (sg.ShapeError is one)."""
    with pytest.raises(ValueError, match="square"):
        la.expm(sg.constant(np.array([[1.0, 2.0, 3.0], [3.0, 4.0, 5.0]])))
    with pytest.raises(ValueError, match="rank"):
        la.expm(sg.constant([1.0, 2.0]))


def test_expm_infinite_input_gives_nan():
    """testInfinite: an inf entry gives NaN everywhere (and terminates)."""
    result = sg.evaluate(la.expm(sg.constant([[np.inf, 1.0], [1.0, 1.0]])), {})
    assert np.all(np.isnan(result))


def test_expm_empty():
    _verify_exponential_real(np.empty([0, 2, 2]))
    _verify_exponential_real(np.empty([2, 0, 0]))


def test_expm_dynamic_shape():
    """testDynamic: a placeholder of unknown shape, fed a 2x2 matrix."""
    x = sg.placeholder("x", (None, None), np.float32)
    m = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    np.testing.assert_allclose(sg.evaluate(la.expm(x), {x: m}), np_expm(m), rtol=1e-3)


def test_expm_concurrent_executes_without_error():
    m = np.random.default_rng(42).normal(size=(5, 5))
    first, second = sg.evaluate([la.expm(sg.constant(m)), la.expm(sg.constant(m))], {})
    assert np.array_equal(first, second)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("batch", [(), (2,), (2, 2)])
@pytest.mark.parametrize("size", [4, 7])
def test_expm_random_small(dtype, batch, size):
    """_TestRandomSmall."""
    np.random.seed(42)
    matrix = np.random.uniform(-1.0, 1.0, size=batch + (size, size)).astype(dtype)
    _verify_exponential_real(matrix)


L1_CASES = ([(shape, np.float32, scale) for shape in [(3, 3), (2, 3, 3)]
             for scale in [0.1, 1.5, 5.0, 20.0]]
            + [(shape, np.float64, scale) for shape in [(3, 3), (2, 3, 3)]
               for scale in [0.01, 0.2, 0.5, 1.5, 6.0, 25.0]])


@pytest.mark.parametrize("shape,dtype,scale", L1_CASES)
def test_expm_l1_norms(shape, dtype, scale):
    """_TestL1Norms: matrices scaled to a given L1 norm (exercises the squaring steps)."""
    np.random.seed(42)
    matrix = np.random.uniform(-1.0, 1.0, size=np.prod(shape)).reshape(shape).astype(dtype)
    matrix /= np.max(np.sum(np.abs(matrix), axis=matrix.ndim - 2))
    _verify_exponential_real(scale * matrix)


def test_expm_values_compiled_match_scipy():
    import scipy.linalg
    np.random.seed(42)
    matrices = [np.random.uniform(-1.0, 1.0, size=(7, 7)),
                6.0 * np.random.uniform(-1.0, 1.0, size=(2, 3, 3))]
    xs = [sg.placeholder(f"x{k}", m.shape) for k, m in enumerate(matrices)]
    got = sg.function(xs, [la.expm(x) for x in xs])(*matrices)
    for g, m in zip(got, matrices):
        np.testing.assert_allclose(g, scipy.linalg.expm(m), rtol=1e-12, atol=1e-12)


# --- MatrixUnaryFunctorGradientTest, 'MatrixExponentialGradient' -------------------------------
EXPM_GRAD_CASES = [(dtype, extra + (size, size)) for dtype in (np.float32, np.float64)
                   for size in (2, 5, 10)
                   for extra in [(), (2,), (3,)] + [(3, 2)] * (size < 10)]


@pytest.mark.parametrize("dtype,shape", EXPM_GRAD_CASES,
                         ids=[f"{d.__name__}_{'_'.join(map(str, s))}" for d, s in EXPM_GRAD_CASES])
def test_expm_gradients_match_finite_differences(dtype, shape):
    """uniform(-1, 1) inputs (seed 1), delta = eps^(1/3), tol 1e-6 / 0.05 (TF's)."""
    np.random.seed(1)
    a0 = np.random.uniform(-1.0, 1.0, size=np.prod(shape)).reshape(shape).astype(dtype)
    delta = np.finfo(dtype).eps ** (1.0 / 3.0)
    tol = 1e-6 if dtype == np.float64 else 0.05
    _directional_check(la.expm, a0, delta, tol, np.random.default_rng(5),
                       tape=len(shape) <= 3)


@pytest.mark.compiled
def test_expm_gradient_compiled_matches_evaluate_and_scipy_frechet():
    import scipy.linalg
    np.random.seed(1)
    a0 = np.random.uniform(-1.0, 1.0, size=(5, 5))
    w = np.random.default_rng(2).normal(size=(5, 5))
    a = sg.placeholder("a", (5, 5))
    loss = sg.reduce_sum(la.expm(a) * w)
    (g,) = sg.gradients(loss, [a])
    got = sg.function([a], [loss, g])(a0)
    want = sg.evaluate([loss, g], {a: a0})
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12, atol=1e-12)
    # <dL/dA, E> = <W, L(A, E)> with scipy's Frechet derivative, for every unit E
    frechet = np.array([[np.sum(w * scipy.linalg.expm_frechet(a0, np.eye(5)[i][:, None]
                                                              * np.eye(5)[j][None, :])[1])
                         for j in range(5)] for i in range(5)])
    np.testing.assert_allclose(got[1], frechet, rtol=1e-10, atol=1e-12)
