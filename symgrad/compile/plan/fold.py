"""Constant folding and identities: the graph a compiled function is planned from.

``fold_graph`` copies the graph of the outputs into light ``LNode`` records while it

* removes identities (``identity``, ``stop_gradient``, a ``cast`` to the same dtype, a
  reshape to the same fully known shape),
* computes every node whose inputs are all constants (with the reference interpreter,
  so the folded value is exactly what ``sg.evaluate`` computes; an elementwise node of
  uniform constants once on the scalars, an ``expr`` one by sympy as lowering inlines it),
* turns ``ones_like``/``zeros_like``/``axis_size`` of fully known shapes into constants,
* merges structurally identical nodes (gradient graphs repeat themselves),
* applies the rewrites of ``rewrite.py`` (outer products, reuse of computed ``f(x)``),
  after ``selects.py``'s (indexing folded back through stacks).

A constant whose elements are all equal is *uniform*: lowering inlines it as a number.

>>> import symgrad as sg
>>> x = sg.placeholder("x", shape=(3,))
>>> g = fold_graph([sg.identity(x * (sg.constant(2.0) + 1.0))])
>>> [n.op.name for n in g.order], g.outputs[0].inputs[1].uniform
(['placeholder', 'constant', 'multiply'], 3.0)
"""

from __future__ import annotations

import hashlib
from array import array
import math
from typing import Optional

import numpy as np
import sympy as sp

from ...evaluate import run_node
from ...graph.tensor import Tensor
from ...ops.symbols import dtype_kind, input_symbol
from ...graph.traversal import placeholders_of, topological_order
from ...collector import paused_gc
from ...shapes import is_fully_known
from .oprules import CONSTANT, FILLS, IDENTITIES, PLACEHOLDER, E, S
from ..printing.printer import number
from .rewrite import clone_cheap, outer_product, reuse_values
from .selects import fold_selects

FOLD_LIMIT = 1 << 20  # constants larger than this many elements are not folded
INFLATE_MIN = 4096    # larger elementwise folds that would grow the constant bytes are not made
FOLD_WORK = 1 << 26   # the most multiply-adds a folded constant product may cost at build time


class LNode:
    """One node of the folded graph; ``tensor`` is the original node it stands for."""

    __slots__ = ("op", "inputs", "attrs", "shape", "dtype", "name", "value", "uniform",
                 "index", "tensor", "dims")

    def __init__(self, tensor, op, inputs, attrs, value=None):
        self.tensor = tensor
        self.op = op
        self.inputs = tuple(inputs)
        self.attrs = attrs
        self.shape = tensor.shape if value is None else value.shape
        self.dtype = tensor.dtype
        self.name = tensor.name
        self.value = value
        self.uniform = _uniform(value) if value is not None else None
        self.index = -1
        self.dims = self.shape

    @property
    def kind(self) -> str:
        return self.op.kind

    @property
    def is_const(self) -> bool:
        return self.value is not None

    def __repr__(self) -> str:
        return f"<LNode {self.index} {self.op.name} '{self.name}' {self.shape}>"


def _uniform(value: np.ndarray):
    """The common value of an array whose elements are all equal (a Python scalar)."""
    if value.size == 0:
        return None
    first = value.flat[0]
    if value.ndim == 0 or all(s == 0 for s in value.strides):
        return first.item()
    if value.size > FOLD_LIMIT or not np.all(value == first):
        return None
    return first.item()


