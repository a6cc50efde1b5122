"""What the results of ``sg.function(..., target="cuda")`` come back as (docs/cuda.md,
"GPU results"): the library the device arguments came from.

One rule: the *first* device argument (in argument order) names the library of every
result of the call (``library_of``), and each result is handed over without a copy
(``export``):

=========================================  ==========================================
device argument                            results
=========================================  ==========================================
CuPy array                                 CuPy arrays (the runtime's own arrays)
numba device array (simulated or real)     numba device arrays
PyTorch CUDA tensor                        PyTorch CUDA tensors (``torch.from_dlpack``)
JAX GPU array                              JAX arrays (``jax.dlpack.from_dlpack``)
anything else with ``__cuda_array_         numba device arrays (numba.cuda is the
interface__`` or CUDA DLPack               generic consumer of both protocols)
=========================================  ==========================================

Host arguments only: numpy results (the driver downloads them; not this module). Under
the simulator every library is numba's (simulated device arrays). Sparse results
(``sg.SparseTensor`` outputs, ``sparse_result``) follow the same rule where the library
has a sparse matrix: ``cupyx.scipy.sparse.csr_matrix`` for CuPy, a sparse CSR tensor for
PyTorch; numba and JAX have none, so their sparse results are ``scipy.sparse.csr_array``
on the host (the values come down once, an 'output' transfer).

Nothing here imports CuPy, PyTorch or JAX: a library is recognised only when its module
is already imported (a caller holding its arrays has imported it).

>>> import numpy
>>> class Interface:   # a foreign device array: any object with the protocol
...     __cuda_array_interface__ = {"shape": (2,), "typestr": "<f8", "data": (0, False),
...                                 "version": 3}
>>> library_of(Interface())
'numba'
>>> export(numpy.zeros(2), "cupy", numba_array=None).shape   # CuPy results: the array itself
(2,)
"""

from __future__ import annotations

import sys
from typing import Any, Callable

__all__ = ["LIBRARIES", "library_of", "export", "sparse_result"]

# library -> (module that must be imported already, its device array class)
LIBRARIES = {"cupy": ("cupy", "ndarray"), "torch": ("torch", "Tensor"), "jax": ("jax", "Array")}


def _class(module_name: str, attr: str):
    module = sys.modules.get(module_name)
    cls = getattr(module, attr, None) if module is not None else None
    return cls if isinstance(cls, type) else None


def library_of(value: Any) -> str:
    """The library a device argument belongs to: 'numba', 'cupy', 'torch', 'jax', or
    'numba' for any other ``__cuda_array_interface__`` / DLPack producer."""
    if getattr(value, "__cuda_ndarray__", False):
        return "numba"
    for name, (module, attr) in LIBRARIES.items():
        cls = _class(module, attr)
        if cls is not None and isinstance(value, cls):
            return name
    return "numba"


def export(array: Any, library: str, numba_array: Callable) -> Any:
    """A result ``array`` (a CuPy array on a GPU) as an array of ``library``, without a
    copy; ``numba_array`` wraps it as a numba device array (``runtime.kernel_argument``)."""
    if library == "cupy":
        return array
    if library == "torch":
        import torch
        return torch.from_dlpack(array)
    if library == "jax":
        import jax.dlpack
        return jax.dlpack.from_dlpack(array)
    return numba_array(array)


def sparse_result(layout, values: Any, download: Callable, uploaded: Callable) -> Any:
    """A sparse output of a device call: ``values`` (a result in its library, see the
    module docstring) in the fixed CSR pattern ``layout`` (``sparse.tensor.CsrLayout``,
    computed once on the host). CuPy: a ``cupyx.scipy.sparse.csr_matrix`` whose
    ``indices``/``indptr`` are uploaded once per pattern; PyTorch: ``torch.sparse_csr_
    tensor`` (likewise); others: ``download(values)`` as a host ``csr_array``.
    ``uploaded()`` is called once per pattern array uploaded (counted as a 'constant')."""
    library = library_of(values)
    if library == "cupy":
        import cupy
        from cupyx.scipy import sparse
        indices, indptr = _device_pattern(layout, "cupy", cupy.asarray, uploaded)
        return sparse.csr_matrix((values, indices, indptr), shape=layout.shape, copy=False)
    if library == "torch":
        import torch

        def upload(a):
            return torch.as_tensor(a, dtype=torch.int64, device=values.device)
        indices, indptr = _device_pattern(layout, ("torch", str(values.device)), upload,
                                          uploaded)
        return torch.sparse_csr_tensor(indptr, indices, values, size=layout.shape)
    return layout.to_scipy(download(values))


def _device_pattern(layout, key: Any, upload: Callable, uploaded: Callable) -> tuple:
    """(indices, indptr) of ``layout`` on the device, uploaded once per layout and key
    (kept on the layout; never pickled: ``CsrLayout.__getstate__`` drops it)."""
    cache = layout.__dict__.setdefault("_device", {})
    if key not in cache:
        cache[key] = (upload(layout.indices), upload(layout.indptr))
        uploaded()
        uploaded()
    return cache[key]
