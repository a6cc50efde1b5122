"""Broadcasting variants of a compiled function: no silent fallback to ``sg.evaluate``.

A plan takes two unknown lengths that meet in an elementwise op as equal. A call that
feeds length 1 to one of them (numpy broadcasting) breaks that assumption; instead of
running the numpy reference interpreter, the function compiles a *variant* of its graph
in which those axes are fixed to length 1 (one variant per broadcasting pattern, cached
on the function) and runs it. A call that breaks the plan in another way (lengths that
cannot broadcast) raises a ShapeError naming the function.

>>> import numpy as np
>>> import symgrad as sg
>>> a, b = sg.placeholder("a", shape=(None,)), sg.placeholder("b", shape=(None,))
>>> pattern([a, b], [np.ones(1), np.ones(4)])
((0, 0),)
>>> [p.shape for p in with_fixed_axes([a, b], [a * b], ((0, 0),))[0]]
[(1,), (None,)]
"""

from __future__ import annotations

from ...graph.tensor import Tensor
from ...graph.traversal import topological_order
from ...ops.registry import infer
from ...ops.sources import PLACEHOLDER


def pattern(placeholders: list, arrays: list) -> tuple:
    """The (input, axis) pairs of unknown lengths fed length 1: the broadcasting pattern."""
    return tuple((k, a) for k, (p, v) in enumerate(zip(placeholders, arrays))
                 for a, d in enumerate(p.shape) if d is None and v.shape[a] == 1)


def with_fixed_axes(placeholders: list, outputs: list, fixed: tuple) -> tuple:
    """(new placeholders, new outputs): the graph rebuilt with the axes in ``fixed`` of
    length 1. Nodes keep their names, op records and attributes; shapes are re-inferred."""
    return with_lengths(placeholders, outputs, {pair: 1 for pair in fixed})


def with_lengths(placeholders: list, outputs: list, lengths: dict) -> tuple:
    """(new placeholders, new outputs): the graph rebuilt with axis ``a`` of placeholder
    ``k`` of length ``lengths[(k, a)]``; shapes are re-inferred (a ShapeError when the
    lengths do not fit the graph, e.g. a constant of another length)."""
    made: dict = {}
    new_inputs = []
    for k, p in enumerate(placeholders):
        shape = tuple(lengths.get((k, a), d) for a, d in enumerate(p.shape))
        made[id(p)] = Tensor(PLACEHOLDER, (), {}, shape, p.dtype, p.name)
        new_inputs.append(made[id(p)])
    for node in topological_order([o for o in outputs if o is not None]):
        if id(node) in made:
            continue
        if not node.inputs:
            made[id(node)] = node              # constants (and other sources) are shared
            continue
        inputs = tuple(made[id(i)] for i in node.inputs)
        shape, dtype = infer(node.op, inputs, node.attrs)
        made[id(node)] = Tensor(node.op, inputs, node.attrs, shape, dtype, node.name)
    return new_inputs, [None if o is None else made[id(o)] for o in outputs]
