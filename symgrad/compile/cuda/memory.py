"""numba's device allocations from CuPy's memory pool (numba's External Memory Management
plugin interface), so that numba and CuPy share one pool.

symgrad's own buffers are CuPy arrays already (``cuda_runtime``: ``xp.empty`` /
``xp.zeros``); this covers what numba allocates itself (``cuda.to_device``,
``device_array``, a user's numba arrays passed alongside). ``install()`` sets the plugin
when CuPy is importable, numba.cuda is not the simulator and ``SYMGRAD_CUDA_EMM`` is not
``0``; it must run before numba creates its context (``cuda_runtime`` calls it on import).
Not yet run on a GPU in this round (the pure-Python parts are tested with stand-ins:
``tests/test_cuda_memory.py``).

>>> import types
>>> class Base:
...     def __init__(self, context=None): self.context = context
>>> drv = types.SimpleNamespace(get_devptr_for_active_ctx=lambda p: p,
...                             MemoryPointer=lambda ctx, ptr, size, finalizer: (ptr, size))
>>> numba_cuda = types.SimpleNamespace(HostOnlyCUDAMemoryManager=Base,
...     GetIpcHandleMixin=type("Mixin", (), {}), MemoryInfo=lambda free, total: (free, total))
>>> mem = types.SimpleNamespace(ptr=4096)
>>> cupy = types.SimpleNamespace(cuda=types.SimpleNamespace(alloc=lambda n: mem))
>>> manager = manager_class(cupy, numba_cuda, drv)()
>>> manager.memalloc(64), list(manager.allocations)
((4096, 64), [4096])
"""

from __future__ import annotations

import os

__all__ = ["manager_class", "install", "ENV"]

ENV = "SYMGRAD_CUDA_EMM"   # "0": keep numba's own allocator


def manager_class(cupy, numba_cuda, driver) -> type:
    """The EMM plugin class over ``cupy``'s pool, built on ``numba_cuda``'s base classes
    (``HostOnlyCUDAMemoryManager``, ``GetIpcHandleMixin``, ``MemoryInfo``) and
    ``driver`` (``numba.cuda.cudadrv.driver``: ``MemoryPointer``,
    ``get_devptr_for_active_ctx``). Arguments, not imports, so that it is testable
    without a GPU."""

    class CupyPoolMemoryManager(numba_cuda.GetIpcHandleMixin,
                                numba_cuda.HostOnlyCUDAMemoryManager):
        """numba device memory from CuPy's current memory pool. Each allocation's CuPy
        ``MemoryPointer`` is kept in ``allocations`` until numba's pointer is finalized,
        which returns the block to the pool."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.allocations: dict = {}

        def initialize(self) -> None:
            """Nothing to set up: CuPy's pool exists already."""

        def memalloc(self, size: int):
            block = cupy.cuda.alloc(size)
            address = int(block.ptr)
            self.allocations[address] = block
            allocations = self.allocations

            def finalizer() -> None:   # numba's pointer is gone: back to CuPy's pool
                allocations.pop(address, None)

            pointer = driver.get_devptr_for_active_ctx(address)
            return driver.MemoryPointer(self.context, pointer, size, finalizer=finalizer)

        def get_memory_info(self):
            free, total = cupy.cuda.runtime.memGetInfo()
            return numba_cuda.MemoryInfo(free=free, total=total)

        @property
        def interface_version(self) -> int:
            return 1

    return CupyPoolMemoryManager


def install(simulator: bool) -> bool:
    """Set the CuPy-pool plugin as numba's memory manager; True when set (not under the
    simulator, CuPy importable, ``SYMGRAD_CUDA_EMM`` not ``0``)."""
    if simulator or os.environ.get(ENV, "1") == "0":
        return False
    try:
        import cupy
    except ImportError:
        return False
    from numba import cuda
    from numba.cuda.cudadrv import driver
    cuda.set_memory_manager(manager_class(cupy, cuda, driver))
    return True
