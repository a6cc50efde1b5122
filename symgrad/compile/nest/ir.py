"""What a loop nest is: ``Nest`` (pre kernels -> outer region -> post kernels), its
outputs and inputs, and the reads of a point function (shared by the CPU and CUDA nest
writers; ``match.py`` builds nests, ``rules.py`` proves masks, gates and symmetry)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from ..codegen.templates import input_access
from ..plan.regions import Kernel

INNER_MAX = 16   # longest trailing axis that is unrolled into a nest


NEST_MATH = "libm"
"""The math mode of a nest's point kernels, whatever the function's: a nest's inner loop
adds into a column (``r[j] += ..``) and LLVM keeps it scalar, where glibc's scalar ``exp``
runs the Gaussian pair sum faster than the vectorisable polynomial
(``benchmarks/pair_sums.py``, ``docs/pair_sums.md``; libm is also the more accurate)."""


@dataclass
class Nest:
    """One loop nest: ``pre`` kernels -> ``outer`` -> ``post`` kernels (see module doc)."""

    outer: Kernel
    pre: list = field(default_factory=list)
    post: list = field(default_factory=list)
    links: dict = field(default_factory=dict)    # id(expand_dims node) -> outer node
    steps: list = field(default_factory=list)    # the expand_dims Steps absorbed
    hidden: set = field(default_factory=set)     # ids of outer nodes that are not stored
    # {(post kernel index, column output j): row output j} when the nest visits i0 <= i1
    # only (``nest_symmetry``); None until the source is written, {} when it may not
    mirror: Optional[dict] = None

    @property
    def kernels(self) -> list:
        return self.pre + [self.outer] + self.post

    @property
    def index(self) -> int:
        return self.outer.index

    @property
    def rank(self) -> int:
        return self.outer.rank

    @property
    def inner(self) -> int:
        """The trailing axis of the pre and post kernels (1 for a nest of one kernel)."""
        return (self.pre or self.post)[0].shape[-1] if self.pre or self.post else 1

    def written(self, kernel: Kernel) -> list:
        """(j, output) of ``kernel`` that the nest writes to an array."""
        if kernel in self.pre:
            return []
        return [(j, o) for j, o in enumerate(kernel.outputs)
                if not (kernel is self.outer and not o.is_reduction and id(o.node) in self.hidden)]



@dataclass
class NestOutput:
    """How the nest writes output ``j`` of ``kernel``: 'store', 'local' (sum over the
    outer axes level.. in locals, stored after loop ``level``) or 'array' (``+=``)."""

    kernel: Kernel
    j: int
    mode: str
    level: int
    chunked: bool
    inner: bool          # the output has the inner axis (one value per k)

    @property
    def name(self) -> str:
        return f"r{self.kernel.index}_{self.j}"

    @property
    def zeroed(self) -> bool:
        return self.mode == "array"


def nest_outputs(nest: Nest, parallel: bool) -> list:
    outs = []
    r = nest.rank
    for kernel in [nest.outer] + nest.post:
        for j, o in nest.written(kernel):
            axes = set(o.axes) if o.is_reduction else set()
            has_inner = kernel is not nest.outer and r not in axes
            outer_axes = axes - {r}
            level = min(outer_axes) if outer_axes else r
            if not o.is_reduction:
                mode = "store"
            elif outer_axes == set(range(level, r)):
                mode = "local"
            else:
                mode = "array"
            chunked = parallel and 0 in outer_axes
            if nest.mirror and axes != {0, 1}:   # rows and columns get mirrors
                mode, chunked = "array", parallel
            outs.append(NestOutput(kernel, j, mode, level, chunked, has_inner))
    return outs


def nest_inputs(nest: Nest) -> list:
    """The LNodes the nest function reads (pre results and links are computed inside)."""
    inside = {id(k.outputs[0].node) for k in nest.pre} | set(nest.links)
    nodes, seen = [], set()
    for kernel in nest.kernels:
        for i in kernel.inputs:
            if id(i) not in inside and id(i) not in seen:
                seen.add(id(i))
                nodes.append(i)
    return nodes


def point_reads(kernel: Kernel, local: dict, arg: dict, r: int, k=None) -> list:
    """The arguments of ``kernel``'s point function inside a nest (cpu and cuda): a value
    the nest holds in a local (``local``), else its array (``arg``) at the nest's indexes,
    with the inner index ``i<r>`` fixed to ``k`` when given."""
    args = []
    for i in kernel.inputs:
        if id(i) in local:
            args.append(local[id(i)])
            continue
        index = input_access(i.dims, kernel.dims).index
        if k is not None:
            index = re.sub(rf"\bi{r}\b", str(k), index)
        args.append(arg[id(i)] + index)
    return args
