"""Structural op records: reductions, matmul, layout changes, slicing and cast.

Each record has a shape rule (``infer``), a numpy forward and a reverse rule (``vjp``)
written with symgrad's own ops, used by both ``sg.gradients`` and the tape.
The ops marked ``public=False`` exist for gradients (un-broadcast sums, scatters).
"""

from __future__ import annotations

import numpy as np

from ..dtypes import as_dtype, is_floating
from ..errors import ShapeError
from ..shapes import format_shape, reduced_shape, reshape_shape
from . import api as F
from .registry import Example, structural


def _reduce_infer(x, axes, keepdims):
    return reduced_shape(x.shape, axes, keepdims), x.dtype


def _sum_dtype_infer(x, axes, keepdims):
    dtype = np.sum(np.ones((1,), x.dtype)).dtype  # numpy: bool/int32 sums are int64
    return reduced_shape(x.shape, axes, keepdims), dtype


def _expand_like(g, x, axes, keepdims):
    """g of a reduction, broadcast back to the shape of its input x."""
    if not keepdims:
        g = F.expand_dims(g, axes)
    return F.broadcast_like(g, x)


reduce_sum = structural(
    "reduce_sum", lambda x, axes, keepdims: np.sum(x, axis=axes, keepdims=keepdims),
    _sum_dtype_infer,
    vjp=lambda g, out, x, axes, keepdims: (_expand_like(g, x, axes, keepdims),), symbolic_dims=True)


def _mean_numpy(x, axes, keepdims):
    out = np.mean(x, axis=axes, keepdims=keepdims)
    return out if x.dtype.kind == "f" else np.asarray(out)


def _mean_infer(x, axes, keepdims):
    dtype = np.mean(np.ones((1,), x.dtype)).dtype
    return reduced_shape(x.shape, axes, keepdims), dtype


def _mean_vjp(g, out, x, axes, keepdims):
    return (_expand_like(g, x, axes, keepdims) / F.axis_size(x, axes, x.dtype),)


reduce_mean = structural("reduce_mean", _mean_numpy, _mean_infer, vjp=_mean_vjp, symbolic_dims=True)


def _prod_vjp(g, out, x, axes, keepdims):
    return (_expand_like(g, x, axes, keepdims) * F.prod_others(x, axes),)


reduce_prod = structural(
    "reduce_prod", lambda x, axes, keepdims: np.prod(x, axis=axes, keepdims=keepdims),
    _sum_dtype_infer, vjp=_prod_vjp, symbolic_dims=True)


def _extremum_vjp(g, out, x, axes, keepdims):
    """TF: ties share the gradient evenly (indicators / count * g)."""
    chosen = F.cast(F.equal(x, _expand_like(out, x, axes, keepdims)), x.dtype)
    count = F.reduce_sum(chosen, axes, keepdims=True)
    return (chosen / count * _expand_like(g, x, axes, keepdims),)


def _extremum_numpy(fn):
    def run(x, axes, keepdims):
        if x.size == 0:
            raise ValueError(f"cannot take the {fn.__name__} of an empty array")
        return fn(x, axis=axes, keepdims=keepdims)
    return run


reduce_max = structural("reduce_max", _extremum_numpy(np.max), _reduce_infer,
                        vjp=_extremum_vjp, symbolic_dims=True)
reduce_min = structural("reduce_min", _extremum_numpy(np.min), _reduce_infer,
                        vjp=_extremum_vjp, symbolic_dims=True)


# --- matmul (np.matmul semantics: 1-D operands, broadcast batch dims) ------------------------
def _matmul_infer(a, b):
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(f"matmul: operands must have at least one dimension, got "
                         f"'{a.name}' {format_shape(a.shape)} and "
                         f"'{b.name}' {format_shape(b.shape)}")
    sa = (1,) + a.shape if a.ndim == 1 else a.shape
    sb = b.shape + (1,) if b.ndim == 1 else b.shape
    k1, k2 = sa[-1], sb[-2]
    if k1 is not None and k2 is not None and k1 != k2:
        raise ShapeError(f"matmul: inner dimensions differ: '{a.name}' {format_shape(a.shape)} "
                         f"@ '{b.name}' {format_shape(b.shape)} ({k1} != {k2})")
    from ..shapes import broadcast_shapes
    batch = broadcast_shapes([sa[:-2], sb[:-2]], op="matmul", names=[a.name, b.name])
    shape = batch + (sa[-2], sb[-1])
    if a.ndim == 1:
        shape = shape[:-2] + shape[-1:]
    if b.ndim == 1:
        shape = shape[:-1]
    return shape, np.result_type(a.dtype, b.dtype)


def _matmul_vjp(g, out, a, b):
    a2 = F.expand_dims(a, (0,)) if a.ndim == 1 else a
    b2 = F.expand_dims(b, (1,)) if b.ndim == 1 else b
    g2 = g
    if a.ndim == 1:
        g2 = F.expand_dims(g2, (g2.ndim - (0 if b.ndim == 1 else 1),))
    if b.ndim == 1:
        g2 = F.expand_dims(g2, (g2.ndim,))
    ga = F.matmul(g2, F.matrix_transpose(b2))
    gb = F.matmul(F.matrix_transpose(a2), g2)
    ga = F.reshape_like(F.unbroadcast(ga, a2), a)
    gb = F.reshape_like(F.unbroadcast(gb, b2), b)
    return ga, gb


