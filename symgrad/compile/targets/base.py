"""``Target``: what a compile target decides (see the package docstring).

>>> from symgrad.compile.targets import CPU
>>> CPU.math("libm"), CPU.device, CPU.distributable
('libm', False, True)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..plan.oprules import VIEWS


@dataclass(frozen=True)
class Target:
    """One compile target and its options."""

    name: str
    nests: bool = True            # pair-sum loop nests (compile/nest/match.py)
    scatter: bool = True          # getitem_grad scatters fused into kernels (scatter.py)
    threads: bool = False         # numba parallel chunks and threaded 2-D matmuls
    device: bool = False          # values live in device memory (compile() builds it)
    fixed_math: Optional[str] = None   # the math mode this target always prints
    kernels_run: str = "numba kernels on the host"
    kernel_place: str = ""        # shown after each kernel and nest by f.explain() if set
    pair_rules: bool = True       # nests skip pairs by symmetry and constant masks
    host_runs: str = ""           # device targets: what still runs on the host (explain)

    @property
    def distributable(self) -> bool:
        """Whether symgrad.distributed can run the function on dask chunks."""
        return not self.device

    def math(self, requested: str) -> str:
        """The math mode a function compiled for this target uses."""
        return self.fixed_math or requested

    def step_place(self, node) -> str:
        """Where and how a structural step runs (``f.explain()``)."""
        return "numpy view" if node.op in VIEWS else "numpy"   # on the host
