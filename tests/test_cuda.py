"""target="cuda": agrees with target="cpu" (under the simulator on machines without a GPU;
tests/conftest.py sets NUMBA_ENABLE_CUDASIM=1 before numba is imported).

The simulator runs every GPU thread as a Python thread: arrays here stay tiny (<= 64
elements). It does not type-check like the real compiler, so the device body is checked
to be the CPU target's scalar text, and ``cuda_ptx_check.py`` compiles every kernel with
the real numba.cuda compiler when a CUDA toolkit (NVVM) is installed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import symgrad as sg
from symgrad.errors import FeedError, ShapeError

from .helpers import interface_of, is_numba_device_array, shares_device_memory, to_host
from .test_compile_random import BINARY, UNARY, build

pytestmark = [pytest.mark.cuda, pytest.mark.compiled,
              pytest.mark.filterwarnings("ignore::RuntimeWarning")]

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def cuda():
    if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
        from numba import cuda as real
        if not real.is_available():
            pytest.skip("no GPU and NUMBA_ENABLE_CUDASIM is not 1")
    from numba import cuda as module
    return module


def both(inputs, outputs, *args, rtol=1e-12, atol=1e-12):
    """Run on cuda and cpu, compare, return the cuda results."""
    got = sg.function(inputs, outputs, target="cuda")(*args)
    want = sg.function(inputs, outputs, target="cpu")(*args)
    for g, w in zip(got if isinstance(got, list) else [got],
                    want if isinstance(want, list) else [want]):
        if w is None:
            assert g is None
            continue
        assert isinstance(g, np.ndarray) and g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return got


def test_import_symgrad_does_not_import_numba_cuda():
    code = "import sys, symgrad; print('numba.cuda' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, check=True)
    assert out.stdout.strip() == "False"


def _point(source: str, k: int) -> str:
    """The body of ``_k<k>_point`` without its decorator."""
    match = re.search(rf"^def _k{k}_point\(.*?(?=\n\n\n|\Z)", source, re.S | re.M)
    return match.group(0)


def test_device_body_is_the_cpu_scalar_text(cuda):
    x = sg.placeholder("x", shape=(6,), dtype="float32")
    y = sg.reduce_sum(sg.where(x > 0, sg.log(x), x) * sg.sigmoid(x) + sg.floor(x))
    outs = [y] + sg.gradients(y, x)
    gpu = sg.function([x], outs, target="cuda")
    cpu = sg.function([x], outs, target="cpu", math="libm")   # cuda prints libm math
    assert "target cuda" in gpu.source.splitlines()[0]
    assert "@cuda.jit(device=True)\ndef _k0_point" in gpu.source
    for k in range(len(gpu.plan.kernels)):
        assert _point(gpu.source, k) == _point(cpu.source, k)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_reductions_agree_and_keep_dtype(cuda, dtype):
    x = sg.placeholder("x", shape=(6, 5), dtype=dtype)
    b = sg.placeholder("b", shape=(5,), dtype=dtype)
    z = sg.tanh(x * b) + b
    loss = sg.reduce_sum(z * z)
    outs = [loss, sg.reduce_mean(z), sg.reduce_sum(z, axis=0), sg.reduce_mean(z, axis=1),
            sg.reduce_sum(z, axis=1, keepdims=True), z] + sg.gradients(loss, [x, b])
    rng = np.random.default_rng(0)
    args = [rng.normal(size=(6, 5)).astype(dtype), rng.normal(size=5).astype(dtype)]
    tol = 1e-5 if dtype == "float32" else 1e-12
    got = both([x, b], outs, *args, rtol=tol, atol=tol)
    assert all(g.dtype == np.dtype(dtype) for g in got)


def test_integer_and_bool_sums(cuda):
    n = sg.placeholder("n", shape=(7,), dtype="int32")
    v = sg.placeholder("v", shape=(7,))
    outs = [sg.reduce_sum(n * 3), sg.reduce_sum(sg.cast(v > 0, "int32")),
            v * sg.cast(n, "float64"), v > 0.5]
    both([n, v], outs, np.arange(7, dtype=np.int32) - 3, np.linspace(-1, 1, 7))


def test_scalar_graph(cuda):
    s = sg.placeholder("s", shape=())
    y = sg.sin(s) * s
    both([s], [y] + sg.gradients(y, s), np.array(0.7))
    both([s], y, 0.7)


def test_unknown_lengths_broadcast_on_the_device(cuda):
    x = sg.placeholder("x", shape=(None, 3))
    w = sg.placeholder("w", shape=(None, 1))
    y = sg.reduce_sum(sg.sin(x) * w)
    outs = [y] + sg.gradients(y, [x, w])
    rng = np.random.default_rng(1)
    both([x, w], outs, rng.normal(size=(4, 3)), rng.normal(size=(4, 1)))
    both([x, w], outs, rng.normal(size=(4, 3)), rng.normal(size=(1, 1)))


def test_matmul_on_the_device_and_steps_through_the_host(cuda):
    a = sg.placeholder("a", shape=(5, 9))
    b = sg.placeholder("b", shape=(9, 3))
    h = sg.tanh(a @ b)
    loss = sg.reduce_sum(h[1:, :] * h[1:, :]) + sg.reduce_max(h)
    rng = np.random.default_rng(2)
    both([a, b], [loss, h] + sg.gradients(loss, [a, b]), rng.normal(size=(5, 9)),
         rng.normal(size=(9, 3)))
    c = sg.placeholder("c", shape=(2, 3, 4), dtype="float32")
    d = sg.placeholder("d", shape=(2, 4, 2), dtype="float32")   # batched: host round trip
    both([c, d], sg.reduce_sum(c @ d, axis=0), rng.normal(size=(2, 3, 4)).astype("float32"),
         rng.normal(size=(2, 4, 2)).astype("float32"), rtol=1e-5, atol=1e-5)


def test_device_arrays_in_device_arrays_out(cuda):
    """numba device arrays in, numba device arrays out (docs/cuda.md "GPU results")."""
    x = sg.placeholder("x", shape=(8,))
    y = sg.reduce_sum(sg.exp(x) * x)
    outs = [y, x] + sg.gradients(y, x)
    f = sg.function([x], outs, target="cuda")
    xv = np.linspace(-1, 1, 8)
    got = f(cuda.to_device(xv))
    assert all(is_numba_device_array(g) for g in got)
    want = sg.function([x], outs)(xv)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.copy_to_host(), w, rtol=1e-12)


class Foreign:
    """A device array of no known library: only ``__cuda_array_interface__`` (what a
    CuPy array or a torch CUDA tensor offers); ``keep`` holds the memory alive."""

    def __init__(self, desc: dict, keep=None):
        self.__cuda_array_interface__, self.keep = desc, keep


def test_cuda_array_interface_objects_are_wrapped(cuda):
    """An object with only a CUDA array interface is taken without a copy; its results
    are numba device arrays (the generic consumer of the interface)."""
    from symgrad.compile.cuda import runtime as cuda_runtime

    device = cuda.to_device(np.arange(4.0))
    foreign = Foreign(interface_of(device), keep=device)
    assert cuda_runtime.is_device_array(foreign)
    x = sg.placeholder("x", shape=(4,))
    got = sg.function([x], x * 2.0, target="cuda")(foreign)
    assert is_numba_device_array(got)
    np.testing.assert_allclose(to_host(got), np.arange(4.0) * 2)


def test_an_incomplete_array_interface_is_a_feed_error(cuda):
    """A ``__cuda_array_interface__`` without 'shape' (what CuPy answered with KeyError:
    'shape' on a GPU) is refused before anything reads it, naming the argument."""
    x = sg.placeholder("x", shape=(4,))
    f = sg.function([x], x * 2.0, target="cuda")
    with pytest.raises(FeedError, match=r"argument 'x'.*Foreign.*without 'shape', 'typestr'"):
        f(Foreign({"version": 3, "data": (0, False)}))


def test_argument_errors_match_the_cpu_target(cuda):
    x = sg.placeholder("x", shape=(3,))
    y = sg.placeholder("y", shape=(None, 3))
    outs = [sg.reduce_sum(x * y)]
    messages = []
    for target in ("cpu", "cuda"):
        f = sg.function([x, y], outs, target=target)
        for args in [(np.zeros(4), np.zeros((2, 3))), (np.zeros(3, np.float32), np.zeros((2, 3))),
                     (np.zeros(3),)]:
            with pytest.raises((FeedError, TypeError)) as info:   # a wrong count: TypeError
                f(*args)
            messages.append(str(info.value))
        with pytest.raises(FeedError, match=r"argument 'x'.*shape \(4,\)"):
            f(cuda.to_device(np.zeros(4)), np.zeros((2, 3)))
    assert messages[:3] == messages[3:]
    z = sg.placeholder("z", shape=(None,))
    w = sg.placeholder("w", shape=(None,))
    f = sg.function([z, w], z * w, target="cuda")
    with pytest.raises(ShapeError):
        f(np.zeros(3), np.zeros(4))


def test_launch_configuration_from_device_properties():
    from symgrad.compile.cuda.runtime import DeviceLimits, launch_config

    h100 = DeviceLimits(132, 1024, 32, 2048, False)
    blocks, threads = launch_config(10**8, h100, 256)
    assert threads == 256 and blocks == 2 * 132 * 8
    assert launch_config(100, h100, 256) == (1, 256)
    small = DeviceLimits(2, 96, 32, 96, False)      # odd limits: power of two, >= warp
    assert launch_config(10**6, small, 256) == (4, 64)
    sim = DeviceLimits(1, 1024, 32, 2048, True)
    assert launch_config(10**6, sim, 256) == (2, 32)


def test_module_file_is_cached_and_keyed_by_target(cuda):
    x = sg.placeholder("x", shape=(4,))
    f = sg.function([x], sg.sin(x), target="cuda")
    g = sg.function([x], sg.sin(x), target="cuda")
    cpu = sg.function([x], sg.sin(x), target="cpu")
    assert f.key == g.key != cpu.key
    assert Path(f.module.__file__).exists() and f.module.__file__ != cpu.module.__file__


@settings(deadline=None, max_examples=6)
@given(ops=st.lists(st.tuples(st.sampled_from(UNARY + BINARY), st.integers(0, 50),
                              st.integers(0, 50)), min_size=1, max_size=8),
       seed=st.integers(0, 100))
def test_random_graphs_agree_with_cpu(ops, seed):
    shapes = [(5, 3), (3,), (5, 1)]
    xs, outputs = build(ops, shapes)
    rng = np.random.default_rng(seed)
    both(xs, outputs, *[rng.uniform(-1.5, 1.5, size=s) for s in shapes], rtol=1e-10, atol=1e-12)


def test_every_kernel_compiles_for_a_real_gpu():
    """The real numba.cuda type check (NVVM only, no GPU): skipped without a toolkit."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    out = subprocess.run([sys.executable, str(ROOT / "tests" / "cuda_ptx_check.py")],
                         capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
    if out.returncode == 2:
        pytest.skip(out.stdout.strip())
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1].startswith("OK")


