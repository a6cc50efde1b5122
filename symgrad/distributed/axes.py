"""Where the batch axis goes through one op: the rule table of the chunking analysis.

Each rule takes the node and, per input, the position of the batch axis in that input
(None when the input does not have it) and returns the batch axis of the output (an int),
None (the output has no batch axis and does not depend on the rows), or a ``Cut``: the
node combines the rows (a sum, mean, max, min, product or count over the batch axis) and
is computed per chunk, then combined across chunks. A node that needs every row at once
(a cumulative sum along the batch axis, a reshape that mixes it with other axes) raises
``Unchunkable`` with the reason. Rules are keyed by op record, never by name.

>>> import symgrad as sg
>>> x = sg.placeholder("x", shape=(None, 3))
>>> batch_axis_of(sg.transpose(x), [0]), batch_axis_of(sg.reduce_sum(x, axis=0), [0])
(1, Cut(kind='sum'))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

from ..batching import AXIS_ATTR, PER_AXIS, TRAILING_CORE, per_axis_entries

from ..graph.tensor import Tensor, describe
from ..ops.contraction import records as C
from ..ops.elementwise import records as E
from ..ops.indexing import records as I
from ..ops.layout import records as L
from ..ops.reductions import records as R
from ..ops.scans import records as SC


@dataclass(frozen=True)
class Cut:
    """The node combines rows; ``kind`` says how partial results from chunks combine."""

    kind: str          # 'sum', 'mean', 'max', 'min', 'prod', 'any', 'count'


class Unchunkable(Exception):
    """A node needs the whole batch axis at once (message: the reason, without the node)."""


Axis = Union[Optional[int], Cut]


def _norm(axes, rank: int) -> tuple:
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    return tuple(a % rank if rank else a for a in axes)


def _one(axes: list) -> int:
    found = {a for a in axes if a is not None}
    if len(found) != 1:
        raise Unchunkable("its inputs carry the batch axis at different positions")
    return found.pop()


def _elementwise(node: Tensor, axes: list) -> Axis:
    rank = len(node.shape)
    positions = {rank - len(i.shape) + a for i, a in zip(node.inputs, axes) if a is not None}
    if len(positions) != 1:
        raise Unchunkable("its inputs carry the batch axis at different positions")
    pos = positions.pop()
    for i, a in zip(node.inputs, axes):
        j = pos - (rank - len(i.shape))
        if a is None and j >= 0 and i.shape[j] != 1:
            raise Unchunkable(f"input {describe(i)} has length {i.shape[j]} along the batch "
                              "axis (only length 1 broadcasts over the rows)")
    return pos


def _reduce(node: Tensor, axes: list) -> Axis:
    bax = axes[0]
    reduced = _norm(node.attrs["axes"], len(node.inputs[0].shape))
    if bax in reduced:
        return Cut(AXIS_ATTR[node.op][1])
    return bax if node.attrs.get("keepdims") else bax - sum(1 for a in reduced if a < bax)


def _unbroadcast(node: Tensor, axes: list) -> Axis:
    g_axis, like_axis = axes[-2], axes[-1]
    g, like = node.inputs[-2], node.inputs[-1]
    kind = "any" if node.op is R.unbroadcast_any else "sum"
    if g_axis is None and node.op is R.unbroadcast_any and axes[0] is not None:
        g_axis = len(g.shape) - len(node.inputs[0].shape) + axes[0]
    if g_axis is None:
        if like_axis is not None:
            raise Unchunkable("it un-broadcasts a row-independent value to batch rows")
        return None
    if like_axis is None:
        return Cut(kind)
    if g_axis - (len(g.shape) - len(like.shape)) != like_axis:
        raise Unchunkable("its inputs carry the batch axis at different positions")
    return like_axis


def _axis_size(node: Tensor, axes: list) -> Axis:
    counted = _norm(node.attrs["axes"], len(node.inputs[0].shape))
    return Cut("count") if axes[0] in counted else None


def _matmul(node: Tensor, axes: list) -> Axis:
    a, b = node.inputs
    ra, rb, rank = len(a.shape), len(b.shape), len(node.shape)
    xa, xb = axes
    if xa is not None and xa == ra - 1 or xb is not None and xb == max(rb - 2, 0):
        if xa == ra - 1 and xb == max(rb - 2, 0):
            return Cut("sum")           # the batch axis is the contracted axis
        raise Unchunkable("it contracts the batch axis with a fixed-length axis")
    out = set()
    if xa is not None:
        out.add(rank - 1 - (rb > 1) if xa == ra - 2 else rank - ra + xa)
    if xb is not None:
        out.add(rank - 1 if xb == rb - 1 else rank - rb + xb)
    if len(out) != 1:
        raise Unchunkable("its inputs carry the batch axis at different positions")
    return out.pop()


def _transpose(node: Tensor, axes: list) -> Axis:
    perm = node.attrs.get("perm") or tuple(reversed(range(len(node.shape))))
    return tuple(p % len(node.shape) for p in perm).index(axes[0])


def _rows_kept(x: Tensor, out: Tensor, bax: Optional[int]) -> bool:
    """A reshape keeps the rows when the batch axis leads both shapes and the other axes
    hold the same known number of elements."""
    rest_in, rest_out = x.shape[1:], out.shape[1:]
    if bax != 0 or not out.shape or out.shape[0] is not None:
        return False
    if None in rest_in or None in rest_out:
        return False
    size = lambda s: int(__import__("math").prod(s))  # noqa: E731
    return size(rest_in) == size(rest_out)


def _reshape(node: Tensor, axes: list) -> Axis:
    if not _rows_kept(node.inputs[0], node, axes[0]):
        raise Unchunkable("it reshapes the batch axis together with other axes")
    if len(axes) > 1 and axes[1] not in (None, 0):
        raise Unchunkable("its target shape carries the batch axis elsewhere")
    return 0


def _expand_dims(node: Tensor, axes: list) -> Axis:
    new = _norm(node.attrs["axes"], len(node.shape))
    kept = [k for k in range(len(node.shape)) if k not in new]
    return kept[axes[0]]


def _squeeze(node: Tensor, axes: list) -> Axis:
    removed = _norm(node.attrs["axes"], len(node.inputs[0].shape))
    if axes[0] in removed:
        raise Unchunkable("it squeezes the batch axis away")
    return axes[0] - sum(1 for a in removed if a < axes[0])


def _broadcast_like(node: Tensor, axes: list) -> Axis:
    x, like = node.inputs
    if axes[1] is None:
        raise Unchunkable("it broadcasts batch rows to a row-independent shape")
    if axes[0] is not None and len(like.shape) - len(x.shape) + axes[0] != axes[1]:
        raise Unchunkable("its inputs carry the batch axis at different positions")
    return axes[1]


def _broadcast_to(node: Tensor, axes: list) -> Axis:
    pos = len(node.shape) - len(node.inputs[0].shape) + axes[0]
    if node.shape[pos] is not None:
        raise Unchunkable("it broadcasts the batch axis to a fixed length")
    return pos


def _leading(node: Tensor, axes: list) -> Axis:
    """An op of ``batching.TRAILING_CORE``: the rows' axis passes when it is a leading axis,
    outside the ``core`` trailing axes the op acts on."""
    core = TRAILING_CORE[node.op]
    if axes[0] >= len(node.inputs[0].shape) - core:
        raise Unchunkable(f"{node.op.name} acts on its last {core} axes, the batch axis "
                          "among them")
    return axes[0]


def _per_axis(node: Tensor, axes: list) -> Axis:
    """An op of ``batching.PER_AXIS`` (pad, tile): the rows pass where their entry is the
    neutral one (no padding, one copy)."""
    attr, neutral = PER_AXIS[node.op]
    if per_axis_entries(node)[axes[0]] != neutral:
        raise Unchunkable(f"its {attr} change the batch axis")
    return axes[0]


def getitem_axis(shape: tuple, key: tuple, bax: int) -> int:
    """The output position of input axis ``bax`` under basic indexing ``key``."""
    n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
    dim = out = 0
    for k in key:
        if k is None:
            out += 1
            continue
        if k is Ellipsis:
            fill = len(shape) - n_real
            if dim <= bax < dim + fill:
                return out + bax - dim
            dim, out = dim + fill, out + fill
            continue
        if dim == bax:
            if isinstance(k, slice) and k == slice(None):
                return out
            raise Unchunkable("it indexes along the batch axis (only ':' keeps the rows)")
        if not isinstance(k, (slice, int)):
            raise Unchunkable("it indexes with an array")
        out += isinstance(k, slice)
        dim += 1
    return out + bax - dim


def _getitem(node: Tensor, axes: list) -> Axis:
    return getitem_axis(node.inputs[0].shape, tuple(node.attrs["key"]), axes[0])


def _getitem_grad(node: Tensor, axes: list) -> Axis:
    g_axis, like_axis = axes[0], axes[1]
    if like_axis is None:
        raise Unchunkable("it scatters batch rows into a row-independent buffer")
    if g_axis != getitem_axis(node.inputs[1].shape, tuple(node.attrs["key"]), like_axis):
        raise Unchunkable("its inputs carry the batch axis at different positions")
    return like_axis


def _along_axis(node: Tensor, axes: list) -> Axis:
    """Ops that work along ``axis``/``axes`` and keep the rank (scans, concat, reverse)."""
    bax = _one(axes) if len(axes) > 1 else axes[0]
    if any(a is None for a in axes):
        raise Unchunkable("it joins batch rows with a row-independent value")
    along = node.attrs.get("axes", node.attrs.get("axis"))
    rank = len(node.inputs[0].shape)
    if bax in _norm(along, rank):
        raise Unchunkable(f"it works along the batch axis ({node.op.name} along axis {bax} "
                          "needs every row at once)")
    return bax


def _stack(node: Tensor, axes: list) -> Axis:
    if any(a is None for a in axes):
        raise Unchunkable("it stacks batch rows with a row-independent value")
    bax = _one(axes)
    axis = node.attrs["axis"] % len(node.shape)
    return bax + 1 if axis <= bax else bax


def _unstack(node: Tensor, axes: list) -> Axis:
    axis = node.attrs["axis"] % len(node.inputs[0].shape)
    if axis == axes[0]:
        raise Unchunkable("it takes one row of the batch axis")
    return axes[0] - 1 if axis < axes[0] else axes[0]


def _gather(node: Tensor, axes: list) -> Axis:
    """An embedding lookup: rows of indices pick entries of a row-independent table."""
    params, indices = node.inputs
    axis = node.attrs["axis"] % len(params.shape)
    if axes[0] is not None:
        raise Unchunkable("it gathers from a batch tensor (rows picked by position)")
    return axis + axes[1]


def _gather_grad(node: Tensor, axes: list) -> Axis:
    if axes[2] is not None:
        raise Unchunkable("it scatters into a batch tensor (rows picked by position)")
    return Cut("sum")                 # scatter-adds of the chunks into the table add up


RULES: dict = {
    R.unbroadcast: _unbroadcast, R.unbroadcast_any: _unbroadcast,
    R.axis_size: _axis_size, C.matmul: _matmul, L.transpose: _transpose,
    L.reshape: _reshape, L.reshape_like: _reshape, L.expand_dims: _expand_dims,
    L.broadcast_like: _broadcast_like, I.getitem: _getitem,
    I.getitem_grad: _getitem_grad,
    L.squeeze: _squeeze, L.broadcast_to: _broadcast_to, L.concat: _along_axis,
    L.stack: _stack, L.unstack: _unstack, L.concat_part: _along_axis,
    I.gather: _gather, I.gather_grad: _gather_grad,
    # one table with batching.BATCH_RULES for these families:
    **{op: _reduce if kind else _along_axis for op, (_, kind) in AXIS_ATTR.items()},
    **{op: _leading for op in TRAILING_CORE}, **{op: _per_axis for op in PER_AXIS},
}

# ones_like / zeros_like read only the shape of their input
SHAPE_ONLY = (E.ones_like, E.zeros_like)


def batch_axis_of(node: Tensor, axes: list) -> Axis:
    """The batch axis of ``node`` given its inputs' (see the module docstring)."""
    if all(a is None for a in axes):
        return None
    if node.op.kind == "elementwise":
        return _elementwise(node, axes)
    rule = RULES.get(node.op)
    if rule is None:
        raise Unchunkable(f"op '{node.op.name}' has no chunking rule for batch inputs")
    return rule(node, axes)
