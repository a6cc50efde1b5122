"""``sg.from_sympy(expr, mapping)``: a sympy expression (or Matrix) as a symgrad Tensor.

One walk over the expression DAG, memoised on sub-expressions (sympy shares subtrees, and
equal subtrees hash alike, so each distinct sub-expression becomes one node): linear in the
DAG's size, iterative (no recursion limit), never calling ``sympy.simplify``.

* a Symbol is its ``mapping`` value (a Tensor, an eager value, or an array made a constant);
* a sub-expression free of symbols (``2``, ``pi/3``, ``sqrt(2)``, ``gamma(3/2)``) is one
  number, evaluated by sympy to 17 digits where it is used: a weak literal that takes the
  dtype of the tensor it meets (float32 inputs stay float32);
* ``Add``/``Mul`` become ``add``/``subtract``/``multiply``/``divide``/``negative`` as
  sympy's printers write them (``x - y``, ``x/(2*y)``, ``-x``);
* functions through the reverse table of the op records (``sympy_table.py``), or written
  with several ops (``sympy_composites.py``: sec, cot, sinc, Heaviside, gamma, besselj,
  LambertW, ...);
* mapping keys may be dynamicsymbols ``q(t)`` and their derivatives (``sympy_keys.py``);
* ``Piecewise`` becomes nested ``where`` (a Piecewise with no ``True`` branch is NaN where
  no condition holds, as ``lambdify``); relations and ``And``/``Or``/``Not`` become
  ``less``/.../``logical_and``/``logical_or``/``logical_not``.

>>> import sympy as sp
>>> import symgrad as sg
>>> x, y = sp.symbols("x y", real=True)
>>> X = sg.placeholder("X", shape=(3,))
>>> t = sg.from_sympy(sp.sin(x) * y + sp.Piecewise((x, x > 0), (0, True)), {x: X, y: 2.0})
>>> sg.evaluate(t, {X: [-1.0, 0.0, 1.0]}).round(4)
array([-1.6829,  0.    ,  2.6829])
>>> sg.from_sympy(sp.Matrix([[x, 1], [0, x * x]]), {x: sg.Variable(3.0)}).numpy()
array([[3., 1.],
       [0., 9.]])
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import sympy as sp

from ..errors import DTypeError, FeedError
from ..graph.tensor import Tensor
from ..ops.elementwise import api as E
from ..ops.elementwise import records as R
from ..ops.functions import F
from ..ops.registry import OpDef, apply
from ..ops.sources import constant
from ..shapes import broadcast_shapes, is_fully_known
from ..tape.eager import EagerTensor, Variable, to_array
from . import sympy_composites as composites
from .sympy_keys import is_time_function, plain_keys
from .sympy_table import float_value, is_nary, reverse_table

API = "sg.from_sympy"


class _Number:
    """A symbol-free sub-expression, evaluated only where a tensor op uses it."""

    __slots__ = ("expr", "subs")

    def __init__(self, expr: sp.Basic, subs: Any = None):
        self.expr = expr
        self.subs = subs    # the symbols mapped to Python numbers

    def value(self) -> Any:
        expr = self.expr
        if isinstance(expr, sp.logic.boolalg.Boolean) and self.subs:
            expr = expr.subs(self.subs)
        if isinstance(expr, sp.logic.boolalg.BooleanAtom):
            return bool(expr)
        if isinstance(expr, sp.logic.boolalg.Boolean):
            raise ValueError(f"{API}: the condition {_text(expr)} is not True or False")
        if expr is sp.nan:
            return float("nan")
        try:
            number = complex(expr.evalf(17, subs=self.subs or None))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{API}: the constant {_text(expr)} has no numeric value") from exc
        if number.imag != 0:
            raise ValueError(f"{API}: the constant {_text(expr)} is not real ({number}); "
                             "symgrad computes with real numbers")
        return float_value(number.real)


def _text(expr: Any, limit: int = 80) -> str:
    text = str(expr)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _negative_coefficient(term: sp.Basic) -> bool:
    return bool(term.is_Mul and term.args[0].is_Number and term.args[0].is_negative)


def _denominator(factor: sp.Basic) -> bool:
    """A Mul factor written below the fraction bar: ``y**-1``, ``y**(-1/2)``."""
    return bool(factor.is_Pow and factor.exp.is_Number and factor.exp.is_negative)


class _Converter:
    def __init__(self, mapping: Mapping, literals: dict, dtype: np.dtype, eager: bool):
        self.mapping = mapping
        self.literals = literals
        self.dtype = dtype
        self.eager = eager
        self.table = reverse_table()
        self.memo: dict = {}

    def number(self, expr: sp.Basic) -> _Number:
        return _Number(expr, self.literals)

    # --- the walk ---------------------------------------------------------------------------
    def children(self, node: Any) -> list:
        """The sub-expressions ``build`` reads (a tuple ``("neg", mul)`` is ``-mul``)."""
        if isinstance(node, tuple):
            return self.children(node[1])
        if isinstance(node, sp.Symbol) or node.is_Atom or not node.args:
            return []
        if node.is_Add:
            return [("neg", t) if _negative_coefficient(t) else t for t in node.args]
        if node.is_Mul:
            return [f.base if _denominator(f) else f for f in node.args if not f.is_Number]
        if isinstance(node, sp.Piecewise):
            return [part for pair in node.args for part in pair]
        if type(node) in self.table:
            return list(node.args)
        if isinstance(node, (sp.Expr, sp.logic.boolalg.Boolean)) and not node.free_symbols:
            return []       # a function of numbers only (gamma(3/2)): one number
        if type(node) in composites.COMPOSITES and composites.accepts(node):
            return list(node.args)
        if is_time_function(node):
            what = "derivative" if isinstance(node, sp.Derivative) else "function"
            raise FeedError(f"{API}: the expression's {what} {_text(node, 40)} is not in "
                            f"mapping; map it to a value ({{{_text(node, 40)}: ...}}: "
                            "dynamicsymbols and their derivatives are accepted as keys)")
        raise NotImplementedError(composites.unsupported(node, _text(node, 40)))

    def run(self, root: Any) -> Any:
        stack = [(root, False)]
        while stack:
            node, ready = stack.pop()
            if node in self.memo:
                continue
            kids = self.children(node)
            if ready:
                self.memo[node] = self.build(node, [self.memo[k] for k in kids])
                continue
            stack.append((node, True))
            stack.extend((k, False) for k in kids if k not in self.memo)
        return self.memo[root]

    # --- one node ---------------------------------------------------------------------------
    def build(self, node: Any, values: list) -> Any:
        if isinstance(node, tuple):
            if all(isinstance(v, _Number) for v in values):
                return self.number(-node[1])
            return self.product(node[1], values, negate=True)
        if isinstance(node, sp.Symbol):
            return self.symbol(node)
        if node.is_Atom or not node.args:
            return self.number(node)
        if all(isinstance(v, _Number) for v in values) and not isinstance(node, sp.Piecewise):
            return self.number(node)
        if node.is_Add:
            return self.sum(node, values)
        if node.is_Mul:
            return self.product(node, values, negate=False)
        if isinstance(node, sp.Piecewise):
            return self.piecewise(values)
        if type(node) not in self.table:
            return composites.build(self, node, values)
        return self.function(node, dict(zip(node.args, values)))

    def symbol(self, symbol: sp.Symbol) -> Any:
        if symbol in self.literals:
            return self.number(symbol)
        if symbol in self.mapping:
            return self.mapping[symbol]
        same = [s for s in (*self.mapping, *self.literals) if getattr(s, "name", None) == symbol.name]
        hint = (f"; mapping has a symbol named {symbol.name!r} with other assumptions "
                f"({same[0].assumptions0} vs {symbol.assumptions0}): use the same Symbol"
                if same else "")
        raise FeedError(f"{API}: the expression's free symbol {symbol.name!r} is not in "
                        f"mapping (keys: {', '.join(sorted(str(s) for s in (*self.mapping, *self.literals)))})"
                        f"{hint}")

    def apply(self, op: Any, inputs: list) -> Any:
        """``op`` on tensors and numbers: numbers are weak literals beside a numeric tensor,
        numpy scalars of the expression's dtype otherwise."""
        values = [v.value() if isinstance(v, _Number) else v for v in inputs]
        partner = any(hasattr(v, "dtype") and v.dtype.kind != "b" for v in values)
        if not partner:
            values = [self.dtype.type(v) if isinstance(v, float) else v for v in values]
        return apply(op, tuple(values)) if isinstance(op, OpDef) else op(*values)

    def call(self, name: str, *inputs: Any) -> Any:
        """``sg.<name>(*inputs)`` on tensors and numbers (as ``apply``)."""
        return self.apply(getattr(F, name), list(inputs))

    def function(self, node: sp.Basic, value_of: dict) -> Any:
        head = type(node)
        entries = self.table[head]
        for entry in entries:
            inputs = entry.match(node.args)
            if inputs is not None:
                return self.apply(entry.op, [value_of[a] for a in inputs])
        if is_nary(head):
            binary = next(e for e in entries if e.numbers == 0)
            result = value_of[node.args[0]]
            for arg in node.args[1:]:
                result = self.apply(binary.op, [result, value_of[arg]])
            return result
        if head in composites.COMPOSITES and composites.accepts(node):
            return composites.build(self, node, [value_of[a] for a in node.args])
        raise NotImplementedError(composites.unsupported(node, _text(node, 40)))

    def power(self, base: Any, exponent: sp.Basic) -> Any:
        """``base ** exponent`` for a number exponent: a special power of the table
        (``sqrt``, ``square``, ...) or ``pow``."""
        for entry in self.table[sp.Pow]:
            if entry.match((sp.S.Zero, exponent)) is not None and entry.pattern[0] == 0:
                if entry.numbers:
                    return self.apply(entry.op, [base])
                return self.apply(entry.op, [base, self.number(exponent)])
        raise NotImplementedError(f"{API}: no op for Pow")  # pow is always in the table

    def product(self, node: sp.Mul, values: list, negate: bool) -> Any:
        coefficient = node.args[0] if node.args[0].is_Number else sp.S.One
        if negate:
            coefficient = -coefficient
        top, bottom = [], []
        factors = [f for f in node.args if not f.is_Number]
        for factor, value in zip(factors, values):
            if isinstance(value, _Number):
                coefficient = coefficient * factor       # symbol-free: fold into the number
            elif _denominator(factor):
                exponent = -factor.exp
                bottom.append(value if exponent == 1 else self.power(value, exponent))
            else:
                top.append(value)
        sign = bool(coefficient.is_number and coefficient.is_negative)
        magnitude = -coefficient if sign else coefficient
        if magnitude.is_Rational and not magnitude.is_Integer:
            p, q = sp.Integer(magnitude.p), sp.Integer(magnitude.q)
        else:
            p, q = magnitude, sp.S.One
        if p != 1:
            top.insert(0, self.number(p))
        if q != 1:
            bottom.append(self.number(q))
        result = self.fold(R.multiply, top) if top else self.number(sp.S.One)
        if bottom:
            result = self.apply(R.divide, [result, self.fold(R.multiply, bottom)])
        return self.apply(R.negative, [result]) if sign else result

    def fold(self, fn: Any, values: list) -> Any:
        result = values[0]
        for value in values[1:]:
            result = self.apply(fn, [result, value])
        return result

    def sum(self, node: sp.Add, values: list) -> Any:
        plus, minus, number = [], [], sp.S.Zero
        for term, value in zip(node.args, values):
            if isinstance(value, _Number):
                number += term
            elif _negative_coefficient(term):
                minus.append(value)
            else:
                plus.append(value)
        if plus:
            result = self.fold(R.add, plus)
        elif number != 0 and not (number.is_number and number.is_negative):
            result, number = self.number(number), sp.S.Zero
        else:
            result = self.apply(R.negative, [minus.pop(0)])
        for value in minus:
            result = self.apply(R.subtract, [result, value])
        if number != 0:
            negative = bool(number.is_number and number.is_negative)
            result = self.apply(R.subtract if negative else R.add,
                                [result, self.number(-number if negative else number)])
        return result

    def piecewise(self, values: list) -> Any:
        pairs = list(zip(values[0::2], values[1::2]))
        result: Any = self.number(sp.nan)
        for value, condition in reversed(pairs):
            if isinstance(condition, _Number):
                if condition.value():
                    result = value
                continue
            result = self.apply(E.where, [condition, value, result])
        return result

    # --- the result -------------------------------------------------------------------------
    def tensor(self, value: Any) -> Any:
        """A converted value as a Tensor (or eager value) of its own."""
        if not isinstance(value, _Number):
            return value
        number = value.value()
        dtype = np.dtype(bool) if isinstance(number, bool) else self.dtype
        if self.eager:
            return EagerTensor(np.array(number, dtype=dtype))
        return constant(number, dtype=dtype)