def test_structural_steps_stay_on_the_device(cuda):
    """Batched matmul, transpose, getitem, reduce_max, cumsum, concat and gather run as
    device steps: device arguments in, device results out, no copy made by symgrad."""
    from symgrad.compile.cuda import runtime as cuda_runtime

    a = sg.placeholder("a", shape=(2, 3, 4))
    b = sg.placeholder("b", shape=(2, 4, 3))
    i = sg.placeholder("i", shape=(2,), dtype="int64")
    c = sg.transpose(a @ b, [0, 2, 1])[:, 1:, :]
    h = sg.concat([sg.cumsum(c, axis=1), sg.gather(c, i, axis=2)], axis=2)
    loss = sg.reduce_sum(sg.tanh(h)) + sg.reduce_max(h)
    outs = [loss, h, a] + sg.gradients(loss, [a, b])
    rng = np.random.default_rng(3)
    args = [rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 4, 3)), np.array([2, 0])]
    want = both([a, b, i], outs, *args)
    f = sg.function([a, b, i], outs, target="cuda")
    device = [cuda.to_device(x) for x in args]
    f(*device)
    cuda_runtime.TRANSFERS.clear()
    got = f(*device)
    assert dict(cuda_runtime.TRANSFERS) == {"check": 1}     # gather's index flags
    assert all(is_numba_device_array(g) for g in got)   # numba in, numba out
    for g, w in zip(got, want):
        np.testing.assert_allclose(to_host(g), w, rtol=1e-12, atol=1e-12)
    assert not shares_device_memory(got[2], device[0])   # an input returned: a copy