class FoldedGraph:
    """Topological ``order`` of LNodes, the ``outputs`` (None kept) and ``placeholders``."""

    def __init__(self, order: list, outputs: list, placeholders: list):
        self.order = order
        self.outputs = outputs
        self.placeholders = placeholders
        for k, node in enumerate(order):
            node.index = k
        self.consumers = {id(n): [] for n in order}
        for node in order:
            for i in node.inputs:
                self.consumers[id(i)].append(node)

    def canonical(self) -> str:
        """A text that identifies the graph (``digest`` hashes the same, compactly)."""
        return canonical_text(self.order, [[i.index for i in n.inputs] for n in self.order],
                              [None if o is None else o.index for o in self.outputs])

    def digest(self) -> str:
        """The sha256 hex digest of what ``canonical`` says, in one pass over a compact
        form (the compile key's part): each distinct attribute text (an expression's, in
        ``canonical`` once per node) and each distinct node signature (op, shape, dtype,
        placeholder name, attributes) numbered once, the nodes an array of ints (their
        signature's number, their inputs' count and indices).

        >>> import symgrad as sg
        >>> x = sg.placeholder("x", shape=(3,))
        >>> a, b = (fold_graph([f(x) * x]) for f in (sg.sin, sg.cos))
        >>> a.digest() == fold_graph([sg.sin(x) * x]).digest(), a.digest() == b.digest()
        (True, False)
        """
        exprs: dict = {}
        numbered: tuple = ({}, {})   # per kind (other, expr): id(attribute value) -> number
        table: dict = {}       # the attributes' distinct texts -> their number
        signatures: dict = {}  # the nodes' distinct signatures -> their number
        flat = [len(self.order)]
        for node in self.order:
            v = node.value
            if v is not None:
                attrs = (v.dtype.str, v.shape, _value_digest(v))
            elif node.attrs:
                attrs = []
                given = node.attrs
                for key in sorted(given) if len(given) > 1 else given:
                    v = given[key]
                    expr = key == "expr"
                    part = numbered[expr].get(id(v))
                    if part is None:
                        text = _expr_text(v, exprs) if expr else _repr(v)
                        part = table.get(text)
                        if part is None:
                            part = table[text] = len(table)
                        numbered[expr][id(v)] = part
                    attrs += (key, part)
                attrs = tuple(attrs)
            else:
                attrs = None
            signature = (node.op.name, node.shape, node.dtype.str,
                         node.name if node.op is PLACEHOLDER else None, attrs)
            number = signatures.get(signature)
            if number is None:
                number = signatures[signature] = len(signatures)
            inputs = node.inputs
            flat += (number, len(inputs))
            flat += [i.index for i in inputs]
        flat += [-1 if o is None else o.index for o in self.outputs]
        h = hashlib.sha256(repr((list(table), list(signatures))).encode())
        h.update(array("q", flat).tobytes())
        return h.hexdigest()


def canonical_text(order: list, inputs: list, outputs: list) -> str:
    """``FoldedGraph.canonical`` of the LNodes ``order`` with their ``inputs`` (by index,
    per node) and the ``outputs`` (indices or None) as given."""
    lines = []
    exprs: dict = {}
    for node, read in zip(order, inputs):
        if node.is_const:
            attrs = f"{node.value.dtype.str}{node.value.shape}{_value_digest(node.value)}"
        else:
            attrs = _attrs_text(node.attrs, exprs)
        lines.append(f"{node.op.name}|{read}|{node.shape}|"
                     f"{node.dtype.str}|{node.name if node.op is PLACEHOLDER else ''}"
                     f"|{attrs}")
    lines.append(f"out {outputs}")
    return "\n".join(lines)


def _value_digest(value: np.ndarray) -> str:
    """A digest of a constant's elements; a broadcast of one element (every stride 0,
    the folded fills and seeds) is hashed as that element, not as the full array."""
    if value.size and all(st == 0 for st in value.strides):
        return "u" + hashlib.sha256(value.flat[0:1].tobytes()).hexdigest()[:24]
    return hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()[:24]


def _attrs_text(attrs: dict, exprs: dict) -> str:
    parts = []
    for key in sorted(attrs):
        value = attrs[key]
        parts.append(f"{key}={_expr_text(value, exprs)}" if key == "expr" else
                     f"{key}={_repr(value)}")
    return ",".join(parts)


def _expr_text(expr, memo: dict) -> str:
    """A text naming a sympy tree exactly: each node's class and its args in sympy's
    canonical order, ``srepr`` for atoms (a symbol's assumptions, a number's digits);
    about 4x faster than ``srepr`` of the whole, which orders terms by printing them.

    >>> x = sp.Symbol("x", real=True)
    >>> _expr_text(sp.sin(x) + 2, {})[:37]
    "Add(Integer(2),sin(Symbol('x',commuta"
    """
    text = memo.get(id(expr))   # by identity: no sympy equality between 2 and 2.0
    if text is None:
        if not isinstance(expr, sp.Basic):
            text = repr(expr)
        elif isinstance(expr, sp.Symbol) and not isinstance(expr, sp.Dummy):
            # the closure of its given assumptions: srepr prints whatever a symbol's
            # cache holds (an unpickled symbol lists every deduced fact), so the same
            # symbol would name differently with the process's history
            facts = ",".join(f"{k}={v}" for k, v in sorted(expr.assumptions0.items()))
            text = f"{type(expr).__name__}({expr.name!r},{facts})"
        elif not expr.args:
            text = sp.srepr(expr)
        else:
            text = f"{type(expr).__name__}({','.join(_expr_text(a, memo) for a in expr.args)})"
        memo[id(expr)] = text
    return text


