"""What a cuda function returns (docs/cuda.md "GPU results"): results in the library of
the first device argument (CuPy in, CuPy out; numba in, numba out; PyTorch in, PyTorch
out), numpy for host arguments; sparse outputs as the library's sparse matrix (CuPy:
``cupyx.scipy.sparse.csr_matrix``), or a scipy ``csr_array`` on the host for numba device
arrays; host memory dressed as device memory refused before any launch.

Runs under the simulator (CI) and on a GPU (NUMBA_ENABLE_CUDASIM=0): the tests that need
CuPy or PyTorch on a GPU skip elsewhere; the CuPy paths run here with numpy dressed as
CuPy (simulator only, ``test_cuda_transfers.dress``).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse

import symgrad as sg
from symgrad.errors import FeedError

from .helpers import is_numba_device_array, on_simulator, to_host
from .test_cuda_transfers import DRESSED, _FakeCupyArray, _counted, dress

pytestmark = [pytest.mark.cuda, pytest.mark.compiled,
              pytest.mark.filterwarnings("ignore::RuntimeWarning")]

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def runtime():
    from numba import cuda
    if not on_simulator() and not cuda.is_available():
        pytest.skip("no GPU and NUMBA_ENABLE_CUDASIM is not 1")
    from symgrad.compile.cuda import runtime as cuda_runtime
    return cuda, cuda_runtime


@pytest.fixture
def undress(runtime):
    yield
    runtime[1].array_module.cache_clear()


def _gray_scott(n: int):
    """examples/reaction_diffusion.py's 2-D Gray–Scott (n x n x 2 unknowns): state, rhs,
    a state."""
    spec = importlib.util.spec_from_file_location("_rd", ROOT / "examples" /
                                                  "reaction_diffusion.py")
    rd = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rd)
    y, rhs = rd.gray_scott(n)
    return y, rhs, rd.initial_state(n)


def _sparse_jacobian(n: int):
    y, rhs, y0 = _gray_scott(n)
    outs = [sg.jacobian(rhs, y, sparse=True)]
    want = sg.function([y], outs, target="cpu")(y0)[0]
    return sg.function([y], outs, target="cuda"), y0, want


# --- the rule, without a device: which library, and how each one gets its array ---------

def test_each_library_is_recognised_by_its_own_class(monkeypatch):
    from symgrad.compile.cuda.results import library_of

    class Tensor:
        pass

    class Array:
        pass

    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(Tensor=Tensor))
    monkeypatch.setitem(sys.modules, "jax", types.SimpleNamespace(Array=Array))
    monkeypatch.setitem(sys.modules, "cupy", None)          # not imported: never asked
    numba_like = types.SimpleNamespace(__cuda_ndarray__=True)
    assert [library_of(v) for v in (Tensor(), Array(), numba_like, object())] == \
        ["torch", "jax", "numba", "numba"]


def test_export_hands_each_library_its_array_without_a_copy(monkeypatch):
    from symgrad.compile.cuda.results import export

    seen = []
    torch = types.SimpleNamespace(from_dlpack=lambda a: seen.append(("torch", a)) or "t")
    monkeypatch.setitem(sys.modules, "torch", torch)
    result = object()
    assert export(result, "cupy", numba_array=None) is result
    assert export(result, "torch", numba_array=None) == "t" and seen == [("torch", result)]
    assert export(result, "numba", numba_array=lambda a: ("numba", a)) == ("numba", result)


def test_host_memory_is_refused_by_memory_type():
    from symgrad.compile.cuda.runtime import device_memory_check

    for kind in (1, 2, 3, None):            # registered host, device, managed, unknown
        device_memory_check(0x1000, lambda p, kind=kind: kind)
    with pytest.raises(FeedError, match="0x1000 is unregistered .* not device memory"):
        device_memory_check(0x1000, lambda p: 0)


def test_a_pointer_query_that_fails_means_host_memory(monkeypatch):
    """CUDA < 11 answers cudaErrorInvalidValue for memory it does not know."""
    from symgrad.compile.cuda import runtime as rt

    def fails(pointer):
        raise RuntimeError("cudaErrorInvalidValue")

    def device(pointer):
        return types.SimpleNamespace(type=2)

    for query, want in ((fails, 0), (device, 2)):
        fake = types.SimpleNamespace(cuda=types.SimpleNamespace(
            runtime=types.SimpleNamespace(pointerGetAttributes=query)))
        monkeypatch.setattr(rt, "array_module", lambda fake=fake: fake)
        assert rt.memory_type(0x1000) == want
    bare = types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=types.SimpleNamespace()))
    monkeypatch.setattr(rt, "array_module", lambda: bare)
    assert rt.memory_type(0x1000) is None       # cannot say: not refused


# --- sparse outputs ------------------------------------------------------------------

def test_sparse_jacobian_host_and_numba_device_arguments(runtime):
    """Gray–Scott 2-D: host argument -> scipy csr_array; numba device argument -> a
    scipy csr_array on the host (numba has no sparse matrix: the values come down once),
    with the pattern's own indices."""
    cuda, cuda_runtime = runtime
    f, y0, want = _sparse_jacobian(8 if on_simulator() else 32)
    host = f(y0)[0]
    assert isinstance(host, scipy.sparse.csr_array)
    np.testing.assert_allclose(host.toarray(), want.toarray(), rtol=1e-12, atol=1e-12)
    device = cuda.to_device(y0)
    f(device)
    got, counts = _counted(runtime, lambda: f(device))
    assert counts.pop("check", 0) <= 1 and counts == {"output": 1}   # (gather's flags)
    J = got[0]
    assert isinstance(J, scipy.sparse.csr_array) and J.nnz == want.nnz
    assert J.indices is f.sparse[0].indices and J.indptr is f.sparse[0].indptr
    np.testing.assert_allclose(J.toarray(), want.toarray(), rtol=1e-12, atol=1e-12)


