"""sg.linalg: values against numpy/scipy on batched inputs, gradients three ways (finite
differences, sg.evaluate vs compiled cpu/parallel vs the tape), second order and forward
mode, sg.LinAlgError on every engine, and shape/dtype errors."""

import numpy as np
import pytest
import scipy.linalg

import symgrad as sg
from symgrad.testing import check_gradients

la = sg.linalg
RNG = np.random.default_rng(11)


def _spd(x):
    n = x.shape[-1]
    return sg.matmul(x, la.matrix_transpose(x)) + n * np.eye(n)


def _sym(x):
    return 0.5 * (x + la.matrix_transpose(x))


def _np_spd(x):
    return x @ np.swapaxes(x, -1, -2) + x.shape[-1] * np.eye(x.shape[-1])


def _well(shape):
    return RNG.normal(size=shape) + 3 * np.eye(shape[-1])


def _tri_solve(a, b, lower, trans):
    a, b = np.broadcast_arrays(a, b) if a.shape[:-2] != b.shape[:-2] else (a, b)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = np.broadcast_to(a, batch + a.shape[-2:])
    b = np.broadcast_to(b, batch + b.shape[-2:])
    return np.stack([scipy.linalg.solve_triangular(a[i], b[i], lower=lower, trans=trans)
                     for i in np.ndindex(*batch)]).reshape(batch + b.shape[-2:])


# --- values ---------------------------------------------------------------------------------
A3 = _well((2, 3, 3))
B32 = RNG.normal(size=(2, 3, 2))
SPD = _np_spd(RNG.normal(size=(2, 4, 4)))
SYM = SPD - 4 * np.eye(4)
VALUES = {
    "cholesky": (lambda a: la.cholesky(a), [SPD], lambda a: np.linalg.cholesky(a)),
    "cholesky_solve": (lambda a, b: la.cholesky_solve(la.cholesky(a), b),
                       [SPD, RNG.normal(size=(4, 2))], lambda a, b: np.linalg.solve(a, b)),
    "triangular_solve": (lambda a, b: la.triangular_solve(a, b), [A3, B32],
                         lambda a, b: _tri_solve(a, b, True, 0)),
    "triangular_solve_upper_adjoint": (
        lambda a, b: la.triangular_solve(a, b, lower=False, adjoint=True), [A3, B32],
        lambda a, b: _tri_solve(a, b, False, 1)),
    "solve": (lambda a, b: la.solve(a, b), [A3, B32], np.linalg.solve),
    "solve_adjoint_broadcast": (lambda a, b: la.solve(a, b, adjoint=True), [A3[0], B32],
                                lambda a, b: np.linalg.solve(a.T, b)),
    "inv": (la.inv, [A3], np.linalg.inv),
    "det": (la.det, [A3], np.linalg.det),
    "logdet": (lambda a: la.slogdet(a)[1], [A3], lambda a: np.linalg.slogdet(a)[1]),
    "sign": (lambda a: la.slogdet(a)[0], [A3 - 3 * np.eye(3)],
             lambda a: np.linalg.slogdet(a)[0]),
    "eigvals": (lambda a: la.eigh(a)[0], [SYM], lambda a: np.linalg.eigh(a)[0]),
    "eigvecs_squared": (lambda a: la.eigh(a)[1] ** 2, [SYM], lambda a: np.linalg.eigh(a)[1] ** 2),
    "qr_q": (lambda a: la.qr(a)[0], [RNG.normal(size=(2, 5, 3))], lambda a: np.linalg.qr(a)[0]),
    "qr_r_full": (lambda a: la.qr(a, full_matrices=True)[1], [RNG.normal(size=(2, 3, 5))],
                  lambda a: np.linalg.qr(a, mode="complete")[1]),
    "lstsq": (lambda a, b: la.lstsq(a, b), [RNG.normal(size=(6, 3)), RNG.normal(size=(6, 2))],
              lambda a, b: np.linalg.lstsq(a, b, rcond=None)[0]),
    "lstsq_min_norm": (lambda a, b: la.lstsq(a, b), [RNG.normal(size=(2, 4)),
                                                     RNG.normal(size=(2, 1))],
                       lambda a, b: np.linalg.lstsq(a, b, rcond=None)[0]),
    "lstsq_l2": (lambda a, b: la.lstsq(a, b, l2_regularizer=0.5),
                 [RNG.normal(size=(5, 3)), RNG.normal(size=(5, 2))],
                 lambda a, b: np.linalg.solve(a.T @ a + 0.5 * np.eye(3), a.T @ b)),
}


