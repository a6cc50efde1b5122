"""Scan op records: cumsum, cumprod, and the two private scans their gradients use.

``cumsum``'s gradient is TF's: a cumsum in the other direction. ``cumprod``'s is the
mathematical one, exact where entries are 0 (TF divides by x with ``div_no_nan`` and gives
0 there: a documented difference). With ``L`` the exclusive cumprod, the gradient of an
inclusive forward cumprod is ``dx_i = L_i * S_i`` where ``S_i = g_i + x_{i+1} S_{i+1}``: a
first-order linear recurrence (``linrec``), solved by a scan, never by a division.
``linrec``'s own gradient is a linrec in the other direction, so every order works.

``prod_others`` (reduce_prod's gradient) gets its derivative from the same rules: along
one axis it is ``cumprod(x, exclusive) * cumprod(x, exclusive, reverse)``.

>>> import numpy as np
>>> import symgrad as sg
>>> x = sg.placeholder("x", shape=(3,))
>>> (g,) = sg.gradients(sg.reduce_sum(sg.cumprod(x)), [x])
>>> sg.evaluate(g, {x: [2.0, 0.0, 3.0]})   # TF gives [1., 0., 0.]: div_no_nan at the zero
array([1., 8., 0.])
"""


from __future__ import annotations

import numpy as np

from ..functions import F
from ..opdef import structural


def _axis_first(x, axis, reverse):
    moved = np.moveaxis(np.asarray(x), axis, 0)
    return moved[::-1] if reverse else moved


def _axis_back(moved, axis, reverse):
    return np.moveaxis(moved[::-1] if reverse else moved, 0, axis)


def _scan_numpy(fn, identity):
    def run(x, axis, exclusive, reverse):
        moved = _axis_first(x, axis, reverse)
        out = fn(moved, axis=0)
        if exclusive:
            out = np.concatenate([np.full_like(out[:1], identity), out[:-1]], axis=0)
        return _axis_back(out, axis, reverse).astype(x.dtype, copy=False)
    return run


def _scan_infer(x, axis, exclusive, reverse):
    return x.shape, x.dtype


def _cumsum_vjp(g, out, x, axis, exclusive, reverse):
    return (F.cumsum(g, axis, exclusive=exclusive, reverse=not reverse),)


cumsum = structural("cumsum", _scan_numpy(np.cumsum, 0), _scan_infer, vjp=_cumsum_vjp)


def cumprod_vjp(g, x, axis: int, exclusive: bool, reverse: bool):
    """The exact vjp of ``cumprod(x, axis, exclusive, reverse)`` (no division by x)."""
    step = 1 if reverse else -1  # shift(v, -1)_i = v_{i+1}: the next entry in scan order
    left = F.cumprod(x, axis, exclusive=True, reverse=reverse)
    seed = F.shift(g, axis, step) if exclusive else g
    tail = F.linrec(F.shift(x, axis, step), seed, axis, reverse=not reverse)
    return left * tail


cumprod = structural(
    "cumprod", _scan_numpy(np.cumprod, 1), _scan_infer,
    vjp=lambda g, out, x, axis, exclusive, reverse: (
        cumprod_vjp(g, x, axis, exclusive, reverse),))


# --- the private scans ----------------------------------------------------------------------
def _shift_numpy(x, axis, step):
    moved = np.moveaxis(np.asarray(x), axis, 0)
    out = np.zeros_like(moved)
    if step > 0:
        out[step:] = moved[:-step]
    else:
        out[:step] = moved[-step:]
    return np.moveaxis(out, 0, axis)


# y_i = x_{i - step} along ``axis``, zeros shifted in. Linear; its vjp shifts back.
shift = structural(
    "shift", _shift_numpy, lambda x, axis, step: (x.shape, x.dtype),
    vjp=lambda g, out, x, axis, step: (F.shift(g, axis, -step),), public=False)


def _linrec_numpy(a, b, axis, reverse):
    a_m = _axis_first(np.broadcast_to(a, np.shape(b)), axis, reverse)
    b_m = _axis_first(b, axis, reverse)
    out = np.empty(b_m.shape, np.result_type(a_m, b_m))
    carry = np.zeros(b_m.shape[1:], out.dtype)
    for i in range(b_m.shape[0]):
        carry = b_m[i] + a_m[i] * carry
        out[i] = carry
    return _axis_back(out, axis, reverse)


def _linrec_vjp(c, out, a, b, axis, reverse):
    """s_i = b_i + a_i s_prev(i): the adjoint runs the other way with a shifted by one."""
    step = -1 if not reverse else 1  # towards the entry that came next in scan order
    lam = F.linrec(F.shift(a, axis, step), c, axis, reverse=not reverse)
    return lam * F.shift(out, axis, -step), lam


# The first-order linear recurrence along ``axis``: s_i = b_i + a_i * s_{i-1} (reverse:
# s_i = b_i + a_i * s_{i+1}), starting from 0. Computed by a loop over the axis.
linrec = structural(
    "linrec", _linrec_numpy, lambda a, b, axis, reverse: (b.shape, b.dtype),
    vjp=_linrec_vjp, public=False)


# --- reduce_prod's gradient, differentiable -------------------------------------------------
def _others_one_axis_vjp(c, x, axis: int):
    left = F.cumprod(x, axis, exclusive=True)
    right = F.cumprod(x, axis, exclusive=True, reverse=True)
    return (cumprod_vjp(c * right, x, axis, True, False)
            + cumprod_vjp(c * left, x, axis, True, True))


def prod_others_vjp(c, out, x, axes: tuple):
    """vjp of prod_others (the product of the other entries of each group along axes).

    Along one axis ``others = cumprod(x, exclusive) * cumprod(x, exclusive, reverse)``
    (TF's _ProdGrad); over several, ``others_A(x) = others_m(x) *
    others_rest(reduce_prod(x, m, keepdims))`` peels one axis at a time.
    """
    if not axes:
        return (None,)
    if len(axes) == 1:
        return (_others_one_axis_vjp(c, x, axes[0]),)
    last, rest = axes[-1], tuple(axes[:-1])
    own = F.prod_others(x, (last,))
    p = F.reduce_prod(x, last, keepdims=True)
    rest_others = F.prod_others(p, rest)
    direct = _others_one_axis_vjp(c * rest_others, x, last)
    (via_p,) = prod_others_vjp(F.reduce_sum(c * own, last, keepdims=True), rest_others, p, rest)
    return (direct + via_p * own,)
