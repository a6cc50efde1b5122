"""The parallel target's threaded matmul (symgrad/compile/kernel_lib/threaded_matmul.py): the same
products as np.matmul (to rounding where the contraction is split), every split, odd
sizes, views, dtypes that fall back, and the generated driver that calls it."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
from symgrad.compile.kernel_lib import threaded_matmul as tm

RNG = np.random.default_rng(7)


@pytest.fixture(autouse=True)
def single_threaded_blas(monkeypatch):
    """The splits run only over a single-threaded BLAS: pretend it is one here."""
    monkeypatch.setattr(tm, "_blas", [1])


def test_multithreaded_blas_is_left_to_itself(monkeypatch):
    monkeypatch.setattr(tm, "_blas", [4])

    def no_split(jobs):
        raise AssertionError("split over a multi-threaded BLAS")
    monkeypatch.setattr(tm, "_run", no_split)
    a, b = _pair(4096, 64, 256)
    assert np.array_equal(tm.matmul(a, b, 2), a @ b)


def test_blas_threads_is_a_positive_count():
    tm._blas.clear()
    assert tm.blas_threads() >= 1


def _pair(m, k, n, dtype=np.float64):
    a = RNG.normal(size=(m, k)).astype(dtype)
    b = RNG.normal(size=(k, n)).astype(dtype)
    return a, b


@pytest.mark.parametrize("m, k, n", [(4096, 64, 256), (64, 4096, 256), (33, 65, 517),
                                     (1, 1, 1), (1, 300, 1), (257, 1, 129), (17, 2049, 3),
                                     (2, 3, 4000), (0, 5, 7), (5, 0, 7)])
@pytest.mark.parametrize("threads", [2, 3, 8])
def test_equals_numpy_for_every_shape(m, k, n, threads):
    a, b = _pair(m, k, n)
    got = tm.matmul(a, b, threads, min_work=0)
    want = a @ b
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * max(k, 1))


@pytest.mark.parametrize("m, k, n, axis", [(4096, 64, 256, "rows"), (64, 4096, 256, "k"),
                                           (16, 64, 4096, "cols")])
def test_each_split_is_taken_and_right(m, k, n, axis):
    assert tm.plan_split(m, k, n, 2)[0] == axis
    a, b = _pair(m, k, n)
    np.testing.assert_allclose(tm.matmul(a, b, 2), a @ b, rtol=1e-12, atol=1e-10)


def test_row_and_column_splits_are_bitwise_numpy():
    for m, k, n in [(4096, 64, 256), (16, 64, 4096)]:
        a, b = _pair(m, k, n)
        assert np.array_equal(tm.matmul(a, b, 2, min_work=0), a @ b)


def test_small_products_and_one_thread_run_one_matmul():
    assert tm.plan_split(8, 8, 8, 2) == (None, 1)
    assert tm.plan_split(4096, 4096, 4096, 1) == (None, 1)
    assert tm.plan_split(20, 4096, 20, 2, min_work=0) == ("k", 2)
    assert tm.plan_split(31, 10, 10, 2, min_work=0) == (None, 1)   # blocks under MIN_BLOCK


def test_non_contiguous_views():
    big = RNG.normal(size=(600, 400))
    a, b = big[::2, 5:205], big[1:201, ::4].T.T[:, :90]
    np.testing.assert_allclose(tm.matmul(a, b, 2, min_work=0), a @ b, rtol=1e-12,
                               atol=1e-12)
    x = RNG.normal(size=(4096, 64))
    d = RNG.normal(size=(4096, 256))
    np.testing.assert_allclose(tm.matmul(x.T, d, 2, min_work=0), x.T @ d, rtol=1e-11,
                               atol=1e-10)


def test_float32_complex_and_integer():
    a, b = _pair(300, 200, 100, np.float32)
    got = tm.matmul(a, b, 2, min_work=0)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, a @ b, rtol=1e-5, atol=1e-4)
    c = a.astype(np.complex128) * (1 + 2j)
    np.testing.assert_allclose(tm.matmul(c, b.astype(np.complex128), 2, min_work=0),
                               c @ b.astype(np.complex128), rtol=1e-5, atol=1e-3)
    i = RNG.integers(-5, 5, size=(300, 200))
    j = RNG.integers(-5, 5, size=(200, 100))
    got = tm.matmul(i, j, 2, min_work=0)
    assert got.dtype == (i @ j).dtype and np.array_equal(got, i @ j)


def test_not_2d_and_mixed_dtypes_fall_back():
    a = RNG.normal(size=(3, 40, 50))
    b = RNG.normal(size=(50, 60))
    assert np.array_equal(tm.matmul(a, b, 2, min_work=0), np.matmul(a, b))
    v = RNG.normal(size=50)
    assert np.array_equal(tm.matmul(b.T, v, 2, min_work=0), b.T @ v)
    f32 = b.astype(np.float32)
    assert np.array_equal(tm.matmul(a[0], f32, 2, min_work=0), a[0] @ f32)


def test_shape_mismatch_raises_like_numpy():
    with pytest.raises(ValueError):
        tm.matmul(np.ones((4, 3)), np.ones((4, 3)), 2, min_work=0)


def test_inputs_not_modified_and_result_is_fresh():
    a, b = _pair(64, 4096, 256)
    a0, b0 = a.copy(), b.copy()
    r = tm.matmul(a, b, 2, min_work=0)
    assert np.array_equal(a, a0) and np.array_equal(b, b0)
    assert not np.shares_memory(r, a) and not np.shares_memory(r, b)


def test_concurrent_callers_get_their_own_results():
    from concurrent.futures import ThreadPoolExecutor
    pairs = [_pair(500 + i, 300, 200) for i in range(6)]
    with ThreadPoolExecutor(3) as ex:
        got = list(ex.map(lambda p: tm.matmul(*p, 2, min_work=0), pairs))
    for (a, b), r in zip(pairs, got):
        np.testing.assert_allclose(r, a @ b, rtol=1e-12, atol=1e-12)


def _mlp(target):
    shapes = {"W1": (64, 256), "b1": (256,), "W2": (256, 1), "b2": (1,), "X": (600, 64),
              "Y": (600, 1)}
    ph = {k: sg.placeholder(k, s) for k, s in shapes.items()}
    loss = sg.reduce_mean((sg.tanh(ph["X"] @ ph["W1"] + ph["b1"]) @ ph["W2"] + ph["b2"]
                           - ph["Y"]) ** 2)
    grads = sg.gradients(loss, [ph[k] for k in ("W1", "b1", "W2", "b2")])
    fn = sg.function(list(ph.values()), [loss, *grads], target=target)
    data = [RNG.normal(size=s) * 0.3 for s in shapes.values()]
    return fn, list(ph.values()), [loss, *grads], data


def test_parallel_target_calls_it_and_cpu_does_not():
    par, phs, outs, data = _mlp("parallel")
    cpu, *_ = _mlp("cpu")
    assert "tmatmul_(" in par.source and "tmatmul_(" not in cpu.source
    want = sg.evaluate(outs, dict(zip(phs, data)))
    for fn in (par, cpu):
        before = [d.copy() for d in data]
        got = fn(*data)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
        assert all(np.array_equal(d, b) for d, b in zip(data, before))


def test_integer_matmul_in_parallel_target_is_numpy():
    a = sg.placeholder("a", (40, 30), dtype="int64")
    b = sg.placeholder("b", (30, 20), dtype="int64")
    f = sg.function([a, b], a @ b, target="parallel")
    assert "tmatmul_(" not in f.source
    x = RNG.integers(-9, 9, (40, 30))
    y = RNG.integers(-9, 9, (30, 20))
    assert np.array_equal(f(x, y), x @ y)


def _big_chain(fn_of_z, target="parallel", m=300, k=8, n=200):
    x, w = sg.placeholder("x", (m, k)), sg.placeholder("w", (k, n))
    b = sg.placeholder("b", (n,))
    outs = fn_of_z(sg.matmul(x, w, name="z") + b)
    fn = sg.function([x, w, b], outs, target=target)
    return fn, [x, w, b]


def test_pooled_plan_runs_its_kernels_as_chunks_with_reductions():
    fn, phs = _big_chain(lambda z: [sg.reduce_sum(sg.tanh(z) * 2.0, axis=0),
                                    sg.exp(z * 0.1), sg.reduce_max(z)])
    assert "def _k0_chunk(c, nc," in fn.source and "chunks_(_k0_chunk" in fn.source
    assert "_parallel(" not in fn.source.split("def run")[1]   # no prange launch
    cpu, _ = _big_chain(lambda z: [sg.reduce_sum(sg.tanh(z) * 2.0, axis=0),
                                   sg.exp(z * 0.1), sg.reduce_max(z)], "cpu")
    assert "_chunk" not in cpu.source and "chunks_" not in cpu.source
    data = [RNG.normal(size=(300, 8)), RNG.normal(size=(8, 200)), RNG.normal(size=200)]
    want = sg.evaluate(fn.outputs, dict(zip(phs, data)))
    for f in (fn, cpu):
        for g, w in zip(f(*data), want):
            np.testing.assert_allclose(g, w, rtol=1e-11, atol=1e-11)


def test_pooled_chunks_retry_sin_with_libm():
    fn, phs = _big_chain(lambda z: [sg.sin(z)])
    assert "chunks_(_k0_chunk_libm" in fn.source
    data = [RNG.normal(size=(300, 8)) * 1e12, RNG.normal(size=(8, 200)), np.zeros(200)]
    np.testing.assert_allclose(fn(*data)[0], np.sin(data[0] @ data[1]), rtol=1e-9, atol=1e-9)


def test_pooled_function_called_from_several_threads():
    from concurrent.futures import ThreadPoolExecutor
    fn, phs = _big_chain(lambda z: [sg.reduce_sum(sg.tanh(z), axis=0)], m=4096, k=64, n=64)
    feeds = [[RNG.normal(size=(4096, 64)), RNG.normal(size=(64, 64)) * 0.1,
              RNG.normal(size=64)] for _ in range(6)]
    with ThreadPoolExecutor(3) as ex:
        got = list(ex.map(lambda d: fn(*d)[0], feeds))
    for d, g in zip(feeds, got):
        np.testing.assert_allclose(g, np.tanh(d[0] @ d[1] + d[2]).sum(0), rtol=1e-10)


def test_run_chunks_sums_and_propagates_errors():
    assert tm.run_chunks(lambda c, nc: c + 10 * nc, 3) == 90 + 3
    assert tm.run_chunks(lambda c, nc: None, 4) == 0

    def bad(c, nc):
        if c == 1:
            raise ValueError("chunk 1")
    with pytest.raises(ValueError, match="chunk 1"):
        tm.run_chunks(bad, 3)
