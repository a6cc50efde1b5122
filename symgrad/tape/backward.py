"""The tape's reverse pass: the hand-written ``vjp`` of each recorded op, run eagerly.

Independent of ``symgrad.differentiate``: only the op records' ``vjp`` rules are used,
and every step (vjp, mask, sum, un-broadcast) is an eager op, so tapes that are still
recording see the backward pass and can differentiate it again (higher order).

The ``where`` rule, as in the symbolic sweep: a gradient leaving ``where`` carries the
condition as a *mask*; while it flows through elementwise ops of the same shape each
contribution becomes ``where(mask, contribution, 0)``, so the branch that was not
selected contributes exactly 0 even where its local derivative is infinite.

>>> import symgrad as sg
>>> x = sg.Variable([0.0, 2.0])
>>> with sg.GradientTape() as tape:
...     y = sg.where(x > 0, sg.log(x), 0.0)
>>> tape.gradient(y, x).numpy()
array([0. , 0.5])
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Iterator, Optional

from ..custom_op import group_of, group_vjp
from ..dtypes import is_floating
from ..errors import NoGradientError
from ..ops.functions import F
from ..ops.registry import OpDef
from .eager import EagerTensor


@dataclass(frozen=True, eq=False)
class Record:
    """One recorded op application: ``out = op(*inputs, **attrs)``."""

    op: OpDef
    inputs: tuple
    attrs: dict
    out: EagerTensor


def key_of(value: Any) -> int:
    """Gradients of all reads of one Variable accumulate on the Variable itself."""
    variable = getattr(value, "_variable", None)
    return variable._id if variable is not None else value._id


def _fit(contribution: Any, target: EagerTensor) -> tuple:
    """Un-broadcast and cast to the input's shape and dtype; report a shape change."""
    changed = contribution.shape != target.shape
    if changed:
        contribution = F.unbroadcast(contribution, target)
    if contribution.dtype != target.dtype:
        contribution = F.cast(contribution, target.dtype)
    return contribution, changed


def _aggregate(entries: list) -> tuple:
    """Sum the contributions to one value; keep a mask only if all of them share it."""
    total = entries[0][0]
    for grad, _ in entries[1:]:
        total = total + grad
    masks = {id(m) for _, m in entries}
    return total, (entries[0][1] if len(masks) == 1 else None)


def _combine(mask: Optional[Any], op_mask: Optional[Any]) -> Optional[Any]:
    if op_mask is None:
        return mask
    return op_mask if mask is None else F.logical_and(mask, op_mask)


def _contributions(rec: Record, g: Any, mask: Optional[Any]) -> Iterator[tuple]:
    """(input index, contribution, mask for that input) for each floating input."""
    op = rec.op
    if op.vjp is None:
        raise NoGradientError(f"GradientTape.gradient: no gradient defined for operation "
                              f"'{op.name}' (recorded at eager tensor '{rec.out.name}'); "
                              "wrap its input in sg.stop_gradient(...) to treat it as a "
                              "constant")
    grads = op.vjp(g, rec.out, *rec.inputs, **rec.attrs)
    elementwise = op.kind == "elementwise"
    op_masks = op.grad_mask(*rec.inputs) if elementwise and op.grad_mask else None
    for i, (inp, contribution) in enumerate(zip(rec.inputs, grads)):
        if contribution is None or not is_floating(inp.dtype):
            continue
        if not elementwise:
            yield i, contribution, None
            continue
        if mask is not None and contribution is not g:  # g is already 0 outside its mask
            contribution = F.where(mask, contribution, 0.0)
        yield i, contribution, _combine(mask, None if op_masks is None else op_masks[i])


def _group_contributions(rec: Record, g: Any, pending: dict, final: dict) -> Iterator[tuple]:
    """All outputs of a custom-gradient call at once (recorded one after the other, so
    every consumer of every output is already done): ``grad_fn(*upstream)`` one time."""
    group = group_of(rec)
    upstream = []
    for member in group.members:
        entries = [(g, None)] if member._id == rec.out._id else pending.pop(member._id, None)
        upstream.append(_aggregate(entries)[0] if entries else None)
        if entries:
            final[member._id] = upstream[-1]
    for i, contribution in enumerate(group_vjp(group, upstream, rec.inputs[1:])):
        if contribution is not None and is_floating(rec.inputs[i + 1].dtype):
            yield i + 1, contribution, None


def _reachable(records: list, source_keys: set) -> tuple:
    """Keys that depend on a source, and the records between sources and anything."""
    reach = set(source_keys)
    relevant = []
    for rec in records:
        if any(key_of(i) in reach for i in rec.inputs):
            reach.add(rec.out._id)
            relevant.append(rec)
    return reach, relevant


def backward(records: list, targets: list, seeds: list, source_keys: set) -> dict:
    """Gradients of ``sum_k <seed_k, target_k>`` keyed by ``key_of`` (absent = unconnected)."""
    reach, relevant = _reachable(records, source_keys)
    pending: dict = defaultdict(list)
    for target, seed in zip(targets, seeds):
        if key_of(target) in reach:
            pending[key_of(target)].append((seed, None))
    final: dict = {}
    for rec in reversed(relevant):
        entries = pending.pop(rec.out._id, None)
        if not entries:
            continue
        g, mask = _aggregate(entries)
        final[rec.out._id] = g
        if group_of(rec) is not None:
            contributions = _group_contributions(rec, g, pending, final)
        else:
            contributions = _contributions(rec, g, mask)
        for i, contribution, out_mask in contributions:
            inp = rec.inputs[i]
            if key_of(inp) not in reach:
                continue
            contribution, changed = _fit(contribution, inp)
            pending[key_of(inp)].append((contribution, None if changed else out_mask))
    for key, entries in pending.items():
        final[key] = _aggregate(entries)[0]
    return final
