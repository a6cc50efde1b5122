"""Small tensors as their scalar components: indexing folded back through stacks.

A function written for ONE small state (``sg.vectorized_map``'s ``fn``) builds its vectors
with ``sg.stack`` and reads them back with ``y[0]`` / ``sg.unstack``. Batched, every such
stack becomes an ``(n, 2)`` array that the compiler materialises and re-reads (a kernel
each); the same program written on columns is one fused kernel. ``split_components``
rewrites the traced graph so that each small node downstream of the stand-ins is held as
a numpy object array of scalar Tensors (its *components*):

* a stand-in's (or any other kept node's) components are ``x[i]`` (one getitem each),
* ``stack``/``concat``/``unstack``/``getitem``/``reshape``/``expand_dims``/``squeeze``/
  ``transpose`` only rearrange components (numpy on the object array: no node at all),
* an elementwise op (``expr`` included) is applied component by component (broadcast),
* any other op reads its inputs re-assembled by ``stack`` (the node itself when nothing
  upstream changed), and its output is kept whole.

So ``x = stack([a, b]); x[..., 0]`` is ``a``: only the scalar chains remain, and one
``stack`` per output puts the result together. The rewrite runs only where it pays: on a
graph with a stack, concat, unstack or a getitem of a computed value, among nodes of at
most ``COMPONENTS_MAX`` elements.

>>> import symgrad as sg
>>> y = sg.placeholder("y", shape=(2,))
>>> k = sg.stack([y[1], -sg.sin(y[0])])
>>> (out,) = split_components([y + 0.1 * k], [y])
>>> from symgrad.graph.traversal import topological_order
>>> sorted({t.op.name for t in topological_order([out])})      # no (2,) add any more
['add', 'constant', 'getitem', 'multiply', 'negative', 'placeholder', 'sin', 'stack']
>>> import numpy as np
>>> float(np.abs(sg.evaluate(out, {y: [0.3, 0.7]}) - [0.37, 0.7 - 0.1 * np.sin(0.3)]).max())
0.0
"""

from __future__ import annotations

import numpy as np

from .graph.tensor import Tensor
from .graph.traversal import topological_order
from .ops.functions import F
from .ops.indexing import records as I
from .ops.layout import api as LA
from .ops.layout import records as L
from .ops.registry import apply
from .ops.sources import CONSTANT, constant
from .shapes import is_fully_known

COMPONENTS_MAX = 16   # the largest node (elements) split into its components

__all__ = ["split_components", "COMPONENTS_MAX"]


def _small(shape) -> bool:
    return is_fully_known(shape) and int(np.prod(shape, dtype=np.int64)) <= COMPONENTS_MAX


def _basic_key(key) -> bool:
    """Whether a getitem key is static basic indexing (ints, slices, None, ...)."""
    def ok(k):
        if isinstance(k, slice):
            return all(v is None or isinstance(v, (int, np.integer))
                       for v in (k.start, k.stop, k.step))
        return k is None or k is Ellipsis or (isinstance(k, (int, np.integer))
                                              and not isinstance(k, bool))
    return all(ok(k) for k in (key if isinstance(key, tuple) else (key,)))


def _squeeze(c: np.ndarray, node: Tensor) -> np.ndarray:
    axes = node.attrs.get("axes")
    return c.reshape(node.shape) if axes is None else np.squeeze(c, tuple(axes))


# How each structural op rearranges its inputs' components (numpy on object arrays).
REARRANGE: dict = {
    L.stack: lambda cs, node: np.stack(cs, node.attrs["axis"]),
    L.concat: lambda cs, node: np.concatenate(cs, node.attrs["axis"]),
    L.unstack: lambda cs, node: np.take(cs[0], node.attrs["index"], node.attrs["axis"]),
    I.getitem: lambda cs, node: cs[0][node.attrs["key"]],
    L.reshape: lambda cs, node: cs[0].reshape(node.shape),
    L.expand_dims: lambda cs, node: cs[0].reshape(node.shape),
    L.squeeze: lambda cs, node: _squeeze(cs[0], node),
    L.transpose: lambda cs, node: cs[0].transpose(node.attrs["perm"]),
}
# Among them, the ops whose presence makes the rewrite worth doing.
TRIGGERS = (L.stack, L.concat, L.unstack)


