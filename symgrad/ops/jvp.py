"""Forward-mode rules of the structural op records (JAX's ``ad.primitive_jvps``).

``JVP_RULES[op](tangents, out, *inputs, **attrs)`` returns the tangent of ``out`` (shaped
like it) given one tangent per input (None: that input carries none), or None. Rules are
written with symgrad's own ops, so the same table serves graphs (``sg.jvp``) and eager
values (``sg.ForwardAccumulator``), and their results can be differentiated again.

Linear ops apply themselves to the tangents; bilinear ones (matmul, einsum, tensordot) sum
one term per operand; the rest are written out (extrema, products, scans). An op without
a rule is handled by the engines' transposition fallback (the jvp as the derivative of
``<vjp(u), v>`` in the dummy cotangent u). Elementwise ops need no entry: their tangent is
``sum_i partial_i * tangent_i`` (graph) or their vjp rule applied to each tangent (tape).

>>> import numpy as np
>>> import symgrad as sg
>>> from symgrad.ops.reductions import records as reductions
>>> x = np.array([[1.0, 2.0], [3.0, 4.0]])
>>> out = sg.reduce_prod(x, axis=1)
>>> JVP_RULES[reductions.reduce_prod]([np.ones((2, 2))], out, x, axes=(1,), keepdims=False).numpy()
array([3., 7.])
"""

from __future__ import annotations

from typing import Callable

from ..dtypes import is_floating
from .contraction import records as contraction
from .elementwise import records as elementwise
from .functions import F
from .indexing import records as indexing
from .layout import band
from .layout import records as layout
from .reductions import records as reductions
from .opdef import OpDef
from .registry import apply
from .scans import records as scan

JVP_RULES: dict = {}


def _defjvp(op: OpDef, rule: Callable) -> None:
    JVP_RULES[op] = rule


def _or_zeros(tangents: list, inputs: tuple) -> list:
    return [F.zeros_like(x) if t is None else t for t, x in zip(tangents, inputs)]


# --- linear in the first input (the other inputs give shapes, indices or lengths) ---------
def _linear_first(op: OpDef) -> Callable:
    def rule(tangents, out, x, *rest, **attrs):
        return None if tangents[0] is None else apply(op, (tangents[0],) + rest, attrs)
    return rule


LINEAR_FIRST = (
    reductions.reduce_sum, reductions.reduce_mean, layout.transpose, layout.reshape,
    layout.reshape_like, layout.expand_dims,
    layout.broadcast_like, reductions.unbroadcast, indexing.getitem, indexing.getitem_grad,
    layout.unstack, layout.split, layout.squeeze, layout.broadcast_to, layout.tile,
    layout.tile_grad, layout.reverse, layout.roll, layout.concat_part,
    indexing.gather, indexing.gather_grad, scan.cumsum, scan.shift,
    band.tril, band.triu, band.diag, band.diag_part, band.diag_fill, band.trace)
for _op in LINEAR_FIRST:
    _defjvp(_op, _linear_first(_op))


def _pad_jvp(tangents, out, x, paddings, constant_values):
    if tangents[0] is None:
        return None
    return apply(layout.pad, (tangents[0],), {"paddings": paddings, "constant_values": 0})


def _cast_jvp(tangents, out, x, dtype):
    if tangents[0] is None or not (is_floating(x.dtype) and is_floating(out.dtype)):
        return None
    return F.cast(tangents[0], out.dtype)


def _all_linear(op: OpDef) -> Callable:
    """concat, stack: linear in all inputs together (zeros for the untangented ones)."""
    def rule(tangents, out, *values, **attrs):
        return apply(op, tuple(_or_zeros(tangents, values)), attrs)
    return rule


_defjvp(layout.pad, _pad_jvp)
_defjvp(elementwise.cast, _cast_jvp)
_defjvp(layout.concat, _all_linear(layout.concat))
_defjvp(layout.stack, _all_linear(layout.stack))


# --- multilinear: one term per tangented operand --------------------------------------------
def _multilinear(op: OpDef) -> Callable:
    def rule(tangents, out, *operands, **attrs):
        total = None
        for k, t in enumerate(tangents):
            if t is None:
                continue
            args = operands[:k] + (t,) + operands[k + 1:]
            term = apply(op, args, attrs)
            total = term if total is None else total + term
        return total
    return rule


