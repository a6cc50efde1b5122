"""numba's EMM plugin over CuPy's pool (``compile/cuda/memory.py``): the pure-Python parts,
with stand-ins for CuPy and numba's driver (no GPU in CI); ``install`` stays off under the
simulator, without CuPy, and with SYMGRAD_CUDA_EMM=0."""

from __future__ import annotations

import sys
import types

import pytest

from symgrad.compile.cuda import memory as cuda_memory

pytestmark = [pytest.mark.cuda]


class _Base:
    def __init__(self, *args, **kwargs):
        self.context = kwargs.pop("context")


class _Mixin:
    pass


class _Pointer:
    def __init__(self, ctx, ptr, size, finalizer):
        self.ctx, self.ptr, self.size, self.finalizer = ctx, ptr, size, finalizer


def _stand_ins():
    blocks = []

    def alloc(size):
        blocks.append(types.SimpleNamespace(ptr=0x1000 * (len(blocks) + 1), size=size))
        return blocks[-1]

    cupy = types.SimpleNamespace(cuda=types.SimpleNamespace(
        alloc=alloc, runtime=types.SimpleNamespace(memGetInfo=lambda: (3, 8))))
    numba_cuda = types.SimpleNamespace(
        HostOnlyCUDAMemoryManager=_Base, GetIpcHandleMixin=_Mixin,
        MemoryInfo=lambda free, total: ("info", free, total))
    driver = types.SimpleNamespace(get_devptr_for_active_ctx=lambda p: ("devptr", p),
                                   MemoryPointer=_Pointer)
    return cupy, numba_cuda, driver, blocks


def test_allocations_come_from_the_pool_and_go_back_when_finalized():
    cupy, numba_cuda, driver, blocks = _stand_ins()
    cls = cuda_memory.manager_class(cupy, numba_cuda, driver)
    assert issubclass(cls, _Base) and issubclass(cls, _Mixin)
    manager = cls(context="ctx")
    manager.initialize()
    a, b = manager.memalloc(64), manager.memalloc(128)
    assert (a.ctx, a.ptr, a.size) == ("ctx", ("devptr", 0x1000), 64)
    assert [x.size for x in blocks] == [64, 128]
    assert manager.allocations == {0x1000: blocks[0], 0x2000: blocks[1]}   # kept alive
    a.finalizer()
    assert manager.allocations == {0x2000: blocks[1]}   # the CuPy block is released
    a.finalizer()                                       # a second finalize is harmless
    assert manager.get_memory_info() == ("info", 3, 8)
    assert manager.interface_version == 1


def test_install_is_off_under_the_simulator_without_cupy_or_when_disabled(monkeypatch):
    assert cuda_memory.install(simulator=True) is False
    monkeypatch.setenv(cuda_memory.ENV, "0")
    assert cuda_memory.install(simulator=False) is False
    monkeypatch.delenv(cuda_memory.ENV)
    monkeypatch.setitem(sys.modules, "cupy", None)      # import cupy raises ImportError
    assert cuda_memory.install(simulator=False) is False


def test_the_runtime_installs_it_only_on_a_gpu_with_cupy():
    """Under the simulator never; on a GPU exactly when CuPy imports and
    SYMGRAD_CUDA_EMM is not 0 (the same conditions ``install`` reads)."""
    import importlib.util
    import os

    from symgrad.compile.cuda import runtime as cuda_runtime
    if cuda_runtime.SIMULATOR:
        assert cuda_runtime.POOLED is False
    else:
        wanted = importlib.util.find_spec("cupy") is not None and \
            os.environ.get(cuda_memory.ENV, "1") != "0"
        assert cuda_runtime.POOLED is wanted
