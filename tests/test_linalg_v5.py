"""sg.linalg.svd, expm, lu, lu_solve and pinv (issue 31): values against numpy/scipy on
sg.evaluate, the tape, compiled cpu/parallel and cuda (the simulator); gradients against
finite differences (TF's rules); batched inputs; Jacobians through the batching rules;
repeated singular values; errors."""

import numpy as np
import pytest
import scipy.linalg

import symgrad as sg
from symgrad.graph.traversal import topological_order
from symgrad.ops.linalg import decompositions_v5 as D
from symgrad.testing import check_gradients

from .helpers import to_host

la = sg.linalg
RNG = np.random.default_rng(31)


def _separated(shape, rng=RNG):
    """A random matrix with singular values k+1, k, ..., 2 (well separated)."""
    m, n = shape[-2:]
    k = min(m, n)
    u = np.linalg.qr(rng.normal(size=shape[:-2] + (m, m)))[0]
    v = np.linalg.qr(rng.normal(size=shape[:-2] + (n, n)))[0]
    s = np.zeros(shape)
    s[..., np.arange(k), np.arange(k)] = np.arange(k, 0, -1) + 1.0
    return u @ s @ np.swapaxes(v, -1, -2)


def _np_svd(a, full=False):
    u, s, vh = np.linalg.svd(a, full_matrices=full)
    return s, u, np.swapaxes(vh, -1, -2)


def _np_lu(a):
    flat = a.reshape((-1,) + a.shape[-2:])
    packed, perms = [], []
    for m in flat:
        f, piv = scipy.linalg.lu_factor(m)
        perm = np.arange(m.shape[0])
        for i, p in enumerate(piv):
            perm[[i, p]] = perm[[p, i]]
        packed.append(f)
        perms.append(perm)
    return np.stack(packed).reshape(a.shape), np.stack(perms).reshape(a.shape[:-1])


TALL, WIDE, BATCH = RNG.normal(size=(5, 3)), RNG.normal(size=(3, 4)), RNG.normal(size=(2, 4, 4))
EXPM = 0.6 * RNG.normal(size=(2, 3, 3))
SQUARE = RNG.normal(size=(2, 4, 4)) + 2 * np.eye(4)
RHS = RNG.normal(size=(2, 4, 2))
RANK2 = RNG.normal(size=(4, 2)) @ RNG.normal(size=(2, 5))

# name -> (fn, arrays, numpy reference returning a list)
VALUES = {
    "svd_tall": (lambda a: list(la.svd(a)), [TALL], lambda a: list(_np_svd(a))),
    "svd_wide_full": (lambda a: list(la.svd(a, full_matrices=True)), [WIDE],
                      lambda a: list(_np_svd(a, True))),
    "svd_batched": (lambda a: list(la.svd(a)), [BATCH], lambda a: list(_np_svd(a))),
    "svd_values_only": (lambda a: [la.svd(a, compute_uv=False)], [BATCH],
                        lambda a: [np.linalg.svd(a, compute_uv=False)]),
    "expm": (lambda a: [la.expm(a)], [EXPM], lambda a: [scipy.linalg.expm(a)]),
    "lu": (lambda a: list(la.lu(a)), [SQUARE], lambda a: list(_np_lu(a))),
    "lu_solve": (lambda a, b: [la.lu_solve(*la.lu(a), b)], [SQUARE, RHS],
                 lambda a, b: [np.linalg.solve(a, b)]),
    "pinv_tall": (lambda a: [la.pinv(a)], [TALL], lambda a: [np.linalg.pinv(a)]),
    "pinv_rank_deficient": (lambda a: [la.pinv(a)], [RANK2],
                            lambda a: [np.linalg.pinv(a, rcond=10 * 5 * 2.2e-16)]),
}


@pytest.mark.parametrize("name", sorted(VALUES))
def test_values_on_evaluate_and_tape(name):
    fn, arrays, reference = VALUES[name]
    want = reference(*arrays)
    xs = [sg.placeholder(f"x{k}", a.shape) for k, a in enumerate(arrays)]
    ys = fn(*xs)
    assert [y.shape for y in ys] == [w.shape for w in want]
    got = sg.evaluate(ys, dict(zip(xs, arrays)))
    eager = [y.numpy() for y in fn(*[sg.Variable(a) for a in arrays])]
    for g, e, w in zip(got, eager, want):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(e, w, rtol=1e-9, atol=1e-12)