def _alias(tensor, inputs: list, dims) -> Optional[LNode]:
    """The input a node is an identity of, if it is one."""
    op = tensor.op
    if op not in _ALIAS_OPS:
        return None
    if op in IDENTITIES:
        return inputs[0]
    if op is S.cast and tensor.dtype == inputs[0].dtype:
        return inputs[0]
    if op in (S.reshape, S.reshape_like, S.broadcast_like) and \
            is_fully_known(tensor.shape) and inputs[0].shape == tensor.shape:
        return inputs[0]
    if op in (S.unbroadcast, S.reshape_like, S.broadcast_like) and \
            dims.resolve(inputs[0].dims) == dims.resolve(inputs[1].dims):
        return inputs[0]
    if op is S.unbroadcast_any and dims.resolve(inputs[1].dims) == dims.resolve(inputs[2].dims):
        return inputs[0]   # the mask already fits: nothing is summed
    if op is S.expand_dims and not tensor.attrs["axes"]:
        return inputs[0]
    return None


_ALIAS_OPS = IDENTITIES | {S.cast, S.reshape, S.reshape_like, S.broadcast_like, S.unbroadcast,
                           S.unbroadcast_any, S.expand_dims}   # the ops ``_alias`` may drop


def _fold_value(tensor, inputs: list) -> Optional[np.ndarray]:
    """The constant value of a node, when it can be known before any call."""
    op = tensor.op
    if op not in _FILL_LIKE:             # the common case: a node reading a computed input
        for i in inputs:
            if i.value is None:
                return None
    if op in FILLS and is_fully_known(tensor.shape):
        fill = np.array(FILLS[op], dtype=tensor.dtype)
        return np.broadcast_to(fill, tensor.shape)
    if op is S.axis_size and is_fully_known(inputs[0].shape):
        return run_node(tensor, [np.broadcast_to(np.zeros((), inputs[0].dtype), inputs[0].shape)])
    if op is S.broadcast_like and inputs[0].is_const and inputs[0].uniform is not None \
            and is_fully_known(tensor.shape):
        return np.broadcast_to(np.asarray(inputs[0].uniform, tensor.dtype), tensor.shape)
    if not inputs or not all(i.is_const for i in inputs):
        return None
    if any(i.value.size > FOLD_LIMIT for i in inputs) or op is S.matmul and \
            not _matmul_folds(inputs):
        return None
    if op.kind == "elementwise" and all(i.uniform is not None for i in inputs):
        value = _fold_uniform(tensor, inputs)
        if value is not None:
            return None if value.size > FOLD_LIMIT else value
    try:
        value = run_node(tensor, [i.value for i in inputs])
    except Exception:  # noqa: BLE001 - a failing fold is left for run time to report
        return None
    if value.size > FOLD_LIMIT or _inflates(tensor, inputs, value):
        return None
    return value


_FILL_LIKE = frozenset(FILLS) | {S.axis_size, S.broadcast_like}   # fold without constants


def _matmul_folds(inputs: list) -> bool:
    """Whether a product of two constants is folded: by what it costs, not by its inputs'
    sizes. Its multiply-adds are paid once at build time (at most ``FOLD_WORK``: a
    fraction of a second) instead of on every call, and the folded result is read
    instead of both inputs unless it is larger than they are (an outer product:
    ``(n, 1) @ (1, n)``), which a kernel would rather compute from the small inputs.

    >>> import symgrad as sg
    >>> L = sg.constant(np.eye(100) * 2.0)
    >>> [n.op.name for n in fold_graph([L @ sg.constant(np.ones((100, 100)))]).order]
    ['constant']
    >>> col = sg.constant(np.arange(1000.0).reshape(1000, 1))
    >>> [n.op.name for n in fold_graph([col @ sg.constant(np.ones((1, 1000)))]).order]
    ['constant', 'constant', 'multiply']
    """
    a, b = inputs[0].value, inputs[1].value
    if a.ndim == 0 or b.ndim == 0 or a.shape[-1] != b.shape[-2 if b.ndim >= 2 else 0]:
        return True                     # not a product numpy takes: run_node says why
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        return True
    m = a.shape[-2] if a.ndim >= 2 else 1
    n = b.shape[-1] if b.ndim >= 2 else 1
    out = math.prod(batch) * m * n
    if out * a.shape[-1] > FOLD_WORK:
        return False
    read = a.nbytes + b.nbytes         # a product reads its inputs whole, uniform or not
    return out <= INFLATE_MIN or out * np.result_type(a, b).itemsize <= read