for _op in (contraction.matmul, contraction.einsum, contraction.tensordot):
    _defjvp(_op, _multilinear(_op))


# --- reductions that are not linear ---------------------------------------------------------
def _expand_like(g, x, axes, keepdims):
    if not keepdims:
        g = F.expand_dims(g, axes)
    return F.broadcast_like(g, x)


def _prod_jvp(tangents, out, x, axes, keepdims):
    return F.reduce_sum(tangents[0] * F.prod_others(x, axes), axes, keepdims=keepdims)


def _extremum_jvp(tangents, out, x, axes, keepdims):
    """TF's rule transposed: ties share the tangent evenly (the mean over the chosen)."""
    chosen = F.cast(F.equal(x, _expand_like(out, x, axes, keepdims)), x.dtype)
    count = F.reduce_sum(chosen, axes, keepdims=True)
    return F.reduce_sum(chosen / count * tangents[0], axes, keepdims=keepdims)


def _prod_others_jvp(tangents, out, x, axes):
    """prod_others is the gradient of the product, so its Jacobian is a Hessian: symmetric,
    and its jvp is its vjp."""
    return reductions.prod_others.vjp(tangents[0], out, x, axes)[0]


_defjvp(reductions.reduce_prod, _prod_jvp)
_defjvp(reductions.reduce_max, _extremum_jvp)
_defjvp(reductions.reduce_min, _extremum_jvp)
_defjvp(reductions.prod_others, _prod_others_jvp)


# --- scans: exact at zeros (no division), every order -----------------------------------------
def _previous(reverse: bool) -> int:
    """The ``shift`` step that brings the previous entry in scan order to each place."""
    return -1 if reverse else 1


def _cumprod_jvp(tangents, out, x, axis, exclusive, reverse):
    """Inclusive p_i = x_i p_{i-1}: dp_i = t_i * excl_i + x_i dp_{i-1}, a linrec; the
    exclusive scan's tangent is the inclusive one shifted by one place."""
    excl = F.cumprod(x, axis, exclusive=True, reverse=reverse)
    inclusive = F.linrec(x, tangents[0] * excl, axis, reverse=reverse)
    return F.shift(inclusive, axis, _previous(reverse)) if exclusive else inclusive


def _linrec_jvp(tangents, out, a, b, axis, reverse):
    """s_i = b_i + a_i s_{i-1}: ds_i = db_i + da_i s_{i-1} + a_i ds_{i-1}."""
    t_a, t_b = tangents
    drive = t_b
    if t_a is not None:
        term = t_a * F.shift(out, axis, _previous(reverse))
        drive = term if drive is None else drive + term
    if drive is None:
        return None
    return F.linrec(a, F.broadcast_like(drive, out) if drive.shape != out.shape else drive,
                    axis, reverse=reverse)


_defjvp(scan.cumprod, _cumprod_jvp)
_defjvp(scan.linrec, _linrec_jvp)


# --- assembly (segment reductions, scatters): linear ones apply themselves ------------------
def _assembly_rules() -> None:
    """sum, mean, segment_sum and the gathers are linear in their data; the scatters are
    linear in (tensor, updates) together. max, min and prod use the transposition
    fallback (their vjps are TF's rules)."""
    from .assembly import records as A
    for op in (A.unsorted_segment_sum, A.unsorted_segment_mean, A.segment_sum,
               A.segment_gather, A.gather_nd):
        _defjvp(op, _linear_first(op))

    def scatter_nd(tangents, out, indices, updates, shape):
        t = tangents[1]
        return None if t is None else apply(A.scatter_nd, (indices, t), {"shape": shape})

    def tensor_scatter(op: OpDef) -> Callable:
        def rule(tangents, out, tensor, indices, updates):
            t_tensor, _, t_updates = tangents
            if t_tensor is None and t_updates is None:
                return None
            t_tensor = F.zeros_like(tensor) if t_tensor is None else t_tensor
            t_updates = F.zeros_like(updates) if t_updates is None else t_updates
            return apply(op, (t_tensor, indices, t_updates))
        return rule

    _defjvp(A.scatter_nd, scatter_nd)
    _defjvp(A.tensor_scatter_nd_add, tensor_scatter(A.tensor_scatter_nd_add))
    _defjvp(A.tensor_scatter_nd_update, tensor_scatter(A.tensor_scatter_nd_update))


_assembly_rules()
