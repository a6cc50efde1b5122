"""The eager compile's dry run never allocates the static shapes (issue 24, item 5): large
placeholders take phantom arrays (``compile/cpu/phantom.py``), which numba types exactly as
the arrays a call passes."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import symgrad as sg
from symgrad.compile.cpu import eager, native_loops, phantom
from symgrad.errors import FeedError


def _loss(x):
    loss = sg.reduce_sum(sg.sin(x) * x)
    return [loss] + sg.gradients(loss, [x])


def test_huge_placeholder_compiles_and_names_the_input_on_a_short_call():
    x = sg.placeholder("huge_x", shape=(2**40,))
    f = sg.function([x], _loss(x))
    assert "1 dry run" in f.passes[-2].decided or "1 dry run" in f.passes[-1].decided
    loop = f.module._k0_cpu
    assert len(loop.signatures) == 1          # typed from the phantom, not left to a call
    with pytest.raises(FeedError, match=r"'huge_x'.*\(1099511627776,\).*\(3,\)"):
        f(np.ones(3))


@pytest.mark.parametrize("target", ["cpu", "parallel"])
def test_hundred_million_elements_compile_without_allocating(target):
    y = sg.placeholder("y", shape=(10**8,))
    w = sg.placeholder("w", shape=(10**4, 10**4))
    m = sg.reduce_sum(sg.exp(y) * 2.0) + \
        sg.reduce_sum(sg.matmul(w, sg.reshape(y[:10**4], (10**4, 1))))
    outputs = [m] + sg.gradients(m, [y, w])
    tracemalloc.start()
    try:
        f = sg.function([y, w], outputs, target=target)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 200 * 2**20, peak           # zeros of y and w alone: 1.6 GB
    compiled = eager.signatures(f.module)
    # a serial loop written as IR (cpu/native_loops.py) compiled that instead of numba's
    ir = {n for name, loop in native_loops.loops(f.module) if loop.function is not None
          and not loop.reason for n in (name[:-2], name[:-6] + "_point")}
    assert all(compiled[k] >= 1 for k in compiled if k not in ir and (
        k.endswith(("_chunk", "_point")) or target == "cpu")), compiled


@pytest.mark.parametrize("target", ["cpu", "parallel"])
def test_phantom_signatures_are_those_of_zeros_and_the_first_call_compiles_nothing(
        target, monkeypatch):
    """Above DUMMY_BYTES the phantom dry run compiles exactly what the zeros dry run
    compiles (views, transposes and matmul steps included), and a call adds nothing."""
    n = 2**21 + 8                              # 16 MiB + : phantoms
    x = sg.placeholder("x", shape=(n,))
    a = sg.placeholder("a", shape=(4, 3))
    h = sg.tanh(sg.matmul(a, sg.reshape(x[:3], (3, 1))))
    loss = sg.reduce_sum(sg.square(h)) + sg.reduce_mean(sg.exp(x) * x)
    outputs = [loss] + sg.gradients(loss, [x, a])
    assert eager.phantom_run([x, a])
    f = sg.function([x, a], outputs, target=target)
    phantom_sigs = {k: d.signatures for k, d in eager.dispatchers(f.module).items()}
    rng = np.random.default_rng(0)
    args = [rng.uniform(-1, 1, n), rng.uniform(-1, 1, (4, 3))]
    got = f(*args)
    after = {k: d.signatures for k, d in eager.dispatchers(f.module).items()}
    assert after == phantom_sigs               # the first call compiled nothing
    monkeypatch.setattr(eager, "DUMMY_BYTES", 1 << 40)     # the zeros dry run
    assert not eager.phantom_run([x, a])
    zeros = {}
    for name, d in eager.dispatchers(f.module).items():
        before = set(d.signatures)
        zeros[name] = before
    eager.compile_module(f.module, [x, a], 0, False)
    assert {k: set(d.signatures) for k, d in eager.dispatchers(f.module).items()} == \
        {k: set(v) for k, v in phantom_sigs.items()}
    want = sg.evaluate(outputs, {x: args[0], a: args[1]})
    for g, e in zip(got, want):
        np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-12)


def test_phantoms_never_touch_elements():
    p = phantom.phantom((2**40, 3), np.float64)
    assert p.T.flags.f_contiguous and p[:, :2].flags.c_contiguous is False
    assert np.add(p, 1.0).shape == p.shape and np.matmul(p, np.ones((3, 2))).shape == (2**40, 2)
    assert p.sum(0).shape == (3,) and p.reshape(-1).shape == (3 * 2**40,)
    assert p[:, :2].reshape(-1).shape == (2 * 2**40,)       # numpy would copy: a new phantom
    p.fill(0)
    p[0] = 1.0                                # no-ops, not writes past a one-element buffer
    for read in (lambda: float(p[0, 0]), lambda: p.tolist(), lambda: list(p),
                 lambda: np.concatenate([p, p])):
        with pytest.raises(phantom.Stop):
            read()