def _fold_uniform(tensor, inputs: list) -> Optional[np.ndarray]:
    """An elementwise node of uniform constants (``-ones_like(x)`` of a gradient seed),
    computed once on the scalars and broadcast: no array of the full shape, and an ``expr``
    node's number by sympy as lowering would inline it (no lambdify); None if it cannot."""
    shape = np.broadcast_shapes(*(i.value.shape for i in inputs))
    scalars = [np.asarray(i.uniform, i.dtype) for i in inputs]
    value = _expr_scalar(tensor, inputs, scalars) if tensor.op is E.expr else None
    if value is None:
        try:
            value = run_node(tensor, scalars)
        except Exception:  # noqa: BLE001 - the array fold (or run time) reports it
            return None
    if np.shape(value) != ():
        return None
    return np.broadcast_to(np.asarray(value, tensor.dtype), shape)


def _broadcast_uniform(node: LNode):
    """The uniform value that ``node`` (a constant or a broadcast_like of one) holds."""
    if node.is_const:
        return node.uniform
    if node.op is S.broadcast_like and node.inputs[0].is_const:
        return node.inputs[0].uniform
    return None


def _hoist_broadcast(tensor, inputs: list, dims: "Dims"):
    """An elementwise op of uniform constants, some broadcast_like another node ``like``
    (``-broadcast_like(1.0, y)``, the gradient seed of a sum over an unknown length), is
    the broadcast_like of the op of the scalars: one structural step fewer, and
    elementwise consumers read the folded scalar (``_bypass_broadcasts``) so the regions
    on both sides of the seed are not split. Returns (constant Tensor, broadcast_like
    Tensor, the LNode it broadcasts like) or None."""
    likes = [i for i in inputs if i.op is S.broadcast_like]
    if not likes or any(_broadcast_uniform(i) is None for i in inputs):
        return None
    target = dims.resolve(dims.broadcast([i.dims for i in inputs]))
    like = next((b.inputs[1] for b in likes if b.inputs[1].shape == tensor.shape and
                 dims.resolve(b.inputs[1].dims) == target), None)
    if like is None:
        return None
    scalars = [np.asarray(_broadcast_uniform(i), i.dtype) for i in inputs]
    if tensor.op is E.expr:
        value = _expr_scalar(tensor, inputs, scalars)
    else:
        try:
            value = np.asarray(run_node(tensor, scalars), tensor.dtype)
        except Exception:  # noqa: BLE001 - left to run time
            return None
    if value is None or value.shape != ():
        return None
    const = Tensor(CONSTANT, (), {"value": value}, (), tensor.dtype, tensor.name)
    op = likes[0].op
    node = Tensor(op, (const, like.tensor), {}, tensor.shape, tensor.dtype, tensor.name)
    return const, node, like


def _expr_scalar(tensor, inputs: list, scalars: list):
    """An ``expr`` node's value on scalars, by sympy (the numpy path lambdifies, which
    costs a first import of its namespace): the number lowering would inline for it."""
    if tensor.dtype.kind != "f":
        return None
    positional = tuple(input_symbol(k, dtype_kind(i.dtype)) for k, i in enumerate(inputs))
    formula = sp.sympify(tensor.op.formula(positional, tensor.attrs))
    value = formula.xreplace(dict(zip(positional, (number(v.item(), False) for v in scalars))))
    if not value.is_Number or not value.is_finite:
        return None
    return np.asarray(float(value), tensor.dtype)


