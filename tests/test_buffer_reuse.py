"""Kernels storing an output into the buffer of a dead temporary (symgrad/compile/cpu/reuse.py):
taken where it is safe, refused where it is not, results unchanged, user arrays and
returned arrays never shared, and ``explain`` tells which buffers were reused."""

from __future__ import annotations

import re

import numpy as np
import pytest

import symgrad as sg

RNG = np.random.default_rng(11)
TARGETS = ["cpu", "parallel"]


def _check(fn, phs, outs, data):
    """fn(*data) equals sg.evaluate, leaves data alone, returns unshared arrays."""
    before = [d.copy() for d in data]
    got = fn(*data)
    got = got if isinstance(got, list) else [got]
    want = sg.evaluate(outs, dict(zip(phs, data)))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
    assert all(np.array_equal(d, b) for d, b in zip(data, before))
    arrays = [g for g in got if isinstance(g, np.ndarray) and g.size]
    for k, a in enumerate(arrays):
        assert not any(np.shares_memory(a, d) for d in data)
        assert not any(np.shares_memory(a, b) for b in arrays[k + 1:])
    return got


def _mlp(b=300):
    shapes = {"W1": (16, 32), "b1": (32,), "W2": (32, 1), "b2": (1,), "X": (b, 16),
              "Y": (b, 1)}
    phs = [sg.placeholder(k, s) for k, s in shapes.items()]
    W1, b1, W2, b2, X, Y = phs
    t = sg.tanh(sg.matmul(X, W1, name="z") + b1, name="t")
    loss = sg.reduce_mean((t @ W2 + b2 - Y) ** 2)
    outs = [loss, *sg.gradients(loss, phs[:4])]
    data = [RNG.normal(size=s) * 0.5 for s in shapes.values()]
    return phs, outs, data


@pytest.mark.parametrize("target", TARGETS)
def test_mlp_stores_tanh_into_the_matmul_buffer(target):
    phs, outs, data = _mlp()
    fn = sg.function(phs, outs, target=target)
    assert "o0_0 = v" in fn.source and "the dead buffer of 'z'" in fn.source
    text = fn.explain()
    # tanh' = sech**2 reads z + b1 (add_k), which takes z's buffer; t gets its own, and
    # the gradient takes add_k's: as much is allocated as when tanh' read t
    assert re.search(r"add_\d+ is stored into the dead buffer of z", text), text
    total = 8 * (300 * 32 * 4 + 300 * 2)
    assert f"temporaries: 6, {total} bytes, {total - 8 * 300 * 65} allocated" in text
    first = _check(fn, phs, outs, data)
    kept = [np.array(a, copy=True) for a in first]
    second = _check(fn, phs, outs, [d * 0.9 for d in data])
    assert all(np.array_equal(a, k) for a, k in zip(first, kept))   # not overwritten
    assert not any(np.shares_memory(a, b) for a in first for b in second if a.size)


@pytest.mark.parametrize("target", TARGETS)
def test_a_temporary_that_is_also_returned_is_not_reused(target):
    x, w = sg.placeholder("x", (40, 8)), sg.placeholder("w", (8, 24))
    m = sg.matmul(x, w, name="m")
    outs = [m, sg.tanh(m, name="t")]
    fn = sg.function([x, w], outs, target=target)
    assert "dead buffer" not in fn.source and "buffers reused" not in fn.explain()
    _check(fn, [x, w], outs, [RNG.normal(size=(40, 8)), RNG.normal(size=(8, 24))])


@pytest.mark.parametrize("target", TARGETS)
def test_a_temporary_read_again_later_is_not_reused(target):
    x, w = sg.placeholder("x", (40, 8)), sg.placeholder("w", (8, 24))
    m = sg.matmul(x, w, name="m")
    t = sg.tanh(m, name="t")
    later = sg.matmul(sg.transpose(m), t)          # reads m (through a view) after tanh
    outs = [sg.reduce_sum(later), sg.reduce_sum(t)]
    fn = sg.function([x, w], outs, target=target)
    assert "the dead buffer of 'm'" not in fn.source
    _check(fn, [x, w], outs, [RNG.normal(size=(40, 8)), RNG.normal(size=(8, 24))])