def test_explain_says_where_each_cuda_step_runs(cuda):
    a = sg.placeholder("a", shape=(3, 4))
    b = sg.placeholder("b", shape=(4, 2))
    y = sg.reduce_sum(sg.tanh(sg.transpose(a @ b)))
    f = sg.function([a, b], [y] + sg.gradients(y, [a, b]), target="cuda")
    text = f.explain()
    assert "numpy" not in text and "kernels run as numba.cuda device kernels" in text
    assert "(device, library call: cuBLAS via CuPy)" in text and "(device step: CuPy)" in text
    assert text.count("(device kernel)") == len(f.plan.kernels)
    assert "on the host: the argument checks" in text
    assert f.math == "libm" and f.target == "cuda"


def test_no_target_name_comparisons_outside_the_targets_package():
    pattern = re.compile(r"target\s*(==|!=|\bin\b|\bnot in\b)\s*[\"'(]|"
                         r"[\"'](cpu|parallel|cuda)[\"']\s*(==|!=)\s*\w*target")
    found = [f"{path.relative_to(ROOT)}:{n}" for path in (ROOT / "symgrad").rglob("*.py")
             if "targets" not in path.parts
             for n, line in enumerate(path.read_text().splitlines(), 1) if pattern.search(line)]
    assert found == []