def _all_values():
    inputs, outputs, args, wants = [], [], [], []
    for name in sorted(VALUES):
        fn, arrays, reference = VALUES[name]
        xs = [sg.placeholder(f"{name}{k}", a.shape) for k, a in enumerate(arrays)]
        inputs += xs
        args += arrays
        outputs += fn(*xs)
        wants += reference(*arrays)
    return inputs, outputs, args, wants


@pytest.mark.compiled
@pytest.mark.parametrize("target", ["cpu", "parallel"])
def test_values_compiled(target):
    inputs, outputs, args, wants = _all_values()
    got = sg.function(inputs, outputs, target=target)(*args)
    for g, w in zip(got, wants):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)
        assert g.dtype == w.dtype or w.dtype.kind == "i"


def test_lu_permutation_is_int32_and_reconstructs():
    packed, perm = la.lu(SQUARE)
    assert perm.dtype == np.int32 and perm.shape == (2, 4)
    l = np.tril(packed.numpy(), -1) + np.eye(4)
    u = np.triu(packed.numpy())
    rows = np.take_along_axis(SQUARE, perm.numpy()[..., None].astype(np.int64), -2)
    np.testing.assert_allclose(l @ u, rows, rtol=1e-12, atol=1e-12)


def test_shapes_with_unknown_dims():
    s, u, v = la.svd(sg.placeholder("a", (None, 5, 3)), full_matrices=True)
    assert (s.shape, u.shape, v.shape) == ((None, 3), (None, 5, 5), (None, 3, 3))
    s, u, v = la.svd(sg.placeholder("b", (2, None, 3)))
    assert (s.shape, u.shape, v.shape) == ((2, None), (2, None, None), (2, 3, None))
    packed, perm = la.lu(sg.placeholder("c", (None, 4, 4)))
    assert packed.shape == (None, 4, 4) and perm.shape == (None, 4)


# --- gradients -------------------------------------------------------------------------------
def _weights(shape):
    return RNG.normal(size=shape)


WU, WV = _weights((5, 3)), _weights((3, 3))
WUF, WVF = _weights((3, 3)), _weights((4, 4))
GRADIENTS = {
    # u and v up to sign: squares (and u_i v_i^T products) are sign-free
    "svd_tall": (lambda a: [la.svd(a)[0], la.svd(a)[1] ** 2 * WU, la.svd(a)[2] ** 2 * WV],
                 [_separated((5, 3))]),
    "svd_wide_full": (lambda a: [la.svd(a, full_matrices=True)[1] ** 2 * WUF,
                                 la.svd(a, full_matrices=True)[2] ** 2 * WVF],
                      [_separated((3, 4))]),
    "svd_batched_outer": (lambda a: sg.matmul(la.svd(a)[1] * la.svd(a)[0][..., None, :],
                                              la.matrix_transpose(la.svd(a)[2])) ** 3,
                          [_separated((2, 3, 4))]),
    "svd_values_only": (lambda a: la.svd(a, compute_uv=False) ** 2, [_separated((2, 4, 3))]),
    "expm": (la.expm, [EXPM]),
    "expm_single": (lambda a: sg.sin(la.expm(a)), [0.5 * RNG.normal(size=(4, 4))]),
    "lu": (lambda a: la.lu(a)[0], [SQUARE]),
    "lu_solve": (lambda a, b: la.lu_solve(*la.lu(a), b), [SQUARE, RHS]),
    "pinv_tall": (la.pinv, [_separated((2, 5, 3))]),
    "pinv_wide": (la.pinv, [_separated((3, 4))]),
}


@pytest.mark.parametrize("name", sorted(GRADIENTS))
def test_gradients_match_finite_differences(name):
    """sg.evaluate, the tape and finite differences agree."""
    fn, arrays = GRADIENTS[name]
    check_gradients(fn, *arrays, compiled=False, raise_on_error=True)


@pytest.mark.compiled
@pytest.mark.parametrize("name,target", [("svd_tall", "cpu"), ("expm", "parallel"),
                                         ("lu_solve", "cpu"), ("pinv_tall", "parallel")])
def test_gradients_compiled(name, target):
    fn, arrays = GRADIENTS[name]
    check_gradients(fn, *arrays, target=target, raise_on_error=True)


