"""``sg.SparseTensor``: a graph Tensor of nonzero values plus a fixed CSR pattern.

``sg.evaluate`` and ``sg.function`` compute the ``values`` tensor like any other output
and return a ``scipy.sparse.csr_array`` that shares the pattern's ``indices``/``indptr``
(the same arrays on every call: a solver can factor the structure once).

>>> import numpy as np, symgrad as sg
>>> x = sg.placeholder("x", shape=(3,))
>>> J = sg.sparse.sparse_jacobian(sg.sin(x) * 2.0, x)
>>> J.shape, J.nnz
((3, 3), 3)
>>> sg.evaluate(J, {x: np.zeros(3)}).toarray()
array([[2., 0., 0.],
       [0., 2., 0.],
       [0., 0., 2.]])
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Optional

import numpy as np

from ..graph.tensor import Tensor
from ..outputs import OutputMode


class CsrLayout:
    """A fixed CSR pattern (``indices``, ``indptr``, ``shape``, ``dtype``) that turns a
    data array into a ``csr_array``; what a compiled function keeps of a SparseTensor
    (no graph: it pickles with the function)."""

    def __init__(self, indices: np.ndarray, indptr: np.ndarray, shape: tuple, dtype: Any,
                 name: str = "sparse", info: Optional[dict] = None):
        self.indices, self.indptr, self.shape = indices, indptr, tuple(shape)
        self.dtype, self.name, self.info = np.dtype(dtype), name, dict(info or {})
        self._template = None

    @property
    def nnz(self) -> int:
        return int(self.indices.size)

    def __getstate__(self) -> dict:
        state = {**self.__dict__, "_template": None}
        state.pop("_device", None)     # device copies of the pattern (cuda/results.py)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        for array in (self.indices, self.indptr):
            array.setflags(write=False)

    def to_scipy(self, data: np.ndarray):
        """``data`` (the values tensor's value) as a ``csr_array`` in this pattern: a
        shallow copy of one template array (scipy's constructor checks the pattern again,
        30 us; this takes 1 us), so every result shares the same ``indices``/``indptr``."""
        template = self._template
        if template is None:
            import scipy.sparse as sparse
            template = sparse.csr_array((np.zeros(self.nnz, self.dtype), self.indices,
                                         self.indptr), shape=self.shape, copy=False)
            template.has_sorted_indices = True
            self.indices, self.indptr = template.indices, template.indptr
            self._template = template
        out = type(template).__new__(type(template))
        out.__dict__.update(template.__dict__)
        out.data = data
        return out

    def describe(self) -> str:
        """One line for ``f.explain()``: pattern, colours, mode and the seed batch."""
        i = self.info
        line = f"'{self.name}' {self.shape[0]}x{self.shape[1]}, nnz {self.nnz}"
        if "colours" in i:
            line += (f", {i['colours']} colours ({i['mode']}, {i['order']}), seed batch "
                     f"{i['colours']}x{i['seed_size']}")
        return line


class SparseTensor:
    """``values`` (a graph Tensor of shape (nnz,)) in the CSR pattern ``indices``,
    ``indptr`` of dense ``shape``; ``info`` says how it was computed (colours, mode)."""

    def __init__(self, values: Tensor, indices: np.ndarray, indptr: np.ndarray, shape: tuple,
                 name: str = "sparse", info: Optional[dict] = None):
        indices = np.array(indices, dtype=np.int32 if shape[1] < 2**31 else np.int64)
        indptr = np.array(indptr, dtype=indices.dtype)
        if values.shape != (indices.size,):
            raise ValueError(f"sg.SparseTensor: values '{values.name}' must have shape "
                             f"({indices.size},) (one entry per pattern nonzero), got "
                             f"{values.shape}")
        if indptr.size != shape[0] + 1:
            raise ValueError(f"sg.SparseTensor: indptr must have {shape[0] + 1} entries for "
                             f"{shape[0]} rows, got {indptr.size}")
        indices.setflags(write=False)
        indptr.setflags(write=False)
        self.values = values
        self.layout = CsrLayout(indices, indptr, shape, values.dtype, name, info)

    indices = property(lambda self: self.layout.indices)
    indptr = property(lambda self: self.layout.indptr)
    shape = property(lambda self: self.layout.shape)
    name = property(lambda self: self.layout.name)
    info = property(lambda self: self.layout.info)
    nnz = property(lambda self: self.layout.nnz)

    @property
    def dtype(self) -> np.dtype:
        return self.values.dtype

    def pattern(self):
        """The boolean ``csr_array`` of the structure."""
        import scipy.sparse as sparse
        return sparse.csr_array((np.ones(self.nnz, bool), self.indices, self.indptr),
                                shape=self.shape)

    def to_scipy(self, data: np.ndarray):
        """``data`` as a ``csr_array`` sharing this pattern's ``indices``/``indptr``."""
        return self.layout.to_scipy(data)

    def __repr__(self) -> str:
        return (f"<sg.SparseTensor '{self.name}' shape={self.shape} nnz={self.nnz} "
                f"dtype={self.dtype.name}>")

    def describe(self) -> str:
        """One line for ``f.explain()``: pattern, colours and the seed batch."""
        return self.layout.describe()


def split_sparse(outputs: Any) -> tuple:
    """(outputs with each SparseTensor replaced by its values tensor, a function that
    wraps the results back), or (outputs, None) when there is no SparseTensor."""
    if isinstance(outputs, SparseTensor):
        return outputs.values, Wrap({0: outputs.layout}, OutputMode.SINGLE)
    if isinstance(outputs, (Tensor, type(None))) or not isinstance(outputs, (list, tuple)):
        return outputs, None
    sparse = {k: o for k, o in enumerate(outputs) if isinstance(o, SparseTensor)}
    if not sparse:
        return outputs, None
    plain = [o.values if k in sparse else o for k, o in enumerate(outputs)]
    return plain, Wrap({k: o.layout for k, o in sparse.items()}, OutputMode.LIST)


class Wrap:
    """Results -> results with the sparse ones as ``csr_array``s: ``layouts`` maps an
    output position to its ``CsrLayout``; ``mode``: how the outputs were given. Picklable."""

    def __init__(self, layouts: dict, mode: OutputMode):
        self.layouts, self.mode = layouts, mode

    def __call__(self, results: Any) -> Any:
        layouts = self.layouts
        results = [results] if self.mode.single else results
        return self.mode.pack([_sparse(layouts[k], r) if k in layouts else r
                               for k, r in enumerate(results)])


def _sparse(layout: CsrLayout, values: Any) -> Any:
    """A sparse result: a host ``csr_array``, or for a device call of the cuda target the
    library's own sparse matrix (``compile/cuda/results.py``: CuPy -> ``cupyx.scipy.
    sparse.csr_matrix``; numba device arrays -> a host ``csr_array``)."""
    if type(values) is np.ndarray:
        return layout.to_scipy(values)
    runtime = sys.modules.get("symgrad.compile.cuda.runtime")   # loaded by any cuda call
    if runtime is not None and runtime.is_device_array(values):
        return runtime.sparse_result(layout, values)
    return layout.to_scipy(values)


class SparseFunction:
    """A compiled function whose sparse outputs come back as ``csr_array``s; it pickles
    as its inner compiled function plus the patterns."""

    def __init__(self, inner: Any, wrap: Wrap):
        self.inner, self.wrap = inner, wrap

    @property
    def sparse(self) -> list:
        return list(self.wrap.layouts.values())

    def __call__(self, *args, **kwargs):
        return self.wrap(self.inner(*args, **kwargs))

    def __reduce__(self) -> tuple:
        return SparseFunction, (self.inner, self.wrap)

    def explain(self, passes: bool = False) -> str:
        lines = [self.inner.explain(passes), "sparse outputs (CSR, pattern fixed at compile time):"]
        lines += [f"  {s.describe()}" for s in self.sparse]
        return "\n".join(lines)

    def __getattr__(self, name: str):   # inputs, outputs, plan, source... of the inner one
        if name in ("inner", "wrap") or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"<sg.function with {len(self.sparse)} sparse output(s) of {self.inner!r}>"


def sparse_function(compile_fn: Callable, inputs: Any, outputs: Any,
                    **options) -> Optional[SparseFunction]:
    """None when ``outputs`` has no SparseTensor; else ``compile_fn`` (``sg.function``)
    on the plain outputs, wrapped to return the sparse ones as ``csr_array``s."""
    plain, wrap = split_sparse(outputs)
    if wrap is None:
        return None
    return SparseFunction(compile_fn(inputs, plain, **options), wrap)