def _dtype_of(values: list) -> np.dtype:
    """The float dtype of the expression's numbers: numpy's promotion of the float mapping
    values (float64 when there are none)."""
    floats = [np.dtype(v.dtype) for v in values if np.dtype(v.dtype).kind == "f"]
    return np.result_type(*floats) if floats else np.dtype("float64")


def _sympy_value(key: sp.Symbol, value: Any) -> Any:
    """A sympy number as a Python number, a sympy Matrix of numbers as a float array of its
    shape; a value with symbols is a TypeError saying what to pass."""
    if isinstance(value, (sp.MatrixBase, sp.Basic)) and value.free_symbols:
        raise TypeError(f"{API}: mapping[{key.name}] is the sympy expression {_text(value, 40)}"
                        ", which has symbols; a value is a number, an array or a Tensor "
                        "(substitute expressions into expr first: expr.subs(...))")
    if isinstance(value, sp.MatrixBase):
        return np.array(value.evalf(17).tolist(), dtype=np.float64)
    if isinstance(value, sp.logic.boolalg.BooleanAtom):
        return bool(value)
    if isinstance(value, sp.Basic) and value.is_number:
        number = complex(value.evalf(17))
        if number.imag != 0:
            raise ValueError(f"{API}: mapping[{key.name}] = {_text(value, 40)} is not real")
        return float(number.real)
    return value


