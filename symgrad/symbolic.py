"""Symbolic views: ``sg.to_sympy`` and ``sg.latex`` of elementwise results.

Placeholders become real sympy symbols named like them; scalar constants become numbers;
anything else that is not elementwise (a matmul, a non-scalar constant) becomes a symbol
named after its tensor.

>>> import symgrad as sg
>>> x = sg.placeholder("x")
>>> sg.to_sympy(sg.gradients(sg.sin(x) * x, x)[0])
x*cos(x) + sin(x)
"""

from __future__ import annotations

import sympy as sp

from .graph.tensor import Tensor
from .graph.traversal import topological_order
from .ops.symbols import dtype_kind, input_symbol


def _leaf(node: Tensor) -> sp.Basic:
    kind = dtype_kind(node.dtype)
    assumptions = {"real": True} if kind == "f" else {"integer": True} if kind == "i" else {}
    if node.op.name == "constant" and node.attrs["value"].ndim == 0:
        value = node.attrs["value"].item()
        if isinstance(value, bool):
            return sp.true if value else sp.false
        if float(value).is_integer() and abs(value) < 2**53:
            return sp.Integer(int(value))
        return sp.Float(value)
    return sp.Symbol(node.name, **assumptions)


def to_sympy(tensor: Tensor) -> sp.Basic:
    """The sympy expression of ``tensor`` in terms of placeholders and non-elementwise nodes."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"sg.to_sympy: expected a Tensor, got {type(tensor).__name__}")
    exprs: dict = {}
    for node in topological_order([tensor]):
        if node.op.kind != "elementwise":
            exprs[id(node)] = _leaf(node)
            continue
        symbols = tuple(input_symbol(k, dtype_kind(i.dtype)) for k, i in enumerate(node.inputs))
        formula = node.op.formula(symbols, node.attrs)
        exprs[id(node)] = formula.xreplace(
            {s: exprs[id(i)] for s, i in zip(symbols, node.inputs)})
    return exprs[id(tensor)]


def latex(tensor: Tensor, cse: bool | None = None) -> str:
    """LaTeX of ``tensor``; long expressions are shown with shared subexpressions named.

    >>> import symgrad as sg
    >>> x = sg.placeholder("x")
    >>> sg.latex(sg.gradients(sg.sin(x) * x, x)[0])
    'x \\\\cos{\\\\left(x \\\\right)} + \\\\sin{\\\\left(x \\\\right)}'
    """
    expr = to_sympy(tensor)
    if cse is None:
        cse = sp.count_ops(expr) > 40
    if not cse:
        return sp.latex(expr)
    replacements, (reduced,) = sp.cse(expr, symbols=sp.numbered_symbols("t"))
    if not replacements:
        return sp.latex(reduced)
    lines = [f"{sp.latex(s)} &= {sp.latex(e)}" for s, e in replacements]
    lines.append(f"{sp.latex(sp.Symbol(tensor.name))} &= {sp.latex(reduced)}")
    return "\\begin{aligned}" + " \\\\ ".join(lines) + "\\end{aligned}"
