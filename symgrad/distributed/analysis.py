"""Batch-axis analysis: how every node of a compiled graph relates to the rows.

Placeholders whose leading dimension is None are the *batch* inputs; their axis 0 is the
batch axis. Walking the graph in topological order, each node gets

* ``axis``: where the batch axis is in the node (None: the node has no batch axis), and
* ``phase``: how many combinations across chunks must finish before it can be computed.

A *cut* is a node that combines rows (a sum, mean, max, min, product or count over the
batch axis, an un-broadcast sum of a gradient to a parameter, a matmul that contracts
the rows). Its value has phase ``p + 1`` where ``p`` is its input's phase, except a count
(``axis_size`` over the batch axis), which is known before anything runs. A graph of
phase ``R`` runs in ``R`` passes over the chunks (a loss and its gradients need one; a
normalisation by a sum over the batch, such as ``x / reduce_sum(x)``, needs two), and each
pass is exact: partial results are combined as sums, weighted means, maxima or minima.

>>> import symgrad as sg
>>> x = sg.placeholder("x", shape=(None, 3))
>>> loss = sg.reduce_mean(sg.square(x))
>>> a = analyse([x], [loss, sg.gradients(loss, x)[0]])
>>> a.passes, [c.kind for c in a.cuts], a.axis_of(a.outputs[1])
(1, ['mean', 'count'], 0)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ..errors import ChunkError
from ..graph.tensor import Tensor, describe
from ..graph.traversal import topological_order
from .axes import SHAPE_ONLY, Cut, Unchunkable, batch_axis_of


@dataclass(eq=False)
class CutNode:
    """A node that combines rows; its partial runs in pass ``phase`` (-1 for a count)."""

    node: Tensor
    kind: str
    phase: int
    axis: int              # the batch axis in the node's input


@dataclass
class Analysis:
    """The result of ``analyse``: per node id, (axis, phase); the cuts; the pass count."""

    inputs: list
    outputs: list
    batch: list                                   # the batch placeholders
    info: dict = field(default_factory=dict)      # id(node) -> (axis, phase)
    cuts: list = field(default_factory=list)      # CutNode, topological order
    passes: int = 0

    def axis_of(self, node: Tensor) -> Optional[int]:
        return self.info[id(node)][0]

    def phase_of(self, node: Tensor) -> int:
        return self.info[id(node)][1]

    def cut_of(self, node: Tensor) -> Optional[CutNode]:
        return next((c for c in self.cuts if c.node is node), None)


def is_batch_placeholder(p: Tensor) -> bool:
    return len(p.shape) > 0 and p.shape[0] is None


def analyse(inputs: list, outputs: list) -> Analysis:
    """Classify every node between ``inputs`` and ``outputs`` (None outputs are skipped);
    raises ChunkError naming the node that prevents chunk-by-chunk execution."""
    batch = [p for p in inputs if is_batch_placeholder(p)]
    result = Analysis(list(inputs), list(outputs), batch)
    batch_ids = {id(p) for p in batch}
    for node in topological_order([o for o in outputs if o is not None]):
        if not node.inputs:
            result.info[id(node)] = (0 if id(node) in batch_ids else None, 0)
            continue
        axes = [result.info[id(i)][0] for i in node.inputs]
        phase = max(result.info[id(i)][1] for i in node.inputs)
        if node.op in SHAPE_ONLY and axes[0] is None:
            result.info[id(node)] = (None, 0)
            continue
        try:
            axis = batch_axis_of(node, axes)
        except Unchunkable as exc:
            raise ChunkError(_message(node, str(exc))) from None
        if isinstance(axis, Cut):
            cut = CutNode(node, axis.kind, -1 if axis.kind == "count" else phase,
                          _input_axis(node, axes))
            result.cuts.append(cut)
            result.info[id(node)] = (None, cut.phase + 1)
        else:
            result.info[id(node)] = (axis, phase)
    result.passes = _passes(result)
    return result


def _input_axis(node: Tensor, axes: list) -> int:
    return next(a for a in axes if a is not None)


def _passes(result: Analysis) -> int:
    phases = [c.phase + 1 for c in result.cuts if c.kind != "count"]
    phases += [result.phase_of(o) + 1 for o in result.outputs
               if o is not None and result.axis_of(o) is not None]
    return max(phases, default=0)


def _message(node: Tensor, reason: str) -> str:
    return (f"sg.function (dask): cannot run chunk by chunk: node {describe(node)} "
            f"prevents it: {reason}. Rows along the batch axis (the leading None dim of a "
            "placeholder) must be independent except through sums, means, maxima, minima "
            "or products over them; call f with numpy arrays to run it in memory")
