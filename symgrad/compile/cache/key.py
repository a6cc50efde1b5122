"""The one function that names a compiled module: ``compile_key``.

The key hashes what the generated code depends on: the folded graph (``digest()``),
the target, whether one output was given (``OutputMode``), the math mode, the versions of
symgrad, numba and numpy (``cache.versions``) and ``CODEGEN_VERSION``. ``sg.function``
names its cache files with it; dask calls and pickling read a function's target and math
back from the function itself, never by recomputing keys.

>>> import symgrad as sg
>>> from symgrad.compile.plan.fold import fold_graph
>>> from symgrad.outputs import OutputMode
>>> x = sg.placeholder("x", shape=(3,))
>>> graph = fold_graph([sg.sin(x)], [x])
>>> key = compile_key(graph, "cpu", OutputMode.SINGLE, "fast")
>>> len(key), key == compile_key(graph, "cpu", OutputMode.SINGLE, "fast")
(64, True)
>>> key == compile_key(graph, "cpu", OutputMode.SINGLE, "libm")
False
"""

from __future__ import annotations

import hashlib

from ...outputs import OutputMode
from . import modules as cache

__all__ = ["CODEGEN_VERSION", "compile_key"]

CODEGEN_VERSION = "20"   # 20: chunks compiled by a short pass list (sroa, instcombine, simplifycfg) without the machine scheduler; 19: deep scalar kernels cut into chunks, one LLVM function each (codegen/llvm/chunks.py); 18: the module header binds numba's names deferred (kernel_lib/deferred.py); 17: a scalar kernel's numba forms (where its IR kernel exists) a string literal compiled when first used (cpu/deferred.py); 16: gather and segment sums with constant indices as scalar element rules; 15: mostly-zero outputs zero-filled by memset, linalg checks defined in the IR; 14: loop kernels as IR (native_loops) and scalar bodies' arguments named by their reads; 12: whole-kernel IR: failed linalg checks fall back; 11: scalar kernels as IR


def compile_key(graph, target: str, mode: OutputMode, math: str) -> str:
    """The sha256 hex key of the module compiled for the folded ``graph`` (see above)."""
    from ..scalar import source

    text = "\n".join([graph.digest(), target, str(mode.single), math, cache.versions(),
                      CODEGEN_VERSION] + ["numba scalar kernels"] * (not source.NATIVE))
    return hashlib.sha256(text.encode()).hexdigest()
