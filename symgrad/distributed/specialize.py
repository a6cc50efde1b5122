"""Unknown dims other than the batch axis, made static from the arguments' shapes.

The dask graph needs every output's shape except along the batch axis. When a
placeholder has an unknown dim elsewhere (``shape=(None, None)``), the graph is rebuilt
with the arguments' lengths there (the batch axis stays None) and every node's shape is
inferred again by its op record; the chunk plan is then built per set of shapes.

>>> import symgrad as sg
>>> x = sg.placeholder("x", shape=(None, None))
>>> inputs, outputs = specialize([x], [sg.reduce_sum(x, axis=0)], [(10, 3)])
>>> inputs[0].shape, outputs[0].shape
((None, 3), (3,))
"""

from __future__ import annotations

from typing import Optional

from ..graph.tensor import Tensor
from ..graph.traversal import topological_order
from ..ops.registry import infer
from .analysis import is_batch_placeholder


def needs_specializing(inputs: list) -> bool:
    """Whether a placeholder has an unknown dim other than a leading batch axis."""
    return any(None in (p.shape[1:] if is_batch_placeholder(p) else p.shape) for p in inputs)


def specialize(inputs: list, outputs: list, shapes: list) -> tuple:
    """(placeholders, outputs) of the same graph with the static dims of ``shapes``."""
    memo: dict = {}
    new_inputs = []
    for p, shape in zip(inputs, shapes):
        static = ((None,) + tuple(shape[1:])) if is_batch_placeholder(p) else tuple(shape)
        memo[id(p)] = Tensor(p.op, (), p.attrs, static, p.dtype, p.name)
        new_inputs.append(memo[id(p)])
    for node in topological_order([o for o in outputs if o is not None]):
        if id(node) in memo:
            continue
        if not node.inputs:
            memo[id(node)] = node
            continue
        args = tuple(memo[id(i)] for i in node.inputs)
        shape, _ = infer(node.op, args, node.attrs)
        memo[id(node)] = Tensor(node.op, args, node.attrs, shape, node.dtype, node.name)
    return new_inputs, [_get(memo, o) for o in outputs]


def _get(memo: dict, node: Optional[Tensor]) -> Optional[Tensor]:
    return None if node is None else memo[id(node)]