def _inflates(tensor, inputs: list, value: np.ndarray) -> bool:
    """Whether folding an elementwise node would trade its constant inputs for a larger
    array (``where(mask, -2.0, 0.0)``: one byte per element becomes eight): left unfolded,
    the kernel that reads it computes it from the small input instead."""
    if tensor.op.kind != "elementwise" or value.size <= INFLATE_MIN or \
            _uniform(np.asarray(value)) is not None:
        return False
    read = sum(i.value.nbytes for i in inputs if i.uniform is None)
    return np.asarray(value).nbytes > read


def fold_graph(outputs: list, placeholders: Optional[list] = None) -> FoldedGraph:
    """The folded copy of the graph of ``outputs`` (None entries are kept)."""
    with paused_gc():
        return _fold_graph(outputs, placeholders)


def _fold_graph(outputs: list, placeholders: Optional[list]) -> FoldedGraph:
    outputs = fold_selects(outputs)         # x = stack([a, b], axis); x[..., 0] is a
    order = topological_order([o for o in outputs if o is not None])
    if placeholders is None:
        placeholders = placeholders_of(order)
    made: dict = {}
    seen: dict = {}
    dims = Dims()
    for p in placeholders:
        made[id(p)] = LNode(p, p.op, (), {})
        made[id(p)].dims = dims.fresh(p.shape)
    for tensor in order:
        key, op = id(tensor), tensor.op
        if key in made:
            continue
        if op is CONSTANT:
            made[key] = _intern(seen, LNode(tensor, op, (), {}, value=tensor.attrs["value"]))
            continue
        if op is PLACEHOLDER:
            made[key] = LNode(tensor, op, (), {})
            made[key].dims = dims.fresh(tensor.shape)
            continue
        inputs = [made[id(i)] for i in tensor.inputs]
        elementwise = op.kind == "elementwise"
        if elementwise:
            inputs = _bypass_broadcasts(inputs, dims)
        alias = _alias(tensor, inputs, dims)
        if alias is not None:
            made[key] = alias
            continue
        if elementwise:
            hoisted = _hoist_broadcast(tensor, inputs, dims)
            if hoisted is not None:
                const, bcast, like = hoisted
                const = _intern(seen, LNode(const, const.op, (), {}, value=const.attrs["value"]))
                node = LNode(bcast, bcast.op, (const, like), {})
                node.dims = like.dims
                made[key] = _intern(seen, node)
                continue
        value = _fold_value(tensor, inputs)
        if value is not None:
            node = LNode(tensor, CONSTANT, (), {}, value=np.asarray(value, tensor.dtype))
        else:
            node = outer_product(tensor, inputs, lambda op, ins: LNode(tensor, op, ins, {}))
            node = node or LNode(tensor, op, inputs, dict(tensor.attrs))
            node.dims = dims.infer(node)
        made[key] = _intern(seen, node)
    new_outputs = [None if o is None else made[id(o)] for o in outputs]
    roots = [made[id(p)] for p in placeholders] + [o for o in new_outputs if o is not None]
    order = _order(roots)
    for node in order:
        node.dims = dims.resolve(node.dims)
    consumers: dict = {}
    for node in order:
        for i in node.inputs:
            consumers.setdefault(id(i), []).append(node)
    changed = reuse_values(order, consumers, E.expr)
    if changed:                             # nodes now read other inputs
        consumers = {}
        for node in order:
            for i in node.inputs:
                consumers.setdefault(id(i), []).append(node)
    if changed + clone_cheap(order, consumers, _copy):
        order = _order(roots)
    return FoldedGraph(order, new_outputs, [made[id(p)] for p in placeholders])


class _DimsOf:
    """An input as a shape rule sees it: its (symbolic) dims as ``shape``, and its dtype."""

    def __init__(self, node: "LNode"):
        self.shape, self.dtype = node.dims, node.dtype


