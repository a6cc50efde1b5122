"""Arrays without memory for the eager compile's dry run (``eager.py``) of large shapes.

A ``Phantom`` has the shape, dtype and strides of a C-contiguous array of its static shape
(so numba types it exactly as such an array: dtype, rank, layout, writeable) over a buffer
of one element: making it, slicing, transposing and reshaping it (views) cost nothing
whatever its shape. Nothing may read or write its elements, so every operation that would
(ufuncs, numpy functions other than views, copies, ``fill``, item access, printing) either
makes a new phantom of the result's shape and dtype or stops the dry run (``Stop``); the
dry run's namespace (``dry_namespace``) gives the driver a numpy whose allocations are
phantoms, workspaces of phantoms, and steps that return phantoms of their static shapes.

>>> import numpy as np
>>> a = phantom((2**40,), np.float64)
>>> a.shape, a.flags.c_contiguous, a[:3].shape
((1099511627776,), True, (3,))
>>> np.sin(a).shape
(1099511627776,)
>>> is_phantom(a.reshape(2**20, 2**20).T)
True
"""

from __future__ import annotations

import types
from typing import Any, Callable

import numpy as np
from numpy.lib.stride_tricks import as_strided


class Stop(Exception):
    """The dry run reached something that needs the data: nothing more to compile from it
    (the first call compiles the rest)."""


def _c_strides(shape: tuple, itemsize: int) -> tuple:
    strides, step = [], itemsize
    for d in reversed(shape):
        strides.append(step)
        step *= max(int(d), 1)
    return tuple(reversed(strides))


def phantom(shape: tuple, dtype: Any, order: str = "C") -> "Phantom":
    """A phantom C-contiguous (``order="F"``: Fortran) array of ``shape`` and ``dtype``."""
    dtype = np.dtype(dtype)
    shape = tuple(int(d) for d in shape)
    strides = _c_strides(shape, dtype.itemsize)
    if order == "F":
        strides = tuple(reversed(_c_strides(tuple(reversed(shape)), dtype.itemsize)))
    base = np.zeros(1, dtype)
    return as_strided(base, shape, strides, writeable=True).view(Phantom)


def is_phantom(value: Any) -> bool:
    return isinstance(value, Phantom)


def _phantoms_in(values: Any) -> bool:
    if isinstance(values, (tuple, list)):
        return any(_phantoms_in(v) for v in values)
    if isinstance(values, dict):
        return any(_phantoms_in(v) for v in values.values())
    return isinstance(values, Phantom)


def _result_dtype(ufunc: np.ufunc, inputs: tuple) -> np.dtype:
    """The dtype ``ufunc`` gives for these inputs, found on one element of each."""
    small = [np.zeros((1,) * i.ndim, i.dtype) if isinstance(i, np.ndarray) else i
             for i in inputs]
    with np.errstate(all="ignore"):
        out = ufunc(*small)
    return np.asarray(out[0] if isinstance(out, tuple) else out).dtype


def _matmul_shape(a: tuple, b: tuple) -> tuple:
    if not a or not b:
        raise Stop()
    a2 = (1,) + a if len(a) == 1 else a
    b2 = b + (1,) if len(b) == 1 else b
    shape = np.broadcast_shapes(a2[:-2], b2[:-2]) + (a2[-2], b2[-1])
    if len(a) == 1:
        shape = shape[:-2] + shape[-1:]
    if len(b) == 1:
        shape = shape[:-1]
    return shape


def _reduced(a: np.ndarray, kwargs: dict) -> "Phantom":
    """The phantom result of ``ufunc.reduce(a, axis=..)`` (``a.sum(0)``)."""
    axis = kwargs.get("axis", 0)
    axes = range(a.ndim) if axis is None else (axis,) if isinstance(axis, int) else axis
    axes = {x % a.ndim for x in axes}
    keep = kwargs.get("keepdims", False)
    shape = tuple(1 if k in axes else d for k, d in enumerate(a.shape) if keep or k not in axes)
    return phantom(shape, kwargs.get("dtype") or a.dtype)


# numpy functions that only make views (metadata): they run on phantoms as they are
_VIEWS = {np.broadcast_to, np.broadcast_arrays, np.expand_dims, np.squeeze, np.transpose,
          np.moveaxis, np.swapaxes, np.shape, np.ndim, np.result_type}


