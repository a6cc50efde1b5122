"""Local derivatives of one elementwise node, from ``sympy.diff`` of its scalar form.

Only one op is differentiated at a time, with respect to fresh positional symbols, so
the cost is independent of the size of the graph around it.

>>> import symgrad as sg
>>> x = sg.placeholder("x")
>>> local_partial(sg.sin(x), 0)
cos(_0)
"""

from __future__ import annotations

from functools import lru_cache
from typing import Optional

import sympy as sp

from ..errors import NoGradientError
from ..ops.symbols import dtype_kind, input_symbol


def _tf_clean(expr: sp.Expr) -> sp.Expr:
    """Rewrite the few derivative forms sympy can still produce into TF's convention."""
    if expr.has(sp.Heaviside):
        expr = expr.replace(sp.Heaviside, lambda a, *h: sp.Piecewise((1, a > 0), (0, True)))
    if expr.has(sp.DiracDelta):
        expr = expr.replace(sp.DiracDelta, lambda *a: sp.S.Zero)
    return expr


def attrs_key(node) -> tuple:
    """The node's attrs as a hashable cache key: ``((name, value), ...)`` sorted by name."""
    items = []
    for key in sorted(node.attrs):
        value = node.attrs[key]
        try:
            hash(value)
        except TypeError:
            value = _Unhashable(value)
        items.append((key, value))
    return tuple(items)


class _Unhashable:
    """An attr value that cannot be hashed: cached by identity."""

    def __init__(self, value):
        self.value = value

    def __hash__(self) -> int:
        return id(self.value)

    def __eq__(self, other) -> bool:
        return isinstance(other, _Unhashable) and other.value is self.value


def _attrs(key: tuple) -> dict:
    return {k: v.value if isinstance(v, _Unhashable) else v for k, v in key}


@lru_cache(maxsize=8192)
def _partial(op, kinds: tuple, attrs_items: tuple, index: int) -> sp.Expr:
    symbols = tuple(input_symbol(i, k) for i, k in enumerate(kinds))
    formula = op.formula(symbols, _attrs(attrs_items))
    derivative = _tf_clean(sp.diff(formula, symbols[index]))
    if derivative.has(sp.Derivative, sp.Subs):
        raise NoGradientError(f"No gradient defined for operation '{op.name}' with respect to "
                              f"input {index}: sympy cannot differentiate {formula}")
    return derivative


def node_key(node) -> tuple:
    """(the input kinds, ``attrs_key``) that ``local_partial`` and ``has_float_path``
    look a node up by: a caller asking for several inputs makes it once."""
    return tuple([dtype_kind(t.dtype) for t in node.inputs]), attrs_key(node)


def local_partial(node, index: int, key: Optional[tuple] = None) -> sp.Expr:
    """d node / d node.inputs[index] over the symbols ``_0, _1, ...`` of its inputs
    (``key``: ``node_key(node)`` where the caller has it)."""
    kinds, items = node_key(node) if key is None else key
    try:
        return _partial(node.op, kinds, items, index)
    except NoGradientError as exc:
        raise NoGradientError(f"{exc} (at tensor '{node.name}')") from None


def value_symbols(expr: sp.Basic) -> frozenset:
    """Symbols that ``expr`` uses as values, not only inside Piecewise conditions.

    An input used only in a condition is like an input of a comparison: TF's gradient
    graph has no float path through it, so it receives no gradient (None), not zeros.
    """
    if isinstance(expr, sp.Piecewise):
        return frozenset().union(*(value_symbols(e) for e, _ in expr.args))
    if expr.is_Symbol:
        return frozenset([expr])
    return frozenset().union(*(value_symbols(a) for a in expr.args)) if expr.args else frozenset()


@lru_cache(maxsize=8192)
def _uses_as_value(op, kinds: tuple, attrs_items: tuple, index: int) -> bool:
    symbols = tuple(input_symbol(i, k) for i, k in enumerate(kinds))
    return symbols[index] in value_symbols(op.formula(symbols, _attrs(attrs_items)))


def has_float_path(node, index: int, key: Optional[tuple] = None) -> bool:
    """Whether node.inputs[index] reaches node's value other than through a condition
    (``key``: ``node_key(node)`` where the caller has it)."""
    kinds, items = node_key(node) if key is None else key
    return _uses_as_value(node.op, kinds, items, index)
