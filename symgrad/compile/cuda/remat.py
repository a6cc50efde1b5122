"""A device plan pass: a later kernel recomputes a cheap stored value instead of reading it.

On the device every kernel is bound by memory traffic. When kernel A stores a value X
only for later kernels (not a result, read by no step or nest), X is one cheap
elementwise node of A's inputs (no function call, at most ``CHEAP_OPS`` operations, as
``rewrite.clone_cheap``'s rule) reading at most one array of the full iteration shape
(exactly one where lengths are unknown: it gives the reader its loop shape),
and every reader runs over A's iteration space reading X element for element, then each
reader computes X itself from A's inputs: A writes one array less and the readers read
no more than before. W4's pre-activation ``X W1 + b1`` is the case: kernel 0 stores
``tanh`` only, and the backward kernel reads ``X W1`` and ``b1`` for ``tanh'``
(docs/cuda.md).

>>> import symgrad as sg
>>> from symgrad.compile.plan.fold import fold_graph
>>> from symgrad.compile.plan.regions import build_plan
>>> a, w = sg.placeholder("a", shape=(4, 3)), sg.placeholder("w", shape=(3, 2))
>>> c, v = sg.placeholder("c", shape=(2,)), sg.placeholder("v", shape=(2, 1))
>>> z = sg.add(sg.matmul(a, w, name="m"), c, name="z")
>>> y = sg.reduce_sum((sg.tanh(z, name="h") @ v) ** 2)
>>> plan = build_plan(fold_graph([y] + sg.gradients(y, w), [a, w, c, v]), scatter=False)
>>> [[o.node.name for o in k.outputs][:2] for k in plan.kernels][0]
['z', 'h']
>>> moved = recompute_cheap_stores(plan)
>>> [len(k.outputs) for k in plan.kernels], [len(k.outputs) for k in moved.kernels]
([2, 2, 1], [1, 2, 1])
>>> [i.name for i in moved.kernels[2].inputs][-2:]    # reads m and c: recomputes z
['m', 'c']
"""

from __future__ import annotations

import sympy as sp

from ...shapes import is_fully_known
from ..nest import nest_inputs
from ..plan.regions import Kernel, Plan, Step
from ..plan.rewrite import CHEAP_OPS, _formula

__all__ = ["recompute_cheap_stores"]


def _reads(unit) -> list:
    if isinstance(unit, Kernel):
        return unit.inputs
    return list(unit.node.inputs) if isinstance(unit, Step) else nest_inputs(unit)


def _readers(units: list) -> dict:
    """id(node) -> the units that read it."""
    found: dict = {}
    for unit in units:
        for node in _reads(unit):
            found.setdefault(id(node), []).append(unit)
    return found


def _swap(readers: dict, old: Kernel, new: Kernel) -> None:
    """Keep ``readers`` current when ``new`` replaces ``old``."""
    for node in old.inputs:
        users = readers.get(id(node), [])
        users[:] = [u for u in users if u is not old]
    for node in new.inputs:
        readers.setdefault(id(node), []).append(new)


def _cheap(node) -> bool:
    if node.kind != "elementwise":
        return False
    formula = _formula(node, [sp.Dummy(f"s{k}", real=True) for k in range(len(node.inputs))])
    return not formula.atoms(sp.Function) and sp.count_ops(formula) <= CHEAP_OPS


def _movable(kernel: Kernel, out, readers: list, results: set) -> bool:
    """Whether the stored output ``out`` of ``kernel`` can be recomputed by ``readers``."""
    x = out.node
    inside = {id(n) for n in kernel.nodes}
    ins = {id(i) for i in kernel.inputs}
    if out.is_reduction or out.is_scatter or id(x) in results or not readers or \
            len(kernel.outputs) < 2 or any(not isinstance(r, Kernel) for r in readers):
        return False
    if any(r.dims != kernel.dims or tuple(x.dims) != tuple(r.dims) for r in readers):
        return False
    if any(id(i) in inside or not (id(i) in ins or i.is_const and i.uniform is not None)
           for i in x.inputs):
        return False
    full = [i for i in x.inputs if id(i) in ins and tuple(i.dims) == tuple(kernel.dims)]
    # unknown lengths: a reader's shape is found from its inputs, so one must be full-size
    return (len(full) == 1 or len(full) == 0 and is_fully_known(kernel.shape)) and _cheap(x)


def recompute_cheap_stores(plan: Plan) -> Plan:
    """``plan`` with every movable store (module docstring) recomputed by its readers; the
    kernels keep their indices. One pass over the kernels in plan order."""
    units = list(plan.units)
    results = {id(o) for o in plan.outputs if o is not None}
    readers = _readers(units)
    changed = False
    for position in range(len(units)):
        kernel = units[position]
        if not isinstance(kernel, Kernel):
            continue
        for out in list(kernel.outputs):
            x = out.node
            users = list(readers.get(id(x), []))
            if not _movable(kernel, out, users, results):
                continue
            for user in users:
                inputs = [i for i in user.inputs if i is not x]
                inputs += [i for i in x.inputs if any(i is j for j in kernel.inputs) and
                           all(i is not j for j in inputs)]
                new = Kernel(user.index, user.shape, [x, *user.nodes], user.dims, inputs,
                             user.outputs)
                units[units.index(user)] = new
                _swap(readers, user, new)
            new = Kernel(kernel.index, kernel.shape, kernel.nodes, kernel.dims,
                         kernel.inputs, [o for o in kernel.outputs if o is not out])
            units[position] = new
            _swap(readers, kernel, new)
            kernel, changed = new, True
    return Plan(plan.graph, units, plan.outputs) if changed else plan
