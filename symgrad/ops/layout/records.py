"""Layout op records: transpose, reshape, expand_dims, concat, stack, unstack, split,
squeeze, broadcast_to, tile, pad, reverse and roll (the public wrappers are in ``api.py``;
the matrix band ops in ``band.py``).

Each record has a shape rule with None dims, a numpy forward, and a vjp written with
symgrad ops (graph and tape, any order) that is TF's ``array_grad.py`` rule. Ops that only
move entries (``passes_mask``) move a where-mask with their gradient. Attributes are
normalised by the wrappers: axes are non-negative and every argument is checked there.
"""

from __future__ import annotations

import numpy as np

from ...errors import ShapeError
from ...shapes import format_shape, reshape_shape
from ..functions import F
from ..opdef import Example, structural
from ..registry import apply


# --- layout -----------------------------------------------------------------------------------
def _transpose_infer(x, perm):
    return tuple(x.shape[p] for p in perm), x.dtype


transpose = structural(
    "transpose", lambda x, perm: np.transpose(x, perm), _transpose_infer,
    vjp=lambda g, out, x, perm: (F.transpose(g, tuple(int(i) for i in np.argsort(perm))),),
    passes_mask=True, symbolic_dims=True)
reshape = structural(
    "reshape", lambda x, shape: np.reshape(x, shape),
    lambda x, shape: (reshape_shape(x.shape, shape), x.dtype),
    vjp=lambda g, out, x, shape: (F.reshape_like(g, x),),
    passes_mask=True)
reshape_like = structural(
    "reshape_like", lambda x, like: np.reshape(x, np.shape(like)),
    lambda x, like: (like.shape, x.dtype),
    vjp=lambda g, out, x, like: (F.reshape_like(g, x), None), public=False,
    passes_mask=True, symbolic_dims=True)


def _expand_infer(x, axes):
    shape = list(x.shape)
    for a in sorted(axes):
        shape.insert(a, 1)
    return tuple(shape), x.dtype


expand_dims = structural(
    "expand_dims", lambda x, axes: np.expand_dims(x, axes), _expand_infer,
    vjp=lambda g, out, x, axes: (F.reshape_like(g, x),), passes_mask=True,
    examples=(Example(((2, 3),), {"axis": -1}, lambda a: a[..., None]),
              Example(((3,),), {"axis": 0}, lambda a: a[None])), symbolic_dims=True)
broadcast_like = structural(
    "broadcast_like", lambda x, like: np.array(np.broadcast_to(x, np.shape(like))),
    lambda x, like: (like.shape, x.dtype),
    vjp=lambda g, out, x, like: (F.unbroadcast(g, x), None), public=False, symbolic_dims=True)


def matrix_transpose_perm(ndim: int) -> tuple:
    """The perm that swaps the last two axes."""
    return tuple(range(ndim - 2)) + (ndim - 1, ndim - 2)


def merge_dims(dims, op: str, what: str):
    """The one known length among ``dims`` (None if all unknown); ShapeError if two differ."""
    known = {d for d in dims if d is not None}
    if len(known) > 1:
        raise ShapeError(f"{op}: {what} must have equal lengths, got {sorted(known)}")
    return known.pop() if known else None


def merge_shapes(tensors, op: str, skip_axis=None) -> list:
    ranks = {t.ndim for t in tensors}
    if len(ranks) > 1:
        shapes = ", ".join(f"'{t.name}' {format_shape(t.shape)}" for t in tensors)
        raise ShapeError(f"{op}: all inputs must have the same rank, got {shapes}")
    rank = ranks.pop()
    out = []
    for a in range(rank):
        dims = [t.shape[a] for t in tensors]
        if a == skip_axis:
            out.append(dims)
            continue
        try:
            out.append(merge_dims(dims, op, f"inputs' axis {a}"))
        except ShapeError:
            shapes = ", ".join(f"'{t.name}' {format_shape(t.shape)}" for t in tensors)
            raise ShapeError(f"{op}: dimension {a} of the inputs must be equal (except the "
                             f"{'concat' if skip_axis is not None else 'stack'} axis), got "
                             f"{shapes}") from None
    return out


# --- concat and its gradient's slices --------------------------------------------------------
def _concat_infer(*values, axis):
    dims = merge_shapes(values, "concat", skip_axis=axis)
    parts = dims[axis]
    dims[axis] = None if None in parts else sum(parts)
    return tuple(dims), np.result_type(*[v.dtype for v in values])


def _concat_vjp(g, out, *values, axis):  # TF's _ConcatGradHelper: slices of g
    return tuple(F.concat_part(g, values, axis, k) for k in range(len(values)))