def _splittable(node: Tensor) -> bool:
    """Whether ``node``'s components follow from its inputs' components."""
    if not _small(node.shape) or not all(_small(i.shape) for i in node.inputs):
        return False
    if node.op is I.getitem:
        return _basic_key(node.attrs["key"])
    if node.op is L.reshape or node.op is L.expand_dims or node.op is L.squeeze:
        return True
    return node.op in REARRANGE or node.op.kind == "elementwise"


def _downstream(order: list, sources: set) -> set:
    below = set(sources)
    for node in order:
        if any(id(i) in below for i in node.inputs):
            below.add(id(node))
    return below


def worth_splitting(order: list, below: set, sources: set) -> bool:
    """Whether the graph stacks small values and reads them back (the rewrite's case)."""
    for node in order:
        if id(node) not in below or not _splittable(node):
            continue
        if node.op in TRIGGERS:
            return True
        if node.op is I.getitem and id(node.inputs[0]) not in sources:
            return True
    return False


class _Split:
    """The rewrite's state: components and rebuilt tensors of the visited nodes."""

    def __init__(self):
        self.comps: dict = {}       # id(node) -> object array of scalar Tensors
        self.tensors: dict = {}     # id(node) -> the Tensor standing for node
        self.whole: dict = {}       # id(first component) -> (tensor, its components)

    def components(self, node: Tensor) -> np.ndarray:
        found = self.comps.get(id(node))
        if found is not None:
            return found
        t = self.tensor(node)
        c = np.empty(node.shape, dtype=object)
        value = t.attrs["value"] if t.op is CONSTANT else None
        for idx in np.ndindex(*node.shape):
            if value is not None:
                c[idx] = constant(np.asarray(value[idx], dtype=t.dtype))
            else:
                c[idx] = t if not node.shape else F.getitem(t, idx)
        self.comps[id(node)] = c
        if c.size:
            self.whole[id(c.flat[0])] = (t, c)
        return c

    def tensor(self, node: Tensor) -> Tensor:
        found = self.tensors.get(id(node))
        if found is not None:
            return found
        c = self.comps.get(id(node))
        t = node if c is None else self._assemble(c)
        self.tensors[id(node)] = t
        return t

    def _assemble(self, c: np.ndarray) -> Tensor:
        if c.ndim == 0:
            return c[()]
        if c.size:
            t, whole = self.whole.get(id(c.flat[0]), (None, None))
            if t is not None and whole.shape == c.shape and \
                    all(a is b for a, b in zip(whole.flat, c.flat)):
                return t     # the components of a kept node, in order: the node itself
        return LA.stack([self._assemble(c[i, ...]) for i in range(c.shape[0])], 0)


def _elementwise(node: Tensor, cs: list) -> np.ndarray:
    spread = np.broadcast_arrays(*cs) if cs else []
    out = np.empty(node.shape, dtype=object)
    for idx in np.ndindex(*node.shape):
        out[idx] = apply(node.op, tuple(s[idx] for s in spread), dict(node.attrs))
    return out


def split_components(outputs: list, sources: list) -> list:
    """``outputs`` rewritten with the small nodes downstream of ``sources`` held as
    scalar components (module docstring); returned unchanged (the same list) when the
    graph has nothing to fold."""
    order = topological_order([o for o in outputs if o is not None])
    ids = {id(s) for s in sources}
    below = _downstream(order, ids)
    if not worth_splitting(order, below, ids):
        return outputs
    state = _Split()
    for node in order:
        if id(node) not in below or id(node) in ids:
            continue
        if _splittable(node):
            cs = [state.components(i) for i in node.inputs]
            rule = REARRANGE.get(node.op)
            out = rule(cs, node) if rule is not None else _elementwise(node, cs)
            state.comps[id(node)] = _as_array(out, node.shape)
            continue
        args = [state.tensor(i) for i in node.inputs]
        if any(a is not i for a, i in zip(args, node.inputs)):
            state.tensors[id(node)] = apply(node.op, tuple(args), dict(node.attrs))
    return [None if o is None else state.tensor(o) for o in outputs]


def _as_array(out, shape: tuple) -> np.ndarray:
    """A rearrangement's result as an object array (numpy hands one element back bare)."""
    if isinstance(out, np.ndarray):
        return out.reshape(shape)
    array = np.empty((), dtype=object)
    array[()] = out
    return array.reshape(shape)
