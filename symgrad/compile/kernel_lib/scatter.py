"""One-pass scatter loops of the assembly ops on the host (``sg.unsorted_segment_*``,
``sg.scatter_nd``, ``sg.tensor_scatter_nd_add``): ``out[ids[i], :] op= rows[i, :]``.

Compiled once per process and dtype, like the other kernel_lib helpers (``cache=False``:
numba's cache files are pickles, and symgrad loads only sealed ones, docs/security.md): a
loop over the rows, no temporaries of the rows' size. The ids are checked by the caller before the call (an id out
of range never reaches a loop). ``maximum``/``minimum`` propagate NaN as numpy's do.
Dtypes the loops do not cover (bool, complex, float16), and small scatters (fewer than
``MIN_LOOP`` entries: no compile for them), use ``ufunc.at``.

>>> import numpy as np
>>> out = np.zeros((3, 2))
>>> scatter(np, out, np.array([2, 0, 2]), np.ones((3, 2)), "add")
>>> out
array([[1., 1.],
       [0., 0.],
       [2., 2.]])
>>> big = np.zeros(3)
>>> scatter(np, big, np.arange(MIN_LOOP) % 3, np.ones(MIN_LOOP), "maximum")   # the loop
>>> big
array([1., 1., 1.])
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["scatter"]

_LOOP_DTYPES = frozenset("f4 f8 i4 i8 u4 u8".split())
MIN_LOOP = 1 << 14
"""Below this many written entries ``ufunc.at`` runs (as fast there; nothing to compile)."""


@numba.njit(cache=False, nogil=True)
def _add(out, ids, rows):
    for i in range(ids.shape[0]):
        s = ids[i]
        for j in range(rows.shape[1]):
            out[s, j] += rows[i, j]


@numba.njit(cache=False, nogil=True)
def _multiply(out, ids, rows):
    for i in range(ids.shape[0]):
        s = ids[i]
        for j in range(rows.shape[1]):
            out[s, j] *= rows[i, j]


@numba.njit(cache=False, nogil=True)
def _maximum(out, ids, rows):
    for i in range(ids.shape[0]):
        s = ids[i]
        for j in range(rows.shape[1]):
            v = rows[i, j]
            if v > out[s, j] or v != v:   # NaN wins (np.maximum)
                out[s, j] = v


@numba.njit(cache=False, nogil=True)
def _minimum(out, ids, rows):
    for i in range(ids.shape[0]):
        s = ids[i]
        for j in range(rows.shape[1]):
            v = rows[i, j]
            if v < out[s, j] or v != v:
                out[s, j] = v


_LOOPS = {"add": _add, "multiply": _multiply, "maximum": _maximum, "minimum": _minimum}


def scatter(xp, out, ids, rows, name: str) -> None:
    """``getattr(np, name).at(out, ids, rows)`` in one compiled pass (``out`` in place).
    ``out`` is C-contiguous; ``ids`` int64 of shape (m,), ``rows`` shaped (m,) + out.shape[1:]."""
    dtype = np.dtype(out.dtype)
    if xp is not np or f"{dtype.kind}{dtype.itemsize}" not in _LOOP_DTYPES \
            or not out.flags.c_contiguous or rows.size < MIN_LOOP:
        getattr(xp, name).at(out, ids, rows)
        return
    width = int(np.prod(out.shape[1:], dtype=np.int64))
    out2 = out.reshape(out.shape[0], width)
    rows2 = np.ascontiguousarray(rows, dtype=dtype).reshape(ids.shape[0], width)
    _LOOPS[name](out2, np.ascontiguousarray(ids, dtype=np.int64), rows2)
