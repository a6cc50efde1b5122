"""The host targets: ``cpu`` (serial kernels) and ``parallel`` (numba prange chunks, 2-D
float matmuls split over the thread pool).

>>> from symgrad.compile.targets import PARALLEL
>>> PARALLEL.threads
True
"""

from __future__ import annotations

from dataclasses import dataclass

from ..loops.cpu import loop_place
from ..plan.oprules import threads_matmul
from .base import Target


@dataclass(frozen=True)
class HostTarget(Target):
    def step_place(self, node) -> str:
        if self.threads and threads_matmul(node):
            return "numpy, split over the thread pool when large"
        return loop_place(node, self.name) or super().step_place(node)


CPU = HostTarget("cpu")
PARALLEL = HostTarget("parallel", threads=True)
