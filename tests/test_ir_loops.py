"""Loop kernels written as LLVM IR and compiled without numba's front end (issue 29 item
1; codegen/llvm/loops.py, cpu/native_loops.py): each IR loop against numba's function of
the same loop on the same arguments (bit for bit) over random elementwise and reduction
graphs, its refusals (a strided or another dtype's array: numba's function runs), what
``f.explain()`` says, and the sealed object-code cache (a warm build runs no LLVM and
never loads numba's registries)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import symgrad as sg
from symgrad.compile.codegen.llvm.loops import signature
from symgrad.compile.cpu import native_loops
from symgrad.numba_internals import enabled as internals_enabled

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pytestmark = pytest.mark.skipif(not internals_enabled(), reason="SYMGRAD_NUMBA_INTERNALS=0: "
                                "the IR path uses numba's LLVM layer (numba's loops run)")


def _copy(args: tuple) -> tuple:
    """Copies of the arrays of ``args``, one per distinct array (an input merged into an
    output stays one array)."""
    seen: dict = {}
    return tuple(seen.setdefault(id(a), a.copy()) if isinstance(a, np.ndarray) else a
                 for a in args)


def _checked(f) -> list:
    """Wrap every IR loop of ``f``'s module so that each call also runs numba's function on
    copies of the arguments and the outputs are compared bit for bit; returns the list
    the wrappers append (loop name, IR ran) to."""
    module = f.module
    ran = []
    for name, loop in native_loops.loops(module):
        numba_fn = getattr(module, name[:-2])

        def spy(*args, _loop=loop, _numba=numba_fn, _name=name):
            before = _copy(args)
            _loop.compile_for(args)
            ir = _loop.function(*args) is None
            if not ir:        # another layout than the first call's: IR again, or numba's
                _loop.other(*args)
                ir = _loop.more.get(signature(args)) not in (None, native_loops._refuse)
            if ir:
                _numba(*before)
                for a, b in zip(args, before):
                    if isinstance(a, np.ndarray):
                        assert a.dtype == b.dtype
                        np.testing.assert_array_equal(np.ascontiguousarray(a).view(np.uint8),
                                                      np.ascontiguousarray(b).view(np.uint8),
                                                      err_msg=_name)
            ran.append((_name, ir))
        module.__dict__[name] = spy
    return ran


def _random_graph(rng, n_ops: int):
    """A random program of elementwise ops and reductions over two placeholders of unknown
    length (loop kernels, never one scalar kernel), with its gradients."""
    x = sg.placeholder("x", shape=(None, 5))
    y = sg.placeholder("y", shape=(5,))
    pool = [x, y, x * 0.5 + 1.0]
    for _ in range(n_ops):
        a, b = (pool[i] for i in rng.integers(0, len(pool), 2))
        op = rng.integers(0, 9)
        if op == 0:
            v = a + b
        elif op == 1:
            v = a * b
        elif op == 2:
            v = a - b * 2.0
        elif op == 3:
            v = a / (b * b + 1.0)
        elif op == 4:
            v = sg.maximum(a, b)
        elif op == 5:
            v = sg.where(a > b, a, -b)
        elif op == 6:
            v = sg.square(a) + sg.abs(b)
        elif op == 7:
            v = sg.reduce_sum(a, axis=0) if len(a.shape) == 2 else a * 3.0
        else:
            v = sg.sqrt(sg.square(a) + 1.0)
        pool.append(v)
    out = sg.reduce_sum(pool[-1] * pool[-2])
    return [x, y], [out, *sg.gradients(out, [x, y])]


@pytest.mark.parametrize("seed", range(6))
def test_random_graphs_bit_equal_to_numba(seed):
    rng = np.random.default_rng(seed)
    inputs, outputs = _random_graph(rng, 6)
    f = sg.function(inputs, outputs)
    ran = _checked(f)
    x, y = rng.standard_normal((7, 5)), rng.standard_normal(5)
    f(x, y)
    f(rng.standard_normal((3, 5)), y)
    assert ran and any(ir for _, ir in ran)


@pytest.mark.parametrize("math", ["libm", "fast"])
def test_transcendentals_and_reductions(math):
    x = sg.placeholder("x", shape=(None, 8))
    y = sg.reduce_sum(sg.sqrt(x * x + 1.0) * sg.exp(-x) + sg.sin(x), axis=1)
    z = sg.reduce_sum(sg.log1p(x * x), axis=0)
    f = sg.function([x], [y, z, *sg.gradients(sg.reduce_sum(y), [x])], math=math)
    ran = _checked(f)
    x0 = np.random.default_rng(1).standard_normal((50, 8))
    got = f(x0)
    np.testing.assert_allclose(got[0], (np.sqrt(x0 * x0 + 1) * np.exp(-x0) + np.sin(x0)).sum(1),
                               rtol=1e-12)
    text = f.explain()
    if math == "libm":       # libm's functions are intrinsics or externs: all IR
        assert ran and all(ir for _, ir in ran)
        assert "numba function" not in text
        assert "runs   LLVM IR compiled by llvmlite, no numba front end (loop and body" in text
    else:                    # vecmath's fast sin/cos check their ranges: numba's loops
        assert "runs   numba function (its body checks sin/cos ranges" in text


def test_dense_jacobian_and_hessian_loops_are_ir():
    sys.path.insert(0, ROOT)
    from benchmarks import jacobians

    for build in (jacobians.build_jacobian, jacobians.build_hessian):
        inputs, out, arrays = build(sg, 128)    # 24: one scalar kernel, no loop
        f = sg.function(inputs, out)
        ran = _checked(f)
        f(*arrays)
        assert ran and all(ir for _, ir in ran)


def test_other_layouts_and_dtypes_are_declined():
    x = sg.placeholder("x", shape=(None,))
    f = sg.function([x], sg.sin(x) * x + 1.0, math="libm")
    f(np.ones(4))
    module = f.module
    (name, _), = native_loops.loops(module)
    wrapper = getattr(module, name[:-2] + "_native")
    ir = getattr(module, name)
    assert not isinstance(ir, native_loops.NativeLoop)      # compiled: the builtin
    base = np.linspace(0.0, 2.0, 12)
    for arg in (base[::2], base.astype(np.float32)[:6]):
        r = np.zeros(6)
        assert ir(6, arg, r) is NotImplemented and not r.any()     # no element written
        wrapper(6, arg, r)      # strided: IR written for it; float32: numba's function
        np.testing.assert_allclose(r, np.sin(arg) * arg + 1.0, rtol=1e-6)
    # one more function, the strided view's; float32 arrays are numba's
    assert list(module.NATIVE_LOOPS_[name].more) == [signature((6, base[::2], np.zeros(6)))]
    r = np.zeros(6)
    assert ir(6, base[:6].copy(), r) is None
    np.testing.assert_allclose(r, np.sin(base[:6]) * base[:6] + 1.0, rtol=1e-15)  # an fma


def test_disabled_path_is_numba_and_explained(monkeypatch):
    monkeypatch.setattr(native_loops, "ENABLED", False)
    x = sg.placeholder("x", shape=(None,))
    f = sg.function([x], sg.sin(x) * x + 2.5, math="libm")
    np.testing.assert_allclose(f(np.ones(3)), np.sin(1.0) + 2.5)
    assert "numba function (symgrad.compile.cpu.native_loops.ENABLED is False)" in f.explain()


def test_vecmath_body_stays_numba_with_the_reason():
    x = sg.placeholder("x", shape=(None,))
    f = sg.function([x], sg.exp(x) * 3.0, math="fast")
    np.testing.assert_allclose(f(np.ones(3)), 3.0 * np.e, rtol=1e-15)
    text = f.explain()
    assert "numba function (outside the IR writer's subset: a call of exp_f64)" in text


_PROGRAM = textwrap.dedent("""
    import sys
    import numpy as np
    import symgrad as sg
    from symgrad.compile.cpu import native_kernels
    x = sg.placeholder("x", shape=(None, 4))
    y = sg.reduce_sum(x * x + 2.0 * x, axis=1)
    f = sg.function([x], [y, *sg.gradients(sg.reduce_sum(y), [x])], math="libm")
    out = f(np.arange(12.0).reshape(3, 4))
    assert np.array_equal(out[0], (np.arange(12.0).reshape(3, 4) ** 2 +
                                   2 * np.arange(12.0).reshape(3, 4)).sum(1))
    print(native_kernels.STATS["compiled"], native_kernels.STATS["loaded"],
          "numba.np.arraymath" in sys.modules)
""")


def test_warm_build_loads_object_code_and_no_numba_registries(tmp_path):
    env = dict(os.environ, SYMGRAD_CACHE_DIR=str(tmp_path / "sg"),
               NUMBA_CACHE_DIR=str(tmp_path / "nb"), PYTHONPATH=ROOT)

    def run():
        done = subprocess.run([sys.executable, "-c", _PROGRAM], env=env, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        compiled, loaded, registries = done.stdout.split()
        return int(compiled), int(loaded), registries

    cold = run()
    warm = run()
    assert cold[0] >= 1 and cold[2] == "False"      # IR loops: numba's compiler never ran
    assert warm == (0, cold[0], "False")             # every kernel loaded, none compiled


def test_without_numba_internals_every_loop_is_numba(monkeypatch):
    monkeypatch.setattr(native_loops, "internals_enabled", lambda: False)
    x = sg.placeholder("x", shape=(None,))
    f = sg.function([x], x * x + 0.25, math="libm")
    np.testing.assert_array_equal(f(np.full(3, 2.0)), np.full(3, 4.25))
    assert "numba function (SYMGRAD_NUMBA_INTERNALS=0" in f.explain()
