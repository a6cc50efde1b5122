"""Temporaries that survive between calls: a compiled function keeps the large buffers its
plan allocates and does not return (a matmul's result, a kernel's stored output) in a
*workspace*, and the next call with the same shapes reuses them instead of allocating.

Fresh large arrays cost page faults: glibc serves allocations above its mmap threshold
with ``mmap`` and unmaps them on free, so each call faults its temporaries' pages in again
(W4: two 8 MiB temporaries, ~1,000 faults and 0.9-3.3 ms of system time per call).

- **Which buffers** (``WorkspacePlan``): a kernel's stored or accumulated output, or a
  2-D matmul step's result (``INTO``), whose buffer no returned value may share: the
  value, the values stored into its buffer later (``reuse.py``) and any view of these
  (a step that may return a view joins its inputs' group, as in ``reuse._groups``) are
  not outputs of the function. Returned arrays are therefore never workspace memory.
- **How much**: at run time only buffers of at least ``MIN_BYTES`` are kept (smaller ones
  come from malloc's heap without a system call); a slot keeps the array of its last call
  and allocates again when the shape or dtype changes, so a workspace holds the large
  temporaries of one call at the last shapes seen.
- **Threads**: a call checks a workspace out of its function's free list (``take``) and
  returns it when it ends (``give``); two calls at once never share one. At most ``keep``
  (``KEEP``) free workspaces are kept; ``release`` (``f.release_buffers()``) drops them.

>>> import numpy as np
>>> pool = Workspaces()
>>> ws = pool.take()
>>> a = ws.empty(0, (512, 64), np.float64)      # 256 KiB: kept
>>> pool.give(ws)
>>> pool.nbytes(), pool.allocated
(262144, 1)
>>> pool.take().empty(0, (512, 64), np.float64) is a
True
"""

from __future__ import annotations

import numpy as np

from ..plan.oprules import FRESH_STEPS, PLACEHOLDER, S, threads_matmul
from ...shapes import is_fully_known
from ..plan.regions import Plan, Step
from .reuse import view_groups

MIN_BYTES = 1 << 17
"""Buffers below this many bytes are not kept (glibc's default mmap threshold: smaller
ones are served from the heap without page faults)."""

KEEP = 2
"""Free workspaces a function keeps (more calls at once allocate, and drop theirs)."""


class Workspace:
    """The buffers of one call in flight: ``empty``/``zeros`` by slot."""

    __slots__ = ("buffers", "pool", "generation")

    def __init__(self, pool: "Workspaces"):
        self.buffers: dict = {}
        self.pool = pool
        self.generation = pool.generation

    def empty(self, slot: int, shape: tuple, dtype) -> np.ndarray:
        """An uninitialised array for ``slot`` (the slot's kept buffer when its shape and
        dtype are this call's)."""
        a = self.buffers.get(slot)
        if a is not None and a.shape == shape and a.dtype == dtype:
            return a
        a = np.empty(shape, dtype)
        if a.nbytes >= MIN_BYTES:
            self.buffers[slot] = a
            self.pool.allocated += 1
        else:
            self.buffers.pop(slot, None)
        return a

    def zeros(self, slot: int, shape: tuple, dtype) -> np.ndarray:
        a = self.empty(slot, shape, dtype)
        a.fill(0)
        return a


