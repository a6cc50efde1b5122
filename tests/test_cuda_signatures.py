"""Generated CUDA kernels carry explicit signatures (``compile/cuda/signatures.py``): on a
GPU numba compiles them when the module loads and launches them without typing their
arguments; under the simulator (which ignores signatures) each kernel holds its parsed
signature before its first call and every launch checks its arguments against it.
"""

from __future__ import annotations

import types

import numpy as np
import pytest

import symgrad as sg

pytestmark = [pytest.mark.cuda, pytest.mark.compiled,
              pytest.mark.filterwarnings("ignore::RuntimeWarning")]


@pytest.fixture(scope="module")
def rt():
    from symgrad.compile.cuda import runtime as cuda_runtime
    return cuda_runtime


def _kernels(f) -> dict:
    return {name: v for name, v in vars(f.module).items()
            if name.startswith(("_k", "_n")) and name.endswith(("_cuda", "_cols"))}


def test_kernels_hold_their_signature_before_the_first_call(rt):
    """Every generated kernel has its signature in ``runtime.SIGNATURES`` (a side table:
    real numba-cuda dispatchers take no new attributes) before its first call; under the
    simulator the launches check their arguments against it."""
    x = sg.placeholder("x", shape=(None, 3), dtype="float32")
    m = sg.placeholder("m", shape=(3,), dtype="bool")
    y = sg.reduce_sum(sg.where(m, sg.sin(x), 0.0), axis=0)
    f = sg.function([x, m], [y] + sg.gradients(y, x), target="cuda")
    kernels = _kernels(f)
    assert kernels and not f.module.LAUNCHERS_
    for name, k in kernels.items():
        held = rt.signature_of(k)
        fn = getattr(k, "py_func", None) or k.fn
        assert held.text.startswith("void(int64") and \
            len(held.argtypes) == fn.__code__.co_argcount
    sig = next(rt.signature_of(k).text for k in kernels.values()
               if "boolean" in rt.signature_of(k).text)
    assert "float32[:, :]" in sig and "boolean[:]" in sig   # inputs: the plan's dtypes, layout A
    out = f(np.ones((4, 3), np.float32), np.array([True, False, True]))
    np.testing.assert_allclose(out[0], 4 * np.sin(np.array([1.0, 0.0, 1.0])), rtol=1e-6)
    if rt.SIMULATOR:
        assert all(b.argtypes for b in f.module.LAUNCHERS_.values())   # checked launches
    else:
        assert all(getattr(k, "specialized", True) for k in kernels.values())


@pytest.mark.simulator_only(reason="the simulator ignores kernel signatures, so launches "
                            "there check their arguments against them; a GPU's "
                            "specialized launch takes them without looking")
def test_a_launch_that_breaks_its_signature_raises(rt, monkeypatch):
    from numba.core import types as nbt
    x = sg.placeholder("x", shape=(5,))
    f = sg.function([x], sg.exp(x) * 2.0, target="cuda")
    kernel = f.module._k0_cuda
    wrong = (nbt.int64, nbt.Array(nbt.float32, 1, "A"), nbt.Array(nbt.float64, 1, "C"))
    monkeypatch.setitem(rt.SIGNATURES, kernel, rt.KernelSignature("wrong", wrong))
    with pytest.raises(RuntimeError, match="argument 1 is float64 1-d C, its signature says"):
        f(np.ones(5))


def test_the_gpu_branch_compiles_eagerly_and_binds_the_overload(rt, monkeypatch):
    """Without a GPU, the GPU branch with a stand-in numba: ``kernel_jit`` passes the
    signature to ``cuda.jit``; ``bound_kernel`` binds the one compiled overload's launch
    (no typing, no dispatcher call per launch)."""
    calls = []

    class Compiled:
        def launch(self, args, grid, block, stream, shared):
            calls.append((args, grid, block, stream, shared))

    class Dispatcher:
        specialized = True
        overloads = {("sig",): Compiled()}

        def __getitem__(self, config):
            return types.SimpleNamespace(griddim=(config[0], 1, 1), blockdim=(config[1], 1, 1),
                                         stream=config[2], sharedmem=0)

        def __call__(self, *args):
            raise AssertionError("a bound launch never calls the dispatcher")

    jitted = []

    def jit(*args, **kwargs):
        jitted.append((args, kwargs))
        return lambda fn: Dispatcher()

    monkeypatch.setattr(rt, "SIMULATOR", False)
    monkeypatch.setattr(rt, "cuda", types.SimpleNamespace(jit=jit))
    monkeypatch.setattr(rt, "_gpu_present", lambda: True)
    before = rt.SIGNED["compiled"]
    kernel = rt.kernel_jit("void(int64, float64[::1])", True)(lambda n, r: None)
    assert jitted == [(("void(int64, float64[::1])",), {"cache": True})]
    assert rt.SIGNED["compiled"] == before + 1
    assert rt.signature_of(kernel).text == "void(int64, float64[::1])"
    launch = rt._bound(kernel, (4, 128, "stream"))
    launch(8, "array")
    assert calls == [((8, "array"), (4, 1, 1), (128, 1, 1), "stream", 0)]


def test_unsigned_dispatchers_keep_the_configured_launch(rt, monkeypatch):
    monkeypatch.setattr(rt, "SIMULATOR", False)

    class Lazy:
        specialized = False
        overloads: dict = {}

        def __getitem__(self, config):
            return ("configured", config)

    assert rt._bound(Lazy(), (1, 32, 0)) == ("configured", (1, 32, 0))
