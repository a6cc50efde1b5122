"""``Body``: a function traced ONCE into a graph on placeholder stand-ins.

A loop or branch record keeps its body as a ``Body`` in its attributes: the stand-ins (one
placeholder per carry or per-step slice), the body's output tensors, and its *captures*:
the outer tensors the function closed over (a parameter, a node of the outer graph, a
stand-in of an enclosing loop). Captures become inputs of the loop node, so the outer
graph's gradients reach them; inside the body they are read like inputs.

``since`` is the id of the last node created before the trace (``marker()``): nodes made
by the trace are inside the body, and so is every node that depends on a stand-in.
A body built from another one (a branch's gradient) names the other body's nodes as
``inside`` and the outer values it reads as ``outside``: its ``since`` is the marker taken
before the gradient was built, so outer nodes made after the first trace (a ``grad_ys``
placeholder, a second gradient's seeds) are captures, not body nodes.

>>> import numpy as np
>>> import symgrad as sg
>>> from symgrad.control.body import Body, marker, stand_in
>>> theta = sg.placeholder("theta")
>>> s = sg.sin(theta)
>>> c = stand_in(theta, "c")
>>> b = Body([c], [c * s], marker())
>>> b.captures[0].op.name
'sin'
>>> float(b.run([0.5], [np.sin(2.0)])[0].round(4))
0.4546
"""

from __future__ import annotations

import hashlib
import itertools
from typing import Optional, Sequence

import numpy as np

from ..graph.tensor import Tensor
from ..graph.traversal import topological_order
from ..ops.sources import CONSTANT, placeholder

_counter = itertools.count()


def marker() -> int:
    """The id of the newest node so far (nodes made later have larger ids)."""
    from ..graph import tensor
    probe = next(tensor._ids)
    return probe


def stand_in(like: Tensor, role: str, shape: Optional[tuple] = None) -> Tensor:
    """A fresh placeholder shaped like ``like`` (or ``shape``) standing for a loop value."""
    return placeholder(f"{role}__loop{next(_counter)}", like.shape if shape is None else shape,
                       like.dtype)


def _free_nodes(outputs: list, inputs: list, since: int, outside: set, known: set) -> tuple:
    """(order of the body between inputs and outputs, captures). A node is inside the
    body when it depends on a declared input, is a constant, was created after ``since``
    (during the trace) or is ``known`` (a node of another body this one is built from);
    captures are the outside nodes that inside nodes read."""
    declared = {id(t) for t in inputs}
    order = topological_order(outputs)
    inside: dict = {}
    for node in order:
        if id(node) in declared:
            inside[id(node)] = True
            continue
        inside[id(node)] = id(node) not in outside and (
            node.op is CONSTANT or node.id > since or id(node) in known
            or any(inside[id(i)] for i in node.inputs))
    captures: dict = {}
    for node in order:
        if inside[id(node)] and id(node) not in declared:
            for i in node.inputs:
                if not inside[id(i)]:
                    captures.setdefault(id(i), i)
    for o in outputs:
        if not inside[id(o)]:
            captures.setdefault(id(o), o)
    return (topological_order(outputs, stop=list(inputs) + list(captures.values())),
            list(captures.values()))


def _same(kept: np.ndarray, value) -> bool:
    """Equal values (NaN equal to NaN): the bytes first (a loop's output steps read the
    same arguments: ~0.2 us, where array_equal costs ~15 us), array_equal where they
    differ (0.0 and -0.0)."""
    value = np.asarray(value)
    if kept.shape != value.shape or kept.dtype != value.dtype:
        return False
    return kept.tobytes() == value.tobytes() or \
        np.array_equal(kept, value, equal_nan=kept.dtype.kind in "fc")


class Body:
    """A traced function: ``inputs`` (stand-ins) -> ``outputs``, closing over ``captures``."""

    def __init__(self, inputs: Sequence[Tensor], outputs: Sequence[Tensor], since: int,
                 outside: Sequence[Tensor] = (), inside: Sequence[Tensor] = ()):
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.since = since
        self.order, self.captures = _free_nodes(self.outputs, self.inputs, since,
                                                {id(t) for t in outside},
                                                {id(t) for t in inside})
        self._key: Optional[str] = None
        self._memo: Optional[tuple] = None
        self.compiled = None          # set by symgrad.compile.loops (the compiled body)

    def run(self, inputs: Sequence, captures: Sequence) -> list:
        """The outputs' values (numpy) for input and capture values (the reference path)."""
        from ..evaluate import run_node

        values = {id(t): np.asarray(v) for t, v in zip(self.inputs, inputs)}
        values.update((id(t), np.asarray(v)) for t, v in zip(self.captures, captures))
        for node in self.order:
            if node.op is CONSTANT:
                values[id(node)] = node.attrs["value"]
            else:
                values[id(node)] = run_node(node, [values[id(i)] for i in node.inputs])
        return [values[id(o)] for o in self.outputs]

    def memo(self, args: tuple, attrs_key: tuple, compute):
        """``compute()`` once for equal arguments (the outputs of one loop are several nodes:
        evaluating each must not run the loop again). Arguments are compared by value
        (kept as copies), so an array changed in place between calls is seen; results are
        returned as copies, so no consumer can change what a sibling reads later."""
        held = self._memo
        if not (held is not None and held[1] == attrs_key and len(held[0]) == len(args) and
                all(_same(a, b) for a, b in zip(held[0], args))):
            result = compute()
            held = (tuple(np.array(a, copy=True) for a in args), attrs_key, result)
            self._memo = held
        return held[2]

    def key(self) -> str:
        """A digest of the body's structure (ops, attributes, constants, shapes)."""
        if self._key is None:
            position = {id(t): k for k, t in enumerate(self.inputs)}
            position.update((id(t), len(self.inputs) + k) for k, t in enumerate(self.captures))
            lines = [repr([(t.shape, t.dtype.str) for t in self.inputs + self.captures])]
            for k, node in enumerate(self.order):
                position[id(node)] = len(self.inputs) + len(self.captures) + k
                if node.op is CONSTANT:
                    v = np.ascontiguousarray(node.attrs["value"])
                    attrs = v.dtype.str + repr(v.shape) + hashlib.sha256(v.tobytes()).hexdigest()
                else:
                    attrs = repr(sorted((a, repr(b)) for a, b in node.attrs.items()))
                lines.append(f"{node.op.name}|{[position[id(i)] for i in node.inputs]}|"
                             f"{node.shape}|{node.dtype.str}|{attrs}")
            lines.append(repr([position[id(o)] for o in self.outputs]))
            self._key = hashlib.sha256("\n".join(lines).encode()).hexdigest()[:24]
        return self._key

    def __repr__(self) -> str:
        return f"Body({self.key()})"
