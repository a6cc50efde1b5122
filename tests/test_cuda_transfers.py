"""target="cuda" keeps every value of a plan on the device: for every graph of the
conformance suites (tests/conformance/semantics and v2) a call moves only its host
arguments up and its results down, and nothing at all when the arguments are device
arrays. Every host<->device copy goes through ``cuda_runtime.to_device``/``to_host``,
which count them in ``cuda_runtime.TRANSFERS`` by kind.

Under the simulator numpy stands in for CuPy (``cuda_runtime.array_module``), so every
structural step of these graphs runs through ``cuda_steps.FORMS`` here too.
"""

from __future__ import annotations

import re
import sys

import numpy as np
import pytest

import symgrad as sg
from tests.helpers import is_numba_device_array, shares_device_memory, to_host
from tests.conformance.loader import CASES_DIR, build_case, load_cases
from tests.conformance.v2 import V2_DIR

pytestmark = [pytest.mark.cuda, pytest.mark.compiled,
              pytest.mark.filterwarnings("ignore::RuntimeWarning")]

ALLOWED_CHECKS = 1   # one read of the deferred index-check flags (graphs that gather)


def _cases() -> list:
    cases = load_cases(CASES_DIR) + load_cases(V2_DIR)
    return [pytest.param(c, id=c["name"]) for c in cases
            if not c.get("skip") and c["expected"]["outcome"] == "values"]


@pytest.fixture(scope="module")
def runtime():
    from numba import cuda
    from symgrad.compile.cuda import runtime as cuda_runtime
    return cuda, cuda_runtime


def _counted(runtime, call):
    counter = runtime[1].TRANSFERS
    counter.clear()
    out = call()
    return out, dict(counter)


def _assert_close(got, want, case):
    for g, w in zip(got, want):
        if w is None:
            assert g is None, case
            continue
        g = to_host(g)
        assert g.dtype == w.dtype and g.shape == w.shape, case
        np.testing.assert_array_equal(g, w, err_msg=case)


@pytest.mark.parametrize("case", _cases())
def test_a_plan_makes_no_host_round_trip(case, runtime):
    cuda, cuda_runtime = runtime
    built = build_case(case, sg)
    grads = built.call_gradients()
    f = sg.function(built.placeholders, grads, target="cuda")
    feeds = [np.asarray(a) for a in built.feeds]
    device = [cuda.to_device(a) for a in feeds]
    f(*feeds), f(*device)          # constants go up once per function, when first read
    host, counts = _counted(runtime, lambda: f(*feeds))
    assert counts.get("input", 0) <= len(feeds), (case["name"], counts)
    assert counts.get("output", 0) <= sum(g is not None for g in grads), (case["name"], counts)
    assert counts.get("check", 0) <= ALLOWED_CHECKS, (case["name"], counts)
    assert set(counts) <= {"input", "output", "check"}, (case["name"], counts)
    assert all(isinstance(h, np.ndarray) for h in host if h is not None)

    got, counts = _counted(runtime, lambda: f(*device))
    assert set(counts) <= {"check"} and counts.get("check", 0) <= ALLOWED_CHECKS, \
        (case["name"], counts)
    if device:      # numba device arguments: numba device results (none: host results)
        assert all(is_numba_device_array(g) for g in got if g is not None)
    _assert_close(got, host, case["name"])


def test_every_structural_op_has_a_device_form():
    from symgrad.compile.cuda.steps import FORMS, missing_forms
    from symgrad.ops.registry import OpDef

    assert missing_forms() == []
    assert all(isinstance(op, OpDef) for op in FORMS)


def test_out_of_range_gather_raises_after_one_flag_read(runtime):
    from symgrad.errors import GatherIndexError

    p = sg.placeholder("p", shape=(4,))
    i = sg.placeholder("i", shape=(2,), dtype="int64")
    f = sg.function([p, i], sg.gather(p, i) * 2.0, target="cuda")
    np.testing.assert_array_equal(f(np.arange(4.0), np.array([3, 0])), [6.0, 0.0])
    with pytest.raises(GatherIndexError, match=r"indices\[1\] = 4 is not in \[0, 4\)"):
        f(np.arange(4.0), np.array([0, 4]))
    _, counts = _counted(runtime, lambda: f(np.arange(4.0), np.array([1, 2])))
    assert counts == {"input": 2, "output": 1, "check": 1}


