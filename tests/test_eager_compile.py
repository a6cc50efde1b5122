"""sg.function compiles every numba function its calls run before it returns (issue 19)."""

import numpy as np
import pytest
from numba.core import event

import symgrad as sg
from symgrad.compile.cache import modules as cache
from symgrad.compile.cpu.eager import dispatchers, signatures


def compiles_during(call) -> int:
    with event.install_recorder("numba:compile") as recorded:
        call()
    return sum(1 for _, e in recorded.buffer if e.is_start)


def loss_and_grads(shape):
    x = sg.placeholder("x", shape=shape)
    y = sg.placeholder("y", shape=shape)
    loss = sg.reduce_sum(sg.sin(x) * sg.exp(-y * y) + sg.log1p(x * x * y * y))
    return [x, y], [loss] + sg.gradients(loss, [x, y])


@pytest.mark.parametrize("target", ["cpu", "parallel"])
def test_first_call_compiles_nothing(target):
    inputs, outputs = loss_and_grads((None,))
    f = sg.function(inputs, outputs, target=target)
    before = signatures(f.module)
    assert before and all(n >= 1 for name, n in before.items()
                          if "_point" not in name and "_libm" not in name)
    small, large = np.linspace(-1, 1, 7), np.linspace(-1, 1, 40_000)   # serial, parallel
    for n in (small, large):
        assert compiles_during(lambda: f(n, n[::-1].copy())) == 0
    assert signatures(f.module) == before
    got = f(large, large[::-1].copy())
    want = sg.evaluate(outputs, {inputs[0]: large, inputs[1]: large[::-1].copy()})
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)


def test_libm_twins_compile_at_first_use():
    """sin/cos arguments >= 2**30 rerun a kernel with libm: that twin is not compiled by
    sg.function (it rarely runs) but at its first use, with the right result."""
    x = sg.placeholder("x", shape=(4,))
    y = sg.sin(x) * 2.0 + 1.0
    f = sg.function([x], y)
    twins = {n: k for n, k in signatures(f.module).items() if n.endswith("_libm")}
    assert twins and not any(twins.values())
    small, big = np.linspace(0.0, 1.0, 4), np.array([1.0, 3e9, 1e300, 2.0])
    assert compiles_during(lambda: f(small)) == 0
    assert compiles_during(lambda: f(big)) >= 1
    np.testing.assert_allclose(f(big), np.sin(big) * 2.0 + 1.0, rtol=1e-12)
    assert compiles_during(lambda: f(big)) == 0


def test_views_and_steps_compile_eagerly():
    x = sg.placeholder("x", shape=(None, 3))
    y = sg.reduce_sum(sg.transpose(x) * 2.0, axis=1) + sg.reduce_sum(x[::2] ** 2)
    outputs = [y, sg.gradients(sg.reduce_sum(y), x)[0]]
    f = sg.function([x], outputs)
    value = np.arange(15.0).reshape(5, 3)
    assert compiles_during(lambda: f(value)) == 0
    for g, w in zip(f(value), sg.evaluate(outputs, {x: value})):
        np.testing.assert_allclose(g, w, rtol=1e-12)


def test_scalar_fast_path_compiled_and_cache_hit_loads_only():
    a, b = sg.placeholder("a"), sg.placeholder("b")
    y = a * sg.sin(b) + sg.exp(a)
    outputs = [y] + sg.gradients(y, [a, b])
    f = sg.function([a, b], outputs)
    assert compiles_during(lambda: f(0.5, 1.5)) == 0
    assert compiles_during(lambda: f(np.array(0.5), np.array(1.5))) == 0
    assert all(isinstance(v, np.ndarray) and v.shape == () for v in f(0.5, 1.5))
    if not f.module.NUMBA_CACHE:
        pytest.skip("numba's cache is off for this cache directory")
    cache._LOADED.pop(cache.module_name(f.key))         # as a fresh process would load it
    with event.install_recorder("numba:compile") as recorded:
        g = sg.function([a, b], outputs)
        g(0.5, 1.5)
        g(np.array(0.5), np.array(1.5))
    counted = [e for _, e in recorded.buffer if e.is_start]
    assert g.cache_hit and g.module is not f.module and counted == []
    assert all(len(d.signatures) for name, d in dispatchers(g.module).items()
               if "_point" not in name and "_libm" not in name)
    for p, q in zip(f(0.5, 1.5), g(0.5, 1.5)):
        assert p == q


def test_progress_argument(capsys):
    x = sg.placeholder("x", shape=(4,))
    sg.function([x], sg.cos(x) * 3.0, progress=True)
    shown = capsys.readouterr().err
    assert "symgrad: compiling f(x)" in shown and "numba" in shown and "done" in shown
    sg.function([x], sg.cos(x) * 3.0, progress=False)
    assert capsys.readouterr().err == ""
    with pytest.raises(ValueError, match="progress"):
        sg.function([x], sg.cos(x), progress="yes")
