"""Device forms of the assembly records (``symgrad/ops/assembly``): the records' own
``xp``-generic forwards (``ops/assembly/forward.py``) run with CuPy (numpy under the CUDA
simulator), scatters as ``ufunc.at`` (atomics). Index checks are deferred device flags
(``ctx.check``): a bad id is replaced by a harmless one (dropped, or row 0) so nothing is
written outside the output, and the driver raises the CPU target's error when it reads the
flags. ``segment_sum`` with ids that are not a constant reads one number back (its last
id: the output's length).

>>> import numpy as np
>>> from symgrad.ops.assembly import records as A
>>> A.unsorted_segment_sum in ASSEMBLY_FORMS
True
"""

from __future__ import annotations

from typing import Callable

from ...ops.assembly import checks
from ...ops.assembly import forward as fw
from ...ops.assembly import records as A

__all__ = ["ASSEMBLY_FORMS"]


def _segment_ids(ctx, ids, n: int, op: str):
    """ids as int64 on the device; ids ``>= n`` flagged and dropped (set to -1)."""
    xp = ctx.xp
    idx = ids.astype(xp.int64)
    bad = idx >= n

    def raise_error(download: Callable) -> None:
        checks.check_segment_ids(op, download(ids), n)

    ctx.check(bad.any(), raise_error)
    return xp.where(bad, -1, idx)


def _nd_indices(ctx, indices, shape: tuple, op: str):
    """indices as int64; rows with an entry outside ``shape`` flagged and sent to row 0."""
    xp = ctx.xp
    idx = indices.astype(xp.int64)
    k = idx.shape[-1]
    limits = xp.asarray(list(shape[:k]), dtype=xp.int64) if k else xp.zeros(0, xp.int64)
    bad = ((idx < 0) | (idx >= limits)).any(axis=-1)

    def raise_error(download: Callable) -> None:
        checks.check_nd_indices(op, download(indices), shape)

    ctx.check(bad.any(), raise_error)
    return xp.where(bad[..., None], 0, idx)


def _reduction(kind: str):
    def form(ctx, node, data, ids):
        n = node.attrs["num_segments"]
        idx = _segment_ids(ctx, ids, n, node.op.name)
        return fw.segment_reduce(ctx.xp, data, idx, n, kind)
    return form


def _segment_gather(ctx, node, g, ids):
    idx = _segment_ids(ctx, ids, node.attrs["num_segments"], "unsorted segment gradient")
    return fw.segment_gather(ctx.xp, g, idx)


def _segment_sum(ctx, node, data, ids):
    xp = ctx.xp
    idx = ids.astype(xp.int64)
    if idx.shape[0] > 1:
        bad = (idx < 0).any() | (idx[1:] < idx[:-1]).any()
    else:
        bad = (idx < 0).any()

    def raise_error(download: Callable) -> None:
        checks.check_sorted_ids("segment_sum", download(ids))

    ctx.check(bad, raise_error)
    static = getattr(node, "shape", (None,))[0]
    if isinstance(static, int):
        n = static
    else:   # the output's length is the last id + 1: one number read back
        n = int(ctx.download(idx[-1:])[0]) + 1 if idx.shape[0] else 0
    idx = xp.where((idx < 0) | (idx >= n), -1, idx)
    return fw.segment_reduce(xp, data, idx, max(n, 0), "sum")


def _gather_nd(ctx, node, params, indices):
    idx = _nd_indices(ctx, indices, tuple(params.shape), "gather_nd")
    return fw.gather_nd(ctx.xp, params, idx)


def _scatter_nd(ctx, node, indices, updates):
    shape = node.attrs["shape"]
    idx = _nd_indices(ctx, indices, shape, "scatter_nd")
    zeros = ctx.xp.zeros(shape, dtype=updates.dtype)
    return fw.scatter_nd_add(ctx.xp, zeros, idx, updates)


def _tensor_add(ctx, node, tensor, indices, updates):
    idx = _nd_indices(ctx, indices, tuple(tensor.shape), "tensor_scatter_nd_add")
    return fw.scatter_nd_add(ctx.xp, tensor, idx, updates)


def _tensor_update(ctx, node, tensor, indices, updates):
    idx = _nd_indices(ctx, indices, tuple(tensor.shape), "tensor_scatter_nd_update")
    return fw.scatter_nd_update(ctx.xp, tensor, idx, updates)


ASSEMBLY_FORMS: dict = {op: _reduction(kind) for kind, op in A.SEGMENT_REDUCTIONS.items()}
ASSEMBLY_FORMS.update({
    A.segment_gather: _segment_gather,
    A.segment_sum: _segment_sum,
    A.gather_nd: _gather_nd,
    A.scatter_nd: _scatter_nd,
    A.tensor_scatter_nd_add: _tensor_add,
    A.tensor_scatter_nd_update: _tensor_update,
})
"""Device form of every assembly record."""