def _fake_cupyx(monkeypatch):
    """``cupyx.scipy.sparse.csr_matrix`` over the dressed CuPy: records its parts."""

    class csr_matrix:   # noqa: N801 - CuPy's name
        def __init__(self, parts, shape, copy):
            self.data, self.indices, self.indptr = parts
            self.shape, self.copy = shape, copy

        def get(self):
            return scipy.sparse.csr_matrix((np.asarray(self.data), np.asarray(self.indices),
                                            np.asarray(self.indptr)), shape=self.shape)

    sparse = types.ModuleType("cupyx.scipy.sparse")
    sparse.csr_matrix = csr_matrix
    scipy_ = types.ModuleType("cupyx.scipy")
    scipy_.sparse = sparse
    cupyx = types.ModuleType("cupyx")
    cupyx.scipy = scipy_
    for name, module in (("cupyx", cupyx), ("cupyx.scipy", scipy_),
                         ("cupyx.scipy.sparse", sparse)):
        monkeypatch.setitem(sys.modules, name, module)
    return csr_matrix


@DRESSED
def test_sparse_jacobian_on_cupy_is_a_cupyx_csr_matrix(runtime, monkeypatch, undress):
    """CuPy in: a ``cupyx.scipy.sparse.csr_matrix`` whose values stay on the device and
    whose pattern is uploaded once per pattern (two 'constant' copies, first call only)."""
    fake = dress(runtime, monkeypatch)
    csr_matrix = _fake_cupyx(monkeypatch)
    f, y0, want = _sparse_jacobian(6)   # not 8: its own module, no constants on "the host"
    first, counts = _counted(runtime, lambda: f(fake.asarray(y0)))
    assert counts.get("constant", 0) >= 2 and "output" not in counts
    got, counts = _counted(runtime, lambda: f(fake.asarray(y0)))
    assert counts.pop("check", 0) <= 1 and counts == {}   # no value goes to the host
    J = got[0]
    assert isinstance(J, csr_matrix) and J.copy is False and J.shape == want.shape
    assert isinstance(J.data, _FakeCupyArray) and isinstance(J.indices, _FakeCupyArray)
    assert J.indices is first[0].indices            # uploaded once
    np.testing.assert_allclose(J.get().toarray(), want.toarray(), rtol=1e-12, atol=1e-12)


def test_a_pickled_pattern_leaves_its_device_copies_behind():
    import pickle

    from symgrad.sparse.tensor import CsrLayout

    layout = CsrLayout(np.array([0, 1], np.int32), np.array([0, 1, 2], np.int32), (2, 2),
                       "float64")
    layout.__dict__["_device"] = {"cupy": ("indices", "indptr")}
    assert "_device" not in pickle.loads(pickle.dumps(layout)).__dict__


