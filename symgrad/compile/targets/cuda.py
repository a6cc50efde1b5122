"""The ``cuda`` target: numba.cuda kernels and CuPy device steps (docs/cuda.md).

numba.cuda is imported only when a function is compiled for it (``function.py``'s device
pass calls ``cuda_runtime.compile_cuda``; this package stays below the runtime modules).

>>> from symgrad.compile.targets import CUDA
>>> from symgrad.ops.contraction import records as C
>>> class Node: op = C.matmul
>>> CUDA.step_place(Node())
'device, library call: cuBLAS via CuPy'
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import Target


@dataclass(frozen=True)
class CudaTarget(Target):
    def step_place(self, node) -> str:
        from ..cuda.steps import LIBRARY_CALLS
        if node.op in LIBRARY_CALLS:
            return "device, library call: cuBLAS via CuPy"
        return "device step: CuPy"

    def nest_lines(self, nests: list) -> list:
        """``f.explain()``'s lines on the device nests: which pairs each visits and which of
        the CPU nest's rules (masks, symmetry) it uses (``cuda_tiles.rule_lines``)."""
        from ..cuda.tiles import rule_lines
        return rule_lines(nests)


CUDA = CudaTarget("cuda", nests=True, scatter=False, device=True, fixed_math="libm",
                  kernels_run="numba.cuda device kernels", kernel_place="device kernel",
                  pair_rules=False,
                  host_runs="the argument checks (shapes and dtypes only), one upload per "
                            "host argument and one download per result of a host call")
