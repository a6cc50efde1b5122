"""sg.function: call path, semantics at kinks, targets, cache and golden sources."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import sympy

import symgrad as sg

GOLDEN = Path(__file__).parent / "golden"
TARGETS = ("cpu", "parallel")


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "sgcache"))


def _w1():
    x = sg.placeholder("x", shape=(None,))
    y = sg.placeholder("y", shape=(None,))
    loss = sg.reduce_sum(sg.sin(x) * sg.exp(-y**2) + sg.log1p(x**2 * y**2))
    return [x, y], [loss] + sg.gradients(loss, [x, y])


def _agree(inputs, outputs, args, target, rtol=1e-12):
    f = sg.function(inputs, outputs, target=target)
    got = f(*args)
    want = sg.evaluate(outputs, dict(zip(inputs, args)))
    for g, w in zip(got, want):
        if w is None:
            assert g is None
            continue
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-300)
    return f


@pytest.mark.parametrize("target", TARGETS)
def test_w1_value_and_gradients_one_kernel(target):
    inputs, outputs = _w1()
    rng = np.random.default_rng(0)
    args = [rng.normal(size=100_000), rng.normal(size=100_000)]
    f = _agree(inputs, outputs, args, target, rtol=1e-9)
    assert len(f.plan.kernels) == 1
    assert f.source.count("math.sin(") == 1 and f.source.count("math.exp(") == 1
    assert target in repr(f) and "'x'" not in repr(f) and "x:" in repr(f)


@pytest.mark.parametrize("target", TARGETS)
def test_broadcast_reductions_and_matmul(target):
    X = sg.placeholder("X", shape=(None, 3))
    W = sg.placeholder("W", shape=(3, 4))
    b = sg.placeholder("b", shape=(4,))
    Y = sg.placeholder("Y", shape=(None, 4))
    loss = sg.reduce_mean((sg.tanh(X @ W + b) - Y) ** 2)
    outputs = [loss] + sg.gradients(loss, [W, b])
    rng = np.random.default_rng(1)
    args = [rng.normal(size=(50, 3)), rng.normal(size=(3, 4)), rng.normal(size=4),
            rng.normal(size=(50, 4))]
    _agree([X, W, b, Y], outputs, args, target)


@pytest.mark.parametrize("target", TARGETS)
def test_where_unselected_branch_and_ties(target):
    x = sg.placeholder("x", shape=(4,))
    y = sg.placeholder("y", shape=(4,))
    z = sg.reduce_sum(sg.where(x > 0, sg.log(x), 0.0) + sg.maximum(x, y) + sg.relu(x)
                      + sg.abs(x) + sg.round(x * 2.5))
    outputs = [z] + sg.gradients(z, [x, y])
    args = [np.array([0.0, -1.0, 2.0, 0.5]), np.array([0.0, 1.0, 2.0, -3.0])]
    f = _agree([x, y], outputs, args, target)
    gx = f(*args)[1]
    assert np.all(np.isfinite(gx))


@pytest.mark.parametrize("target", TARGETS)
def test_float32_int_and_scalars(target):
    x = sg.placeholder("x", shape=(3,), dtype="float32")
    k = sg.placeholder("k", shape=(3,), dtype="int64")
    y = sg.reduce_sum(sg.sigmoid(x) * sg.cast(k, "float32") + 2.0 * x)
    f = sg.function([x, k], [y, sg.gradients(y, x)[0]], target=target)
    vals = f(np.array([1.0, -800.0, 3.0], np.float32), np.array([1, 2, 3]))
    assert vals[0].dtype == np.float32 and vals[1].dtype == np.float32
    want = sg.evaluate([y, sg.gradients(y, x)[0]],
                       {x: np.array([1.0, -800.0, 3.0], np.float32), k: np.array([1, 2, 3])})
    for g, w in zip(vals, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_scalar_fast_path_and_0d():
    a, b, c = (sg.placeholder(n) for n in "abc")
    y = a * sg.sin(b) + sg.exp(c * a)
    outputs = [y] + sg.gradients(y, [a, b, c])
    f = sg.function([a, b, c], outputs)
    fast = f(0.5, 1.5, 0.25)
    slow = f(np.array(0.5), np.float64(1.5), 0.25)
    want = sg.evaluate(outputs, {a: 0.5, b: 1.5, c: 0.25})
    for p, q, w in zip(fast, slow, want):
        assert isinstance(p, np.ndarray) and p.shape == ()
        np.testing.assert_allclose(p, w, rtol=1e-14)
        np.testing.assert_allclose(q, w, rtol=1e-14)


def test_strided_inputs_are_not_written_and_outputs_fresh():
    x = sg.placeholder("x", shape=(None,))
    y = sg.reduce_sum(x[1:] * x[:-1]) + sg.reduce_sum(sg.square(x))
    outputs = [y, sg.gradients(y, x)[0], x]
    f = sg.function([x], outputs)
    base = np.arange(20.0)
    view = base[::-2]
    before = view.copy()
    got = f(view)
    want = sg.evaluate(outputs, {x: view.copy()})
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    np.testing.assert_array_equal(view, before)
    assert not np.shares_memory(got[2], base)


def test_argument_errors():
    x = sg.placeholder("x", shape=(None, 4))
    y = sg.placeholder("y", shape=(None, 4))
    f = sg.function([x, y], x + y)
    with pytest.raises(ValueError, match="argument 'y'"):
        f(np.zeros((3, 4)), np.zeros((3, 5)))
    with pytest.raises(TypeError, match="takes 2 arguments"):   # Python: a wrong count
        f(np.zeros((3, 4)))
    with pytest.raises(ValueError, match="argument 'x'"):
        f(np.zeros((3, 4), np.float32), np.zeros((3, 4)))
    with pytest.raises(ValueError, match="broadcast"):
        f(np.zeros((3, 4)), np.zeros((2, 4)))
    # a length-1 unknown dim broadcasts (compiles a variant for that pattern, no fallback)
    np.testing.assert_allclose(f(np.ones((1, 4)), np.ones((3, 4))), np.full((3, 4), 2.0))
    with pytest.raises(ValueError, match="'z'"):
        sg.function([x], x + sg.placeholder("z", shape=(4,)))


def test_none_outputs_and_single_output():
    x = sg.placeholder("x", shape=(2,))
    f = sg.function([x], [None, sg.sin(x), None])
    out = f(np.array([0.0, 1.0]))
    assert out[0] is None and out[2] is None
    g = sg.function([x], sg.cos(x))
    assert isinstance(g(np.array([0.0, 1.0])), np.ndarray)


def test_compile_error_is_wrapped(monkeypatch):
    from symgrad.compile.printing import printer
    monkeypatch.setitem(printer.BASE_FUNCTIONS, sympy.sin,
                        printer.NumbaForm(template="math.sin({0}, {0}, 'bad')"))
    x = sg.placeholder("x", shape=(3,))
    f = sg.function([x], sg.sin(x) * 3.0, math="libm")
    with pytest.raises(sg.CompileError, match="line"):
        f(np.zeros(3))


def test_cache_hit_in_second_process_and_corrupt_file(tmp_path):
    script = textwrap.dedent("""
        import time, numpy as np, symgrad as sg
        x = sg.placeholder("x", shape=(None,)); y = sg.placeholder("y", shape=(None,))
        L = sg.reduce_sum(sg.sin(x) * sg.exp(-y**2) + sg.log1p(x**2 * y**2))
        t = time.perf_counter()
        f = sg.function([x, y], [L] + sg.gradients(L, [x, y]))
        f(np.ones(5), np.ones(5))
        print(time.perf_counter() - t, f.module.__file__, f.cache_hit)
    """)
    env = dict(os.environ, SYMGRAD_CACHE_DIR=str(tmp_path))
    run = lambda: subprocess.run([sys.executable, "-c", script], env=env, check=True,  # noqa
                                 capture_output=True, text=True, cwd=Path(__file__).parent.parent)
    cold, path, hit = run().stdout.split()
    assert hit == "False"
    mtime = Path(path).stat().st_mtime_ns
    warm, path2, hit = run().stdout.split()
    assert path == path2 and hit == "True" and Path(path).stat().st_mtime_ns == mtime
    from symgrad.numba_internals import enabled
    # numba's own cache (sealed through its internals: off with SYMGRAD_NUMBA_INTERNALS=0)
    assert bool(list(Path(path).parent.glob("__pycache__/*.nbi"))) == enabled()
    Path(path).write_text("this is not python(\n")
    again, _, hit = run().stdout.split()
    assert hit == "False" and "symgrad generated" in Path(path).read_text()


def _where_log():
    x = sg.placeholder("x", shape=(None,))
    y = sg.reduce_sum(sg.where(x > 0, sg.log(x), 0.0 * x))
    return [x], [y] + sg.gradients(y, x)


def _rosenbrock():
    x = sg.placeholder("x", shape=(None,))
    f = sg.reduce_sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
    return [x], [f] + sg.gradients(f, x)


GOLDEN_CASES = {
    "w1_cpu": lambda: (*_w1(), "cpu"),
    "w1_parallel": lambda: (*_w1(), "parallel"),
    "where_log_cpu": lambda: (*_where_log(), "cpu"),
    "rosenbrock_cpu": lambda: (*_rosenbrock(), "cpu"),
}


@pytest.mark.parametrize("name", sorted(GOLDEN_CASES))
def test_golden_source(name):
    inputs, outputs, target = GOLDEN_CASES[name]()
    source = sg.function(inputs, outputs, target=target).source
    # tensor names in comments depend on what was built before (and on which identical
    # graph filled the cache first); the code itself must not change
    body = re.sub(r"(#.*)", lambda m: re.sub(r"'[^']*'", "'_'", m.group(1)),
                  source[source.index("# kernel"):])
    path = GOLDEN / f"{name}.py.txt"
    if os.environ.get("SYMGRAD_UPDATE_GOLDEN") or not path.exists():
        path.write_text(body)
    assert body == path.read_text()
