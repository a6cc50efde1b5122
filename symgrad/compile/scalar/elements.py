"""Element rules: each supported op record's value as an array (numpy object array) of
scalar sympy expressions of its inputs' elements, and the straight-line code of a region.

Every element that is not an atom (a symbol or a number) is bound to a temporary ``t<k>``
as soon as it is made, so each statement is one node's work over atoms: the code is a DAG
whose size is linear in the region, never an expanded tree (sympy's automatic evaluation
only ever sees small expressions), and equal statements are made once (hash-consed).
Sums of an exact zero (the fills of ``getitem_grad``, padding) drop the zero, as the
printer does (``x + 0.0`` is ``x``); a zero factor stays (``0.0*x`` is NaN at x = inf).

``ELEMENT_RULES`` is keyed by op record (never by name). Records that only move entries,
and the sums and products below, run their own numpy forward on object arrays: numpy moves
the expressions (transpose, reshape, stack, getitem, ...) or adds and multiplies them
(matmul, einsum, reduce_sum, unbroadcast: numpy's order of terms, sympy's canonical
order when printed). Elementwise records use their sympy form per element, with numpy's
broadcasting.

>>> import numpy as np, sympy as sp
>>> code = ElementCode()
>>> x = np.array(sp.symbols("x0:2", real=True), dtype=object)
>>> t = code.bind(x[0] * x[1] + x[0], np.dtype("float64"))
>>> s = code.statements[0]
>>> t, s.template.expr, s.args
(t0, Q0_*Q1_ + Q0_, (x0, x1))
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np
import sympy as sp
from sympy.core.assumptions import StdFactKB

from ...ops.contraction import records as C
from ...ops.indexing import records as I
from ...ops.layout import records as L
from ...ops.reductions import records as R
from ...ops.symbols import dtype_kind
from ..codegen.lower import _attrs_key, node_expression, node_formula
from ..printing.printer import ZERO, number
from .gather_elements import GATHER_RULES
from .linalg_elements import LINALG_RULES

__all__ = ["ELEMENT_RULES", "ElementCode", "region_code"]


def _symbol(name: str, dtype) -> sp.Symbol:
    """``Symbol(name, real=True)`` (float), ``integer=True`` (int) or plain (bool), made
    once per name (a region makes one per statement: sympy's constructor deduces the
    assumptions anew each time, ~30 us, most of a large region's element work)."""
    kind = dtype_kind(dtype)
    found = _SYMBOLS.get((name, kind))
    if found is None:
        found = _SYMBOLS[(name, kind)] = _fresh(name, kind)
        _KIND_OF[id(found)] = kind
    return found


_SYMBOLS: dict = {}
_KIND_OF: dict = {}     # id of a symbol of ``_SYMBOLS`` (kept alive there) -> its _kind
_ASSUMPTIONS = {"f": {"real": True}, "i": {"integer": True}, "b": {}}
_PROTOTYPES: dict = {}


def _made(name: str, kind: str) -> sp.Symbol:
    return sp.Symbol(name, **_ASSUMPTIONS[kind])


def _fresh(name: str, kind: str) -> sp.Symbol:
    """A new symbol with the deduced assumptions of a prototype of its kind copied (what
    ``Symbol.__xnew__`` stores; checked equal to sympy's own once per kind, else sympy's
    constructor)."""
    proto = _PROTOTYPES.get(kind)
    if proto is None:
        base = _made("_sg_proto", kind)
        proto = _PROTOTYPES[kind] = (base, dict(base._assumptions))
        try:
            probe, want = _copy(proto, "_sg_probe"), _made("_sg_probe", kind)
            same = probe == want and hash(probe) == hash(want) and \
                probe._assumptions == want._assumptions and probe.is_real == want.is_real
        except AttributeError:          # another sympy's internals
            same = False
        if not same:
            proto = _PROTOTYPES[kind] = None
    return _made(name, kind) if proto is None else _copy(proto, name)


def _copy(proto: tuple, name: str) -> sp.Symbol:
    base, facts = proto
    kb = StdFactKB.__new__(StdFactKB)
    dict.update(kb, facts)
    kb.rules, kb._generator = base._assumptions.rules, base._assumptions._generator
    obj = sp.Expr.__new__(sp.Symbol)
    obj.name = name
    obj._assumptions = kb
    obj._assumptions_orig = base._assumptions_orig
    obj._assumptions0 = base._assumptions0
    return obj


def _numpy_forward(node, args: list) -> np.ndarray:
    """The record's own numpy forward on object arrays of expressions."""
    return np.asarray(node.op.numpy(*args, **node.attrs), dtype=object)


_MOVES = (L.transpose, L.reshape, L.reshape_like, L.expand_dims, L.broadcast_like,
          L.broadcast_to, L.squeeze, L.concat, L.concat_part, L.stack, L.unstack, L.split,
          L.reverse, L.roll, L.tile, I.getitem)
_SUMS = (R.reduce_sum, R.reduce_mean, R.unbroadcast, C.matmul, C.einsum, C.tensordot,
         L.tile_grad)



def _scatter(node, args: list) -> np.ndarray:
    """``getitem_grad(g, like, key)``: ``g`` at ``key`` in exact zeros (numpy's forward
    would store a 0-d ``g`` as an array object in the object array)."""
    g = args[0]
    out = np.full(np.shape(args[1]), ZERO, dtype=object)
    out[node.attrs["key"]] = g[()] if g.ndim == 0 else g
    return out


ELEMENT_RULES = {**{op: _numpy_forward for op in _MOVES + _SUMS}, I.getitem_grad: _scatter,
                 **LINALG_RULES, **GATHER_RULES}
"""{structural record: rule(node, input object arrays) -> object array of its value}; a rule
with ``binds = True`` (small linear algebra, ``linalg_elements.py``; index ops with
constant indices, ``gather_elements.py``) also takes the
``ElementCode`` to bind its intermediate values."""


def _clean(value, dtype) -> sp.Basic:
    """One element as sympy: numbers typed by the node (a float 0 is ``ZERO``), an exact
    zero term dropped from a sum."""
    if not isinstance(value, sp.Basic):
        return number(float(value)) if dtype.kind == "f" else number(value)
    if value.is_Add and ZERO in value.args:
        terms = [a for a in value.args if a is not ZERO]
        return sp.Add(*terms) if terms else ZERO
    return value


@dataclass(frozen=True)
class Statement:
    """``symbol = template`` with slot ``Q<k>_`` standing for ``args[k]`` (atoms)."""

    symbol: sp.Symbol
    template: "Template"
    args: tuple


@dataclass(eq=False)
class Template:
    """A statement's form over slots ``Q<k>_`` (shared by every statement of that form;
    printed once, ``source.py``)."""

    expr: sp.Basic
    text: Optional[str] = None    # printed, set by source.py


def _kind(atom) -> str:
    found = _KIND_OF.get(id(atom))     # a symbol of ``_SYMBOLS``: alive, its id unique
    if found is not None:
        return found
    return "f" if atom.is_real else "i" if atom.is_integer else "b"


def _slot(k: int, kind: str) -> sp.Symbol:
    return _SLOTS.setdefault((k, kind), _symbol(f"Q{k}_", np.dtype(
        {"f": "float64", "i": "int64", "b": "bool"}[kind])))


_SLOTS: dict = {}


def _pattern(values: list) -> tuple:
    """(the pattern of atom ``values``: slots by first occurrence or numbers, the atoms of
    the slots). Symbols are told apart by identity (one object per name, ``_symbol``):
    sympy's ``__hash__`` is a Python call, most of a large region's element work."""
    slots: dict = {}
    atoms: list = []
    pattern = []
    for v in values:
        if v.is_Symbol and v is not ZERO:
            k = slots.get(id(v))
            if k is None:
                k = slots[id(v)] = len(atoms)
                atoms.append(v)
            pattern.append((k, _KIND_OF.get(id(v)) or _kind(v)))
        else:
            pattern.append(v)
    return tuple(pattern), tuple(atoms)


def _shape(expr, slots: dict):
    """A hashable key of ``expr``'s form with its symbols as slots (``slots`` filled)."""
    if expr.is_Symbol and expr is not ZERO:
        return slots.setdefault(expr, len(slots)), _kind(expr)
    if not expr.args:
        return expr
    return (expr.func,) + tuple(_shape(a, slots) for a in expr.args)


class ElementCode:
    """Straight-line statements, one per distinct non-atomic element value: each a
    ``Template`` (found once per form) and the atoms of its slots."""

    def __init__(self):
        self.statements: list = []
        self.memo: dict = {}        # (id(template), id(arg), ..) -> symbol
        self.templates: dict = {}   # form key -> Template, or an atom result

    def bind(self, expr: sp.Basic, dtype) -> sp.Basic:
        """An expression over atoms as an atom (a new statement unless one is equal)."""
        if expr.is_Atom:
            return expr
        slots: dict = {}
        key = ("expr", _shape(expr, slots))
        template = self.templates.get(key)
        if template is None:
            atoms = list(slots)
            form = expr.xreplace({a: _slot(k, _kind(a)) for k, a in enumerate(atoms)})
            template = self.templates[key] = Template(form)
        return self.emit(template, tuple(slots), dtype)

    def emit(self, template, args: tuple, dtype) -> sp.Basic:
        if not isinstance(template, Template):     # the form is an atom: a slot or number
            return args[template[1]] if isinstance(template, tuple) else template
        key = (id(template), *map(id, args))   # atoms by identity (kept alive in statements)
        found = self.memo.get(key)
        if found is None:
            found = self.memo[key] = _symbol(f"t{len(self.statements)}", dtype)
            self.statements.append(Statement(found, template, args))
        return found

    def recorded(self, value, dtype) -> sp.Basic:
        """A recorded sum or product element (``_Sum``) as an atom: its form replayed
        with sympy once per form, then a statement as ``apply``'s."""
        if not isinstance(value, _Sum) or value.op is None:
            return self.bind(_clean(value.a if isinstance(value, _Sum) else value, dtype),
                             dtype)
        slots: dict = {}
        atoms: list = []
        key = ("sum", dtype.kind, _form(value, slots, atoms))
        template = self.templates.get(key)
        if template is None:
            args = [_slot(k, _kind(a)) for k, a in enumerate(atoms)]
            expr = _clean(_replay(value, slots, args), dtype)
            template = self._template(expr, args)
            self.templates[key] = template
        return self.emit(template, tuple(atoms), dtype)

    def _template(self, expr: sp.Basic, slots: list):
        """The template of a form over ``slots``: ("slot", k), a number, or one
        ``Template`` per distinct expression."""
        if expr.is_Atom:
            k = next((k for k, a in enumerate(slots) if a == expr), None)
            return ("slot", k) if k is not None else expr
        template = self.templates.get(("form", expr))
        if template is None:
            template = self.templates[("form", expr)] = Template(expr)
        return template

    def apply(self, node, formula: tuple, values: list) -> sp.Basic:
        """An elementwise node's value over atom ``values`` (its form found once per
        pattern of the values: which are equal symbols, which numbers)."""
        pattern, atoms = _pattern(values)
        key = ("node", id(formula), pattern)
        template = self.templates.get(key)
        if template is None:
            args = [_slot(*p) if isinstance(p, tuple) else p for p in pattern]
            expr = _clean(node_expression(node, formula, args), node.dtype)
            if expr.is_Atom:
                slot = next((k for k, p in enumerate(pattern) if isinstance(p, tuple)
                             and args[k] == expr), None)
                template = ("slot", pattern[slot][0]) if slot is not None else expr
            else:   # the same form from another node: one template
                template = self.templates.get(("form", expr))
                if template is None:
                    template = self.templates[("form", expr)] = Template(expr)
            self.templates[key] = template
        return self.emit(template, atoms, node.dtype)


def _flat(array: np.ndarray, shape: tuple) -> list:
    """The elements of ``array`` broadcast to ``shape``, in C order."""
    if array.shape != shape:
        array = np.broadcast_to(array, shape)
    return array.ravel().tolist() if array.ndim else [array[()]]


def _array(values: list, shape: tuple) -> np.ndarray:
    """An object array of ``shape`` holding ``values`` (C order)."""
    out = np.empty(len(values), dtype=object)
    for k, v in enumerate(values):
        out[k] = v
    return out.reshape(shape)


def _distinct(columns: list) -> tuple:
    """(the first index of each distinct row of ``columns`` by identity of its objects, in
    the order of first occurrence; each row's place in that list) for lists of objects
    alive in ``columns`` (ids unique)."""
    n = len(columns[0])
    if n < 1024:
        seen: dict = {}
        inverse = [seen.setdefault(key, len(seen)) for key in
                   (zip(*map(lambda c: map(id, c), columns)) if len(columns) > 1
                    else map(id, columns[0]))]
        firsts = [0] * len(seen)
        for k in range(n - 1, -1, -1):
            firsts[inverse[k]] = k
        return firsts, inverse
    return _distinct_ids(np.array([list(map(id, c)) for c in columns], dtype=np.int64))


def _distinct_ids(ids: np.ndarray) -> tuple:
    """``_distinct`` of the rows of ``ids`` (one row of object ids per column): the columns
    hashed into one key, the groups checked equal (a collision: the exact key)."""
    key = ids[0]
    if len(ids) > 1:
        key = ids[0].view(np.uint64)
        for row in ids[1:]:
            key = key * np.uint64(0x9E3779B97F4A7C15) ^ row.view(np.uint64)
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    if len(ids) > 1 and not np.array_equal(ids[:, first[inverse]], ids):
        key = np.ascontiguousarray(ids.T).view(np.dtype((np.void, 8 * len(ids)))).ravel()
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        inverse = inverse.ravel()
    order = np.argsort(first, kind="stable")       # first occurrence: a deterministic order
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return first[order].tolist(), rank[inverse]


def _ids(array: np.ndarray, shape: tuple) -> np.ndarray:
    """The ids of ``array``'s objects broadcast to ``shape``, flat (read once per element
    of ``array``, not of the broadcast)."""
    ids = np.fromiter(map(id, array.ravel().tolist()), dtype=np.int64, count=array.size)
    return np.broadcast_to(ids.reshape(array.shape), shape).ravel()


def _spread(values: list, inverse, shape: tuple) -> np.ndarray:
    """An object array of ``shape`` whose element k is ``values[inverse[k]]``."""
    return _array(values, (len(values),))[np.asarray(inverse, dtype=np.int64)].reshape(shape)


def _elementwise(node, args: list, code: ElementCode) -> np.ndarray:
    key = ("formula", node.op, _attrs_key(node.attrs) if node.attrs else (),
           tuple([i.dtype for i in node.inputs]))
    formula = code.templates.get(key)
    if formula is None:
        formula = code.templates[key] = node_formula(node)
    shape = tuple(node.shape)
    apply = code.apply
    if args and math.prod(shape) == 1 and [a.size for a in args].count(1) == len(args):
        out = np.empty(shape, dtype=object)     # one element (most of an unrolled loop's)
        out[(0,) * len(shape)] = apply(node, formula, [a.item() for a in args])
        return out
    if not args:
        values = [apply(node, formula, []) for _ in range(int(np.prod(shape, dtype=np.int64)))]
        return _array(values, shape)
    # a row of the same atoms (a broadcast, a Jacobian's repeated zeros) is applied once
    if int(np.prod(shape, dtype=np.int64)) < 1024:
        columns = [_flat(a, shape) for a in args]
        firsts, inverse = _distinct(columns)
    else:                   # ids of the inputs' own elements, broadcast as numbers
        firsts, inverse = _distinct_ids(np.array([_ids(a, shape) for a in args]))
        columns = [np.broadcast_to(a, shape).reshape(-1)[firsts].tolist() for a in args]
        firsts = range(len(firsts))
    return _spread([apply(node, formula, [c[k] for c in columns]) for k in firsts],
                   inverse, shape)


class _Sum:
    """An element of a sum or product rule recorded, not computed: numpy's forward on
    object arrays of ``_Sum`` leaves records its ``+``, ``*``, ``-`` and ``/`` in numpy's
    order; ``ElementCode.recorded`` then replays each distinct form once on slots with
    sympy (the same sympy arithmetic on the same operands, in the same order, as the
    forward on sympy atoms: hundreds of sympy ``Add``/``Mul`` per element were most of a
    matmul chain's build). ``op`` None: a leaf holding ``a``."""

    __slots__ = ("op", "a", "b")

    def __init__(self, op, a, b=None):
        self.op, self.a, self.b = op, a, b

    def __add__(self, other):
        return _Sum("+", self, other)

    def __radd__(self, other):
        return _Sum("+", other, self)

    def __sub__(self, other):
        return _Sum("-", self, other)

    def __rsub__(self, other):
        return _Sum("-", other, self)

    def __mul__(self, other):
        return _Sum("*", self, other)

    def __rmul__(self, other):
        return _Sum("*", other, self)

    def __truediv__(self, other):
        return _Sum("/", self, other)

    def __rtruediv__(self, other):
        return _Sum("/", other, self)

    def __neg__(self):
        return _Sum("neg", self)

    def __pos__(self):
        return self


_REPLAY = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
           "/": lambda a, b: a / b, "neg": lambda a, b: -a}


