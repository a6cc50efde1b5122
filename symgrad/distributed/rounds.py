"""The chunk functions: one compiled function per pass over the chunks, and a tail.

Pass ``r`` runs on every chunk. Its inputs are the original inputs (a chunk of each batch
input, the whole of each parameter) followed by one placeholder per *combined value* (a
cut whose value is known before pass ``r``: counts, and cuts whose partials ran in an
earlier pass). Its outputs are the partials of the cuts of phase ``r`` (the cut node itself
applied to one chunk) and the requested outputs with a batch axis of phase ``r``. The
*tail* runs once (on the first chunk of the batch inputs it reads) for requested outputs without a batch axis that are
not a cut themselves (``log(loss)``, a parameter's function).

>>> import numpy as np, symgrad as sg
>>> from symgrad.distributed.analysis import analyse
>>> x = sg.placeholder("x", shape=(None,))
>>> s = sg.reduce_sum(x)
>>> out = [sg.log(s), x / s]
>>> plan = chunk_plan(analyse([x], out), "cpu", "fast")
>>> len(plan.passes), [len(p.partials) for p in plan.passes], plan.tail is not None
(2, [1, 0], True)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..errors import ChunkError
from ..graph.tensor import Tensor, describe
from ..graph.traversal import placeholders_of, topological_order
from ..ops.sources import constant, placeholder
from .analysis import Analysis, CutNode


@dataclass
class Pass:
    """One pass over the chunks: ``function(*inputs, *values)`` returns the partials of
    ``partials`` then the requested outputs at indices ``rows``."""

    function: object
    partials: list                       # CutNode
    rows: list                           # indices into the requested outputs
    values: list                         # CutNode whose combined values it reads
    inputs: Optional[list] = None        # indices of the original inputs it reads (None: all)


@dataclass
class ChunkPlan:
    analysis: Analysis
    passes: list = field(default_factory=list)
    tail: Optional[Pass] = None
    # per requested output: ('rows', pass), ('cut', CutNode), ('tail', k) or None
    sources: list = field(default_factory=list)


def chunk_plan(analysis: Analysis, target: str, math: str) -> ChunkPlan:
    """Compile the passes and the tail of ``analysis`` (see the module docstring)."""
    from ..compile.function import function

    plan = ChunkPlan(analysis)
    slots = {id(c.node): placeholder(f"{c.node.name}/combined", shape=c.node.shape,
                                     dtype=c.node.dtype) for c in analysis.cuts}
    outputs = analysis.outputs
    for r in range(analysis.passes):
        known = [c for c in analysis.cuts if c.phase < r]
        partials = [c for c in analysis.cuts if c.phase == r]
        rows = [k for k, o in enumerate(outputs) if o is not None and
                analysis.axis_of(o) is not None and analysis.phase_of(o) == r]
        wanted = [c.node for c in partials] + [outputs[k] for k in rows]
        graph = _substitute(wanted, known, slots, analysis)
        inputs = analysis.inputs + [slots[id(c.node)] for c in known]
        plan.passes.append(Pass(function(inputs, graph, target, math), partials, rows, known))
    plan.sources = [_source(analysis, o) for o in outputs]
    tail = [k for k, s in enumerate(plan.sources) if s == ("tail",)]
    if tail:
        known = list(analysis.cuts)
        graph = _substitute([outputs[k] for k in tail], known, slots, analysis)
        used = {id(p) for p in placeholders_of(topological_order(graph))}
        read = [k for k, p in enumerate(analysis.inputs) if id(p) in used]
        known = [c for c in known if id(slots[id(c.node)]) in used]
        inputs = [analysis.inputs[k] for k in read] + [slots[id(c.node)] for c in known]
        plan.tail = Pass(function(inputs, graph, target, math), [], tail, known, read)
        for j, k in enumerate(tail):
            plan.sources[k] = ("tail", j)
    return plan


def _source(analysis: Analysis, node: Optional[Tensor]) -> Optional[tuple]:
    if node is None:
        return None
    if analysis.axis_of(node) is not None:
        return ("rows", analysis.phase_of(node))
    cut = analysis.cut_of(node)
    return ("cut", cut) if cut is not None else ("tail",)


def _substitute(wanted: list, known: list, slots: dict, analysis: Analysis) -> list:
    """``wanted`` rebuilt with every known cut replaced by its placeholder and every
    ones_like/zeros_like of a row-independent value by a constant."""
    memo: dict = {id(c.node): slots[id(c.node)] for c in known}
    for node in topological_order(wanted):
        if id(node) in memo or not node.inputs:
            continue
        if analysis.info.get(id(node)) == (None, 0) and _shape_only(node, analysis):
            memo[id(node)] = constant(np.full(_static(node), node.op.numpy(
                np.ones((), node.dtype)), node.dtype))
            continue
        inputs = tuple(memo.get(id(i), i) for i in node.inputs)
        if any(a is not b for a, b in zip(inputs, node.inputs)):
            memo[id(node)] = Tensor(node.op, inputs, node.attrs, node.shape, node.dtype,
                                    node.name)
    return [memo.get(id(n), n) for n in wanted]


def _shape_only(node: Tensor, analysis: Analysis) -> bool:
    from .axes import SHAPE_ONLY
    return node.op in SHAPE_ONLY and analysis.phase_of(node.inputs[0]) > 0


def _static(node: Tensor) -> tuple:
    if None in node.shape:
        raise ChunkError(f"sg.function (dask): {describe(node)} needs a static shape to run "
                         "chunk by chunk; give the placeholders static shapes except the "
                         "leading (batch) dimension")
    return tuple(node.shape)


def count_value(cut: CutNode, rows: int) -> np.ndarray:
    """The value of a count cut (``axis_size`` over the batch axis) for ``rows`` rows."""
    x = cut.node.inputs[0]
    axes = cut.node.attrs["axes"]
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    size = 1
    for a in axes:
        a %= len(x.shape)
        if a == cut.axis:
            size *= rows
        elif x.shape[a] is None:
            raise ChunkError(f"sg.function (dask): {describe(cut.node)} counts an axis of "
                             "unknown length; give the placeholders static shapes except the "
                             "leading (batch) dimension")
        else:
            size *= x.shape[a]
    return np.asarray(size, dtype=cut.node.dtype)
