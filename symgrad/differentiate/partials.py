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


@lru_cache(maxsize=8192)
def _partial(op, kinds: tuple, expr_attr, index: int) -> sp.Expr:
    symbols = tuple(input_symbol(i, k) for i, k in enumerate(kinds))
    attrs = {} if expr_attr is None else {"expr": expr_attr[0], "dtype": expr_attr[1]}
    formula = op.formula(symbols, attrs)
    derivative = _tf_clean(sp.diff(formula, symbols[index]))
    if derivative.has(sp.Derivative, sp.Subs):
        raise NoGradientError(f"No gradient defined for operation '{op.name}' with respect to "
                              f"input {index}: sympy cannot differentiate {formula}")
    return derivative


def local_partial(node, index: int) -> sp.Expr:
    """d node / d node.inputs[index] over the symbols ``_0, _1, ...`` of its inputs."""
    kinds = tuple(dtype_kind(t.dtype) for t in node.inputs)
    expr_attr = (node.attrs["expr"], node.attrs["dtype"]) if "expr" in node.attrs else None
    try:
        return _partial(node.op, kinds, expr_attr, index)
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
def _uses_as_value(op, kinds: tuple, expr_attr, index: int) -> bool:
    symbols = tuple(input_symbol(i, k) for i, k in enumerate(kinds))
    attrs = {} if expr_attr is None else {"expr": expr_attr[0], "dtype": expr_attr[1]}
    return symbols[index] in value_symbols(op.formula(symbols, attrs))


def has_float_path(node, index: int) -> bool:
    """Whether node.inputs[index] reaches node's value other than through a condition."""
    kinds = tuple(dtype_kind(t.dtype) for t in node.inputs)
    expr_attr = (node.attrs["expr"], node.attrs["dtype"]) if "expr" in node.attrs else None
    return _uses_as_value(node.op, kinds, expr_attr, index)
