"""``sg.sparsity`` rules of the assembly records (``symgrad/ops/assembly``), added to the
table of ``rules.py``. Exact when the ids/indices are constants (each data entry flows into
the one output entry its id names; a dropped id into none), conservative otherwise.

>>> import numpy as np, symgrad as sg
>>> x = sg.placeholder("x", shape=(3,))
>>> sg.sparsity(sg.unsorted_segment_sum(x, [1, -1, 1], 2), x).toarray()
array([[False, False, False],
       [ True, False,  True]])
"""

from __future__ import annotations

import numpy as np

from ..ops.assembly import forward as fw
from ..ops.assembly import records as A
from ..ops.sources import CONSTANT
from . import rules as R

__all__ = ["register"]


def _constant(t):
    return np.asarray(t.attrs["value"]) if t.op is CONSTANT else None


def _segment_into(node, out_ids):
    """Each data entry's output entry: ``out_ids[ids]`` (-1 for a dropped id)."""
    ids = _constant(node.inputs[1])
    if ids is None:
        return None
    ids = ids.astype(np.int64)
    n = out_ids.shape[0]
    ids = np.where(ids >= n, -1, ids)    # out of range: an error when it runs; no entry here
    into = np.take(out_ids, np.where(ids < 0, 0, ids), axis=0) if n else np.full(
        ids.shape + out_ids.shape[1:], -1, np.int64)
    mask = (ids >= 0).reshape(ids.shape + (1,) * (out_ids.ndim - 1))
    return np.where(mask, into, -1)


def _scatter_into(node, out_ids):
    """scatter_nd / tensor_scatter_nd_add: each update's output entry."""
    indices = _constant(node.inputs[-2])
    if indices is None:
        return None
    return fw.gather_nd(np, out_ids, indices.astype(np.int64))


def _tensor_add_rule(node, pats: list, n: int):
    """The tensor's own entries plus the updates summed into them."""
    added = R.sums(_scatter_into, data=2)(node, pats, n)   # conservative: fed indices
    return R.union([pats[0], added], R.size_of(node.shape), n)


def register() -> None:
    for op in A.SEGMENT_REDUCTIONS.values():
        R.RULES[op] = R.sums(_segment_into)
    R.RULES[A.segment_sum] = R.sums(_segment_into)
    R.RULES[A.segment_gather] = R.moves(values=(1,))
    R.RULES[A.gather_nd] = R.moves(values=(1,))
    R.RULES[A.scatter_nd] = R.sums(_scatter_into, data=1)
    R.RULES[A.tensor_scatter_nd_add] = _tensor_add_rule
    R.RULES[A.tensor_scatter_nd_update] = R.moves(data=(0, 2), values=(1,))


register()