@pytest.mark.parametrize("target", TARGETS)
def test_user_arrays_and_views_are_never_written(target):
    x = sg.placeholder("x", (64, 64))
    t = sg.tanh(sg.transpose(x) * 2.0)
    outs = [sg.exp(t) + 1.0, sg.reduce_sum(t * t)]
    fn = sg.function([x], outs, target=target)
    assert "dead buffer" not in fn.source
    _check(fn, [x], outs, [RNG.normal(size=(64, 64))])


@pytest.mark.parametrize("target", TARGETS)
def test_broadcast_reads_are_not_reused(target):
    x, w = sg.placeholder("x", (40, 8)), sg.placeholder("w", (8, 1))
    m = sg.matmul(x, w, name="m")                  # (40, 1) read broadcast over (40, 24)
    y = sg.placeholder("y", (40, 24))
    outs = [sg.tanh(m + y)]
    fn = sg.function([x, w, y], outs, target=target)
    assert "the dead buffer of 'm'" not in fn.source
    _check(fn, [x, w, y], outs, [RNG.normal(size=s) for s in [(40, 8), (8, 1), (40, 24)]])


@pytest.mark.parametrize("target", TARGETS)
def test_a_kernel_that_may_run_again_with_libm_is_not_reused(target):
    x, w = sg.placeholder("x", (40, 8)), sg.placeholder("w", (8, 24))
    outs = [sg.sin(sg.matmul(x, w, name="m"))]
    fn = sg.function([x, w], outs, target=target)
    assert "the dead buffer of 'm'" not in fn.source
    huge = RNG.normal(size=(40, 8)) * 1e12           # beyond the fast range reduction
    wv = RNG.normal(size=(8, 24))
    got = _check(fn, [x, w], outs, [huge, wv])
    np.testing.assert_allclose(got[0], np.sin(huge @ wv), rtol=1e-9, atol=1e-9)
    libm = sg.function([x, w], outs, target=target, math="libm")
    assert "the dead buffer of 'm'" in libm.source   # libm kernels run once: reused
    _check(libm, [x, w], outs, [huge, RNG.normal(size=(8, 24))])


def test_float32_chain_reuses_and_matches():
    x, w = sg.placeholder("x", (50, 20), "float32"), sg.placeholder("w", (20, 30), "float32")
    outs = [sg.tanh(sg.matmul(x, w, name="m")) * 3.0]   # returned in m's buffer
    fn = sg.function([x, w], outs)
    data = [RNG.normal(size=(50, 20)).astype(np.float32),
            RNG.normal(size=(20, 30)).astype(np.float32)]
    assert "the dead buffer of 'm'" in fn.source
    got = fn(*data)[0]
    want = sg.evaluate(outs, dict(zip([x, w], data)))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want[0], rtol=1e-5, atol=1e-5)
    assert not any(np.shares_memory(got, d) for d in data)
    assert not np.shares_memory(fn(*data)[0], got)


def test_no_store_into_a_buffer_the_kernel_reads_through_a_view():
    """``m + m^T`` reads the matmul's buffer at ``[i, j]`` and, through the transpose, at
    ``[j, i]``: storing the sum into that buffer would overwrite ``m[j, i]`` before it is
    read (found by sg.linalg's eigh gradient)."""
    import numpy as np
    import symgrad as sg
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(2, 3, 3))
    x, y = sg.placeholder("x", (3, 3)), sg.placeholder("y", (3, 3))
    m = sg.matmul(x, y)
    out = sg.tril(m + sg.transpose(m))
    for target in ("cpu", "parallel"):
        got = sg.function([x, y], out, target=target)(a, b)
        np.testing.assert_allclose(got, np.tril(a @ b + (a @ b).T), rtol=1e-13)