concat = structural(
    "concat", lambda *values, axis: np.concatenate(values, axis=axis), _concat_infer,
    vjp=_concat_vjp, passes_mask=True,
    examples=(Example(((2, 1), (2, 3), (2, 2)), {"axis": -1},
                      lambda *a: np.concatenate(a, -1), listed=True),
              Example(((1, 3), (2, 3)), {"axis": 0}, lambda *a: np.concatenate(a, 0),
                      listed=True)))


def _part_numpy(g, *values, axis, index):
    start = sum(np.shape(v)[axis] for v in values[:index])
    stop = start + np.shape(values[index])[axis]
    return np.array(np.take(g, np.arange(start, stop), axis=axis))


def _part_infer(g, *values, axis, index):
    shape = list(g.shape)
    shape[axis] = values[index].shape[axis]
    return tuple(shape), g.dtype


def _part_vjp(gg, out, g, *values, axis, index):
    pieces = [gg if k == index else F.zeros_like(v) for k, v in enumerate(values)]
    return (F.concat(pieces, axis),) + (None,) * len(values)


# The slice of g (concat's gradient) that belongs to values[index]; values give the lengths.
concat_part = structural("concat_part", _part_numpy, _part_infer, vjp=_part_vjp,
                         public=False, passes_mask=True)


# --- stack, unstack, split -----------------------------------------------------------------
def _stack_infer(*values, axis):
    dims = merge_shapes(values, "stack")
    dims.insert(axis, len(values))
    return tuple(dims), np.result_type(*[v.dtype for v in values])


stack = structural(
    "stack", lambda *values, axis: np.stack(values, axis=axis), _stack_infer,
    vjp=lambda g, out, *values, axis: tuple(F.unstack(g, axis)), passes_mask=True,
    examples=(Example(((), (), ()), {"axis": 0}, lambda *a: np.stack(a), listed=True),
              Example(((2, 3), (2, 3)), {"axis": -1}, lambda *a: np.stack(a, -1),
                      listed=True)))


def _unstack_infer(x, axis, index):
    return x.shape[:axis] + x.shape[axis + 1:], x.dtype


def _unstack_vjp(g, out, x, axis, index):  # TF: stack of the pieces' grads, zeros for None
    key = (slice(None),) * axis + (index,)
    return (F.getitem_grad(g, x, key),)


# One piece of sg.unstack (which returns a list of these nodes, one per index).
unstack = structural(
    "unstack", lambda x, axis, index: np.array(np.take(x, index, axis=axis)), _unstack_infer,
    vjp=_unstack_vjp, passes_mask=True,
    examples=(Example(((3, 2),), {"axis": 0}, lambda a: list(a), unknown=((3, None),)),
              Example(((2, 3, 2),), {"axis": -2}, lambda a: list(np.moveaxis(a, -2, 0)),
                      unknown=((None, 3, None),))))


