"""Forward mode on graphs: ``sg.jvp`` (Jacobian-vector products) and ``sg.hvp``.

One forward sweep in topological order carries a tangent along every node that depends
on an x. An elementwise node (and the ``expr`` nodes of ``sg.gradients``) gets ONE ``expr``
node ``sum_i partial_i * tangent_i``, with the partials of the reverse sweep (TF's
conventions: selecting partials of where/maximum select the tangent, an input used only in
a condition carries nothing). A structural node uses its rule in ``ops/jvp.py``; an op
without one is transposed: its jvp is ``d/du <vjp(u), tangent>`` (``sg.gradients`` of its
vjp rule), so every differentiable op works. The result is an ordinary graph: evaluate
it, compile it, differentiate it again.

An x given that is also computed from another x receives its tangent plus the tangent
flowing into it, so ``<jvp(t), w> = sum_x <gradients(y, x, w), t_x>`` always holds.

>>> import numpy as np
>>> import symgrad as sg
>>> x = sg.placeholder("x", shape=(3,))
>>> (dy,) = sg.jvp([sg.sin(x) * x], [x], [np.ones(3)])
>>> sg.evaluate(dy, {x: [0.0, 1.0, 2.0]}).round(4)
array([0.    , 1.3818, 0.077 ])
>>> sg.evaluate(sg.hvp(sg.reduce_sum(x ** 3), x, np.ones(3)), {x: [1.0, 2.0, 3.0]})
array([ 6., 12., 18.])
"""

from __future__ import annotations

from collections import defaultdict
from functools import lru_cache
from typing import Any, Optional

import numpy as np
import sympy as sp

from .arguments import UnconnectedGradients, array_of, unconnected_policy
from .differentiate import gradients
from .differentiate.control import PREVENT_GRADIENT, disabled_message
from .differentiate.partials import has_float_path, local_partial
from .dtypes import is_floating
from .errors import DTypeError, NoGradientError, ShapeError, UnconnectedGradientError
from .graph.naming import name_scope
from .graph.tensor import Tensor, describe
from .graph.traversal import topological_order
from .ops.functions import F
from .ops.jvp import JVP_RULES
from .ops.sources import constant
from .ops.symbols import dtype_kind, input_symbol
from .shapes import format_shape


def _as_list(value: Any) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def tangent_shape_ok(tangent_shape: tuple, primal_shape: tuple) -> bool:
    """Exactly the primal's shape: same rank, equal dims where both are known."""
    return len(tangent_shape) == len(primal_shape) and all(
        a is None or b is None or a == b for a, b in zip(tangent_shape, primal_shape))


