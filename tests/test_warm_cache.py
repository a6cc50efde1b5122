"""The warm path (compile/cache/warm.py): a cache hit keyed by the unfolded graph runs no fold
or plan pass, and graphs that differ in anything the generated code depends on never
share a key."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import symgrad as sg
from symgrad.compile.cache import modules as cache, trust, warm
from symgrad.outputs import OutputMode

LIST = OutputMode.LIST


@pytest.fixture()
def fresh(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("SYMGRAD_KEY_FILE", str(tmp_path / "key" / "cache.key"))
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setattr(trust, "_KEY", [])
    monkeypatch.setattr(cache, "_LOADED", {})
    monkeypatch.setattr(trust, "_WARNED", set())
    return tmp_path / "cache"


def _graph(c=(1.0, 2.0, 3.0), dtype=np.float64, shape=(3,), stop=False, axis=None,
           swap=False, zero=0.5):
    x = sg.placeholder("x", shape=shape, dtype=dtype)
    inner = x * x
    inner = sg.stop_gradient(inner) if stop else inner
    y = sg.reduce_sum(sg.sin(inner) * sg.constant(np.array(c, dtype)) + zero * x, axis=axis)
    outs = [y, sg.gradients(sg.reduce_sum(y), x)[0]]
    return [x], outs[::-1] if swap else outs


def _key(graph, target="cpu", math="fast", mode=LIST):
    return warm.graph_key(*graph, target, mode, math)


def test_rebuilt_graph_has_the_same_key():
    assert _key(_graph()) == _key(_graph())


@pytest.mark.parametrize("change", [
    dict(c=(1.0, 2.0, 3.5)), dict(c=(1.0, -0.0, 3.0)), dict(dtype=np.float32),
    dict(shape=(None,)), dict(stop=True), dict(swap=True), dict(zero=-0.0),
])
def test_graphs_that_compile_differently_never_share_a_key(change):
    base = dict(c=(1.0, 0.0, 3.0), zero=0.0)
    assert _key(_graph(**base)) != _key(_graph(**{**base, **change}))


def test_op_attributes_are_in_the_key():
    def g(axis):
        x = sg.placeholder("x", shape=(2, 2))
        return [x], [sg.reduce_sum(sg.sin(x), axis=axis)]
    assert _key(g(0)) != _key(g(1)) and _key(g(0)) == _key(g(0))


def test_target_math_and_mode_are_in_the_key():
    g = _graph()
    keys = {_key(g), _key(g, target="parallel"), _key(g, math="libm"),
            _key(g, mode=OutputMode.SINGLE)}
    assert len(keys) == 4


def test_fold_settings_are_in_the_key(monkeypatch):
    from symgrad.compile.plan import hoist
    before = _key(_graph())
    monkeypatch.setattr(hoist, "ENABLED", not hoist.ENABLED)
    assert _key(_graph()) != before


def test_nan_payloads_are_hashed_by_their_bytes():
    """Payloads do not change the code; a constant is bound from the record by value, so
    two payloads never share one (a miss at worst)."""
    quiet, other = np.float64("nan"), np.frombuffer(np.uint64(0x7FF8000000000001).tobytes())[0]
    assert np.isnan(other)
    assert _key(_graph(c=(1.0, quiet, 3.0))) != _key(_graph(c=(1.0, other, 3.0)))


def _names(f):
    return [r.name for r in f.passes]


def test_cache_hit_runs_no_fold_and_binds_the_right_constants(fresh):
    v = np.array([0.1, 0.2, 0.3])
    cold = sg.function(*_graph())
    assert "fold" in _names(cold) and "warm record" in _names(cold)
    hit = sg.function(*_graph())
    assert hit.cache_hit and _names(hit) == ["warm key", "bind", "numba compile"]
    for a, b in zip(hit(v), cold(v)):
        np.testing.assert_array_equal(a, b)
    other = sg.function(*_graph(c=(1.0, 2.0, 4.0)))    # one element differs: its own key
    assert "fold" in _names(other)
    (x,), outs = _graph(c=(1.0, 2.0, 4.0))
    expected = [sg.evaluate(o, {x: v}) for o in outs]
    for a, b in zip(other(v), expected):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    assert "kernel" in hit.explain()     # the plan, made when asked for


def test_a_tampered_record_compiles_again_with_a_warning(fresh):
    v = np.array([0.1, 0.2, 0.3])
    sg.function(*_graph())
    (record,) = fresh.glob("symgrad_warm_*")
    data = bytearray(record.read_bytes())
    data[-1] ^= 1
    record.write_bytes(bytes(data))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f = sg.function(*_graph())
    assert "fold" in _names(f)
    assert any("symgrad_warm_" in str(w.message) for w in caught)
    (x,), outs = _graph()
    for a, b in zip(f(v), [sg.evaluate(o, {x: v}) for o in outs]):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_attributes_of_each_kind_are_in_the_key():
    """Tuples of ints (indexing), plain values (an axis) and texts (the sympy trees of
    fused expressions, shared texts numbered once) each name the graph."""
    x = sg.placeholder("x", shape=(3, 3))

    def key(*outs):
        return _key(([x], list(outs)))
    assert key(x[0, 1]) != key(x[1, 0]) and key(x[0, 1]) == key(x[0, 1])
    assert key(sg.stack([x, x], axis=0)) != key(sg.stack([x, x], axis=1))
    assert key(sg.sin(x) * sg.cos(x), sg.cos(x)) != key(sg.cos(x) * sg.sin(x), sg.sin(x))
    assert key(sg.sin(x) + x, sg.cos(x)) != key(sg.sin(x), sg.cos(x) + x)
