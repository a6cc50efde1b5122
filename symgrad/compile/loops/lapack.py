"""``sg.linalg.solve`` inside a fused loop: LAPACK's ``dgesv`` called from njit code.

numba's own ``np.linalg.solve`` costs about 6 s of compile (its generic LAPACK binding);
this calls scipy's ``cython_lapack.dgesv`` through a ctypes pointer (under a second),
the routine numpy's solve runs. ``a`` is read as row-major, so its memory is ``a^T`` to
LAPACK: ``adjoint`` solves with it as it is, otherwise with a transposed copy. A singular
matrix raises (the fused loop then hands back to the Python loop, which names the error).

>>> import numpy as np
>>> a, b = np.array([[2.0, 1.0], [0.0, 4.0]]), np.array([[3.0], [8.0]])
>>> solve_(a, b, False).ravel().tolist(), solve_(a, b, True).ravel().tolist()
([0.5, 2.0], [1.5, 1.625])
"""

from __future__ import annotations

import llvmlite.binding as ll
import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import get_cython_function_address, intrinsic

__all__ = ["solve_"]

_SYMBOL = "symgrad_dgesv_"
ll.add_symbol(_SYMBOL, get_cython_function_address("scipy.linalg.cython_lapack", "dgesv"))


@intrinsic
def _dgesv(typingctx, n, nrhs, a, lda, ipiv, b, ldb, info):
    """dgesv(n, nrhs, a, lda, ipiv, b, ldb, info), every argument an address (an int):
    called by symbol name, so numba caches the functions that call it (a ctypes pointer
    would be a dynamic global)."""
    sig = types.void(*([types.intp] * 8))

    def codegen(context, builder, signature, values):
        ptr = ir.IntType(8).as_pointer()
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(
            ir.VoidType(), [ptr] * 8), _SYMBOL)
        builder.call(fn, [builder.inttoptr(v, ptr) for v in values])
    return sig, codegen


@numba.njit(error_model="numpy")   # no cache of its own: a cached loop module holds its code
def solve_(a, b, adjoint):
    """``x`` with ``a x = b`` (``a^T x = b`` when ``adjoint``); ``a`` (n, n), ``b`` (n, k)."""
    n, k = a.shape[0], b.shape[1]
    m = np.ascontiguousarray(a).copy() if adjoint else np.ascontiguousarray(a.T)
    x = np.ascontiguousarray(b.T)            # (k, n): column-major b for LAPACK
    if not adjoint and m.ctypes.data == a.ctypes.data:
        m = m.copy()
    if x.ctypes.data == b.ctypes.data:
        x = x.copy()
    ints = np.empty(3 + n, np.int32)         # n, nrhs, info, then the pivots
    ints[0], ints[1], ints[2] = n, k, 0
    _dgesv(ints[0:].ctypes.data, ints[1:].ctypes.data, m.ctypes.data, ints[0:].ctypes.data,
           ints[3:].ctypes.data, x.ctypes.data, ints[0:].ctypes.data, ints[2:].ctypes.data)
    if ints[2] != 0:
        raise ZeroDivisionError("singular matrix")
    return np.ascontiguousarray(x.T)
