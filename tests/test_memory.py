"""Bounded memory (issue 24, item 2): a dropped compiled function leaves nothing of
symgrad's reachable (its CompiledFunction, plan and graph, its generated module in
``sys.modules``, the runtime names bound into the module); symgrad's caches are bounded,
and ``sg.clear_caches()`` empties them without breaking functions still held."""

from __future__ import annotations

import functools
import gc
import sys
import weakref

import numpy as np
import pytest

import symgrad as sg
from symgrad import caches
from symgrad.compile.cache import modules
from symgrad.compile.plan import rewrite


def _compile(c: float, target: str = "cpu"):
    x = sg.placeholder("x", shape=(None,))
    loss = sg.reduce_sum(sg.sin(x * c) * x + c)
    return sg.function([x], [loss] + sg.gradients(loss, [x]), target=target), x


@pytest.mark.parametrize("target", ["cpu", "parallel"])
def test_dropped_functions_leave_nothing_reachable(target):
    held = []
    for k in range(4):
        f, x = _compile(1.0 + k / 7919.0, target)
        f(np.linspace(0, 1, 5))
        held.append((weakref.ref(f), weakref.ref(f.plan), weakref.ref(x), f.module.__name__,
                     f.module.__dict__))
        del f, x
    gc.collect()
    for f_ref, plan_ref, x_ref, name, ns in held:
        assert f_ref() is None and plan_ref() is None and x_ref() is None
        assert name not in sys.modules and name not in modules._LOADED
        bound = [k for k in ns if k in ("WORKSPACES_", "check_", "reference_", "USERS_") or
                 (k[:1] in "CS" and k[1:].isdigit())]
        assert bound == []                  # numba keeps this dict: it holds no runtime


def test_a_function_held_keeps_working_when_another_of_its_key_is_dropped():
    first, _ = _compile(0.5)
    second, _ = _compile(0.5)               # the same key: one module, two users
    assert first.module is second.module
    name = first.module.__name__
    v = np.linspace(-1, 1, 6)
    want = first(v)
    del first
    gc.collect()
    assert name in sys.modules
    for got, w in zip(second(v), want):
        np.testing.assert_array_equal(got, w)
    with pytest.raises(sg.FeedError, match="'x'"):
        second(np.ones((2, 2)))             # the driver's checks still name the input
    del second
    gc.collect()
    assert name not in sys.modules


def test_caches_are_bounded_and_cleared():
    assert 0 < rewrite.FORMULA_MEMO <= 1 << 20
    unbounded = [name for name, fn in caches._lru_caches().items()
                 if fn.cache_parameters()["maxsize"] is None]
    # the only unbounded ones have a fixed domain: one symbol per (slot, kind)
    assert unbounded == ["symbols.input_symbol"], unbounded
    assert isinstance(modules._LOADED, weakref.WeakValueDictionary)
    f, _ = _compile(0.25)
    assert sg.cache_info()["formulas"] > 0
    sg.clear_caches()
    info = sg.cache_info()
    assert info["formulas"] == info["derived"] == info["gradient_rules"] == 0
    assert info["pickled"] == 0
    v = np.linspace(0, 2, 4)
    np.testing.assert_allclose(f(v)[1], np.cos(v * 0.25) * 0.25 * v + np.sin(v * 0.25))
    g, _ = _compile(0.25)                   # compiles again after clearing
    np.testing.assert_array_equal(g(v)[0], f(v)[0])


def test_lru_wrapper_check_sees_lru_caches():
    """The bound check above is not vacuous: symgrad's lru caches are found."""
    found = caches._lru_caches()
    assert len(found) >= 4
    assert all(isinstance(fn, functools._lru_cache_wrapper) for fn in found.values())


needs_internals = pytest.mark.skipif(
    not __import__("symgrad.numba_internals", fromlist=["enabled"]).enabled() or
    __import__("os").environ.get("NUMBA_DISABLE_JIT") == "1",
    reason="numba's engine is reached through its internals")


@needs_internals
def test_dropped_functions_hand_their_llvm_modules_back_to_numba():
    """numba's engine keeps the LLVM module of every compile for ever; a released module's
    kernels leave it (docs/memory.md), and the same graph compiles and runs again."""
    from symgrad.compile.cache import unload

    f, _ = _compile(1.0 + 1 / 6073.0)
    v = np.linspace(0, 1, 7)
    want = f(v)
    found = unload.engine_modules(f.module.__dict__)
    assert len(found) >= 2                            # the scalar body and its loop at least
    other, _ = _compile(1.0 + 2 / 6073.0)            # another key, held throughout
    kept = unload.engine_modules(other.module.__dict__)
    del f
    gc.collect()
    assert all(module not in engine._modules for engine, module in found)
    assert all(module in engine._modules for engine, module in kept)
    again, _ = _compile(1.0 + 1 / 6073.0)            # numba's cache or a compile: same values
    for got, w in zip(again(v), want):
        np.testing.assert_array_equal(got, w)
    assert np.isfinite(other(v)[0])


@needs_internals
def test_handing_back_waits_while_another_thread_compiles():
    import threading

    from numba.core.compiler_lock import global_compiler_lock

    from symgrad.compile.cache import unload

    f, _ = _compile(1.0 + 3 / 6073.0)
    f(np.linspace(0, 1, 3))
    found = unload.engine_modules(f.module.__dict__)
    held, go = threading.Event(), threading.Event()

    def compiling():
        with global_compiler_lock:
            held.set()
            go.wait(30)
    t = threading.Thread(target=compiling)
    t.start()
    held.wait(30)
    try:
        assert unload.hand_back(found) == 0          # never blocks: left for later
        assert all(module in engine._modules for engine, module in found)
    finally:
        go.set()
        t.join()
    assert unload.hand_back([]) == len(found)      # the next call hands them back
    assert all(module not in engine._modules for engine, module in found)
    unload._PENDING.clear()
    del f
    gc.collect()                                    # its release finds nothing left to do
