"""Scalar kernels written wholly as LLVM IR and compiled without numba's front end
(issue 29 item 1; codegen/llvm/kernel.py, native.py, cpu/native_kernels.py): the IR
kernel against numba's function of the same region (bit for bit), its refusals (another
dtype, shape, a non-array, a strided view), what ``f.explain()`` says, and the sealed
cache of object code (a warm load, a tampered file never run)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import symgrad as sg
from symgrad.compile.cpu import native_kernels
from symgrad.compile.scalar import source

U0 = np.array([1.0, 0.5])
P = np.array([1.5, 1.0, 3.0, 1.0])


def _rk4(u, p, steps, dt=0.01):
    def rhs(u):
        return sg.stack([p[0] * u[0] - p[1] * u[0] * u[1], p[2] * u[0] * u[1] - p[3] * u[1]])
    for _ in range(steps):
        k1 = rhs(u)
        k2 = rhs(u + dt / 2 * k1)
        k3 = rhs(u + dt / 2 * k2)
        k4 = rhs(u + dt * k3)
        u = u + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return u


def _lv(steps=2):
    u0 = sg.placeholder("state", shape=(2,))     # not test_scalar_regions' graph (its
    p = sg.placeholder("rates", shape=(4,))      # passes are read after a cold compile)
    u = _rk4(u0, p, steps)
    loss = sg.reduce_sum(u * u)
    return [u0, p], [loss, u] + sg.gradients(loss, [u0, p])


def _native_names(f) -> list:
    return [name for name, _ in native_kernels.kernels(f.module)]


def _recorded(f, args) -> list:
    """(native function, numba function, the arguments the driver passed) per scalar kernel
    of ``f`` called on ``args``."""
    seen = []
    for name in _native_names(f):
        base = name[:-2]
        native = getattr(f.module, base + "_native")

        def record(*a, native=native, base=base):
            seen.append((native, getattr(f.module, base), a))
            return native(*a)
        f.module.__dict__[base + "_native"] = record
    try:
        f(*args)
    finally:
        for native, base_fn, _ in seen:
            f.module.__dict__[native.__name__] = native
    return seen


def test_rk4_takes_the_ir_path_and_matches_numba_bit_for_bit():
    inputs, outputs = _lv(2)
    f = sg.function(inputs, outputs)
    names = _native_names(f)
    assert names, f.explain()
    assert all(callable(f.module.__dict__[n]) and
               not isinstance(f.module.__dict__[n], native_kernels.NativeKernel)
               for n in names)   # compiled in sg.function, bound in place of the stub
    got = f(U0, P)
    want = sg.evaluate(outputs, dict(zip(inputs, [U0, P])))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
    calls = _recorded(f, (U0, P))
    assert calls
    for native, numba_fn, args in calls:
        for a, b in zip(native(*args), numba_fn(*args)):
            assert a.dtype == b.dtype and a.shape == b.shape
            assert np.array_equal(a, b, equal_nan=True), (a, b)
    assert "LLVM IR compiled by llvmlite" in f.explain()


def test_the_code_generation_level_is_chosen_by_size(monkeypatch):
    from symgrad.compile.codegen.llvm import native

    levels = [native.codegen_level(n) for n in (1, native.CODEGEN_O3, native.CODEGEN_O3 + 1,
                                                 native.CODEGEN_O2, native.CODEGEN_O2 + 1)]
    assert levels == [3, 3, 2, 2, 0]
    monkeypatch.setattr(native, "CODEGEN_O3", 10)           # this kernel at the middle level
    inputs, outputs = _lv(2)
    f = sg.function(inputs, outputs)
    assert "code generation -O2" in f.explain()
    calls = _recorded(f, (U0, P))
    assert calls
    for native_fn, numba_fn, args in calls:
        for a, b in zip(native_fn(*args), numba_fn(*args)):
            np.testing.assert_allclose(a, b, rtol=4e-16, atol=0)


def test_refused_arguments_run_numba_and_strided_views_are_read():
    x = sg.placeholder("x", shape=(3,))
    y = sg.stack([x[0] * x[1], x[2] - x[0], sg.sin(x[1]) * x[2]])
    f = sg.function([x], [y, sg.gradients(sg.reduce_sum(y * y), [x])[0]])
    names = _native_names(f)
    assert names
    kernel = f.module.__dict__[names[0]]
    native = getattr(f.module, names[0][:-2] + "_native")
    v = np.array([0.3, -1.2, 2.5])
    o = [np.empty(a.shape, a.dtype) for a in native(v)]
    assert kernel(v, *o) is None
    assert kernel(v.astype(np.float32), *o) is NotImplemented        # another dtype
    assert kernel(np.zeros(4), *o) is NotImplemented                 # another shape
    assert kernel(np.zeros((3, 1)), *o) is NotImplemented            # another rank
    assert kernel([0.3, -1.2, 2.5], *o) is NotImplemented            # not an ndarray
    assert kernel(v.astype(">f8"), *o) is NotImplemented             # byte-swapped
    assert kernel(v) is NotImplemented                               # missing outputs
    strided = np.array([0.3, 9.0, -1.2, 9.0, 2.5, 9.0])[::2]
    for a, b in zip(native(strided), native(v)):
        assert np.array_equal(a, b)
    class Sub(np.ndarray):
        pass
    assert kernel(v.view(Sub), *o) is NotImplemented                 # a subclass
    for a, b in zip(native(v.view(Sub)), native(v)):                  # numba's function
        assert np.array_equal(a, b)


def test_bool_inputs_conditions_nan_inf_and_helpers():
    x = sg.placeholder("x", shape=(4,))
    m = sg.placeholder("m", shape=(4,), dtype="bool")
    parts = [sg.where(m[i], x[i] * x[(i + 1) % 4], sg.sign(x[i]) + sg.maximum(x[i], 0.5))
             for i in range(4)]
    y = sg.stack(parts) * sg.stack([x[3], x[2], x[1], x[0]])
    f = sg.function([x, m], [y, x[0] > x[1]])
    assert _native_names(f), f.explain()
    for v in ([1.0, -2.0, np.nan, np.inf], [0.0, -0.0, 3.0, -np.inf], [0.5, 2.0, -1.0, 4.0]):
        v = np.array(v)
        mask = np.array([True, False, True, False])
        got = f(v, mask)
        want = sg.evaluate([y, x[0] > x[1]], {x: v, m: mask})
        for g, w in zip(got, want):
            assert g.dtype == w.dtype
            np.testing.assert_array_equal(g, w)


def test_explain_names_numba_and_why(monkeypatch):
    monkeypatch.setattr(source, "NATIVE", False)
    inputs, outputs = _lv(1)
    f = sg.function(inputs, outputs)
    assert not _native_names(f)
    assert "numba function (the IR path is off" in f.explain()
    np.testing.assert_allclose(f(U0, P)[0], sg.evaluate(outputs[0], {inputs[0]: U0,
                                                                     inputs[1]: P}))
    monkeypatch.setattr(source, "NATIVE", True)
    u = sg.placeholder("u", shape=(2,), dtype="float32")
    g = sg.function([u], [sg.stack([u[0] * u[1], u[1] - u[0]]) * u])
    assert "numba function (float32 values" in g.explain()


def test_object_code_is_cached_sealed_and_never_run_when_tampered(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path))
    x = sg.placeholder("x", shape=(2,))
    f = sg.function([x], [sg.stack([x[0] * x[1] + 1.25, x[1] - x[0]])])
    name = _native_names(f)[0]
    stub = f.module.NATIVE_KERNELS_[name]
    files = list((tmp_path / "native").glob("*.o"))
    assert len(files) == 1
    before = dict(native_kernels.STATS)
    assert native_kernels.build(stub.ir_text, stub.helpers, stub.size) is \
        f.module.__dict__[name]                 # made once per process
    native_kernels._LIVE.clear()                # as another process would
    fn = native_kernels.build(stub.ir_text, stub.helpers, stub.size)   # a warm build
    assert native_kernels.STATS["loaded"] == before["loaded"] + 1
    assert native_kernels.STATS["compiled"] == before["compiled"]
    v, o = np.array([2.0, 3.0]), np.empty(2)
    assert fn(v, o) is None and np.array_equal(o, [7.25, 1.0])
    data = bytearray(files[0].read_bytes())
    data[-40] ^= 0xFF                          # tampered object code
    files[0].write_bytes(bytes(data))
    native_kernels._LIVE.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn = native_kernels.build(stub.ir_text, stub.helpers, stub.size)
    assert native_kernels.STATS["compiled"] == before["compiled"] + 1     # never loaded
    assert any("did not verify" in str(w.message) for w in caught)
    assert fn(v, o) is None and np.array_equal(o, [7.25, 1.0])
    native_kernels._LIVE.clear()
    assert native_kernels.build(stub.ir_text, stub.helpers, stub.size)(v, o) is None
    assert native_kernels.STATS["loaded"] == before["loaded"] + 2         # replaced, sealed


@pytest.mark.parametrize("statements", [10, 5_000, 20_000])
def test_opt_level_by_size(statements):
    from symgrad.compile.codegen.llvm.native import NUMBA_PASSES, opt_level

    assert opt_level(statements) == (3 if statements <= NUMBA_PASSES else 1)


def test_public_numba_only_runs_numba_functions(monkeypatch):
    monkeypatch.setenv("SYMGRAD_NUMBA_INTERNALS", "0")
    inputs, outputs = _lv(1)
    f = sg.function(inputs, outputs)
    assert "numba function (SYMGRAD_NUMBA_INTERNALS=0" in f.explain()
    want = sg.evaluate(outputs, dict(zip(inputs, [U0, P])))
    for g, w in zip(f(U0, P), want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)


def test_exact_zeros_of_a_gradient_are_written():
    x = sg.placeholder("x", shape=(3,))
    y = x[0] * x[1]
    g = sg.gradients(y, [x])[0]                 # [x1, x0, 0.0]: getitem_grad's zeros
    f = sg.function([x], [sg.stack([y, x[2]]), g])
    assert "LLVM IR compiled by llvmlite" in f.explain()
    assert "numba function" not in f.explain()
    v = np.array([2.0, 3.0, np.inf])
    got = f(v)
    np.testing.assert_array_equal(got[1], [3.0, 2.0, 0.0])
    np.testing.assert_array_equal(got[0], [6.0, np.inf])


def test_a_solve_kernel_is_ir_and_a_singular_matrix_raises(caplog):
    """A scalar kernel with a linalg check (the pivots of a small solve) is written as IR
    (it declares the check's status; it once failed to parse and went to numba); a
    failed check falls back to numba's function, which raises ``sg.LinAlgError``."""
    a = sg.placeholder("lhs", shape=(3, 3))
    b = sg.placeholder("rhs", shape=(3, 1))
    x = sg.linalg.solve(a * a + 1.0, b)
    loss = sg.reduce_sum(x * x)
    f = sg.function([a, b], [loss] + sg.gradients(loss, [a]))
    m, r = np.diag([1.0, 2.0, 3.0]), np.ones((3, 1))
    want = np.linalg.solve(m * m + 1.0, r)
    np.testing.assert_allclose(f(m, r)[0], np.sum(want * want), rtol=1e-14)
    assert "did not compile" not in caplog.text
    assert "LLVM IR compiled by llvmlite" in f.explain()
    with pytest.raises(sg.LinAlgError):
        f(np.zeros((3, 3)), r)      # a * a + 1: all ones, singular


def test_zero_filled_outputs_match_evaluate_and_numba():
    """A gradient of mostly exact zeros is zeroed by one memset and only its other
    elements are stored (``kernel.zero_filled``); a Jacobian's zeros that are values (a
    column's ``0.0 * x[j]``: -0.0 where x[j] < 0, NaN where x[j] is not finite) are
    stored. Values are ``sg.evaluate``'s, bits (the signs of zeros) numba's function's."""
    x = sg.placeholder("x", shape=(12,))
    y = sg.stack([x[i] * -x[i + 1] for i in range(11)] + [x[0] - x[0] * x[0]])
    z = sg.placeholder("z", shape=(40,))
    grad = sg.gradients(z[3] * z[7] * x[2], [z])[0]     # 38 exact zeros
    outputs = [y, sg.jacobian(y, x), grad]
    f = sg.function([x, z], outputs)
    assert "numba function" not in f.explain(), f.explain()
    texts = [k.ir_text for _, k in native_kernels.kernels(f.module)]
    assert any("llvm.memset" in t for t in texts)
    v = np.arange(12.0) - 5.0           # 0.0 at 5, negatives: -0.0 products
    v[8], v[10] = np.inf, np.nan
    w = np.linspace(-2.0, 2.0, 40)
    got = f(v, w)
    want = sg.evaluate(outputs, {x: v, z: w})
    for g, e in zip(got, want):
        assert g.shape == e.shape
        np.testing.assert_array_equal(g, e)
    assert not np.signbit(got[2]).any() and (got[2] == 0.0).sum() == 38   # memset: +0.0
    assert np.signbit(got[1][got[1] == 0.0]).any()     # computed -0.0 kept (fastmath nsz:
    calls = _recorded(f, (v, w))                        # the signs are numba's, not numpy's)
    assert calls
    for native_fn, numba_fn, args in calls:     # numba's fallback writes the same bits
        for a, b in zip(native_fn(*args), numba_fn(*args)):
            assert np.array_equal(np.isnan(a), np.isnan(b))
            assert np.array_equal(a[~np.isnan(a)].view(np.int64), b[~np.isnan(b)].view(np.int64))


def test_linalg_checks_are_defined_in_the_ir_and_still_raise():
    """A cholesky kernel's pivot check is a function of its own IR (``body.IR_CHECKS``:
    numba compiles no helper), failing as the njit check does (not d > 0.0: a negative
    pivot and NaN), after which numba's function raises ``sg.LinAlgError``."""
    a = sg.placeholder("spd", shape=(3, 3))
    chol = sg.linalg.cholesky(a)
    loss = sg.reduce_sum(chol * chol)
    f = sg.function([a], [loss] + sg.gradients(loss, [a]))
    texts = [k.ir_text for _, k in native_kernels.kernels(f.module)]
    assert texts and all("declare i32 @symgrad.helper" not in t for t in texts)
    assert any("define internal i32 @symgrad.helper" in t and "fcmp ule" in t for t in texts)
    m = np.array([[4.0, 2.0, 0.0], [2.0, 3.0, 1.0], [0.0, 1.0, 2.0]])
    np.testing.assert_allclose(f(m)[0], np.sum(np.linalg.cholesky(m) ** 2), rtol=1e-14)
    for bad in (-np.eye(3), np.full((3, 3), np.nan)):
        with pytest.raises(sg.LinAlgError, match="not positive definite"):
            f(bad)
