"""Temporaries kept between calls (symgrad/compile/cpu/workspace.py): results unchanged with
and without the workspace, over repeated calls and changing shapes; returned arrays never
workspace memory; concurrent calls; the steady state allocates no large temporary."""

from __future__ import annotations

import pickle
import threading
import tracemalloc

import numpy as np
import pytest

import symgrad as sg
from symgrad.compile.kernel_lib import threaded_matmul as tm
from symgrad.compile.cpu.workspace import MIN_BYTES, Workspaces

TARGETS = ["cpu", "parallel"]
D, H = 16, 64       # a batch of 1024 rows: (1024, 64) float64 temporaries of 512 KiB


def _mlp(b=None):
    phs = [sg.placeholder("W1", (D, H)), sg.placeholder("b1", (H,)),
           sg.placeholder("W2", (H, 1)), sg.placeholder("X", (b, D)),
           sg.placeholder("Y", (b, 1))]
    W1, b1, W2, X, Y = phs
    t = sg.tanh(sg.matmul(X, W1, name="z") + b1, name="t")
    loss = sg.reduce_mean((t @ W2 - Y) ** 2)
    return phs, [loss, *sg.gradients(loss, phs[:3])]


def _data(b: int, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    return [rng.normal(size=s) * 0.5 for s in [(D, H), (H,), (H, 1), (b, D), (b, 1)]]


@pytest.fixture(scope="module", params=TARGETS)
def mlp(request):
    phs, outs = _mlp()
    return sg.function(phs, outs, target=request.param), phs, outs


def _kept(f) -> list:
    return [a for ws in f.workspaces.free for a in ws.buffers.values()]


def _call(f, data, on: bool) -> list:
    f.workspaces.enabled = on
    try:
        return f(*data)
    finally:
        f.workspaces.enabled = True


def test_the_driver_takes_its_large_temporaries_from_the_workspace(mlp):
    f = mlp[0]
    assert "ws_ = take_()" in f.source and "give_(ws_)" in f.source
    assert "ws_.empty(" in f.source


def test_results_identical_with_and_without_reuse_over_changing_shapes(mlp):
    f, phs, outs = mlp
    for b, seed in [(1024, 1), (1024, 2), (600, 3), (1024, 4), (8, 5), (1024, 6)]:
        data = _data(b, seed)
        on, off = _call(f, data, True), _call(f, data, False)
        want = sg.evaluate(outs, dict(zip(phs, data)))
        for a, c, w in zip(on, off, want):
            np.testing.assert_array_equal(a, c)
            np.testing.assert_allclose(a, w, rtol=1e-10, atol=1e-12)
    assert _kept(f) and all(a.nbytes >= MIN_BYTES for a in _kept(f))


def test_returned_arrays_are_fresh_and_survive_the_next_call(mlp):
    f = mlp[0]
    data = _data(1024, 7)
    first = f(*data)
    kept = [np.array(a, copy=True) for a in first]
    for a in first:
        assert not any(np.shares_memory(a, buf) for buf in _kept(f))
        a[...] = 1e9                                # the caller owns what it got
    second = f(*data)
    for a, k in zip(second, kept):
        np.testing.assert_array_equal(a, k)
    assert not any(np.shares_memory(a, b) for a in first for b in second)


def _peak(f, data) -> int:
    tracemalloc.start()
    try:
        f(*data)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_steady_state_allocates_no_new_large_temporary(mlp):
    f = mlp[0]
    data = _data(1024, 8)
    f(*data)
    before = f.workspaces.allocated
    for _ in range(3):
        f(*data)
    assert f.workspaces.allocated == before             # the hook: no new buffer
    _call(f, data, False)
    assert f.workspaces.allocated >= before + 5         # without reuse: each one again


@pytest.mark.parametrize("target", TARGETS)
def test_a_static_steady_call_allocates_only_what_it_returns(target):
    phs, outs = _mlp(1024)
    f = sg.function(phs, outs, target=target)
    data = _data(1024, 11)
    f(*data)
    f.workspaces.enabled = False
    off = _peak(f, data)
    f.workspaces.enabled = True
    f(*data)
    on = _peak(f, data)
    temporary = 1024 * H * 8
    returned = 8 * (1 + D * H + H + H)
    assert on < returned + temporary // 4 and off >= 2 * temporary, (on, off)


def test_two_threads_calling_at_once_get_their_own_results(mlp):
    f, phs, outs = mlp
    inputs = [_data(1024, 20), _data(1024, 21)]
    want = [f(*d) for d in inputs]
    errors: list = []
    barrier = threading.Barrier(2)

    def work(k: int) -> None:
        barrier.wait()
        for _ in range(15):
            got = f(*inputs[k])
            if not all(np.array_equal(g, w) for g, w in zip(got, want[k])):
                errors.append(k)
    threads = [threading.Thread(target=work, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(f.workspaces.free) <= f.workspaces.keep


def test_release_buffers_frees_them_and_the_next_call_allocates_again(mlp):
    f = mlp[0]
    data = _data(1024, 9)
    want = f(*data)
    held = f.workspaces.nbytes()
    assert held >= 2 * 1024 * H * 8
    assert f.release_buffers() == held and f.workspaces.nbytes() == 0
    for a, w in zip(f(*data), want):
        np.testing.assert_array_equal(a, w)
    assert 2 * 1024 * H * 8 <= f.workspaces.nbytes() <= held   # one workspace again


def test_a_pickled_function_runs_alike(mlp):
    f = mlp[0]
    data = _data(1024, 10)
    g = pickle.loads(pickle.dumps(f))
    for a, w in zip(g(*data), f(*data)):
        np.testing.assert_array_equal(a, w)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("rows", [None, 2048])
def test_a_returned_value_sharing_a_temporary_keeps_it_out_of_the_workspace(target, rows):
    # static rows: t is stored into m's dead buffer (reuse.py) and returned as it is
    x, w = sg.placeholder("x", (rows, 32)), sg.placeholder("w", (32, 64))
    t = sg.tanh(sg.matmul(x, w, name="m"), name="t")
    u = sg.exp(sg.matmul(x, w) * 0.5)
    outs = [t, sg.transpose(u), sg.reshape(u * 2.0, (-1,)), sg.reduce_sum(u)]
    f = sg.function([x, w], outs, target=target)
    rng = np.random.default_rng(3)
    data = [rng.normal(size=(2048, 32)), rng.normal(size=(32, 64))]
    first = f(*data)
    kept = [np.array(a, copy=True) for a in first]
    second = f(*[d * 0.5 for d in data])
    for a, k in zip(first, kept):
        np.testing.assert_array_equal(a, k)
        assert not any(np.shares_memory(a, buf) for buf in _kept(f))
        assert not any(np.shares_memory(a, b) for b in second)


def test_small_static_temporaries_keep_the_plain_driver():
    x = sg.placeholder("x", (8, 8))
    f = sg.function([x], sg.reduce_sum(sg.tanh(sg.matmul(x, x))))
    assert "ws_" not in f.source


def test_a_workspace_returned_after_release_is_dropped():
    pool = Workspaces()
    ws = pool.take()
    ws.empty(0, (1024, 64), np.float64)
    pool.release()                       # while the call is in flight
    pool.give(ws)
    assert pool.free == [] and pool.nbytes() == 0
    pool.enabled = False
    ws = pool.take()
    ws.empty(0, (1024, 64), np.float64)
    pool.give(ws)
    assert pool.free == [] and pool.allocated == 2


@pytest.mark.parametrize("shape", [(256, 64, 64), (16, 4096, 64), (32, 64, 256)])
def test_threaded_matmul_writes_into_the_given_buffer(shape):
    m, k, n = shape
    rng = np.random.default_rng(4)
    a, b = rng.normal(size=(m, k)), rng.normal(size=(k, n))
    out = np.full((m, n), np.nan)
    assert tm.matmul(a, b, 2, out, min_work=0) is out
    np.testing.assert_allclose(out, a @ b, rtol=1e-12, atol=1e-12)