def _tangent(api: str, x: Any, k: int, value: Any) -> Tensor:
    """The tangent of xs[k] as a Tensor of x's dtype, checked (TypeError, ValueError)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{api}: xs[{k}] must be a symgrad Tensor, got {type(x).__name__}")
    if not is_floating(x.dtype):
        raise DTypeError(f"{api}: xs[{k}] {describe(x)} is not a float tensor; forward mode "
                         "differentiates float primals only")
    if isinstance(value, Tensor):
        tangent = value
        if not is_floating(tangent.dtype):
            raise DTypeError(f"{api}: tangents[{k}] '{tangent.name}' has dtype "
                             f"{tangent.dtype.name}; pass a {x.dtype.name} tangent")
        if tangent.dtype != x.dtype:
            tangent = F.cast(tangent, x.dtype)
    else:
        tangent = constant(array_of(value, x.dtype, api, f"tangents[{k}]"))
    if not tangent_shape_ok(tuple(tangent.shape), tuple(x.shape)):
        raise ShapeError(f"{api}: tangents[{k}] has shape {format_shape(tangent.shape)} but "
                         f"xs[{k}] '{x.name}' has shape {format_shape(x.shape)}; a tangent "
                         "must have exactly its primal's shape")
    return tangent


# --- one elementwise node: sum_i partial_i * tangent_i as one expr node ----------------------
def _times_partial(t: sp.Symbol, partial: sp.Expr) -> sp.Expr:
    """t * partial; a selecting partial (a Piecewise of numbers) selects t instead, so an
    infinite tangent of the branch not taken is never multiplied by 0 (TF's select)."""
    if isinstance(partial, sp.Piecewise) and all(e.is_Number for e, _ in partial.args):
        return sp.piecewise_fold(t * partial)
    return t * partial


@lru_cache(maxsize=8192)
def _jvp_form(partials: tuple, active: tuple, t_kinds: tuple, kinds: tuple,
              product=None) -> tuple:
    """The expression of ``sum_j partial_j * t_j`` over the terms ``t_0.., inputs...``
    and which terms it uses (every tangent: they give the shape)."""
    m = len(active)
    shift = {input_symbol(k, kind): input_symbol(k + m, kind) for k, kind in enumerate(kinds)}
    total = sp.S.Zero
    for j, (i, partial) in enumerate(zip(active, partials)):
        t = input_symbol(j, t_kinds[j])
        moved = partial.xreplace(shift)
        total += _times_partial(t, moved) if product is None else product(t, moved, i)
    all_kinds = t_kinds + kinds
    used = total.free_symbols
    keep = tuple(k for k, kind in enumerate(all_kinds) if k < m or input_symbol(k, kind) in used)
    renumber = {input_symbol(k, all_kinds[k]): input_symbol(j, all_kinds[k])
                for j, k in enumerate(keep)}
    return total.xreplace(renumber), keep


def _fit_out(tangent: Tensor, node: Tensor) -> Tensor:
    """Broadcast (and cast) a tangent to its node's shape and dtype."""
    if tuple(tangent.shape) != tuple(node.shape):
        tangent = F.broadcast_like(tangent, node)
    if tangent.dtype != node.dtype:
        tangent = F.cast(tangent, node.dtype)
    return tangent


def _elementwise_jvp(node: Tensor, ins: list) -> Optional[Tensor]:
    active = tuple(i for i, (t, inp) in enumerate(zip(ins, node.inputs))
                   if t is not None and is_floating(inp.dtype) and has_float_path(node, i))
    if not active:
        return None
    partials = tuple(local_partial(node, i) for i in active)
    if len(active) == 1 and partials[0] == 1:
        return _fit_out(ins[active[0]], node)
    kinds = tuple(dtype_kind(t.dtype) for t in node.inputs)
    t_kinds = tuple(dtype_kind(ins[i].dtype) for i in active)
    expression, keep = _jvp_form(partials, active, t_kinds, kinds, node.op.upstream_product)
    terms = [ins[i] for i in active] + list(node.inputs)
    return _fit_out(F.expr([terms[k] for k in keep], expression, node.dtype), node)


# --- ops without a rule: the transposition of their vjp ---------------------------------------
def _transposed_jvp(node: Tensor, ins: list) -> Optional[Tensor]:
    """``d/du <vjp(u), t>``: the vjp rule is linear in the cotangent u, so this derivative
    is the Jacobian times t. u is a constant zeros node (its value is never used)."""
    if node.op.vjp is None:
        raise NoGradientError(f"sg.jvp: no derivative defined for operation "
                              f"'{node.op.name}' (at tensor '{node.name}')")
    u = F.zeros_like(node)
    grads = node.op.vjp(u, node, *node.inputs, **node.attrs)
    total = None
    for g, t, inp in zip(grads, ins, node.inputs):
        if g is None or t is None:
            continue
        if tuple(g.shape) != tuple(inp.shape):
            g = F.unbroadcast(g, inp)
        term = F.reduce_sum(F.cast(g, t.dtype) * t if g.dtype != t.dtype else g * t)
        total = term if total is None else total + term
    if total is None:
        return None
    (tangent,) = gradients(total, [u], grad_ys=constant(np.ones((), total.dtype)), name=None)
    return None if tangent is None else _fit_out(tangent, node)


def _refuse(tangents, out, x, message: str):
    raise NoGradientError(f"forward mode (sg.jvp, sg.ForwardAccumulator): "
                          f"{disabled_message(message)} (prevent_gradient at '{out.name}')")


JVP_RULES.setdefault(PREVENT_GRADIENT, _refuse)


def node_jvp(node: Tensor, ins: list) -> Optional[Tensor]:
    """The tangent of ``node`` from its inputs' tangents (None entries: no tangent)."""
    rule = JVP_RULES.get(node.op)
    if rule is not None:
        tangent = rule(ins, node, *node.inputs, **node.attrs)
        return None if tangent is None else _fit_out(tangent, node)
    if node.op.kind == "elementwise":
        return _elementwise_jvp(node, ins)
    return _transposed_jvp(node, ins)


def forward_sweep(ys: list, xs: list, tangents: list) -> list:
    """The tangent of each y (None where no x reaches it) given one tangent per x."""
    given: dict = defaultdict(list)
    for x, t in zip(xs, tangents):
        given[id(x)].append(t)
    carried: dict = {}
    for node in topological_order(ys):
        ins = [carried.get(id(i)) for i in node.inputs]
        tangent = None
        if (any(t is not None for t in ins) and node.op.differentiable
                and is_floating(node.dtype)):
            tangent = node_jvp(node, ins)
        for t in given.get(id(node), ()):
            tangent = t if tangent is None else tangent + t
        if tangent is not None:
            carried[id(node)] = tangent
    return [carried.get(id(y)) for y in ys]


def jvp(ys: Any, xs: Any, tangents: Any, unconnected_gradients: Any = "zero",
        name: Optional[str] = "jvp", batched: bool = False) -> list:
    """Forward mode: for each y, ``sum over x of (dy/dx) . tangent_x``, shaped like y.

    ``tangents`` holds one Tensor or array per x, of exactly x's shape (ValueError
    otherwise); xs must be float (TypeError). A y that no x reaches gets zeros of its
    shape (``unconnected_gradients='zero'``, the default, as ``jax.jvp``), None
    ('none', as TF's ``ForwardAccumulator.jvp``) or an UnconnectedGradientError
    ('raise'). Returns a list of graph Tensors, differentiable again.

    ``batched=True``: every tangent has one extra leading axis of length k (the same
    static k for all) and each result has shape ``(k,) + y.shape``: the k Jacobian-vector
    products of one forward sweep carrying a batch axis (``symgrad/batching.py``).

    >>> import symgrad as sg
    >>> x = sg.placeholder("x", shape=(2,))
    >>> a, b = sg.jvp([x * x, sg.constant(1.0)], [x], [[1.0, 0.0]])
    >>> sg.evaluate([a, b], {x: [3.0, 4.0]})
    [array([6., 0.]), array(0.)]
    """
    ys, xs, tangents = _as_list(ys), _as_list(xs), _as_list(tangents)
    for k, y in enumerate(ys):
        if not isinstance(y, Tensor):
            raise TypeError(f"sg.jvp: ys[{k}] must be a symgrad Tensor, got "
                            f"{type(y).__name__}")
    if len(tangents) != len(xs):
        raise ValueError(f"sg.jvp: got {len(tangents)} tangents for {len(xs)} xs; pass one "
                         "tangent per x")
    policy = unconnected_policy(unconnected_gradients, "sg.jvp")
    if batched:
        return _batched_jvp(ys, xs, tangents, policy, name)
    with name_scope(name):
        seeds = [_tangent("sg.jvp", x, k, t) for k, (x, t) in enumerate(zip(xs, tangents))]
        results = forward_sweep(ys, xs, seeds)
        return [_finish(y, k, r, policy) for k, (y, r) in enumerate(zip(ys, results))]


def _batched_tangent(x: Any, k: int, value: Any) -> Tensor:
    """A batch of tangents for xs[k]: shape (k,) + x.shape, x's dtype (checked)."""
    if not isinstance(value, Tensor):
        dtype = x.dtype if isinstance(x, Tensor) else None
        try:
            value = constant(np.asarray(value, dtype=dtype))
        except (TypeError, ValueError) as exc:
            raise TypeError(f"sg.jvp(batched=True): tangents[{k}] cannot be converted to "
                            f"an array: {exc}") from exc
    if value.ndim < 1:
        raise ShapeError(f"sg.jvp(batched=True): tangents[{k}] must have a leading batch "
                         f"axis, got shape {format_shape(value.shape)}")
    _tangent("sg.jvp(batched=True)", x, k, F.getitem(value, (0,)))   # x, dtype, shape
    return value


def _batched_jvp(ys: list, xs: list, tangents: list, policy, name: Optional[str]) -> list:
    """k jvps in one sweep: the plain sweep with stand-in tangents, then batched."""
    from .batching import batch_graph, broadcast_batch, clear_memo
    from .ops.sources import placeholder

    batches = [_batched_tangent(x, k, t) for k, (x, t) in enumerate(zip(xs, tangents))]
    sizes = {b.shape[0] for b in batches}
    if None in sizes or len(sizes) != 1:
        raise ShapeError("sg.jvp(batched=True): every tangent needs the same static batch "
                         "length k (leading axis), got "
                         f"{', '.join(format_shape(b.shape) for b in batches)}")
    k = sizes.pop()
    with name_scope(name):
        stand_ins = [placeholder(f"batch_tangent_{j}", x.shape, x.dtype)
                     for j, x in enumerate(xs)]
        results = forward_sweep(ys, xs, stand_ins)
        replace = {id(s): (s, F.cast(b, s.dtype) if b.dtype != s.dtype else b)
                   for s, b in zip(stand_ins, batches)}
        out = batch_graph(results, replace, k)
        try:
            return [_finish(y, j, None if r is None else
                            (r[0] if r[1] else broadcast_batch(r[0], k)), policy, k)
                    for j, (y, r) in enumerate(zip(ys, out))]
        finally:
            clear_memo()


def _finish(y: Tensor, k: int, tangent: Optional[Tensor], policy,
            batch: Optional[int] = None) -> Optional[Tensor]:
    if tangent is not None:
        return tangent
    if policy is UnconnectedGradients.ZERO:
        if batch is not None:
            from .batching import broadcast_batch
            return broadcast_batch(F.zeros_like(y), batch)
        return F.zeros_like(y)
    if policy is UnconnectedGradients.RAISE:
        raise UnconnectedGradientError(f"sg.jvp: ys[{k}] {describe(y)} does not depend on "
                                       "any of xs; use unconnected_gradients='zero' or "
                                       "'none' to allow this")
    return None


def hvp(y: Any, x: Tensor, v: Any, name: Optional[str] = "hvp") -> Tensor:
    """The Hessian of ``reduce_sum(y)`` with respect to x, times v: forward over reverse
    (the jvp of ``sg.gradients(y, x)``). A Tensor shaped like x (zeros if y does not
    depend on x); v has exactly x's shape. For ``scipy.optimize.minimize(hessp=...)``.

    >>> import symgrad as sg
    >>> x = sg.placeholder("x", shape=(2,))
    >>> sg.evaluate(sg.hvp(x[0] * x[1] ** 2, x, [1.0, 0.0]), {x: [1.0, 3.0]})
    array([0., 6.])
    """
    with name_scope(name):
        tangent = _tangent("sg.hvp", x, 0, v)
        ys = _as_list(y)
        for k, t in enumerate(ys):
            if not isinstance(t, Tensor):
                raise TypeError(f"sg.hvp: y must be a symgrad Tensor, got {type(t).__name__}")
        (grad,) = gradients(ys, [x], name=None)
        if grad is None:
            return F.zeros_like(x)
        (product,) = forward_sweep([grad], [x], [tangent])
        return F.zeros_like(x) if product is None else product
