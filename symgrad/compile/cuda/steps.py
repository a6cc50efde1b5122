"""The structural steps of a cuda plan, on the device: one form per op record.

Every structural op (``kind == "structural"`` in ``symgrad/ops``) has a form here,
``form(ctx, node, *args) -> array``, written against the array API that numpy and CuPy
share. ``ctx.xp`` is CuPy on a GPU (cuBLAS matmul/einsum/tensordot, CuPy's scans,
reductions, indexing and memory pool) and numpy under the CUDA simulator, where numpy
stands in for CuPy so that CI runs every step. A form never calls numpy on its
arguments, never converts them to Python values and never creates an array from host
data (``xp.full``, ``xp.arange``, ``xp.eye`` are generated on the device), so a step
moves nothing between host and device.

Index checks that depend on values (gather's ``[0, n)`` rule) cannot raise without
reading the indices back: a form records a device flag with ``ctx.check`` and the
driver reads all flags in one transfer when the results are returned, raising the CPU
target's own error then (see ``cuda_runtime``).

>>> import numpy as np
>>> L.transpose in FORMS and C.matmul in FORMS
True
>>> ctx = StepContext(np)
>>> run_step(ctx, _Node(L.transpose, {"perm": (1, 0)}, "float64"), np.ones((2, 3))).shape
(3, 2)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy

from ...custom_op import CUSTOM_GRADIENT
from ...ops.contraction import records as C
from ...ops.elementwise import records as E
from ...ops.indexing import records as I
from ...ops.indexing.records import checked_indices
from ...ops.layout import band as B
from ...ops.linalg import records as LA
from ...ops.layout import records as L
from ...ops.layout.records import split_bounds
from ...ops.reductions import records as R
from ...ops.scans import records as Q
from ...control import records as LOOPS

__all__ = ["FORMS", "LIBRARY_CALLS", "StepContext", "run_step", "missing_forms"]


@dataclass
class StepContext:
    """What a form runs with: the array module and the deferred value checks of a call."""

    xp: Any
    download: Callable = numpy.asarray           # device -> host, for error messages only
    checks: list = field(default_factory=list)    # (device flag, raise_error(download))

    def check(self, bad, raise_error: Callable[[Callable], None]) -> None:
        """Record a device flag; when it is true the driver calls ``raise_error(download)``
        (``download``: device array -> numpy, counted as a 'check' transfer)."""
        self.checks.append((bad, raise_error))

    def scatter_add(self, out, index, values) -> None:
        """``out[index] += values`` with repeated indices accumulated (np.add.at)."""
        at = getattr(self.xp.add, "at", None)
        if at is not None:
            at(out, index, values)
        else:   # CuPy before ufunc.at
            import cupyx
            cupyx.scatter_add(out, index, values)


@dataclass
class _Node:
    """A stand-in for an LNode in doctests: op, attrs, dtype."""

    op: Any
    attrs: dict
    dtype: Any
    inputs: tuple = ()


def run_step(ctx: StepContext, node, *args):
    """One step on the device: its form, then the node's dtype (as ``run_node`` does)."""
    value = FORMS[node.op](ctx, node, *args)
    dtype = numpy.dtype(node.dtype)
    return value if value.dtype == dtype else value.astype(dtype)


def missing_forms() -> list:
    """Registered structural ops without a device form (tests assert there are none)."""
    from ...ops.registry import REGISTRY
    return [op.name for op in REGISTRY.values() if op.kind == "structural" and op not in FORMS]


# --- helpers -------------------------------------------------------------------------------

def _attr(fn):
    """A form from ``fn(xp, *args, **attrs)``: the op's numpy forward written for ``xp``."""
    return lambda ctx, node, *args: ctx.xp.asarray(fn(ctx.xp, *args, **node.attrs))


def _indices(ctx, indices, n: int, wrap: bool, op: str, axis: int):
    """Indices as int64 on the device, out-of-range entries replaced by 0 and recorded as a
    deferred check that raises ``checked_indices``'s error."""
    xp = ctx.xp
    idx = indices.astype(xp.int64)
    low = -n if wrap else 0
    bad = (idx < low) | (idx >= n)

    def raise_error(download: Callable) -> None:
        checked_indices(download(indices), n, wrap, op, axis)

    if n == 0 and idx.size:
        raise_error(ctx.download)
    ctx.check(bad.any(), raise_error)
    idx = xp.where(bad, 0, idx)
    return xp.where(idx < 0, idx + n, idx) if wrap else idx