@pytest.mark.parametrize("name", sorted(VALUES))
def test_values_match_numpy_on_evaluate_and_tape(name):
    fn, arrays, reference = VALUES[name]
    want = reference(*arrays)
    xs = [sg.placeholder(f"x{k}", a.shape) for k, a in enumerate(arrays)]
    got = sg.evaluate(fn(*xs), dict(zip(xs, arrays)))
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    eager = fn(*[sg.Variable(a) for a in arrays])
    np.testing.assert_allclose(eager.numpy(), want, rtol=1e-10, atol=1e-12)


@pytest.mark.compiled
@pytest.mark.parametrize("target", ["cpu", "parallel"])
def test_values_compiled(target):
    names = sorted(VALUES)
    inputs, outputs, args, wants = [], [], [], []
    for name in names:
        fn, arrays, reference = VALUES[name]
        xs = [sg.placeholder(f"{name}{k}", a.shape) for k, a in enumerate(arrays)]
        inputs += xs
        args += arrays
        outputs.append(fn(*xs))
        wants.append(reference(*arrays))
    got = sg.function(inputs, outputs, target=target)(*args)
    for name, g, w in zip(names, got, wants):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12, err_msg=name)


def test_reexports_are_the_sg_ops():
    assert la.matmul is sg.matmul and la.einsum is sg.einsum and la.trace is sg.trace
    assert la.diag_part is sg.diag_part
    x = np.arange(6.0).reshape(1, 2, 3)
    np.testing.assert_array_equal(la.matrix_transpose(x).numpy(), x.transpose(0, 2, 1))


def test_multi_output_shapes_with_unknown_dims():
    a = sg.placeholder("a", (None, 4, 3))
    q, r = la.qr(a)
    assert q.shape == (None, 4, 3) and r.shape == (None, 3, 3)
    e, v = la.eigh(sg.placeholder("s", (2, None, None)))
    assert e.shape == (2, None) and v.shape == (2, None, None)
    sign, logdet = la.slogdet(sg.placeholder("m", (5, 2, 2)))
    assert sign.shape == logdet.shape == (5,)


# --- gradients: finite differences, evaluate, compiled and tape ----------------------------
W = RNG.normal(size=(2, 3, 3))
GRADIENTS = {
    "cholesky": (lambda x: sg.sin(la.cholesky(_spd(x))), [RNG.normal(size=(2, 3, 3))]),
    "cholesky_solve": (lambda x, b: la.cholesky_solve(la.cholesky(_spd(x)), b),
                       [RNG.normal(size=(2, 3, 3)), RNG.normal(size=(2, 3, 2))]),
    "triangular_solve": (lambda a, b: la.triangular_solve(a, b), [_well((2, 3, 3)),
                                                                  RNG.normal(size=(2, 3, 2))]),
    "triangular_upper_adjoint_broadcast": (
        lambda a, b: la.triangular_solve(a, b, lower=False, adjoint=True),
        [_well((2, 3, 3)), RNG.normal(size=(3, 2))]),
    "solve": (la.solve, [_well((2, 3, 3)), RNG.normal(size=(2, 3, 2))]),
    "solve_adjoint_broadcast": (lambda a, b: la.solve(a, b, adjoint=True),
                                [_well((3, 3)), RNG.normal(size=(2, 3, 2))]),
    "inv": (la.inv, [_well((2, 3, 3))]),
    "det": (la.det, [RNG.normal(size=(2, 3, 3))]),
    "slogdet": (lambda a: la.slogdet(a)[1], [RNG.normal(size=(2, 3, 3))]),
    "eigh_values": (lambda a: la.eigh(_sym(a))[0], [RNG.normal(size=(2, 3, 3))]),
    "eigh_vectors": (lambda a: la.eigh(_sym(a))[1] ** 2 * W, [RNG.normal(size=(2, 3, 3))]),
    "qr_tall": (lambda a: la.qr(a)[0] * 2.0 + sg.reduce_sum(la.qr(a)[1]),
                [RNG.normal(size=(2, 4, 3))]),
    "qr_wide": (lambda a: sg.reduce_sum(la.qr(a)[0]) + la.qr(a)[1], [RNG.normal(size=(3, 5))]),
    "lstsq": (la.lstsq, [RNG.normal(size=(5, 3)), RNG.normal(size=(5, 2))]),
    "lstsq_wide_l2": (lambda a, b: la.lstsq(a, b, l2_regularizer=0.1),
                      [RNG.normal(size=(2, 4)), RNG.normal(size=(2, 2))]),
}


@pytest.mark.compiled
@pytest.mark.parametrize("name", sorted(GRADIENTS))
def test_gradients_agree_across_engines_and_finite_differences(name):
    fn, arrays = GRADIENTS[name]
    check_gradients(fn, *arrays, raise_on_error=True)


