"""Reverse accumulation over the DAG, the way tf.gradients does it.

Every elementwise node contributes ``g * d(op)/d(input)`` (one ``expr`` node built from
its sympy partial), every structural node calls its ``vjp``; contributions to a tensor
are summed once, and un-broadcast to the input's shape once.

The ``where`` rule: a gradient leaving ``where`` carries the condition as a *mask*. While
it flows through elementwise nodes of the same shape, each contribution is built as
``Piecewise((g * partial, mask), (0, True))``, so the unselected branch contributes
exactly 0 even where its partial is infinite.
"""

from __future__ import annotations

from collections import defaultdict
from functools import lru_cache
from typing import Optional

import sympy as sp

from ..custom_op import group_of, group_vjp
from ..dtypes import is_floating
from ..errors import NoGradientError
from ..graph.tensor import Tensor
from ..graph.traversal import topological_order
from ..ops.functions import F
from ..ops.symbols import dtype_kind, input_symbol
from .partials import has_float_path, local_partial, node_key


def _needs_unbroadcast(contribution_shape: tuple, target_shape: tuple) -> bool:
    if len(contribution_shape) != len(target_shape):
        return True
    return any(a is None or b is None or a != b for a, b in zip(contribution_shape, target_shape))


def _fit(contribution: Tensor, target: Tensor) -> tuple:
    """Un-broadcast (and cast) a contribution to the target's shape and dtype.

    Returns ``(tensor, shape_changed)``; a mask that crosses an un-broadcast is reduced
    with ``unbroadcast_any``.
    """
    changed = False
    if _needs_unbroadcast(contribution.shape, target.shape):
        contribution, changed = F.unbroadcast(contribution, target), True
    if contribution.dtype != target.dtype:
        contribution = F.cast(contribution, target.dtype)
    return contribution, changed


def _times_partial(g: sp.Symbol, partial: sp.Expr) -> sp.Expr:
    """g * partial; a selecting partial (a Piecewise of numbers, as where and maximum have)
    selects g instead, as TF's select does, so an infinite g is never multiplied by 0."""
    if isinstance(partial, sp.Piecewise) and all(e.is_Number for e, _ in partial.args):
        return sp.piecewise_fold(g * partial)
    return g * partial


@lru_cache(maxsize=8192)
def _contribution_form(partial: sp.Expr, g_kind: str, masked: bool, kinds: tuple,
                       product=None, index: int = 0) -> tuple:
    """The expression of ``g * partial`` (masked: only where the mask holds) over the terms
    ``g, [mask], node inputs...``, and which of those terms it uses (g always: its shape
    is the contribution's shape). ``product``: the op record's ``upstream_product``, when
    its contribution is not a plain product. Cached: a graph repeats the same few forms."""
    lead = 2 if masked else 1
    shift = {input_symbol(k, kind): input_symbol(k + lead, kind) for k, kind in enumerate(kinds)}
    g = input_symbol(0, g_kind)
    expression = (_times_partial(g, partial.xreplace(shift)) if product is None
                  else product(g, partial.xreplace(shift), index))
    if masked:
        expression = sp.Piecewise((expression, input_symbol(1, "b")), (sp.S.Zero, True))
    all_kinds = (g_kind, "b")[:lead] + kinds
    used = expression.free_symbols
    keep = tuple(k for k, kind in enumerate(all_kinds)
                 if k == 0 or input_symbol(k, kind) in used)
    renumber = {input_symbol(k, all_kinds[k]): input_symbol(j, all_kinds[k])
                for j, k in enumerate(keep)}
    return expression.xreplace(renumber), keep


def _elementwise_contributions(node: Tensor, g: Tensor, mask: Optional[Tensor], wanted: set):
    op_masks = node.op.grad_mask(*node.inputs) if node.op.grad_mask else None
    key = node_key(node)
    kinds = key[0]
    for i, inp in enumerate(node.inputs):
        if not is_floating(inp.dtype) or id(inp) not in wanted or \
                not has_float_path(node, i, key):
            continue
        partial = local_partial(node, i, key)
        out_mask = mask
        if op_masks is not None and op_masks[i] is not None:
            out_mask = op_masks[i] if mask is None else F.logical_and(mask, op_masks[i])
        if mask is None and partial.is_Number and partial == 1:   # (sympy's == sympifies)
            yield i, g, out_mask
            continue
        expression, keep = _contribution_form(partial, dtype_kind(g.dtype), mask is not None,
                                              kinds, node.op.upstream_product, i)
        terms = ([g] if mask is None else [g, mask]) + list(node.inputs)
        yield i, F.expr([terms[k] for k in keep], expression, inp.dtype), out_mask