def test_pair_sums_run_as_one_device_nest(cuda):
    """W3's pattern: a sum over a short trailing axis, a pair function, its gradient summed
    over either index: one tiled nest kernel (cuda_tiles; the symmetric rule makes the
    column sums copies of the row sums), no (N, N) temporary, same values as the cpu
    target."""
    from symgrad.compile.nest import Nest

    p = sg.placeholder("p", shape=(7, 3))
    d = p[:, None, :] - p[None, :, :]
    s = sg.exp(-sg.reduce_sum(d * d, axis=-1))
    e = sg.reduce_sum(s) + sg.reduce_mean(sg.reduce_sum(s, axis=0)) + \
        sg.reduce_sum(sg.reduce_sum(s, axis=1) ** 2)
    outs = [e] + sg.gradients(e, p)
    f = sg.function([p], outs, target="cuda")
    nests = [u for u in f.plan.units if isinstance(u, Nest)]
    assert nests and all(f"def _n{n.index}_cuda(" in f.source for n in nests)
    assert "cuda.shared.array(BLOCK, float64)" in f.source
    text = f.explain()   # the device nest visits every pair; explain names its rule
    assert all(f"nest {n.index}  one loop" in text for n in nests)
    assert "(one device kernel)" in text and "i0 <= i1" not in text
    assert all(f"nest {n.index} (tiled device kernel, registers per row, no per-pair "
               "atomic) visits every (i0, i1)" in text for n in nests if n.rank == 2)
    assert all(f"nest {n.index} visits every element" in text for n in nests if n.rank != 2)
    assert "column sums take a second pass" in text   # 'exp_0' is stored: no symmetric rule
    x = np.random.default_rng(4).normal(size=(7, 3))
    both([p], outs, x)


def test_cuda_bench_is_one_command_that_answers_without_a_gpu():
    """``python -m benchmarks.cuda_bench`` imports without a GPU; ``--help`` lists the
    smoke mode; under the simulator (timings need a GPU) it exits 0 with a message."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=str(ROOT))
    run = [sys.executable, "-m", "benchmarks.cuda_bench"]
    helped = subprocess.run(run + ["--help"], capture_output=True, text=True, cwd=ROOT,
                            env=env, timeout=120)
    assert helped.returncode == 0 and "--smoke" in helped.stdout
    plain = subprocess.run(run, capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert plain.returncode == 0 and "simulator" in plain.stdout
