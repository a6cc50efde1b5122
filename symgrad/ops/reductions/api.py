"""The public reductions (``reduce_sum`` ... ``reduce_min``, records in ``records.py``), the
private ones of gradients (``unbroadcast``, ``axis_size``, ``prod_others``), and the
composite reductions and normalisers: ``reduce_logsumexp``, ``reduce_variance``,
``reduce_std``, ``norm``, ``softmax``, ``log_softmax`` and ``clip_by_value``.

The composites are TensorFlow's own (``math_ops.py``, ``nn_ops.py``,
``clip_ops.py``), so their gradients are TF's by the chain rule, each fuses into the
surrounding kernels and runs eagerly on the tape. ``norm`` differs from TF by one
deliberate choice: its square root (the internal ``norm_sqrt`` record) has derivative 0 at
0, so the gradient at the zero vector is 0 (TF: 0/0 = nan).

>>> import symgrad as sg
>>> x = sg.placeholder("x", shape=(2, 3))
>>> y = sg.reduce_logsumexp(x, axis=1)
>>> sg.evaluate(y, {x: [[0.0, 0.0, 0.0], [1000.0, 1000.0, -1000.0]]}).round(6)
array([   1.098612, 1000.693147])
>>> sg.evaluate(sg.gradients(sg.norm(x), x)[0], {x: [[0.0] * 3] * 2})
array([[0., 0., 0.],
       [0., 0., 0.]])
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from ...dtypes import as_dtype
from ...shapes import normalize_axes
from ..checks import rank_of
from ..elementwise.records import norm_sqrt
from ..functions import F, export
from ..opdef import OpDef
from ..registry import apply
from . import records as R

__all__ = [
    "reduce_sum", "reduce_mean", "reduce_prod", "reduce_max", "reduce_min", "reduce_all",
    "reduce_any", "reduce_logsumexp",
    "reduce_variance", "reduce_std", "norm", "softmax", "log_softmax", "clip_by_value",
]


def _reduction(op: OpDef, doc: str):
    def fn(x, axis: int | Sequence[int] | None = None, keepdims: bool = False,
           name: Optional[str] = None):
        axes = normalize_axes(axis, rank_of(x), op.name)
        return apply(op, (x,), {"axes": axes, "keepdims": bool(keepdims)}, name)
    fn.__name__ = fn.__qualname__ = op.name
    fn.__doc__ = doc
    return fn


reduce_sum = _reduction(R.reduce_sum, "Sum over ``axis`` (None: all axes).")
reduce_mean = _reduction(R.reduce_mean, "Mean over ``axis`` (None: all axes).")
reduce_prod = _reduction(R.reduce_prod, "Product over ``axis``; exact gradient at zeros.")
reduce_max = _reduction(R.reduce_max, "Max over ``axis``; ties share the gradient evenly.")
reduce_min = _reduction(R.reduce_min, "Min over ``axis``; ties share the gradient evenly.")
reduce_all = _reduction(R.reduce_all, """Logical and over ``axis`` (None: all axes) of a bool
tensor (TF's ``tf.reduce_all``; True over no elements); no gradient.

>>> import symgrad as sg
>>> sg.evaluate(sg.reduce_all(sg.constant([[True, False], [True, True]]), axis=1), {})
array([False,  True])
""")
reduce_any = _reduction(R.reduce_any, """Logical or over ``axis`` (None: all axes) of a bool
tensor (TF's ``tf.reduce_any``; False over no elements); no gradient.

>>> import symgrad as sg
>>> x = sg.placeholder("x", shape=(3,))
>>> sg.evaluate(sg.reduce_any(x > 1.0), {x: [0.0, 2.0, 0.5]})
array(True)
""")


def unbroadcast(g, like, name: Optional[str] = None):
    return apply(R.unbroadcast, (g, like), None, name)


def unbroadcast_any(mask, g, like, name: Optional[str] = None):
    return apply(R.unbroadcast_any, (mask, g, like), None, name)


def axis_size(x, axes, dtype, name: Optional[str] = None):
    return apply(R.axis_size, (x,), {"axes": tuple(axes), "dtype": as_dtype(dtype)}, name)


def prod_others(x, axes, name: Optional[str] = None):
    return apply(R.prod_others, (x,), {"axes": tuple(axes)}, name)


Axis = Optional["int | Sequence[int]"]


def _axes(x, axis, op: str) -> tuple:
    """``axis`` checked and made non-negative (a ShapeError naming ``op`` otherwise)."""
    return normalize_axes(axis, rank_of(x), f"sg.{op}")


def _axis(x, axis: int, op: str) -> int:
    if not isinstance(axis, (int, np.integer)):
        raise TypeError(f"sg.{op}: axis must be an int, got {type(axis).__name__}")
    return _axes(x, int(axis), op)[0]


def reduce_logsumexp(x, axis: Axis = None, keepdims: bool = False, name: Optional[str] = None):
    """log(sum(exp(x))) over ``axis``, shifted by the (finite) max as TF does; an all
    ``-inf`` row gives ``-inf`` and a nan gradient (TF)."""
    axis = _axes(x, axis, "reduce_logsumexp")
    raw_max = F.reduce_max(x, axis=axis, keepdims=True)
    finite = F.less(F.abs(raw_max), np.inf)
    shift = F.stop_gradient(F.where(finite, raw_max, F.zeros_like(raw_max)))
    total = F.reduce_sum(F.exp(F.subtract(x, shift)), axis=axis, keepdims=keepdims)
    return F.add(F.log(total), F.reduce_sum(shift, axis=axis, keepdims=keepdims), name=name)


def reduce_variance(x, axis: Axis = None, keepdims: bool = False,
                    name: Optional[str] = None):
    """Population variance over ``axis`` (TF: mean of squared deviations)."""
    axis = _axes(x, axis, "reduce_variance")
    means = F.reduce_mean(x, axis=axis, keepdims=True)
    return F.reduce_mean(F.square(F.subtract(x, means)), axis=axis, keepdims=keepdims,
                         name=name)


def reduce_std(x, axis: Axis = None, keepdims: bool = False, name: Optional[str] = None):
    """Population standard deviation; a constant row has a nan gradient (TF)."""
    axis = _axes(x, axis, "reduce_std")
    return F.sqrt(reduce_variance(x, axis=axis, keepdims=keepdims), name=name)


def norm(x, axis: Axis = None, keepdims: bool = False, name: Optional[str] = None):
    """Euclidean norm over ``axis`` (all axes by default: Frobenius for a matrix). The
    gradient is x / norm, and 0 at the zero vector (TF: nan)."""
    axis = _axes(x, axis, "norm")
    total = F.reduce_sum(F.square(x), axis=axis, keepdims=keepdims)
    return apply(norm_sqrt, (total,), None, name)


def softmax(x, axis: int = -1, name: Optional[str] = None):
    """exp(x) / sum(exp(x)) along ``axis``, shifted by the max."""
    axis = _axis(x, axis, "softmax")
    shift = F.stop_gradient(F.reduce_max(x, axis=axis, keepdims=True))
    e = F.exp(F.subtract(x, shift))
    return F.divide(e, F.reduce_sum(e, axis=axis, keepdims=True), name=name)


def log_softmax(x, axis: int = -1, name: Optional[str] = None):
    """x - logsumexp(x) along ``axis``, stable for large values."""
    axis = _axis(x, axis, "log_softmax")
    shifted = F.subtract(x, F.stop_gradient(F.reduce_max(x, axis=axis, keepdims=True)))
    return F.subtract(shifted, F.log(F.reduce_sum(F.exp(shifted), axis=axis, keepdims=True)),
                      name=name)


def clip_by_value(t, clip_value_min, clip_value_max, name: Optional[str] = None):
    """min(max(t, lo), hi) as TF composes it (``maximum(minimum(t, hi), lo)``): t receives
    the gradient where lo <= t <= hi, a bound only where t is strictly beyond it."""
    return F.maximum(F.minimum(t, clip_value_max), clip_value_min, name=name)


export(globals())