def _axis_first(xp, x, axis, reverse):
    moved = xp.moveaxis(x, axis, 0)
    return moved[::-1] if reverse else moved


def _axis_back(xp, moved, axis, reverse):
    return xp.moveaxis(moved[::-1] if reverse else moved, 0, axis)


def _unbroadcast(xp, g, like_shape, reduce):
    lead = g.ndim - len(like_shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, d in enumerate(like_shape) if d == 1 and g.shape[lead + i] != 1)
    out = reduce(g, axis=axes, keepdims=True) if axes else g
    return xp.array(out.reshape(like_shape))


# --- forms ---------------------------------------------------------------------------------

def _matmul(ctx, node, a, b):
    return ctx.xp.matmul(a, b)


def _einsum(ctx, node, *operands):
    return ctx.xp.einsum(node.attrs["subscripts"], *operands)


def _einsum_mask(ctx, node, like):
    xp = ctx.xp
    mask = xp.ones(like.shape, dtype=like.dtype)
    first: dict = {}
    for axis, c in enumerate(node.attrs["subscripts"]):
        if c in first:
            n = mask.shape[axis]
            shape = [1] * mask.ndim
            shape[first[c]], shape[axis] = n, n
            mask = mask * xp.eye(n, dtype=mask.dtype).reshape(shape)
        else:
            first[c] = axis
    return mask


def _tensordot(ctx, node, a, b):
    axes = node.attrs["axes"]
    return ctx.xp.tensordot(a, b, axes=(list(axes[0]), list(axes[1])))


def _gather(ctx, node, params, indices):
    axis, wrap = node.attrs["axis"], node.attrs["wrap"]
    idx = _indices(ctx, indices, params.shape[axis], wrap, "getitem" if wrap else "gather",
                   axis)
    return ctx.xp.take(params, idx, axis=axis)


def _gather_grad(ctx, node, g, indices, like):
    xp, axis = ctx.xp, node.attrs["axis"]
    n = like.shape[axis]
    idx = _indices(ctx, indices, n, node.attrs["wrap"], "gather gradient", axis)
    out = xp.zeros(like.shape, dtype=g.dtype)
    moved = xp.moveaxis(out, axis, 0)
    rank = idx.ndim
    gm = xp.moveaxis(g, tuple(range(axis, axis + rank)), tuple(range(rank)))
    ctx.scatter_add(moved, idx, gm)
    return out


def _arg(name: str):
    def form(ctx, node, x):
        axis = node.attrs["axis"]
        if x.shape[axis] == 0:
            from ...errors import ShapeError
            raise ShapeError(f"{name}: axis {axis} has length 0")
        return getattr(ctx.xp, name)(x, axis=axis).astype(ctx.xp.int64)
    return form


def _one_hot(ctx, node, indices):
    xp = ctx.xp
    return (indices[..., None] == xp.arange(node.attrs["depth"])).astype(node.attrs["dtype"])


def _scan(name: str, identity):
    def form(ctx, node, x):
        xp, a = ctx.xp, node.attrs
        moved = _axis_first(xp, x, a["axis"], a["reverse"])
        out = getattr(xp, name)(moved, axis=0)
        if a["exclusive"]:
            out = xp.concatenate([xp.full_like(out[:1], identity), out[:-1]], axis=0)
        return _axis_back(xp, out, a["axis"], a["reverse"]).astype(x.dtype, copy=False)
    return form


def _shift(ctx, node, x):
    xp, axis, step = ctx.xp, node.attrs["axis"], node.attrs["step"]
    moved = xp.moveaxis(x, axis, 0)
    out = xp.zeros_like(moved)
    if step > 0:
        out[step:] = moved[:-step]
    else:
        out[:step] = moved[-step:]
    return xp.moveaxis(out, 0, axis)


def _linrec(ctx, node, a, b):
    xp, axis, reverse = ctx.xp, node.attrs["axis"], node.attrs["reverse"]
    a_m = _axis_first(xp, xp.broadcast_to(a, b.shape), axis, reverse)
    b_m = _axis_first(xp, b, axis, reverse)
    out = xp.empty(b_m.shape, xp.result_type(a_m, b_m))
    carry = xp.zeros(b_m.shape[1:], out.dtype)
    for i in range(b_m.shape[0]):   # one small launch per position: a device loop, no sync
        carry = b_m[i] + a_m[i] * carry
        out[i] = carry
    return _axis_back(xp, out, axis, reverse)


def _reduce(name: str):
    def form(ctx, node, x):
        a = node.attrs
        return getattr(ctx.xp, name)(x, axis=a["axes"], keepdims=a["keepdims"])
    return form


