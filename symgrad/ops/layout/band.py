"""Matrix layout op records over the last two axes: tril, triu, diag, diag_part, trace
(batched over leading axes like ``tf.linalg``), with TF's gradients.

``diag(v)`` is ``tf.linalg.diag`` (a batch of vectors to a batch of diagonal matrices),
``diag_part(x)`` is ``tf.linalg.diag_part`` (the main diagonal, length ``min(n, m)``),
``trace(x)`` sums that diagonal. Their gradients place entries on a diagonal
(``diag_fill``) or take it, so every order works in both engines.
"""


from __future__ import annotations

import numpy as np

from ...errors import ShapeError
from ...shapes import format_shape
from ..functions import F
from ..opdef import Example, structural


def _need_rank(x, rank: int, op: str) -> None:
    if x.ndim < rank:
        raise ShapeError(f"{op}: '{x.name}' must have at least {rank} dimension(s), got shape "
                         f"{format_shape(x.shape)}")


def _band_infer(op: str):
    def infer(x, k):
        _need_rank(x, 2, op)
        return x.shape, x.dtype
    return infer


tril = structural(
    "tril", lambda x, k: np.tril(x, k), _band_infer("tril"),
    vjp=lambda g, out, x, k: (F.tril(g, k),), passes_mask=True,
    examples=(Example(((2, 3, 2),), {"k": -1}, lambda a: np.tril(a, -1)),
              Example(((3, 4),), {}, np.tril)))
triu = structural(
    "triu", lambda x, k: np.triu(x, k), _band_infer("triu"),
    vjp=lambda g, out, x, k: (F.triu(g, k),), passes_mask=True,
    examples=(Example(((3, 4),), {"k": 1}, lambda a: np.triu(a, 1)),
              Example(((2, 3, 3),), {"k": -1}, lambda a: np.triu(a, -1))))


def _diag_numpy(v):
    n = v.shape[-1]
    out = np.zeros(v.shape + (n,), v.dtype)
    idx = np.arange(n)
    out[..., idx, idx] = v  # no v * eye: inf * 0 would put NaN off the diagonal
    return out


def _diag_infer(v):
    _need_rank(v, 1, "diag")
    return v.shape + v.shape[-1:], v.dtype


diag = structural(
    "diag", _diag_numpy, _diag_infer, vjp=lambda g, out, v: (F.diag_part(g),),
    passes_mask=True,
    examples=(Example(((3,),), {}, np.diag),
              Example(((2, 3),), {}, lambda a: np.stack([np.diag(r) for r in a]))))


def _diag_part_infer(x):
    _need_rank(x, 2, "diag_part")
    n, m = x.shape[-2:]
    k = None if n is None or m is None else min(n, m)
    if k is None and (n == 0 or m == 0):
        k = 0
    return x.shape[:-2] + (k,), x.dtype


diag_part = structural(
    "diag_part", lambda x: np.array(np.diagonal(x, 0, -2, -1)), _diag_part_infer,
    vjp=lambda g, out, x: (F.diag_fill(g, x),), passes_mask=True,
    examples=(Example(((3, 3),), {}, np.diag),
              Example(((2, 3, 4),), {}, lambda a: np.diagonal(a, 0, -2, -1))))


def _diag_fill_numpy(g, like):
    out = np.zeros(np.shape(like), g.dtype)
    k = min(out.shape[-2:])
    idx = np.arange(k)
    out[..., idx, idx] = g
    return out


# Zeros shaped like ``like`` with ``g`` (broadcast) on the main diagonal of the last two
# axes: TF's matrix_set_diag(zeros_like(x), g), the gradient of diag_part and trace.
diag_fill = structural(
    "diag_fill", _diag_fill_numpy, lambda g, like: (like.shape, g.dtype),
    vjp=lambda gg, out, g, like: (F.diag_part(gg), None), public=False, passes_mask=True)


def _trace_infer(x):
    _need_rank(x, 2, "trace")
    return x.shape[:-2], x.dtype


trace = structural(
    "trace", lambda x: np.array(np.trace(x, axis1=-2, axis2=-1)), _trace_infer,
    vjp=lambda g, out, x: (F.diag_fill(F.expand_dims(g, (g.ndim,)), x),),
    examples=(Example(((3, 3),), {}, np.trace),
              Example(((2, 3, 4),), {}, lambda a: np.trace(a, axis1=-2, axis2=-1))))
