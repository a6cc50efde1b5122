"""Indexing folded back through stacks: the rewrite ``fold_graph`` starts with.

A program written on small vectors of columns (``k = sg.stack([a, b], axis=1)``, then
``(y + h * k)[:, 0]``) stacks columns into an ``(n, 2)`` array only to read them back; each
stack is a structural step between kernels, and the reverse sweep mirrors it (``unstack``
of sums of ``getitem_grad`` scatters). A *select* takes one index along one axis and keeps
the rest (``x[:, 0]``, ``unstack``); ``fold_selects`` moves selects towards the inputs:

* a select of ``stack(xs, axis)`` along the stacked axis is ``xs[i]``,
* a select of ``getitem_grad(g, like, key)`` along the axis ``key`` selects is ``g`` (same
  index) or ``zeros_like(g)``,
* a select of an elementwise node is the node on its inputs' selects (an input broadcast
  along the axis is read as it is, or at index 0),

and only where the chain below reaches a stack or such a scatter (elsewhere nothing is
saved). An output that is an elementwise node over a stack (of at most ``SPLIT_MAX``
parts) becomes the stack of its parts, so the selects fold through its whole chain: one
stack is left for the output, and the stacks it was computed from are dead. (Other nodes
read whole, by a reduction say, keep their form: the fused reduction reads them in place.)

>>> import symgrad as sg
>>> y = sg.placeholder("y", shape=(None, 2))
>>> k = sg.stack([y[:, 1], -sg.sin(y[:, 0])], axis=1)
>>> (out,) = fold_selects([(y + 0.1 * k)[:, 0]])
>>> from symgrad.graph.traversal import topological_order
>>> "stack" in [t.op.name for t in topological_order([out])]
False
"""

from __future__ import annotations

from typing import Optional

from ...graph.naming import unique_name
from ...graph.tensor import Tensor
from ...graph.traversal import topological_order
from ...ops.functions import F
from ...shapes import broadcast_shapes
from ...ops.registry import apply
from ...ops.layout import api as LA
from ...ops.layout import records as L
from .oprules import S

__all__ = ["fold_selects", "SPLIT_MAX"]

SPLIT_MAX = 16   # the longest stacked axis an elementwise node over it is split along


def select_of(t: Tensor) -> Optional[tuple]:
    """(x, axis, index) when ``t`` takes one index along one axis of x and keeps the rest."""
    if t.op is L.unstack:
        return t.inputs[0], t.attrs["axis"], t.attrs["index"]
    if t.op is S.getitem or t.op is S.getitem_grad:
        x = t.inputs[0] if t.op is S.getitem else t.inputs[1]
        found = _key_select(t.attrs["key"], x)
        return None if found is None else (x,) + found
    return None


def _key_select(key, x: Tensor) -> Optional[tuple]:
    """(axis, index) of a key of full slices and one int (len at most x's rank)."""
    key = key if isinstance(key, tuple) else (key,)
    if len(key) > x.ndim:
        return None
    ints = [p for p, k in enumerate(key) if isinstance(k, int) and not isinstance(k, bool)]
    if len(ints) != 1 or any(k != slice(None) for p, k in enumerate(key) if p != ints[0]):
        return None
    axis, index = ints[0], key[ints[0]]
    if index < 0:
        if x.shape[axis] is None:
            return None
        index += x.shape[axis]
    return axis, index