def _form(v, slots: dict, atoms: list):
    """A hashable key of a recorded element's form (symbols as slots by first
    occurrence, ``slots``/``atoms`` filled)."""
    if type(v) is _Sum:                 # about a million calls for 200 matmul layers
        op = v.op
        if op is not None:
            b = v.b
            return (op, _form(v.a, slots, atoms), None if b is None else _form(b, slots, atoms))
        v = v.a
    if isinstance(v, sp.Basic):
        if v.is_Symbol and v is not ZERO:
            k = slots.get(id(v))
            if k is None:
                k = slots[id(v)] = len(atoms)
                atoms.append(v)
            return k, _KIND_OF.get(id(v)) or _kind(v)
        return "n", v
    return "p", type(v), v


def _replay(v, slots: dict, args: list):
    """The recorded element ``v`` computed with sympy on ``args`` (its atoms' slots)."""
    if isinstance(v, _Sum):
        if v.op is None:
            v = v.a
        else:
            b = None if v.b is None else _replay(v.b, slots, args)
            return _REPLAY[v.op](_replay(v.a, slots, args), b)
    if isinstance(v, sp.Basic) and v.is_Symbol and v is not ZERO:
        return args[slots[id(v)]]
    return v


def _recorded_values(node, args: list):
    """The rule's value on recorded leaves (None where numpy's forward does not take
    them: the sympy forward runs instead)."""
    leaves = []
    for a in args:
        out = np.empty(a.shape, dtype=object)
        flat = out.reshape(-1)
        for k, v in enumerate(a.ravel().tolist() if a.ndim else [a[()]]):
            flat[k] = _Sum(None, v)
        leaves.append(out)
    try:
        value = _numpy_forward(node, leaves)
    except (TypeError, AttributeError, ValueError):
        return None
    return value if value.shape == tuple(node.shape) else None