@pytest.mark.compiled
@pytest.mark.parametrize("name", ["cholesky", "eigh_vectors", "qr_tall", "solve"])
def test_gradients_on_the_parallel_target(name):
    fn, arrays = GRADIENTS[name]
    check_gradients(fn, *arrays, target="parallel", raise_on_error=True)


def test_cholesky_gradient_closed_form():
    """d/dA of 0.5 * log det A = sum(log(diag(chol(A)))) is 0.5 * inv(A) (A symmetric)."""
    a = sg.placeholder("a", (4, 4))
    y = sg.reduce_sum(sg.log(la.diag_part(la.cholesky(a))))
    (g,) = sg.gradients(y, [a])
    np.testing.assert_allclose(sg.evaluate(g, {a: SPD[0]}), 0.5 * np.linalg.inv(SPD[0]),
                               rtol=1e-10)


def test_slogdet_sign_has_zero_gradient():
    a = sg.placeholder("a", (3, 3))
    (g,) = sg.gradients(la.slogdet(a)[0], [a])
    np.testing.assert_array_equal(sg.evaluate(g, {a: A3[0]}), np.zeros((3, 3)))


def _fd_hessian(g, x, x0, eps=1e-5):
    out = np.zeros(x0.shape + x0.shape)
    for idx in np.ndindex(*x0.shape):
        step = np.zeros_like(x0)
        step[idx] = eps
        out[(...,) + idx] = (sg.evaluate(g, {x: x0 + step}) -
                             sg.evaluate(g, {x: x0 - step})) / (2 * eps)
    return out


@pytest.mark.parametrize("which", ["cholesky", "eigh", "solve", "qr"])
def test_second_derivatives(which):
    x0 = RNG.normal(size=(3, 3))
    x = sg.placeholder("x", (3, 3))
    if which == "cholesky":
        y = sg.reduce_sum(sg.log(la.diag_part(la.cholesky(_spd(x)))))
    elif which == "eigh":
        e, v = la.eigh(_spd(x))
        y = sg.reduce_sum(e ** 2) + sg.reduce_sum(v ** 2 * x0)
    elif which == "solve":
        y = sg.reduce_sum(la.solve(_spd(x), np.ones((3, 1))) ** 2)
    else:
        q, r = la.qr(x + 3 * np.eye(3))
        y = sg.reduce_sum(q * x0) + sg.reduce_sum(r ** 2)
    (g,) = sg.gradients(y, [x])
    (h,) = sg.hessians(y, [x])
    np.testing.assert_allclose(sg.evaluate(h, {x: x0}), _fd_hessian(g, x, x0),
                               rtol=1e-5, atol=1e-6)


def test_forward_mode_graph_and_eager():
    x0, t0 = RNG.normal(size=(3, 3)), RNG.normal(size=(3, 3))
    x = sg.placeholder("x", (3, 3))

    def loss(v):
        return sg.reduce_sum(sg.log(la.diag_part(la.cholesky(_spd(v))))) + \
            sg.reduce_sum(la.inv(v + 3 * np.eye(3)))
    (g,) = sg.gradients(loss(x), [x])
    want = float(np.sum(sg.evaluate(g, {x: x0}) * t0))
    (j,) = sg.jvp([loss(x)], [x], [t0])
    assert np.isclose(sg.evaluate(j, {x: x0}), want, rtol=1e-10)
    v = sg.Variable(x0)
    with sg.ForwardAccumulator(v, t0) as acc:
        y = loss(v)
    assert np.isclose(acc.jvp(y).numpy(), want, rtol=1e-10)


def test_tape_gradient_matches_graph():
    x0 = RNG.normal(size=(2, 3, 3))
    x = sg.placeholder("x", x0.shape)
    (g,) = sg.gradients(sg.reduce_sum(la.eigh(_spd(x))[0] ** 3), [x])
    v = sg.Variable(x0)
    with sg.GradientTape() as tape:
        y = sg.reduce_sum(la.eigh(_spd(v))[0] ** 3)
    np.testing.assert_allclose(tape.gradient(y, v).numpy(), sg.evaluate(g, {x: x0}),
                               rtol=1e-12)


# --- LinAlgError on every engine ------------------------------------------------------------
BAD = {
    "cholesky": (lambda a: la.cholesky(a), -np.eye(3)),
    "inv": (lambda a: la.inv(a), np.zeros((3, 3))),
    "solve": (lambda a: la.solve(a, np.ones((3, 1))), np.ones((3, 3))),
    "triangular_solve": (lambda a: la.triangular_solve(a, np.ones((3, 1))),
                         np.diag([1.0, 0.0, 2.0])),
}


def test_linalg_error_classes():
    assert issubclass(sg.LinAlgError, np.linalg.LinAlgError)
    assert issubclass(sg.LinAlgError, sg.SymgradError)
    assert la.LinAlgError is sg.LinAlgError