def _structural_contributions(node: Tensor, g: Tensor, mask: Optional[Tensor]):
    """vjp contributions; a layout op (``passes_mask``) moves the where-mask with them:
    its vjp only moves entries around, so applied to the mask it says where they went."""
    if node.op.vjp is None:
        raise NoGradientError(f"No gradient defined for operation '{node.op.name}' "
                              f"(at tensor '{node.name}')")
    grads = node.op.vjp(g, node, *node.inputs, **node.attrs)
    masks = [None] * len(grads)
    if mask is not None and node.op.passes_mask:
        full = mask if mask.shape == g.shape and None not in g.shape else F.broadcast_like(mask, g)
        masks = node.op.vjp(full, node, *node.inputs, **node.attrs)
    for i, (inp, contribution) in enumerate(zip(node.inputs, grads)):
        if contribution is not None and is_floating(inp.dtype):
            yield i, contribution, masks[i]


def _aggregate(entries: list, like: Tensor) -> tuple:
    """Sum the contributions to one tensor; keep a mask only if all of them share it."""
    tensors = [t for t, _ in entries]
    masks = {id(m): m for _, m in entries}
    mask = entries[0][1] if len(masks) == 1 else None
    kind = dtype_kind(like.dtype)
    while len(tensors) > 1:  # sums of at most SUM_FAN_IN terms, as a tree: no giant nodes
        tensors = [_sum_node(tensors[k:k + SUM_FAN_IN], kind)
                   for k in range(0, len(tensors), SUM_FAN_IN)]
    return tensors[0], mask


SUM_FAN_IN = 16


def _sum_node(tensors: list, kind: str) -> Tensor:
    if len(tensors) == 1:
        return tensors[0]
    total = sp.Add(*[input_symbol(k, kind) for k in range(len(tensors))])
    return F.expr(tensors, total, tensors[0].dtype)


def _groups_together(order: list) -> list:
    """Move the members of each custom-gradient group to the place of the first one, so
    the reverse sweep meets them together, after every consumer of every member (their
    inputs ``(y_k, *x)`` all existed before any member, so this keeps the order valid)."""
    present = {id(n) for n in order}
    placed: set = set()
    out = []
    for node in order:
        group = group_of(node)
        if group is None:
            out.append(node)
        elif id(group) not in placed:
            placed.add(id(group))
            out.extend(m for m in group.members if id(m) in present)
    return out


def _group_contributions(node: Tensor, g: Tensor, pending: dict, final: dict, stop: set):
    """All members of node's group at once: ``grad_fn(*upstream)`` called one time."""
    group = group_of(node)
    upstream = []
    for member in group.members:
        entries = [(g, None)] if member is node else pending.pop(id(member), None)
        g_member = _aggregate(entries, member)[0] if entries else None
        if g_member is not None:
            final[id(member)] = g_member
        upstream.append(None if id(member) in stop else g_member)
    if all(u is None for u in upstream):
        return
    for i, contribution in enumerate(group_vjp(group, upstream, node.inputs[1:])):
        if contribution is not None and is_floating(node.inputs[i + 1].dtype):
            yield i + 1, contribution, None


def reverse_sweep(ys: list, seeds: list, xs: list, stop: set,
                  order: Optional[list] = None) -> list:
    """Gradients of sum_k <seed_k, y_k> with respect to each x (None where unconnected).

    ``stop`` holds ids of tensors that receive gradients but pass none to their inputs;
    ``order``: ``topological_order(ys)`` where the caller has it.
    """
    order = _groups_together(topological_order(ys) if order is None else order)
    reach = {id(x) for x in xs}
    for node in order:
        if id(node) not in reach and any(id(i) in reach for i in node.inputs):
            reach.add(id(node))
    pending: dict = defaultdict(list)
    for y, seed in zip(ys, seeds):
        if id(y) in reach:
            pending[id(y)].append((seed, None))
    final: dict = {}
    for node in reversed(order):
        entries = pending.pop(id(node), None)
        if entries is None:
            continue
        g, mask = _aggregate(entries, node)
        final[id(node)] = g
        if group_of(node) is not None:
            contributions = _group_contributions(node, g, pending, final, stop)
        elif (id(node) in stop or not node.inputs or not node.op.differentiable
                or not is_floating(node.dtype)):
            continue
        elif node.op.kind == "elementwise":
            contributions = _elementwise_contributions(node, g, mask, reach)
        else:
            contributions = _structural_contributions(node, g, mask)
        for i, contribution, out_mask in contributions:
            target = node.inputs[i]
            if id(target) not in reach:
                continue
            fitted, changed = _fit(contribution, target)
            if changed and out_mask is not None:  # the sum is 0 where no summed entry is
                out_mask = F.unbroadcast_any(out_mask, contribution, target)
            pending[id(target)].append((fitted, out_mask))
    return [final.get(id(x)) for x in xs]