# --- on a GPU: CuPy and PyTorch, and host memory never launched on -----------------------

def _cupy_on_gpu():
    if on_simulator():
        pytest.skip("CuPy arrays need a GPU (NUMBA_ENABLE_CUDASIM=0)")
    return pytest.importorskip("cupy")


def _torch_on_gpu():
    if on_simulator():
        pytest.skip("PyTorch CUDA tensors need a GPU (NUMBA_ENABLE_CUDASIM=0)")
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no GPU")
    return torch


def _graph():
    x = sg.placeholder("x", shape=(6,))
    w = sg.placeholder("w", shape=(6,))
    y = sg.reduce_sum(sg.exp(x) * w)
    outs = [y, x] + sg.gradients(y, [x, w])
    xv, wv = np.linspace(-1, 1, 6), np.arange(6.0)
    return [x, w], outs, (xv, wv), sg.function([x, w], outs, target="cpu")(xv, wv)


def test_cupy_in_cupy_out(runtime):
    cupy = _cupy_on_gpu()
    cuda = runtime[0]
    inputs, outs, args, want = _graph()
    f = sg.function(inputs, outs, target="cuda")
    got = f(*[cupy.asarray(a) for a in args])
    assert all(isinstance(g, cupy.ndarray) for g in got)
    for g, w in zip(got, want):
        np.testing.assert_allclose(to_host(g), w, rtol=1e-12)
    got = f(cuda.to_device(args[0]), cupy.asarray(args[1]))   # numba first: numba out
    assert all(is_numba_device_array(g) for g in got)
    assert all(type(g) is np.ndarray for g in f(*args))        # host in: numpy out


def test_torch_in_torch_out(runtime):
    torch = _torch_on_gpu()
    inputs, outs, args, want = _graph()
    f = sg.function(inputs, outs, target="cuda")
    got = f(*[torch.tensor(a, device="cuda") for a in args])
    assert all(isinstance(g, torch.Tensor) and g.is_cuda for g in got)
    for g, w in zip(got, want):
        np.testing.assert_allclose(to_host(g), w, rtol=1e-12)


def test_sparse_jacobian_on_a_gpu_stays_on_the_device(runtime):
    """The issue's case: Gray–Scott 32 x 32 x 2 with a CuPy state ->
    ``cupyx.scipy.sparse.csr_matrix`` (was: TypeError, implicit conversion to numpy)."""
    cupy = _cupy_on_gpu()
    from cupyx.scipy import sparse
    f, y0, want = _sparse_jacobian(32)
    J = f(cupy.asarray(y0))[0]
    assert isinstance(J, sparse.csr_matrix) and J.nnz == want.nnz
    np.testing.assert_allclose(J.get().toarray(), want.toarray(), rtol=1e-12, atol=1e-12)


HOST_DRESSED = """
import numpy as np, symgrad as sg
from symgrad.errors import FeedError
host = np.arange(8.0)
class Dressed:
    __cuda_array_interface__ = {"shape": (8,), "typestr": "<f8", "version": 3,
                                "data": (host.ctypes.data, False)}
x = sg.placeholder("x", shape=(8,))
f = sg.function([x], sg.sin(x) * 2.0, target="cuda")
try:
    f(Dressed())
except FeedError as exc:
    print("refused:", exc)
else:
    print("LAUNCHED on host memory")
"""


def test_host_memory_dressed_as_device_memory_is_refused_on_a_gpu(runtime):
    """On a GPU, in a child process (were it launched, CUDA_ERROR_ILLEGAL_ADDRESS would
    spoil the CUDA context of this one): a FeedError, no launch."""
    if on_simulator():
        pytest.skip("under the simulator host memory is device memory "
                    "(test_cuda_transfers covers the refusal with a dressed CuPy)")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0", PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", HOST_DRESSED], capture_output=True,
                         text=True, cwd=ROOT, env=env, timeout=300)
    assert "refused:" in out.stdout and "not device memory" in out.stdout, \
        out.stdout[-2000:] + out.stderr[-2000:]