def test_launch_configurations_and_bound_kernels_are_cached(runtime):
    """The generated driver binds each kernel to its launch configuration once per size
    and stream (``LAUNCHERS_``); configurations are computed once per size."""
    _, cuda_runtime = runtime
    x = sg.placeholder("x", shape=(None,))
    f = sg.function([x], sg.sin(x) * x, target="cuda")
    run = f.source.split("\ndef run(", 1)[1]        # a straight-line generated driver
    assert not re.search(r"^\s+(for|while) ", run, re.M) and "LAUNCHERS_.get((" in run
    f(np.ones(8))
    bound = dict(f.module.LAUNCHERS_)
    f(np.ones(8))
    assert len(bound) == 1 and f.module.LAUNCHERS_ == bound
    assert [k[:2] for k in bound] == [("_k0_cuda", 8)]
    f(np.ones(5))
    assert sorted(k[1] for k in f.module.LAUNCHERS_) == [5, 8]
    hits = cuda_runtime.configuration.cache_info().hits
    cuda_runtime.bound_kernel(f.module._k0_cuda, 8, 0)
    assert cuda_runtime.configuration.cache_info().hits == hits + 1


def test_mixed_host_and_device_arguments(runtime):
    """One device argument makes a device call: the host argument goes up once (also when
    it is only returned), the results stay on the device, a returned input is a copy."""
    cuda, cuda_runtime = runtime
    x = sg.placeholder("x", shape=(6,))
    w = sg.placeholder("w", shape=(6,))
    u = sg.placeholder("u", shape=(2,))
    y = sg.reduce_sum(sg.exp(x) * w)
    f = sg.function([x, w, u], [y, u, x] + sg.gradients(y, [x, w]), target="cuda")
    xv, wv, uv = np.linspace(-1, 1, 6), np.arange(6.0), np.array([3.0, 4.0])
    want = sg.function([x, w, u], [y, u, x] + sg.gradients(y, [x, w]))(xv, wv, uv)
    dx = cuda.to_device(xv)
    got, counts = _counted(runtime, lambda: f(dx, wv, uv))
    assert counts == {"input": 2}
    assert all(is_numba_device_array(g) for g in got)
    assert not shares_device_memory(got[2], dx)
    for g, w_ in zip(got, want):
        np.testing.assert_allclose(to_host(g), w_, rtol=1e-12)


def test_every_array_function_of_the_forms_exists_in_cupy():
    """The forms run on CuPy on a GPU: each ``xp.<name>`` they use is in CuPy's API
    (checked where CuPy imports; it does without a GPU)."""
    import re
    from pathlib import Path

    cupy = pytest.importorskip("cupy")
    import symgrad.compile.cuda.steps as steps

    text = Path(steps.__file__).read_text()
    names = set(re.findall(r"\bxp\.(\w+)", text))
    names |= {"argmax", "argmin", "cumsum", "cumprod", "sum", "mean", "prod", "max", "min"}
    names |= {"asnumpy", "from_dlpack", "ndarray"}          # cuda_runtime's own uses
    assert {"matmul", "einsum", "take", "moveaxis"} <= names
    assert sorted(n for n in names if not hasattr(cupy, n)) == []
    assert hasattr(cupy.cuda, "get_current_stream") and hasattr(cupy.add, "at")


class _FakeCupyArray(np.ndarray):
    """A "device" array of the fake CuPy below: numpy memory with CuPy's interface and
    its ``data.ptr``."""

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str, "version": 3,
                "data": (self.ctypes.data, False)}

    @property
    def data(self):
        import types
        return types.SimpleNamespace(ptr=self.ctypes.data)


DEVICE, HOST = 2, 0     # cudaMemoryType of device memory, of unregistered host memory


def _fake_cupy(host_pointers=()):
    """numpy dressed as CuPy: the module functions the GPU branch of cuda_runtime calls.
    Its pointer query says 'device memory' except for ``host_pointers``."""
    import types

    def wrapped(name: str):
        fn = getattr(np, name)
        if isinstance(fn, (type, np.ufunc)) or not callable(fn):
            return fn        # dtypes, ufuncs (they keep the subclass), constants

        def call(*args, **kw):
            out = fn(*args, **kw)
            return out.view(_FakeCupyArray) if type(out) is np.ndarray else out
        return call

    def attributes(pointer):
        return types.SimpleNamespace(type=HOST if pointer in host_pointers else DEVICE)

    fake = types.ModuleType("cupy")
    fake.__getattr__ = wrapped
    fake.ndarray = _FakeCupyArray
    fake.asarray = lambda a, *args, **kw: np.asarray(a, *args, **kw).view(_FakeCupyArray)
    fake.asnumpy = lambda a: np.array(a, copy=True).view(np.ndarray)
    fake.from_dlpack = lambda a: np.from_dlpack(a).view(_FakeCupyArray)
    stream = types.SimpleNamespace(ptr=0)
    fake.cuda = types.SimpleNamespace(get_current_stream=lambda: stream,
                                      runtime=types.SimpleNamespace(
                                          pointerGetAttributes=attributes))
    return fake