def _mapping(mapping: Any) -> tuple:
    """``(symbol -> Tensor or eager value, symbol -> sympy number, eager)`` from the user's
    mapping (not modified). Python numbers are numbers of the expression (weak literals,
    folded with the expression's other numbers)."""
    if not isinstance(mapping, Mapping):
        raise TypeError(f"{API}: mapping must be a dict {{sympy.Symbol: Tensor or array}}, "
                        f"got {type(mapping).__name__}")
    values, literals = {}, {}
    for key, value in mapping.items():
        if not isinstance(key, sp.Symbol):
            raise TypeError(f"{API}: mapping key {key!r} is {type(key).__name__}; keys must "
                            "be sympy Symbols (sympy.Symbol('x')), dynamicsymbols (q(t)) "
                            "or their time derivatives (q(t).diff(t))")
        if value is None:
            raise TypeError(f"{API}: mapping[{key.name}] is None; pass a Tensor or an array")
        value = _sympy_value(key, value)
        if isinstance(value, (bool, int, float)):
            literals[key] = sp.sympify(value)
            continue
        values[key] = value
    eager = any(isinstance(v, (EagerTensor, Variable)) for v in values.values())
    for key, value in values.items():   # arrays: constants, or eager values beside eager ones
        if not isinstance(value, (Tensor, EagerTensor, Variable)):
            try:
                values[key] = EagerTensor(to_array(value)) if eager else constant(value)
            except (DTypeError, TypeError, ValueError) as exc:
                raise DTypeError(f"{API}: mapping[{key.name}]: {exc}") from exc
    return values, literals, eager


