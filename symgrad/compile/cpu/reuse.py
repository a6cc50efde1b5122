"""Dead temporaries as output buffers: a kernel may store an output into the buffer of an
input that nothing after it reads, instead of allocating a fresh one.

A kernel output ``r`` may take the buffer of input ``x`` when:

- ``x`` is a temporary this call allocated (a kernel's stored output, or the result of a
  step in ``oprules.FRESH_STEPS``): never a user's array, a constant, or a view;
- the kernel reads no other value that may share ``x``'s buffer (``m + transpose(m)``);
- no later unit reads ``x`` or a value that may share its buffer (a view of it, or of
  what it is a view of), and none of these is an output of the function: the buffer is
  dead once this kernel has read it;
- ``r`` is a stored output of ``x``'s shape and dtype, and the loop reads ``x`` at
  exactly the index it writes ``r`` (``x[i0, i1]`` and ``r[i0, i1]``: each element is read
  before it is overwritten, in the same iteration, also under ``prange``);
- the kernel does not run twice (a sin/cos kernel that retries with libm re-reads its
  inputs) and is not a gather (stencil adjoints read neighbours).

A loop that reads ``x`` and writes ``r`` through two parameters that are the same array is
not vectorised (LLVM's run-time overlap check fails and it takes the scalar loop: W4's
bias + tanh 7.5 ms instead of 2.3), so such a kernel's loops take one parameter for both
(``one_array``): ``r[i0, i1] = f(r[i0, i1], ...)``.

Fresh large buffers cost page faults at first touch (~0.13 ms per MiB); W4 saves one
8 MiB temporary per call. ``f.explain()`` lists each reuse.

>>> import symgrad as sg
>>> x = sg.placeholder("x", (4, 8))
>>> w = sg.placeholder("w", (8, 8))
>>> f = sg.function([x, w], sg.tanh(sg.matmul(x, w, name="m"), name="t"))
>>> print(f.explain().split("buffers reused:")[1].splitlines()[1])
  t is stored into the dead buffer of m (256 bytes not allocated)
"""

from __future__ import annotations

import re
from typing import Callable

from ...shapes import is_fully_known
from ..plan.gather import gather_axes
from ..nest import Nest
from ..plan.oprules import FRESH_STEPS
from ..plan.regions import Kernel, Plan, Step
from ..codegen.templates import input_access


def _reads(unit) -> list:
    if isinstance(unit, Step):
        return list(unit.node.inputs)
    kernels = unit.kernels if isinstance(unit, Nest) else [unit]
    return [i for k in kernels for i in k.inputs]


def _fresh(plan: Plan) -> set:
    """Indices of nodes whose buffer this call allocated and nothing else holds."""
    fresh = set()
    for unit in plan.units:
        if isinstance(unit, Kernel):
            fresh |= {o.node.index for o in unit.outputs if not o.is_reduction}
        elif isinstance(unit, Step) and unit.node.op in FRESH_STEPS:
            fresh.add(unit.node.index)
    return fresh


def view_groups(plan: Plan) -> dict:
    """node index -> the index of the buffer it may share: a step that is not in
    ``FRESH_STEPS`` may return a view of its first input (or of any: all are joined)."""
    root: dict = {}

    def find(i: int) -> int:
        while root.get(i, i) != i:
            i = root[i]
        return i
    for unit in plan.units:
        if isinstance(unit, Step) and unit.node.op not in FRESH_STEPS:
            for i in unit.node.inputs:
                root[find(i.index)] = find(unit.node.index)
    return {i: find(i) for i in root}


def reuse_plan(plan: Plan, runs_once: Callable[[Kernel], bool]) -> dict:
    """{(kernel index, output position): input node} for each output stored into a dead
    input's buffer. ``runs_once(kernel)``: the driver never re-runs its loop."""
    groups = view_groups(plan)
    group = lambda i: groups.get(i, i)   # noqa: E731
    last: dict = {}
    for at, unit in enumerate(plan.units):
        for node in _reads(unit):
            last[group(node.index)] = at
    kept = {group(o.index) for o in plan.outputs if o is not None}
    for o in plan.outputs:
        if o is not None:
            last[group(o.index)] = len(plan.units)
    fresh = _fresh(plan)
    out: dict = {}
    for at, unit in enumerate(plan.units):
        if not isinstance(unit, Kernel) or not _eligible(unit) or not runs_once(unit):
            continue
        free = [i for i in unit.inputs if i.index in fresh and group(i.index) not in kept
                and last.get(group(i.index)) == at and _same_index(i, unit)
                and not _reads_a_view(unit, i, group)]
        for j, o in enumerate(unit.outputs):
            if o.is_reduction or o.is_scatter or any(p.node is o.node
                                                      for p in unit.outputs[:j]):
                continue
            match = next((i for i in free if i.shape == o.node.shape and
                          i.dtype == o.node.dtype), None)
            if match is not None:
                free.remove(match)
                out[(unit.index, j)] = match
    return out


def _reads_a_view(k: Kernel, node, group: Callable) -> bool:
    """The kernel also reads another value that may share ``node``'s buffer (``m`` and
    ``transpose(m)`` in ``m + m^T``): storing into it would overwrite elements still to be
    read through the view."""
    return any(i is not node and group(i.index) == group(node.index) for i in k.inputs)


def _eligible(k: Kernel) -> bool:
    return bool(k.rank) and is_fully_known(k.shape) and gather_axes(k, "r") is None


def _same_index(node, k: Kernel) -> bool:
    if node.shape != k.shape:
        return False
    acc = input_access(node.dims, k.dims)
    full = "[" + ", ".join(f"i{j}" for j in range(k.rank)) + "]"
    return not acc.broadcast and acc.base is None and acc.index == full


def merged_inputs(k: Kernel, reuse: dict) -> dict:
    """{input position: output position} of the kernel's inputs whose buffer an output
    takes (its loops read them through the output's parameter)."""
    return {k.inputs.index(node): j for (i, j), node in reuse.items() if i == k.index}


def one_array(loop: str, merged: dict) -> str:
    """A loop's source with each merged input ``x<p>`` read through ``r<j>`` and dropped
    from the parameters.

    >>> print(one_array("def f(n0, x0, x1, r0):\\n    r0[i0] = g(x0[i0], x1[i0])", {0: 0}))
    def f(n0, x1, r0):
        r0[i0] = g(r0[i0], x1[i0])
    """
    for p, j in merged.items():
        # a parallel chunk's view of the input becomes the output's view (one pointer)
        loop = re.sub(rf"^ *v{p} = x{p}\[lo:hi\]\n", "", loop, flags=re.M)
        loop = re.sub(rf"\bv{p}\[", f"w{j}[", loop)
        loop = re.sub(rf"\bx{p}\[", f"r{j}[", loop)
        loop = re.sub(rf"(def \w+\([^)]*?)\bx{p}, ", r"\1", loop, count=1)
        if re.search(rf"\bx{p}\b", loop):   # read other than by subscript: a compiler bug
            raise RuntimeError(f"reuse.one_array: x{p} is still read in\n{loop}")
    return loop