class Phantom(np.ndarray):
    """An array whose elements are never read or written (``phantom``)."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        out = kwargs.get("out")
        if ufunc.nout != 1 or method not in ("__call__", "reduce"):
            raise Stop()
        if out:
            return out[0]
        if method == "reduce":
            return _reduced(inputs[0], kwargs)
        shapes = [np.shape(i) for i in inputs]
        shape = _matmul_shape(*shapes) if ufunc is np.matmul else np.broadcast_shapes(*shapes)
        return phantom(shape, kwargs.get("dtype") or _result_dtype(ufunc, inputs))

    def __array_function__(self, func, types_, args, kwargs):
        if func in _VIEWS:
            return super().__array_function__(func, types_, args, kwargs)
        raise Stop()

    def reshape(self, *shape, **kwargs):
        try:
            return np.ndarray.reshape(self, *shape, copy=False)   # a view, or ValueError
        except ValueError:
            pass
        new = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) \
            else shape
        if -1 in new:
            known = int(np.prod([d for d in new if d != -1], dtype=object))
            new = tuple(self.size // max(known, 1) if d == -1 else d for d in new)
        return phantom(new, self.dtype)      # numpy would copy: a fresh C array

    def astype(self, dtype, *args, **kwargs):
        return phantom(self.shape, dtype)

    def copy(self, *args, **kwargs):
        return phantom(self.shape, self.dtype)

    def __getitem__(self, key):
        """A view as numpy makes it (basic indexing); an element (which would be read) or
        advanced indexing (a copy of elements) stops the dry run."""
        parts = key if isinstance(key, tuple) else (key,)
        if not all(isinstance(k, (int, np.integer, slice)) or k is None or k is Ellipsis
                   for k in parts):
            raise Stop()
        twin = as_strided(np.zeros(1, self.dtype), self.shape, (0,) * self.ndim)
        if not isinstance(twin[key], np.ndarray):   # zero strides: reads element 0 only
            raise Stop()
        return super().__getitem__(key)

    def fill(self, value) -> None:
        return None

    def __setitem__(self, key, value) -> None:
        return None

    def _stop(self, *args, **kwargs):
        raise Stop()

    item = tolist = tobytes = __float__ = __int__ = __index__ = __bool__ = __iter__ = _stop

    def __repr__(self) -> str:
        return f"<phantom {self.dtype} {self.shape}>"

    __str__ = __repr__


class _Workspace:
    """A workspace (``workspace.Workspace``) whose buffers are phantoms."""

    def empty(self, slot: int, shape: tuple, dtype) -> Phantom:
        return phantom(shape, dtype)

    zeros = empty


def _numpy() -> types.SimpleNamespace:
    """numpy as the driver sees it in the dry run: allocations are phantoms; a function
    given a phantom makes views only, else stops the dry run."""
    names = {name: getattr(np, name) for name in dir(np) if not name.startswith("__")}
    shim = types.SimpleNamespace(**names)

    def empty(shape, dtype=float, order="C", **kwargs):
        return phantom(shape if isinstance(shape, tuple) else (shape,), dtype, order)

    def array(value, dtype=None, copy=True, **kwargs):
        if isinstance(value, Phantom):
            return phantom(value.shape, dtype or value.dtype)
        return np.array(value, dtype, copy=copy, **kwargs)

    def guard(fn: Callable) -> Callable:
        def call(*args, **kwargs):
            if fn in _VIEWS or not (_phantoms_in(args) or _phantoms_in(kwargs)):
                return fn(*args, **kwargs)
            if fn is np.matmul:
                return Phantom.__array_ufunc__(args[0], np.matmul, "__call__", *args,
                                               **kwargs)
            raise Stop()
        return call

    for name, value in names.items():
        if callable(value) and not isinstance(value, type):
            setattr(shim, name, guard(value))
    shim.empty = shim.zeros = shim.ones = empty
    shim.full = lambda shape, fill, dtype=None, **kw: empty(shape, dtype or np.float64)
    shim.array = array
    return shim


_SHIM: list = []
_OWN = ("np", "array", "ndarray", "take_", "give_", "check_", "tmatmul_", "chunks_",
        "reference_")


def dry_namespace(namespace: dict, recorders: set, steps: dict) -> None:
    """Make the dry run's copy of a module's namespace phantom-safe, in place: numpy and
    ``array``/``ndarray`` as phantoms need; workspaces of phantoms; each step ``S<i>``
    returns a phantom of its node's static shape ``steps[i]`` ((shape, dtype), or stops
    when a dimension is unknown); any other callable that is given a phantom stops the run
    (numba functions that are not ``recorders`` would run on it)."""
    if not _SHIM:
        _SHIM.append(_numpy())
    check = namespace.get("check_")
    matmul = namespace.get("tmatmul_")

    def tmatmul(a, b, threads, out=None):
        if not _phantoms_in((a, b, out)):
            return matmul(a, b, threads, out)
        return out if out is not None else _SHIM[0].matmul(a, b)

    namespace.update(np=_SHIM[0], array=_SHIM[0].array, ndarray=Phantom,
                     take_=_Workspace, give_=lambda ws: None,
                     check_=lambda k, v: v if isinstance(v, Phantom) else check(k, v),
                     tmatmul_=tmatmul, chunks_=_chunks)
    for name, value in list(namespace.items()):
        if name in recorders or name in _OWN or not callable(value) or \
                isinstance(value, type):
            continue
        if name.startswith("S") and name[1:].isdigit() and int(name[1:]) in steps:
            namespace[name] = _step(value, *steps[int(name[1:])])
        else:
            namespace[name] = _guarded(value)


def _chunks(fn: Callable, nc: int, *args, threads: int = 0) -> int:
    """``run_chunks`` in the dry run: one call of the (recording) chunk loop."""
    return fn(0, nc, *args) or 0


def _guarded(fn: Callable) -> Callable:
    def call(*args, **kwargs):
        if _phantoms_in(args) or _phantoms_in(kwargs):
            raise Stop()
        return fn(*args, **kwargs)
    return call


def _step(fn: Callable, shape: tuple, dtype: Any) -> Callable:
    def call(*args):
        if not _phantoms_in(args):
            return fn(*args)
        if any(d is None for d in shape):
            raise Stop()
        return phantom(shape, dtype)
    return call