DRESSED = pytest.mark.simulator_only(
    reason="numba's simulated kernels run on numpy memory dressed as CuPy arrays; on a GPU "
           "real kernels would be launched on those host pointers")


def dress(runtime, monkeypatch, host_pointers=()):
    """The GPU branch of cuda_runtime over the fake CuPy; refuses to run on a GPU (where
    kernels are real and the fake arrays are host memory) before patching anything."""
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

    cuda, cuda_runtime = runtime
    if not cuda_runtime.SIMULATOR:
        pytest.fail("numpy dressed as CuPy on a real GPU would launch on host pointers")
    fake = _fake_cupy(host_pointers)
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setattr(cuda_runtime, "SIMULATOR", False)
    monkeypatch.setattr(cuda_runtime.cuda, "from_cuda_array_interface",
                        lambda desc, owner, sync: FakeCUDAArray(np.asarray(owner)),
                        raising=False)
    cuda_runtime.array_module.cache_clear()      # the fixture ``undress`` clears it again
    return fake


@pytest.fixture
def undress(runtime):
    yield
    runtime[1].array_module.cache_clear()


@DRESSED
def test_the_gpu_branch_with_numpy_dressed_as_cupy(runtime, monkeypatch, undress):
    """The code paths taken on a GPU (CuPy arrays, asnumpy, from_dlpack, kernels handed
    arrays through __cuda_array_interface__ without a sync, the memory-type check) run
    here with a fake CuPy. CuPy first in, CuPy out; numba first in, numba out."""
    cuda, cuda_runtime = runtime
    fake = dress(runtime, monkeypatch)
    assert cuda_runtime.array_module() is fake
    p = sg.placeholder("p", shape=(5, 3))
    i = sg.placeholder("i", shape=(2,), dtype="int64")
    d = p[:, None, :] - p[None, :, :]
    e = sg.reduce_sum(sg.exp(-sg.reduce_sum(d * d, axis=-1))) + \
        sg.reduce_sum(sg.tanh(sg.gather(p, i) @ sg.transpose(p)))
    outs = [e, p] + sg.gradients(e, p)
    x, idx = np.random.default_rng(6).normal(size=(5, 3)), np.array([4, 1])
    want = sg.function([p, i], outs)(x, idx)
    f = sg.function([p, i], outs, target="cuda")
    host, counts = _counted(runtime, lambda: f(x, idx))
    assert counts == {"input": 2, "output": 2, "check": 1}
    assert all(type(h) is np.ndarray for h in host)
    device = [fake.asarray(x), cuda.to_device(idx)]     # CuPy and numba device arrays
    got, counts = _counted(runtime, lambda: f(*device))
    assert counts == {"check": 1}
    assert all(isinstance(g, _FakeCupyArray) for g in got)
    assert not np.shares_memory(got[1], device[0])
    for g, w, h in zip(got, want, host):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-12)
        np.testing.assert_allclose(h, w, rtol=1e-12)
    got = f(cuda.to_device(x), fake.asarray(idx))        # numba first: numba results
    assert all(is_numba_device_array(g) for g in got)
    for g, w in zip(got, want):
        np.testing.assert_allclose(to_host(g), w, rtol=1e-12)


@DRESSED
def test_host_memory_dressed_as_device_memory_is_refused(runtime, monkeypatch, undress):
    """An argument whose pointer the CUDA runtime calls host memory is a FeedError naming
    the argument, raised before any launch (a launch would be CUDA_ERROR_ILLEGAL_ADDRESS)."""
    host = np.arange(6.0)
    fake = dress(runtime, monkeypatch, host_pointers={host.ctypes.data})
    x = sg.placeholder("x", shape=(6,))
    f = sg.function([x], sg.sin(x) * 2.5, target="cuda")
    with pytest.raises(sg.errors.FeedError, match=r"argument 'x'.*0x[0-9a-f]+ is "
                       r"unregistered \(pageable\) host memory, not device memory"):
        f(fake.asarray(host))

    class Dressed:     # no library: only an interface, read before CuPy touches it
        __cuda_array_interface__ = {"shape": (6,), "typestr": "<f8", "version": 3,
                                    "data": (host.ctypes.data, False)}

    with pytest.raises(sg.errors.FeedError, match=r"argument 'x'.*not device memory"):
        f(Dressed())
    assert f.module.LAUNCHERS_ == {}                    # nothing was launched
    np.testing.assert_allclose(to_host(f(fake.asarray(host + 1))), np.sin(host + 1) * 2.5)