def test_singular_value_gradient_is_u_g_vt():
    a = sg.placeholder("a", (4, 3))
    g0 = RNG.normal(size=3)
    (g,) = sg.gradients(sg.reduce_sum(la.svd(a, compute_uv=False) * g0), [a])
    s, u, v = _np_svd(TALL[:4])
    np.testing.assert_allclose(sg.evaluate(g, {a: TALL[:4]}), (u * g0) @ v.T, rtol=1e-12)


def test_repeated_singular_values_give_finite_gradients():
    """TF's rule divides by s_j^2 - s_i^2 (inf/NaN at repeated values); the safe
    reciprocal of eigh's rule makes the u/v gradient finite (the ill-defined coupling term
    is dropped). The gradient of a function of s alone stays exact: d sum(s) = u v^T."""
    a = sg.placeholder("a", (3, 3))
    s, u, v = la.svd(a)
    loss = sg.reduce_sum(u ** 2 * WV) + sg.reduce_sum(v ** 2 * WV.T)
    (g,) = sg.gradients(loss, [a])
    (gs,) = sg.gradients(sg.reduce_sum(s), [a])
    q = np.linalg.qr(RNG.normal(size=(3, 3)))[0]
    x0 = 2.0 * q                                   # every singular value is 2
    assert np.all(np.isfinite(sg.evaluate(g, {a: x0})))
    np.testing.assert_allclose(sg.evaluate(gs, {a: x0}), q, rtol=1e-10, atol=1e-12)


def test_expm_gradient_is_the_frechet_derivative():
    a0, e0, g0 = 0.5 * RNG.normal(size=(3, 3)), RNG.normal(size=(3, 3)), RNG.normal(size=(3, 3))
    a = sg.placeholder("a", (3, 3))
    (g,) = sg.gradients(sg.reduce_sum(la.expm(a) * g0), [a])
    _, frechet = scipy.linalg.expm_frechet(a0, e0)
    assert np.isclose(np.sum(sg.evaluate(g, {a: a0}) * e0), np.sum(frechet * g0), rtol=1e-10)


def test_second_order():
    """sum(s^2) = |a|_F^2: Hessian 2 I; expm's Hessian-vector product by differences."""
    a = sg.placeholder("a", (3, 2))
    (h,) = sg.hessians(sg.reduce_sum(la.svd(a, compute_uv=False) ** 2), [a])
    np.testing.assert_allclose(sg.evaluate(h, {a: TALL[:3, :2]}).reshape(6, 6), 2 * np.eye(6),
                               atol=1e-9)
    x = sg.placeholder("x", (2, 2))
    x0, v0, w = 0.4 * RNG.normal(size=(2, 2)), RNG.normal(size=(2, 2)), RNG.normal(size=(2, 2))
    (g,) = sg.gradients(sg.reduce_sum(la.expm(x) * w), [x])
    (hv,) = sg.gradients(sg.reduce_sum(g * v0), [x])
    eps = 1e-5
    fd = (sg.evaluate(g, {x: x0 + eps * v0}) - sg.evaluate(g, {x: x0 - eps * v0})) / (2 * eps)
    np.testing.assert_allclose(sg.evaluate(hv, {x: x0}), fd, rtol=1e-6, atol=1e-8)


# --- Jacobians (batching rules) --------------------------------------------------------------
JACOBIANS = {
    "svd_values": (lambda x: la.svd(x, compute_uv=False), _separated((3, 2))),
    "svd_vectors": (lambda x: la.svd(x)[1] ** 2, _separated((3, 3))),
    "expm": (la.expm, 0.5 * RNG.normal(size=(3, 3))),
    "expm_batched": (la.expm, 0.5 * RNG.normal(size=(2, 2, 2))),
    "lu": (lambda x: la.lu(x)[0], SQUARE[0, :3, :3]),
    "lu_solve_rhs": (lambda x: la.lu_solve(*_np_lu(SQUARE[0]), x), RHS[0]),
    "pinv": (la.pinv, _separated((3, 2))),
}


def _fd_jacobian(build, x0, eps=1e-6):
    x = sg.placeholder("x", x0.shape)
    y = build(x)
    cols = []
    for index in np.ndindex(*x0.shape):
        d = np.zeros_like(x0)
        d[index] = eps
        cols.append((sg.evaluate(y, {x: x0 + d}) - sg.evaluate(y, {x: x0 - d})) / (2 * eps))
    return np.stack(cols, -1).reshape(np.shape(cols[0]) + x0.shape)