def node_elements(node, args: list, code: ElementCode) -> np.ndarray:
    """The value of ``node`` as an object array over the elements of ``args``."""
    if node.kind == "elementwise":
        return _elementwise(node, args, code)
    shape = tuple(node.shape)
    rule = ELEMENT_RULES[node.op]
    if node.op in _SUM_RULES:
        value = _recorded_values(node, args)
        if value is not None:
            return _array([code.recorded(v, node.dtype) for v in _flat(value, shape)], shape)
    value = rule(node, args, code) if getattr(rule, "binds", False) else rule(node, args)
    if value.shape != shape:
        raise AssertionError(f"scalar pass: rule of {node.op} gave shape {value.shape}, "
                             f"expected {node.shape}")
    bind, dtype = code.bind, node.dtype
    flat = _flat(value, shape)
    firsts, inverse = _distinct([flat])          # an element moved to many places once
    return _spread([bind(_clean(flat[k], dtype), dtype) for k in firsts], inverse, shape)


_SUM_RULES = frozenset(_SUMS)


def constant_elements(node) -> np.ndarray:
    """A folded constant's elements as sympy numbers (``ZERO`` for a float 0)."""
    value = np.asarray(node.value)
    known: dict = {}        # each distinct value made once (0.0 and -0.0 are both ZERO)
    flat = value.ravel().tolist()
    out = np.empty(len(flat), dtype=object)
    for k, v in enumerate(flat):
        found = known.get(v)
        if found is None:
            found = known[v] = number(v)
        out[k] = found
    return out.reshape(value.shape)


def input_elements(k: int, node) -> np.ndarray:
    """Symbols ``r<k>_<flat index>`` for the elements of the region's ``k``-th input."""
    out = np.empty(node.shape, dtype=object)
    for flat, index in enumerate(np.ndindex(*node.shape)):
        out[index] = _symbol(f"r{k}_{flat}", node.dtype)
    return out


def region_code(members: list, inputs: list, outputs: list) -> tuple:
    """(statements, reads, results) of a region: ``reads[k]`` the object array of symbols
    of ``inputs[k]``, ``results[j]`` the object array of ``outputs[j]``'s elements (atoms:
    symbols of statements or reads, numbers)."""
    code = ElementCode()
    values: dict = {}
    reads = []
    for k, node in enumerate(inputs):
        reads.append(input_elements(k, node))
        values[id(node)] = reads[-1]
    for node in members:
        args = []
        for i in node.inputs:
            found = values.get(id(i))
            if found is None:     # a constant: its elements made once per region
                found = values[id(i)] = constant_elements(i)
            args.append(found)
        values[id(node)] = node_elements(node, args, code)
    return code.statements, reads, [values[id(o)] for o in outputs]
