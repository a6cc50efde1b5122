"""Reduction op records: reduce_sum/mean/prod/max/min, reduce_all/any (bool, no gradient:
TF's NotDifferentiable), and the helpers of gradients that
sum or multiply over axes (un-broadcast sums, axis sizes, products of the others).

Each record has a shape rule (``infer``), a numpy forward and a reverse rule (``vjp``)
written with symgrad's own ops, used by both ``sg.gradients`` and the tape.
The ops marked ``public=False`` exist for gradients (un-broadcast sums, scatters).
"""

from __future__ import annotations

import numpy as np

from ...errors import DTypeError
from ...shapes import reduced_shape
from ..functions import F
from ..opdef import structural
from ..scans.records import prod_others_vjp


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


def _named(x) -> str:
    name = getattr(x, "name", None)
    return f"'{name}' " if isinstance(name, str) else "its input "


def _logical_infer(name: str):
    def infer(x, axes, keepdims):
        if x.dtype != np.bool_:
            raise DTypeError(f"sg.{name}: {_named(x)}has dtype {x.dtype.name}; {name} takes "
                             "bool tensors (compare first, e.g. x > 0, or sg.cast(x, bool))")
        return reduced_shape(x.shape, axes, keepdims), np.dtype(bool)
    return infer


reduce_all = structural(
    "reduce_all", lambda x, axes, keepdims: np.all(x, axis=axes, keepdims=keepdims),
    _logical_infer("reduce_all"), differentiable=False, symbolic_dims=True)
reduce_any = structural(
    "reduce_any", lambda x, axes, keepdims: np.any(x, axis=axes, keepdims=keepdims),
    _logical_infer("reduce_any"), differentiable=False, symbolic_dims=True)


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
    # exclusive cumprods, exact at zeros, any order
    return prod_others_vjp(c, out, x, axes)


prod_others = structural("prod_others", _prod_others_numpy, lambda x, axes: (x.shape, x.dtype),
                         vjp=_prod_others_vjp, public=False, symbolic_dims=True)