def split_bounds(n: int, num, sizes, op: str = "split") -> list:
    """(start, stop) of each piece of an axis of length n."""
    if sizes is None:
        if n % num:
            raise ShapeError(f"{op}: the axis length {n} is not divisible by "
                             f"num_or_size_splits={num}")
        sizes = [n // num] * num
    else:
        sizes = list(sizes)
        if -1 in sizes:
            sizes[sizes.index(-1)] = n - (sum(sizes) + 1)
        if sum(sizes) != n or min(sizes) < 0:
            raise ShapeError(f"{op}: size_splits {tuple(sizes)} do not sum to the axis "
                             f"length {n}")
    stops = np.cumsum(sizes)
    return [(int(stop - s), int(stop)) for s, stop in zip(sizes, stops)]


def _split_numpy(x, axis, num, sizes, index):
    start, stop = split_bounds(x.shape[axis], num, sizes)[index]
    return np.array(np.take(x, np.arange(start, stop), axis=axis))


def _split_infer(x, axis, num, sizes, index):
    shape = list(x.shape)
    n = shape[axis]
    if n is not None:
        start, stop = split_bounds(n, num, sizes)[index]
        shape[axis] = stop - start
    elif sizes is not None and sizes[index] != -1:
        shape[axis] = sizes[index]
    else:
        shape[axis] = None
    return tuple(shape), x.dtype


def _split_vjp(g, out, x, axis, num, sizes, index):  # TF: concat, zeros for other pieces
    count = num if sizes is None else len(sizes)
    pieces = [g if k == index else F.zeros_like(apply(split, (x,), {
        "axis": axis, "num": num, "sizes": sizes, "index": k})) for k in range(count)]
    return (F.concat(pieces, axis),)


# One piece of sg.split (a list of these nodes is returned).
split = structural(
    "split", _split_numpy, _split_infer, vjp=_split_vjp, passes_mask=True,
    examples=(Example(((6, 2),), {"num_or_size_splits": 3},
                      lambda a: np.split(a, 3)),
              Example(((2, 5),), {"num_or_size_splits": [1, -1, 2], "axis": -1},
                      lambda a: np.split(a, [1, 3], axis=-1))))


# --- squeeze, broadcast_to, tile ----------------------------------------------------------------
def _squeeze_infer(x, axes):
    return tuple(d for a, d in enumerate(x.shape) if a not in axes), x.dtype


squeeze = structural(
    "squeeze", lambda x, axes: np.squeeze(x, axis=axes), _squeeze_infer,
    vjp=lambda g, out, x, axes: (F.reshape_like(g, x),), passes_mask=True,
    examples=(Example(((1, 3, 1),), {}, lambda a: np.squeeze(a), unknown=((1, None, 1),)),
              Example(((2, 1, 3),), {"axis": -2}, lambda a: np.squeeze(a, -2))))


def _broadcast_to_infer(x, shape):
    lead = len(shape) - x.ndim
    ok = lead >= 0 and all(d is None or d == 1 or d == t
                           for d, t in zip(x.shape, shape[max(lead, 0):]))
    if not ok:
        raise ShapeError(f"broadcast_to: '{x.name}' of shape {format_shape(x.shape)} cannot "
                         f"be broadcast to shape {format_shape(shape)}")
    return shape, x.dtype


broadcast_to = structural(
    "broadcast_to", lambda x, shape: np.array(np.broadcast_to(x, shape)), _broadcast_to_infer,
    vjp=lambda g, out, x, shape: (F.unbroadcast(g, x),),
    examples=(Example(((3, 1),), {"shape": (2, 3, 4)},
                      lambda a: np.broadcast_to(a, (2, 3, 4))),))


def _tile_infer(x, multiples):
    return tuple(None if d is None else d * m for d, m in zip(x.shape, multiples)), x.dtype


tile = structural(
    "tile", lambda x, multiples: np.tile(x, multiples), _tile_infer,
    vjp=lambda g, out, x, multiples: (F.tile_grad(g, x, multiples),),
    examples=(Example(((2, 3),), {"multiples": (2, 3)}, lambda a: np.tile(a, (2, 3))),
              Example(((3,),), {"multiples": (1,)}, lambda a: np.tile(a, 1))))


def _tile_grad_numpy(g, like, multiples):
    dims = np.shape(like)
    split_shape = [n for m, d in zip(multiples, dims) for n in (m, d)]
    return np.sum(g.reshape(split_shape), axis=tuple(range(0, 2 * len(dims), 2)))


# TF's _TileGrad: g reshaped to (m0, d0, m1, d1, ...) and summed over the m axes.
tile_grad = structural(
    "tile_grad", _tile_grad_numpy, lambda g, like, multiples: (like.shape, g.dtype),
    vjp=lambda gg, out, g, like, multiples: (F.tile(gg, multiples), None), public=False)


# --- pad, reverse, roll -------------------------------------------------------------------------
def _pad_infer(x, paddings, constant_values):
    return tuple(None if d is None else d + lo + hi
                 for d, (lo, hi) in zip(x.shape, paddings)), x.dtype


def _pad_vjp(g, out, x, paddings, constant_values):  # TF: the slice of g inside the pads
    return (F.getitem(g, tuple(slice(lo, -hi if hi else None) for lo, hi in paddings)),)


pad = structural(
    "pad", lambda x, paddings, constant_values: np.pad(x, paddings,
                                                       constant_values=constant_values),
    _pad_infer, vjp=_pad_vjp, passes_mask=True,
    examples=(Example(((2, 3),), {"paddings": [[1, 2], [0, 1]]},
                      lambda a: np.pad(a, [[1, 2], [0, 1]])),
              Example(((3,),), {"paddings": [[2, 0]], "constant_values": 1.5},
                      lambda a: np.pad(a, [[2, 0]], constant_values=1.5))))
reverse = structural(
    "reverse", lambda x, axes: np.flip(x, axes), lambda x, axes: (x.shape, x.dtype),
    vjp=lambda g, out, x, axes: (F.reverse(g, axes),), passes_mask=True,
    examples=(Example(((3, 2),), {"axis": 0}, lambda a: a[::-1]),
              Example(((2, 3, 2),), {"axis": (-1, 0)}, lambda a: a[::-1, :, ::-1])))
roll = structural(
    "roll", lambda x, shifts, axes: np.roll(x, shifts, axes), lambda x, shifts, axes: (
        x.shape, x.dtype),
    vjp=lambda g, out, x, shifts, axes: (F.roll(g, tuple(-s for s in shifts), axes),),
    passes_mask=True,
    examples=(Example(((2, 3),), {"shift": [-1, 2], "axis": [0, 1]},
                      lambda a: np.roll(a, (-1, 2), (0, 1))),
              Example(((5,),), {"shift": 7, "axis": -1}, lambda a: np.roll(a, 7))))