def _extremum(name: str):
    def form(ctx, node, x):
        if x.size == 0:
            raise ValueError(f"cannot take the {name} of an empty array")
        a = node.attrs
        return getattr(ctx.xp, name)(x, axis=a["axes"], keepdims=a["keepdims"])
    return form


def _axis_size(ctx, node, x):
    axes = node.attrs["axes"]
    n = 1
    for a in axes:
        n *= x.shape[a]
    return ctx.xp.full((), n, dtype=node.attrs["dtype"])   # from shapes: no upload


def _prod_others(ctx, node, x):
    xp, axes = ctx.xp, node.attrs["axes"]
    moved = xp.moveaxis(x, axes, tuple(range(-len(axes), 0))) if axes else x[..., None]
    flat = moved.reshape(moved.shape[:moved.ndim - max(len(axes), 1)] + (-1,))
    ones = xp.ones(flat.shape[:-1] + (1,), flat.dtype)
    left = xp.cumprod(xp.concatenate([ones, flat[..., :-1]], axis=-1), axis=-1)
    right = xp.cumprod(xp.concatenate([ones, flat[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    others = (left * right).reshape(moved.shape)
    return xp.moveaxis(others, tuple(range(-len(axes), 0)), axes) if axes else others[..., 0]


def _scatter(ctx, node, g, like):
    out = ctx.xp.zeros(like.shape, dtype=g.dtype)
    out[node.attrs["key"]] = g
    return out


def _diag(ctx, node, v):
    xp, n = ctx.xp, v.shape[-1]
    out = xp.zeros(v.shape + (n,), v.dtype)
    idx = xp.arange(n)
    out[..., idx, idx] = v
    return out


def _diag_fill(ctx, node, g, like):
    xp = ctx.xp
    out = xp.zeros(like.shape, g.dtype)
    idx = xp.arange(min(out.shape[-2:]))
    out[..., idx, idx] = g
    return out


def _take_range(xp, x, start: int, stop: int, axis: int):
    index = [slice(None)] * x.ndim
    index[axis] = slice(start, stop)
    return xp.array(x[tuple(index)])


def _concat_part(ctx, node, g, *values):
    axis, index = node.attrs["axis"], node.attrs["index"]
    start = sum(v.shape[axis] for v in values[:index])
    return _take_range(ctx.xp, g, start, start + values[index].shape[axis], axis)


def _split(ctx, node, x):
    a = node.attrs
    start, stop = split_bounds(x.shape[a["axis"]], a["num"], a["sizes"])[a["index"]]
    return _take_range(ctx.xp, x, start, stop, a["axis"])


def _tile_grad(ctx, node, g, like):
    dims, multiples = like.shape, node.attrs["multiples"]
    split_shape = [n for m, d in zip(multiples, dims) for n in (m, d)]
    return ctx.xp.sum(g.reshape(split_shape), axis=tuple(range(0, 2 * len(dims), 2)))


def _linalg(ctx, node, fn, args):
    """A linear-algebra record's forward on ``ctx.xp`` (cuSOLVER through CuPy on a GPU;
    numpy under the simulator). CuPy reports a matrix it cannot factor only under
    ``cupyx.errstate(linalg="raise")`` (one device sync per factorization); its
    ``numpy.linalg.LinAlgError`` becomes the host's ``sg.LinAlgError`` in the forward."""
    xp = ctx.xp
    if xp is numpy:
        return xp.asarray(fn(xp, *args, **node.attrs))
    import cupyx
    with cupyx.errstate(linalg="raise"):
        return xp.asarray(fn(xp, *args, **node.attrs))


def _on_host(ctx, node, *args):
    """Loops and branches (sg.scan, while_loop, cond) on the device target: the values go to
    the host, the loop runs there with the numpy reference body, the result comes back."""
    host = [numpy.asarray(ctx.download(a)) for a in args]
    with numpy.errstate(all="ignore"):
        value = node.op.numpy(*host, **node.attrs)
    return ctx.xp.asarray(numpy.asarray(value, dtype=node.dtype))


FORMS: dict = {
    LOOPS.SCAN: _on_host,
    LOOPS.WHILE: _on_host,
    LOOPS.COND: _on_host,
    C.matmul: _matmul,
    C.einsum: _einsum,
    C.einsum_mask: _einsum_mask,
    C.tensordot: _tensordot,
    I.gather: _gather,
    I.gather_grad: _gather_grad,
    I.argmax: _arg("argmax"),
    I.argmin: _arg("argmin"),
    I.one_hot: _one_hot,
    Q.cumsum: _scan("cumsum", 0),
    Q.cumprod: _scan("cumprod", 1),
    Q.shift: _shift,
    Q.linrec: _linrec,
    R.reduce_sum: _reduce("sum"),
    R.reduce_mean: _reduce("mean"),
    R.reduce_prod: _reduce("prod"),
    R.reduce_max: _extremum("max"),
    R.reduce_min: _extremum("min"),
    R.reduce_all: _reduce("all"),
    R.reduce_any: _reduce("any"),
    L.transpose: _attr(lambda xp, x, perm: xp.transpose(x, perm)),
    L.reshape: _attr(lambda xp, x, shape: xp.reshape(x, shape)),
    L.reshape_like: lambda ctx, node, x, like: ctx.xp.reshape(x, like.shape),
    L.expand_dims: _attr(lambda xp, x, axes: xp.expand_dims(x, axes)),
    L.broadcast_like: lambda ctx, node, x, like: ctx.xp.array(
        ctx.xp.broadcast_to(x, like.shape)),
    R.unbroadcast: lambda ctx, node, g, like: _unbroadcast(ctx.xp, g, like.shape, ctx.xp.sum),
    R.unbroadcast_any: lambda ctx, node, mask, g, like: _unbroadcast(
        ctx.xp, ctx.xp.broadcast_to(mask, g.shape), like.shape, ctx.xp.any),
    I.getitem: _attr(lambda xp, x, key: xp.array(x[key])),
    I.getitem_grad: _scatter,
    E.cast: _attr(lambda xp, x, dtype: x.astype(dtype)),
    R.axis_size: _axis_size,
    R.prod_others: _prod_others,
    B.tril: _attr(lambda xp, x, k: xp.tril(x, k)),
    B.triu: _attr(lambda xp, x, k: xp.triu(x, k)),
    B.diag: _diag,
    B.diag_part: lambda ctx, node, x: ctx.xp.array(ctx.xp.diagonal(x, 0, -2, -1)),
    B.diag_fill: _diag_fill,
    B.trace: lambda ctx, node, x: ctx.xp.asarray(ctx.xp.trace(x, axis1=-2, axis2=-1)),
    L.concat: lambda ctx, node, *values: ctx.xp.concatenate(values, axis=node.attrs["axis"]),
    L.concat_part: _concat_part,
    L.stack: lambda ctx, node, *values: ctx.xp.stack(values, axis=node.attrs["axis"]),
    L.unstack: lambda ctx, node, x: ctx.xp.array(
        ctx.xp.take(x, node.attrs["index"], axis=node.attrs["axis"])),
    L.split: _split,
    L.squeeze: _attr(lambda xp, x, axes: xp.squeeze(x, axis=axes)),
    L.broadcast_to: _attr(lambda xp, x, shape: xp.array(xp.broadcast_to(x, shape))),
    L.tile: _attr(lambda xp, x, multiples: xp.tile(x, multiples)),
    L.tile_grad: _tile_grad,
    L.pad: _attr(lambda xp, x, paddings, constant_values: xp.pad(
        x, paddings, constant_values=constant_values)),
    L.reverse: _attr(lambda xp, x, axes: xp.flip(x, axes)),
    L.roll: _attr(lambda xp, x, shifts, axes: xp.roll(x, shifts, axes)),
    CUSTOM_GRADIENT: lambda ctx, node, y, *xs: ctx.xp.array(y, copy=True),
    **{op: (lambda fn: lambda ctx, node, *args: _linalg(ctx, node, fn, args))(fn)
       for op, fn in LA.DEVICE_FORWARDS.items()},
}
"""Device form of every structural op, keyed by its record."""

from .assembly_steps import ASSEMBLY_FORMS  # noqa: E402  (segment reductions, scatters)

FORMS.update(ASSEMBLY_FORMS)
from .sorting_steps import SORTING_FORMS  # noqa: E402  (sort, argsort, top_k, searchsorted)

FORMS.update(SORTING_FORMS)
from ...ops.linalg import decompositions_v5 as LA5  # noqa: E402  (svd, expm, lu)

FORMS.update({op: (lambda fn: lambda ctx, node, *args: _linalg(ctx, node, fn, args))(fn)
              for op, fn in LA5.DEVICE_FORWARDS.items()})

LIBRARY_CALLS = frozenset({C.matmul, C.einsum, C.tensordot})
"""Forms that are one library call (cuBLAS through CuPy on a GPU)."""