@pytest.mark.parametrize("case", sorted(JACOBIANS))
def test_jacobian_matches_finite_differences_with_bounded_nodes(case):
    build, x0 = JACOBIANS[case]
    x = sg.placeholder("x", x0.shape)
    y = build(x)
    jac = sg.jacobian(y, x)
    np.testing.assert_allclose(sg.evaluate(jac, {x: x0}), _fd_jacobian(build, x0),
                               rtol=1e-5, atol=1e-6)
    nodes = [n for n in topological_order([jac]) if n.op in D.RECORDS]
    forward = [n for n in topological_order([y]) if n.op in D.RECORDS]
    assert len(nodes) <= 3 * len(forward) + 6      # one node per record, not per column


# --- cuda (the simulator in CI) --------------------------------------------------------------
@pytest.mark.cuda
@pytest.mark.compiled
def test_cuda_values_and_gradients():
    a = sg.placeholder("a", (2, 4, 4))
    b = sg.placeholder("b", (2, 4, 2))
    s, u, v = la.svd(a)
    packed, perm = la.lu(a)
    y = sg.reduce_sum(s) + sg.reduce_sum(u ** 2 * BATCH) + sg.reduce_sum(la.expm(0.3 * a)) \
        + sg.reduce_sum(la.lu_solve(packed, perm, b)) + sg.reduce_sum(la.pinv(a) ** 2)
    outputs = [y, packed, perm, v ** 2] + sg.gradients(y, [a, b])
    x0 = _separated((2, 4, 4))
    want = sg.evaluate(outputs, {a: x0, b: RHS})
    got = sg.function([a, b], outputs, target="cuda")(x0, RHS)
    for g, w in zip(got, want):
        np.testing.assert_allclose(to_host(g), w, rtol=1e-9, atol=1e-12)


# --- errors ----------------------------------------------------------------------------------
def test_shape_and_dtype_errors():
    with pytest.raises(sg.ShapeError, match=r"sg\.linalg\.expm: 'm'.*square"):
        la.expm(sg.placeholder("m", (2, 3)))
    with pytest.raises(sg.ShapeError, match=r"sg\.linalg\.lu: 'm'.*square"):
        la.lu(sg.placeholder("m", (2, 3)))
    with pytest.raises(sg.ShapeError, match=r"sg\.linalg\.svd: 'v'.*rank >= 2"):
        la.svd(sg.placeholder("v", (3,)))
    with pytest.raises(sg.DTypeError, match=r"sg\.linalg\.svd: 'k' has dtype int64"):
        la.svd(sg.placeholder("k", (2, 2), dtype="int64"))


def test_svd_full_matrices_gradient_needs_close_dims():
    a = sg.placeholder("a", (5, 2))
    with pytest.raises(sg.NoGradientError, match=r"\|m - n\| > 1"):
        sg.gradients(sg.reduce_sum(la.svd(a, full_matrices=True)[1]), [a])


def test_float32_keeps_its_dtype():
    a = (np.eye(3) * 2 + 0.1).astype(np.float32)
    for out in (la.svd(a)[0], la.svd(a)[1], la.expm(a), la.lu(a)[0], la.pinv(a)):
        assert out.numpy().dtype == np.float32


def test_forward_mode_by_transposition():
    """sg.jvp (the engines' transposition fallback) equals <gradient, tangent>."""
    x0, t0, w = RNG.normal(size=(3, 3)), RNG.normal(size=(3, 3)), RNG.normal(size=(3, 3))
    x = sg.placeholder("x", (3, 3))
    for build in (lambda a: sg.reduce_sum(la.svd(a)[2] ** 2 * w) + sg.reduce_sum(la.svd(a)[0]),
                  lambda a: sg.reduce_sum(la.expm(a) * w),
                  lambda a: sg.reduce_sum(la.lu(a)[0] * w),
                  lambda a: sg.reduce_sum(la.pinv(a) * w)):
        (g,) = sg.gradients(build(x), [x])
        (j,) = sg.jvp([build(x)], [x], [t0])
        assert np.isclose(sg.evaluate(j, {x: x0}), np.sum(sg.evaluate(g, {x: x0}) * t0),
                          rtol=1e-9)


def test_empty_batch():
    a = np.zeros((0, 3, 3))
    assert la.svd(a)[1].numpy().shape == (0, 3, 3)
    assert la.expm(a).numpy().shape == (0, 3, 3)
    packed, perm = la.lu(a)
    assert packed.numpy().shape == (0, 3, 3) and perm.numpy().shape == (0, 3)