@pytest.mark.parametrize("op", sorted(BAD))
def test_linalg_error_on_evaluate_and_tape(op):
    fn, value = BAD[op]
    a = sg.placeholder("a", value.shape)
    with pytest.raises(sg.LinAlgError, match=rf"sg\.linalg\.{op}"):
        sg.evaluate(fn(a), {a: value})
    with pytest.raises(sg.LinAlgError, match=rf"sg\.linalg\.{op}"):
        fn(sg.Variable(value))


@pytest.mark.compiled
@pytest.mark.parametrize("target", ["cpu", "parallel"])
def test_linalg_error_compiled(target):
    for op, (fn, value) in sorted(BAD.items()):
        a = sg.placeholder("a", value.shape)
        f = sg.function([a], fn(a), target=target)
        with pytest.raises(sg.LinAlgError, match=rf"sg\.linalg\.{op}"):
            f(value)
        f(value + 5 * np.eye(3))      # still callable afterwards


@pytest.mark.cuda
@pytest.mark.compiled
def test_cuda_target_values_gradients_and_errors():
    a = sg.placeholder("a", (2, 3, 3))
    b = sg.placeholder("b", (2, 3, 2))
    x0, b0 = RNG.normal(size=(2, 3, 3)), RNG.normal(size=(2, 3, 2))
    chol = la.cholesky(_spd(a))
    e, v = la.eigh(_spd(a))
    q, r = la.qr(a)
    y = sg.reduce_sum(la.cholesky_solve(chol, b)) + sg.reduce_sum(la.inv(a + 3 * np.eye(3))) \
        + sg.reduce_sum(la.slogdet(_spd(a))[1]) + sg.reduce_sum(la.det(a)) \
        + sg.reduce_sum(e) + sg.reduce_sum(v ** 2 * x0) + sg.reduce_sum(q * r) \
        + sg.reduce_sum(la.solve(a + 3 * np.eye(3), b))
    outputs = [y] + sg.gradients(y, [a, b])
    want = sg.evaluate(outputs, {a: x0, b: b0})
    got = sg.function([a, b], outputs, target="cuda")(x0, b0)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-9, atol=1e-12)
    f = sg.function([a], la.cholesky(a), target="cuda")
    with pytest.raises(sg.LinAlgError, match="cholesky"):
        f(-np.tile(np.eye(3), (2, 1, 1)))


# --- argument errors -------------------------------------------------------------------------
def test_shape_errors_name_the_op_and_tensor():
    with pytest.raises(sg.ShapeError, match=r"sg\.linalg\.cholesky: 'v'.*rank >= 2"):
        la.cholesky(sg.placeholder("v", (3,)))
    with pytest.raises(sg.ShapeError, match=r"sg\.linalg\.inv: 'm'.*square"):
        la.inv(sg.placeholder("m", (2, 3)))
    with pytest.raises(sg.ShapeError, match=r"sg\.linalg\.solve: .*\(3 != 4\)"):
        la.solve(sg.placeholder("m", (3, 3)), sg.placeholder("r", (4, 1)))
    with pytest.raises(sg.ShapeError, match=r"sg\.linalg\.triangular_solve: 'r'"):
        la.triangular_solve(sg.placeholder("m", (3, 3)), sg.placeholder("r", (3,)))
    with pytest.raises(sg.ShapeError, match=r"sg\.linalg\.lstsq: the matrix dims must be static"):
        la.lstsq(sg.placeholder("m", (None, 3)), sg.placeholder("r", (None, 1)))
    with pytest.raises(ValueError):        # ShapeError is a ValueError, as TF's
        la.det(np.ones((2, 3)))


def test_dtype_errors():
    with pytest.raises(sg.DTypeError, match=r"sg\.linalg\.cholesky: 'k' has dtype int64"):
        la.cholesky(sg.placeholder("k", (2, 2), dtype="int64"))
    with pytest.raises(TypeError):
        la.solve(sg.placeholder("m", (2, 2)), sg.placeholder("r", (2, 1), dtype="int32"))


def test_float32_keeps_its_dtype():
    a = np.eye(3, dtype=np.float32) * 4
    for out in (la.cholesky(a), la.inv(a), la.det(a), la.eigh(a)[0], la.qr(a)[1]):
        assert out.numpy().dtype == np.float32


def test_inputs_are_not_modified():
    a = SPD[0].copy()
    b = np.ones((4, 1))
    x = sg.placeholder("x", (4, 4))
    f = sg.function([x], [la.cholesky_solve(la.cholesky(x), b), la.inv(x), la.eigh(x)[1]])
    f(a)
    np.testing.assert_array_equal(a, SPD[0])
    np.testing.assert_array_equal(b, np.ones((4, 1)))