matmul = structural("matmul", np.matmul, _matmul_infer, vjp=_matmul_vjp)


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


def unbroadcast_numpy(g, like, reduce=np.sum):
    """Sum ``g`` down to the shape of ``like`` (undo numpy broadcasting)."""
    target = np.shape(like)
    lead = g.ndim - len(target)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, d in enumerate(target) if d == 1 and g.shape[lead + i] != 1)
    out = reduce(g, axis=axes, keepdims=True) if axes else g
    return np.array(out.reshape(target))


unbroadcast = structural(
    "unbroadcast", unbroadcast_numpy, lambda g, like: (like.shape, g.dtype),
    vjp=lambda gg, out, g, like: (F.broadcast_like(gg, g), None), public=False, symbolic_dims=True)


def _unbroadcast_any_numpy(mask, g, like):
    return unbroadcast_numpy(np.broadcast_to(mask, np.shape(g)), like, reduce=np.any)


# The where-mask of a gradient that is un-broadcast: true where any summed entry was.
unbroadcast_any = structural(
    "unbroadcast_any", _unbroadcast_any_numpy,
    lambda mask, g, like: (like.shape, np.dtype(bool)), differentiable=False, public=False,
    symbolic_dims=True)


def matrix_transpose_perm(ndim: int) -> tuple:
    """The perm that swaps the last two axes."""
    return tuple(range(ndim - 2)) + (ndim - 1, ndim - 2)


# --- slicing ------------------------------------------------------------------------------------
def getitem_shape(shape, key):
    """Static shape of ``x[key]`` for basic indexing with None dims."""
    out, dim = [], 0
    n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
    for k in key:
        if k is None:
            out.append(1)
        elif k is Ellipsis:
            fill = len(shape) - n_real
            out.extend(shape[dim:dim + fill])
            dim += fill
        elif isinstance(k, slice):
            d = shape[dim]
            out.append(None if d is None else len(range(*k.indices(d))))
            dim += 1
        else:
            d = shape[dim]
            if d is not None and not -d <= k < d:
                raise ShapeError(f"getitem: index {k} is out of bounds for axis {dim} "
                                 f"with size {d}")
            dim += 1
    out.extend(shape[dim:])
    return tuple(out)


def _getitem_infer(x, key):
    n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
    if n_real > x.ndim:
        raise ShapeError(f"getitem: too many indices ({n_real}) for '{x.name}' of shape "
                         f"{format_shape(x.shape)}")
    return getitem_shape(x.shape, key), x.dtype


def _scatter_numpy(g, like, key):
    out = np.zeros(np.shape(like), dtype=g.dtype)
    out[key] = g
    return out


getitem = structural(
    "getitem", lambda x, key: np.array(x[key]), _getitem_infer,
    vjp=lambda g, out, x, key: (F.getitem_grad(g, x, key),),
    passes_mask=True)
getitem_grad = structural(
    "getitem_grad", _scatter_numpy, lambda g, like, key: (like.shape, g.dtype),
    vjp=lambda gg, out, g, like, key: (F.getitem(gg, key), None), public=False,
    passes_mask=True, symbolic_dims=True)


# --- dtype and helpers of gradients ----------------------------------------------------------
def _cast_vjp(g, out, x, dtype):
    if is_floating(x.dtype) and is_floating(dtype):
        return (F.cast(g, x.dtype),)
    return (None,)


cast = structural("cast", lambda x, dtype: np.asarray(x).astype(dtype),
                  lambda x, dtype: (x.shape, as_dtype(dtype)), vjp=_cast_vjp, symbolic_dims=True)


def _axis_size_numpy(x, axes, dtype):
    return np.asarray(np.prod([np.shape(x)[a] for a in axes]) if axes else 1, dtype=dtype)


axis_size = structural("axis_size", _axis_size_numpy, lambda x, axes, dtype: ((), dtype),
                       differentiable=False, public=False)


def _prod_others_numpy(x, axes):
    """Product of the other elements along ``axes`` (exact where x has zeros)."""
    moved = np.moveaxis(x, axes, tuple(range(-len(axes), 0))) if axes else x[..., None]
    flat = moved.reshape(moved.shape[:moved.ndim - max(len(axes), 1)] + (-1,))
    ones = np.ones(flat.shape[:-1] + (1,), flat.dtype)
    left = np.cumprod(np.concatenate([ones, flat[..., :-1]], axis=-1), axis=-1)
    right = np.cumprod(np.concatenate([ones, flat[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    others = (left * right).reshape(moved.shape)
    return np.moveaxis(others, tuple(range(-len(axes), 0)), axes) if axes else others[..., 0]


def _prod_others_vjp(c, out, x, axes):
    from .scan import prod_others_vjp  # exclusive cumprods, exact at zeros, any order
    return prod_others_vjp(c, out, x, axes)


prod_others = structural("prod_others", _prod_others_numpy, lambda x, axes: (x.shape, x.dtype),
                         vjp=_prod_others_vjp, public=False, symbolic_dims=True)