def _broadcast(elements: list, api_names: list) -> list:
    """The elements of a Matrix at one common shape (numpy broadcasting)."""
    shapes = [tuple(e.shape) for e in elements]
    shape = broadcast_shapes(shapes, op="from_sympy(Matrix)", names=api_names)
    if all(s == shape for s in shapes):
        return elements
    if is_fully_known(shape):
        return [e if tuple(e.shape) == shape else F.broadcast_to(e, shape) for e in elements]
    zeros = None
    for e in elements:   # unknown dims: add zeros shaped like every distinct element
        if tuple(e.shape) != () and (zeros is None or tuple(zeros.shape) != shape):
            z = E.zeros_like(e)
            zeros = z if zeros is None else zeros + z
    return [e if tuple(e.shape) == shape else e + zeros for e in elements]


def from_sympy(expr: Any, mapping: Mapping) -> Any:
    """A symgrad Tensor computing the sympy expression ``expr`` elementwise.

    ``expr``: a sympy expression (``Expr`` or a Boolean such as ``x > 0``), or a
    ``Matrix``/``ImmutableMatrix`` (a Tensor of shape ``matrix.shape + broadcast shape``,
    the Matrix axes first, as ``lambdify`` gives). ``mapping``: ``{sympy.Symbol: Tensor,
    eager value (sg.Variable) or array}``; values broadcast elementwise (numpy rules);
    with eager values the result is computed at once. Keys may also be
    ``sympy.physics.mechanics`` dynamicsymbols ``q(t)`` and their time derivatives. Numbers
    (in ``expr``, Python or sympy numbers in ``mapping``) take the dtype of the tensors they
    meet. A sympy function without a symgrad form: a one-line NotImplementedError naming it
    and the nearest supported alternative; a free symbol (or ``q(t)``) missing from
    ``mapping``: ``sg.FeedError`` (ValueError) naming it. The functions covered are listed
    in docs/from_sympy.md.

    >>> import sympy as sp
    >>> import symgrad as sg
    >>> a, b = sp.symbols("a b")
    >>> X = sg.placeholder("X", shape=(2,))
    >>> sg.evaluate(sg.from_sympy(sp.sqrt(a) / b + sp.pi, {a: X, b: 2.0}), {X: [1.0, 4.0]})
    array([3.64159265, 4.14159265])
    """
    expr, mapping = plain_keys(expr, mapping)
    values, literals, eager = _mapping(mapping)
    converter = _Converter(values, literals, _dtype_of(list(values.values())), eager)
    if isinstance(expr, sp.MatrixBase):
        rows, cols = expr.shape
        if rows * cols == 0:
            raise ValueError(f"{API}: the Matrix has shape {expr.shape}; it has no elements")
        elements = [converter.tensor(converter.run(e)) for e in expr]
        elements = _broadcast(elements, [f"[{k // cols}, {k % cols}]"
                                         for k in range(len(elements))])
        inner = tuple(elements[0].shape)
        stacked = F.stack(elements, axis=0)
        if is_fully_known(inner):
            return F.reshape(stacked, (rows, cols) + inner)
        return F.stack([F.stack(elements[r * cols:(r + 1) * cols], axis=0)
                        for r in range(rows)], axis=0)
    if isinstance(expr, (int, float, bool)):
        expr = sp.sympify(expr)
    if not isinstance(expr, sp.Basic):
        raise TypeError(f"{API}: expr must be a sympy expression or Matrix, got "
                        f"{type(expr).__name__}")
    if isinstance(expr, sp.MatrixExpr):
        raise NotImplementedError(f"{API}: matrix expressions ({type(expr).__name__}) are "
                                  "not supported; pass an explicit sympy.Matrix")
    return converter.tensor(converter.run(expr))