class Dims:
    """Symbolic lengths for unknown (None) dims: ``'?k'`` strings, unified where an
    elementwise op broadcasts two of them together (the plan assumes they are equal; the
    compiled function checks that at call time and otherwise runs the reference path)."""

    def __init__(self):
        self.parent: dict = {}

    def fresh(self, shape: tuple) -> tuple:
        out = []
        for d in shape:
            if d is None:
                name = f"?{len(self.parent)}"
                self.parent[name] = name
                out.append(name)
            else:
                out.append(d)
        return tuple(out)

    def find(self, d):
        if not isinstance(d, str):
            return d
        while self.parent[d] != d:
            self.parent[d] = self.parent[self.parent[d]]
            d = self.parent[d]
        return d

    def resolve(self, dims: tuple) -> tuple:
        return tuple(self.find(d) for d in dims)

    def broadcast(self, all_dims: list) -> tuple:
        rank = max((len(d) for d in all_dims), default=0)
        out = []
        for j in range(rank):
            col = [self.find(d[len(d) - rank + j]) for d in all_dims if len(d) - rank + j >= 0]
            ints = [d for d in col if not isinstance(d, str) and d != 1]
            syms = [d for d in col if isinstance(d, str)]
            if ints:
                out.append(ints[0])
            elif syms:
                for other in syms[1:]:
                    self.parent[self.find(other)] = self.find(syms[0])
                out.append(self.find(syms[0]))
            else:
                out.append(1)
        return tuple(out)

    def infer(self, node: "LNode") -> tuple:
        op, attrs = node.op, node.attrs
        ins = [i.dims for i in node.inputs]
        if op.kind == "elementwise":
            first = ins[0] if ins else None
            if first is not None and ins.count(first) == len(ins) and \
                    str not in map(type, first):
                result = first          # what ``broadcast`` makes of equal integer dims
            else:
                result = self.broadcast(ins)
            if len(result) == len(node.shape):
                return result
        elif op.symbolic_dims:   # the record's own shape rule, applied to symbolic dims
            shape, _ = op.infer(*[_DimsOf(i) for i in node.inputs], **attrs)
            return tuple(shape)
        return self.fresh(node.shape)


def _bypass_broadcasts(inputs: list, dims: "Dims") -> list:
    """An elementwise op broadcasts by itself: it can read x instead of
    ``broadcast_like(x, like)`` (which also frees it from depending on ``like``) when the
    other inputs give the result the same dims anyway."""
    bcast = S.broadcast_like
    for i in inputs:
        if i.op is bcast or str in map(type, i.dims):
            break
    else:
        return list(inputs)             # nothing to bypass, no symbolic dims to unify
    target = dims.broadcast([i.dims for i in inputs])
    out = list(inputs)
    for k, node in enumerate(inputs):
        while node.op is S.broadcast_like:
            trial = out[:k] + [node.inputs[0]] + out[k + 1:]
            if len(target) != len(dims.broadcast([i.dims for i in trial])) or \
                    dims.resolve(dims.broadcast([i.dims for i in trial])) != dims.resolve(target):
                break
            node = node.inputs[0]
            out[k] = node
    return out


def _copy(node: LNode) -> LNode:
    copy = LNode(node.tensor, node.op, node.inputs, dict(node.attrs))
    copy.dims = node.dims
    return copy


def _intern(seen: dict, node: LNode) -> LNode:
    """One node per (op, inputs, attrs): later duplicates are replaced by the first."""
    if node.is_const:
        if node.value.size > 16:
            return node
        key = ("const", node.value.dtype.str, node.value.shape, node.value.tobytes())
    else:
        key = (node.op, tuple(map(id, node.inputs)), node.dtype.str, node.shape,
               _attrs_key(node.attrs))
    return seen.setdefault(key, node)


def _attrs_key(attrs: dict):
    if not attrs:
        return ()
    return tuple([(k, attrs[k] if k == "expr" else _repr(attrs[k])) for k in sorted(attrs)])


_DTYPE_REPR: dict = {}


def _repr(value) -> str:
    """``repr(value)``; a dtype's (an ``expr`` node's attribute, 25 us each) remembered."""
    if isinstance(value, np.dtype) and value.metadata is None:
        text = _DTYPE_REPR.get(value)
        if text is None:
            text = _DTYPE_REPR[value] = repr(value)
        return text
    return repr(value)


def _order(roots: list) -> list:
    """Topological order of LNodes (iterative, inputs first)."""
    out, seen = [], set()
    for root in roots:
        if id(root) in seen:
            continue
        stack = [(root, False)]
        while stack:
            node, done = stack.pop()
            if done:
                out.append(node)
                continue
            if id(node) in seen:
                continue
            seen.add(id(node))
            stack.append((node, True))
            for i in reversed(node.inputs):
                if id(i) not in seen:
                    stack.append((i, False))
    return out
