"""Fold the constant parts of a compressed-derivative graph before it is compiled.

The seeds of a compressed Jacobian are constants; their first vjps (scatters, slices and
concat parts of the seed) are constants too. Evaluating those nodes once here takes them
off the per-call path (the Brusselator Jacobian: 59 numpy steps -> the few that read y).
Nodes with no placeholder below them and at most ``limit`` entries become constants.

>>> import numpy as np, symgrad as sg
>>> x = sg.placeholder("x", shape=(2,))
>>> y = fold_constants(sg.constant(np.ones(2)) * 2.0 + x)
>>> y.inputs[0].op.name, y.inputs[0].attrs["value"].tolist()
('constant', [2.0, 2.0])
"""

from __future__ import annotations

import numpy as np

from ..evaluate import run_node
from ..graph.tensor import Tensor
from ..graph.traversal import topological_order
from ..ops.indexing import records as indexing
from ..ops.layout import band
from ..ops.layout import records as layout
from ..ops.reductions import records as reductions
from ..ops.sources import CONSTANT, PLACEHOLDER, constant

# inputs an op reads only for their shape (gradient helpers' ``like``): a constant node
# is still constant when these are not
SHAPE_ONLY = {layout.reshape_like: {1}, layout.broadcast_like: {1}, indexing.getitem_grad: {1},
              reductions.unbroadcast: {1}, indexing.gather_grad: {2}, band.diag_fill: {1},
              layout.tile_grad: {1}}


def _shape_only(node, k: int) -> bool:
    if node.op is layout.concat_part:       # concat_part(g, *values): values give lengths
        return k >= 1
    return k in SHAPE_ONLY.get(node.op, ())


def fold_constants(root: Tensor, limit: int = 1 << 22) -> Tensor:
    """``root`` with every constant-only subgraph (up to ``limit`` entries) evaluated."""
    new: dict = {}
    for node in topological_order([root]):
        if node.op is CONSTANT or node.op is PLACEHOLDER:
            new[id(node)] = node
            continue
        inputs = [new[id(i)] for i in node.inputs]
        size = int(np.prod(node.shape, dtype=np.int64)) if None not in node.shape else -1
        if 0 <= size <= limit and all(i.op is CONSTANT or _shape_only(node, k)
                                      for k, i in enumerate(inputs)):
            value = run_node(node, [i.attrs["value"] if i.op is CONSTANT
                                    else np.zeros(i.shape, i.dtype) for i in inputs])
            new[id(node)] = constant(value, dtype=node.dtype, name=f"{node.name}_folded")
        elif all(a is b for a, b in zip(inputs, node.inputs)):
            new[id(node)] = node
        else:
            new[id(node)] = Tensor(node.op, tuple(inputs), node.attrs, node.shape, node.dtype,
                                   node.name)
    return new[id(root)]