class _Folder:
    def __init__(self):
        self.reach: dict = {}
        self.memo: dict = {}

    def reaches(self, t: Tensor) -> bool:
        """Whether selects pushed into ``t`` meet a stack or a select's scatter."""
        found = self.reach.get(id(t))
        if found is None:
            if t.op is L.stack or (t.op is S.getitem_grad and select_of(t) is not None):
                found = True
            elif t.op.kind == "elementwise" and t.inputs:
                found = any(self.reaches(i) for i in t.inputs)
            else:
                found = False
            self.reach[id(t)] = (found, t)
            return found
        return found[0]

    def prime(self, order: list) -> None:
        """``reaches`` and ``stack_axis`` of every node of a topological ``order`` in one
        pass, inputs first (no recursion, the same answers)."""
        reach, stack, grad = self.reach, L.stack, S.getitem_grad
        for t in order:
            op = t.op
            if op is stack:
                found, axis = True, t.attrs["axis"] - t.ndim
            elif op.kind == "elementwise":
                found, axis = False, None
                for i in t.inputs:          # any input reaches; the first input's axis
                    if not found and reach[id(i)][0]:
                        found = True
                    if axis is None:
                        axis = reach[("axis", id(i))][0]
            else:
                found, axis = op is grad and select_of(t) is not None, None
            reach[id(t)] = (found, t)
            reach[("axis", id(t))] = (axis, t)

    def stack_axis(self, t: Tensor) -> Optional[int]:
        """The axis (negative: broadcasting keeps it) of a stack an elementwise ``t``
        reads through elementwise ops, or None."""
        key = ("axis", id(t))
        if key not in self.reach:
            found = None
            if t.op is L.stack:
                found = t.attrs["axis"] - t.ndim
            elif t.op.kind == "elementwise":
                found = next((a for a in map(self.stack_axis, t.inputs) if a is not None), None)
            self.reach[key] = (found, t)
        return self.reach[key][0]

    def split(self, t: Tensor) -> Optional[Tensor]:
        """An elementwise ``t`` over a stack as the stack of its components (selected from
        it, folded inwards), or None."""
        a = self.stack_axis(t) if t.op.kind == "elementwise" and t.inputs else None
        if a is None or t.shape[a] is None or not 1 <= t.shape[a] <= SPLIT_MAX:
            return None
        axis = t.ndim + a
        parts = [self.select(t, axis, j) for j in range(t.shape[a])]
        return None if any(p is None for p in parts) else LA.stack(parts, axis)

    def select(self, t: Tensor, axis: int, index: int) -> Optional[Tensor]:
        """``t`` at ``index`` along ``axis`` with the select moved inward; None where it
        cannot move (the caller reads t with a getitem)."""
        key = (id(t), axis, index)
        if key in self.memo:
            return self.memo[key][0]
        out = self._select(t, axis, index)
        want = tuple(t.shape[:axis]) + tuple(t.shape[axis + 1:])
        if out is not None and (tuple(out.shape) != want or out.dtype != t.dtype):
            out = None
        self.memo[key] = (out, t)
        return out

    def _select(self, t: Tensor, axis: int, index: int) -> Optional[Tensor]:
        if t.op is L.stack and t.attrs["axis"] == axis:
            return t.inputs[index]
        if t.op is S.getitem_grad:
            found = select_of(t)
            if found is not None and found[1] == axis:
                g = t.inputs[0]
                return g if found[2] == index else F.zeros_like(g)
            return None
        if t.op.kind != "elementwise" or not t.inputs or not self.reaches(t):
            return None
        args = []
        for x in t.inputs:
            offset = t.ndim - x.ndim
            if axis < offset:
                args.append(x)
                continue
            length = x.shape[axis - offset]
            if length is None:
                return None
            j = 0 if length == 1 else index
            moved = self.select(x, axis - offset, j)
            args.append(_read(x, axis - offset, j) if moved is None else moved)
        if all(a.dtype == x.dtype for a, x in zip(args, t.inputs)):   # t's dtype rule
            shape = broadcast_shapes([a.shape for a in args], op=t.op.name)
            return Tensor(t.op, tuple(args), t.attrs, shape, t.dtype, unique_name(t.op.name))
        return apply(t.op, tuple(args), dict(t.attrs))


def _read(x: Tensor, axis: int, index: int) -> Tensor:
    return F.getitem(x, (slice(None),) * axis + (index,))


def _rebuilt(t: Tensor, args: list) -> Tensor:
    """``t``'s op on ``args``: an elementwise node whose inputs kept their shapes and dtypes
    keeps its own (its shape rule reads nothing else), named as ``apply`` names it."""
    if t.op.kind == "elementwise" and all(
            a.shape == i.shape and a.dtype == i.dtype for a, i in zip(args, t.inputs)):
        return Tensor(t.op, tuple(args), t.attrs, t.shape, t.dtype, unique_name(t.op.name))
    return apply(t.op, tuple(args), dict(t.attrs))


def fold_selects(outputs: list) -> list:
    """``outputs`` with their selects folded (module docstring); the same list when the
    graph has none to fold (or too deep a chain to fold it: Python's recursion limit)."""
    order = topological_order([o for o in outputs if o is not None])
    folder = _Folder()
    folder.prime(order)
    try:
        return _fold(outputs, order, folder)
    except RecursionError:
        return outputs


def _fold(outputs: list, order: list, folder: _Folder) -> list:
    candidates = [t for t in order if t.op in (L.unstack, S.getitem)]
    if not any(folder.reaches(select_of(t)[0]) for t in candidates if select_of(t)):
        return outputs
    new: dict = {}
    wanted = {id(o) for o in outputs if o is not None}
    selects = (L.unstack, S.getitem)            # select_of's ops but the scatter's
    get = new.get
    for t in order:
        args = [get(id(i), i) for i in t.inputs]
        found = select_of(t) if t.op in selects else None
        if found is not None and folder.reaches(args[0]):
            moved = folder.select(args[0], found[1], found[2])
            if moved is not None:
                new[id(t)] = moved
                continue
        for a, i in zip(args, t.inputs):
            if a is not i:
                new[id(t)] = _rebuilt(t, args)
                break
        split = folder.split(new.get(id(t), t)) if id(t) in wanted else None
        if split is not None:
            new[id(t)] = split
    return [None if o is None else new.get(id(o), o) for o in outputs]
