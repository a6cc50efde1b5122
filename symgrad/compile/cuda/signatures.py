"""Explicit signatures of the generated CUDA kernels, from the plan's dtypes and ranks.

A ``@cuda.jit`` kernel without a signature is typed at every launch (numba types each
argument to pick an overload). With one signature numba compiles it when the module is
loaded (inside ``sg.function``, as ``eager.py`` does for the CPU target) and marks the
dispatcher *specialized*: a launch takes its only overload without typing anything, and
``cuda_runtime.bound_kernel`` binds that overload's ``launch`` once per configuration.

The arguments of a kernel are known from the plan: its lengths (``int64``), its inputs
(the node's dtype and rank; layout ``A``, since a caller's device array or a step's view
may be strided), its outputs (fresh ``xp.empty``/``xp.zeros`` buffers: layout ``C``,
float64/int64 for sums). The simulator ignores signatures; there each launch checks its
arguments against the signature instead (``cuda_runtime``), so a wrong one fails the
CI tests rather than a GPU run.

>>> array_type("float64", 2, "A"), array_type("bool", 1, "C"), array_type("int32", 0, "C")
('float64[:, :]', 'boolean[::1]', "Array(int32, 0, 'C')")
>>> kernel_signature(2, [("float64", 2)], [("float64", 2)])
'void(int64, int64, float64[:, :], float64[:, ::1])'
"""

from __future__ import annotations

import numpy

__all__ = ["array_type", "kernel_signature", "decorator"]

_NAMES = {"bool": "boolean"}   # numpy dtype name -> numba type name, where they differ


def array_type(dtype, ndim: int, layout: str) -> str:
    """The numba signature text of an array argument."""
    name = numpy.dtype(dtype).name
    name = _NAMES.get(name, name)
    if ndim == 0:
        return f"Array({name}, 0, {layout!r})"
    last = "::1" if layout == "C" else ":"
    return f"{name}[{', '.join([':'] * (ndim - 1) + [last])}]"


def kernel_signature(rank: int, inputs: list, outputs: list) -> str:
    """``void(int64 x rank, inputs.., outputs..)``; ``inputs``/``outputs``: (dtype, ndim)
    pairs, read with layout A and written with layout C."""
    args = ["int64"] * rank + [array_type(d, n, "A") for d, n in inputs] + \
        [array_type(d, n, "C") for d, n in outputs]
    return f"void({', '.join(args)})"


def decorator(signature: str) -> str:
    """The generated kernel's decorator: ``cuda_runtime.kernel_jit`` (the module binds it
    as ``kernel_jit_``) with its signature."""
    return f"@kernel_jit_({signature!r}, NUMBA_CACHE)"