class Workspaces:
    """A compiled function's free workspaces (``take`` one per call, ``give`` it back).

    ``allocated`` counts the large buffers its workspaces allocated (a hook for tests: a
    steady state of calls with unchanged shapes adds none). With ``enabled = False`` every
    call allocates, as without workspaces (the free ones stay until ``release``)."""

    def __init__(self, keep: int = KEEP):
        self.free: list = []
        self.keep = keep
        self.enabled = True
        self.allocated = 0
        self.generation = 0

    def take(self) -> Workspace:
        if self.enabled:
            try:
                return self.free.pop()        # atomic: one caller gets each workspace
            except IndexError:
                pass
        return Workspace(self)

    def give(self, ws: Workspace) -> None:
        if self.enabled and ws.buffers and ws.generation == self.generation and \
                len(self.free) < self.keep:
            self.free.append(ws)

    def release(self) -> int:
        """Drops the free workspaces; returns the bytes they held (calls in flight keep
        theirs until they end, and drop them then)."""
        held = self.nbytes()
        self.generation += 1      # a workspace in flight now is dropped when it returns
        self.free.clear()
        return held

    def nbytes(self) -> int:
        """Bytes held by the free workspaces."""
        return sum(a.nbytes for ws in list(self.free) for a in tuple(ws.buffers.values()))


def _matmul_into(node, ins: list, parallel: bool, into):
    """A 2-D matmul step written into a workspace buffer (None: the usual form)."""
    if len(node.shape) != 2 or any(len(i.shape) != 2 or i.dtype != node.dtype
                                   for i in node.inputs):
        return None
    out = into(f"({ins[0]}.shape[0], {ins[1]}.shape[1])", f"np.{node.dtype.name}")
    if parallel and threads_matmul(node):
        return f"tmatmul_({ins[0]}, {ins[1]}, NTHREADS, {out})"
    return f"np.matmul({ins[0]}, {ins[1]}, out={out})"


INTO = {S.matmul: _matmul_into}
"""Steps that can write their result into a given buffer, keyed by op record:
``form(node, inputs, parallel, into) -> line or None``; ``into(shape, dtype)`` writes the
allocation."""


class WorkspacePlan:
    """Which of a plan's allocations take workspace buffers, and their slot numbers."""

    def __init__(self, plan: Plan, reuse: dict):
        parent: dict = {}

        def root(i: int) -> int:
            while parent.get(i, i) != i:
                i = parent[i]
            return i
        # views (steps that may return a view of an input) and outputs stored into a
        # dead input's buffer (reuse.py) share a buffer with that input
        kernels = {k.index: k for k in plan.kernels}
        pairs = list(view_groups(plan).items())
        pairs += [(kernels[i].outputs[j].node.index, dead.index)
                  for (i, j), dead in reuse.items()]
        for a, b in pairs:
            ra, rb = root(a), root(b)
            if ra != rb:
                parent[ra] = rb
        self.returned = {root(o.index) for o in plan.outputs if o is not None}
        self.root = root
        self.slots: dict = {}

    def slot(self, key, node) -> int | None:
        """The slot of the allocation ``key`` holding ``node``'s value, or None when a
        returned value may share it."""
        if node.op is PLACEHOLDER or node.is_const or self.root(node.index) in self.returned:
            return None
        return self.slots.setdefault(key, len(self.slots))

    def used(self) -> bool:
        return bool(self.slots)

    def alloc(self, key, node, fill: str, shape: str, dtype: str, static_bytes=None):
        """``ws_.empty(slot, shape, dtype)`` (or ``zeros``) for a kept allocation, else
        None. ``static_bytes``: the size when known at compile time (small: not kept)."""
        if static_bytes is not None and static_bytes < MIN_BYTES:
            return None
        slot = self.slot(key, node)
        if slot is None:
            return None
        return f"ws_.{fill}({slot}, {shape}, {dtype})"

    def step(self, step: Step, ins: list, parallel: bool):
        """A step's line writing into a workspace buffer, or None."""
        form = INTO.get(step.node.op)
        node = step.node
        if form is None or node.op not in FRESH_STEPS:
            return None
        if is_fully_known(node.shape) and \
                int(np.prod(node.shape)) * node.dtype.itemsize < MIN_BYTES:
            return None
        if self.slot(("step", node.index), node) is None:
            return None
        slot = self.slots[("step", node.index)]
        line = form(node, ins, parallel, lambda shape, dtype: f"ws_.empty({slot}, {shape}, "
                    f"{dtype})")
        if line is None:
            del self.slots[("step", node.index)]
        return line
