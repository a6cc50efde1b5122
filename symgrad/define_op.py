"""``sg.define_op``: a user's elementwise op from a scalar sympy formula.

The formula is called once on fresh real symbols; the resulting expression is the op's
scalar form, exactly like a built-in elementwise op's: ``sg.gradients`` differentiates it
with ``sympy.diff``, the compiler fuses and prints it, ``sg.latex`` shows it, and the
tape's reverse rule is built from the same partials (each partial is itself a derived op,
so tapes differentiate to any order). A formula whose derivative sympy cannot produce
(an undefined function) raises LookupError when it is differentiated.

Security: the user's ``name`` never becomes code or an identifier. The op is named
``user_<hash>`` with the hash of the formula's ``srepr``; the name is kept only for
display (``repr`` of the returned function).

>>> import sympy as sp
>>> import symgrad as sg
>>> bump = sg.define_op("bump", lambda x: x * sp.exp(-x**2))
>>> x = sg.placeholder("x")
>>> sg.latex(bump(x))
'x e^{- x^{2}}'
>>> (g,) = sg.gradients(bump(x), x)
>>> sg.to_sympy(g)
-2*x**2*exp(-x**2) + exp(-x**2)
>>> round(float(sg.evaluate(g, {x: 1.0})), 4)
-0.3679
"""

from __future__ import annotations

import hashlib
import inspect
from typing import Any, Callable, Optional

import numpy as np
import sympy as sp

from .errors import NoGradientError
from .ops.registry import OpDef, apply
from .ops.symbols import dtype_kind, input_symbol, numpy_callable

_OPS: dict = {}  # (hash, numpy) -> OpDef: one op per formula (and numpy forward)


def _arguments(formula: Callable) -> list:
    """The names of the formula's required positional arguments (one per input)."""
    try:
        params = inspect.signature(formula).parameters.values()
    except (TypeError, ValueError) as exc:
        raise TypeError(f"sg.define_op: cannot read the arguments of formula: {exc}") from exc
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    names = [p.name for p in params if p.kind in kinds and p.default is inspect.Parameter.empty]
    if not names:
        raise TypeError("sg.define_op: formula must take at least one positional argument "
                        "(one sympy symbol per input)")
    return names


def _symbols(n: int) -> tuple:
    return tuple(input_symbol(k, "f") for k in range(n))


def _expression(formula: Callable, n: int, label: str) -> sp.Expr:
    symbols = _symbols(n)
    try:
        expr = _canonical(sp.sympify(formula(*symbols), strict=True))  # never parse a string
    except (TypeError, ValueError, AttributeError, sp.SympifyError) as exc:
        raise TypeError(f"sg.define_op({label}): formula(*symbols) must return a sympy "
                        f"expression: {exc}") from exc
    stray = expr.free_symbols - set(symbols)
    if stray:
        raise ValueError(f"sg.define_op({label}): the formula uses symbols "
                         f"{sorted(map(str, stray))} that are not its arguments")
    return expr


def _numpy_forward(expr: sp.Expr, n: int) -> Callable:
    """Evaluate the formula with numpy (sympy's lambdify of symgrad's own expression);
    a function numpy lacks (``gamma``) is evaluated entry by entry with ``math``."""
    def forward(*arrays):
        kinds = tuple(dtype_kind(np.asarray(a).dtype) for a in arrays)
        mapping = {s: input_symbol(k, kinds[k]) for k, s in enumerate(_symbols(n))}
        local = expr.xreplace(mapping)
        with np.errstate(all="ignore"):
            try:
                value = numpy_callable(local, n, kinds)(*arrays)
            except TypeError:
                scalar = sp.lambdify([input_symbol(k, kinds[k]) for k in range(n)], local,
                                     modules=["math", "mpmath"])
                value = np.vectorize(lambda *a: float(scalar(*a)), otypes=[np.float64])(
                    *arrays)
        shape = np.broadcast_shapes(*[np.shape(a) for a in arrays])
        return np.broadcast_to(np.asarray(value), shape).copy()
    return forward


def _canonical(expr: sp.Expr) -> sp.Expr:
    """``Max``/``Min`` as ``Piecewise`` (which every backend prints)."""
    return expr.replace(lambda e: isinstance(e, (sp.Max, sp.Min)),
                        lambda e: e.rewrite(sp.Piecewise))


def _key(expr: sp.Expr) -> str:
    return hashlib.sha256(sp.srepr(expr).encode()).hexdigest()[:16]


def _make_op(expr: sp.Expr, n: int, numpy: Optional[Callable], label: str) -> OpDef:
    """The op record of ``expr`` (cached): scalar form, numpy forward, tape vjp."""
    key = (_key(expr), numpy)
    if key in _OPS:
        return _OPS[key]
    if numpy is None and expr.atoms(sp.core.function.AppliedUndef):
        raise ValueError(f"sg.define_op({label}): the formula uses an undefined function "
                         f"{sorted(map(str, expr.atoms(sp.core.function.AppliedUndef)))}; "
                         "pass numpy= to compute the forward")
    symbols = _symbols(n)

    def scalar_form(*args, **attrs):
        return expr.xreplace(dict(zip(symbols, args)))

    def vjp(g, out, *xs):
        return tuple(g * partial_op(expr, k, n, label)(*xs) for k in range(n))

    op = OpDef(f"user_{key[0]}", "elementwise", numpy=numpy or _numpy_forward(expr, n),
               sympy=scalar_form, vjp=vjp, doc=f"sg.define_op {label}: {expr}")
    _OPS[key] = op
    return op


def partial_op(expr: sp.Expr, k: int, n: int, label: str) -> Callable:
    """The derived op d expr / d input k, applied to n inputs (LookupError if sympy has none)."""
    symbols = _symbols(n)
    derivative = sp.diff(expr, symbols[k])
    if derivative.has(sp.Derivative, sp.Subs):
        raise NoGradientError(f"No gradient defined for operation sg.define_op({label}) with "
                              f"respect to input {k}: sympy cannot differentiate {expr}")
    op = _make_op(derivative, n, None, f"{label}, d/d input {k}")
    return lambda *xs: apply(op, xs, {})


class DefinedOp:
    """The callable ``sg.define_op`` returns: ``op(*inputs, name=None)``."""

    def __init__(self, op: OpDef, label: str, expr: sp.Expr, arguments: list):
        self.op, self.label, self.expr, self.arity = op, label, expr, len(arguments)
        shown = {s: sp.Symbol(a) for s, a in zip(_symbols(len(arguments)), arguments)}
        self.formula = expr.xreplace(shown)  # over the formula's own argument names

    def __call__(self, *inputs: Any, name: Optional[str] = None) -> Any:
        if len(inputs) != self.arity:
            raise TypeError(f"sg.define_op({self.label}): takes {self.arity} input(s), got "
                            f"{len(inputs)}")
        return apply(self.op, inputs, {}, name)

    def __repr__(self) -> str:
        return f"<sg.define_op {self.label}: {self.formula} ({self.op.name})>"


def define_op(name: str, formula: Callable, numpy: Optional[Callable] = None) -> DefinedOp:
    """An elementwise op ``name`` whose scalar form is ``formula(*symbols)`` (a sympy Expr).

    ``formula`` takes one sympy symbol per input. ``numpy`` (optional) computes the
    forward on arrays; by default the formula itself is evaluated with numpy. Inputs
    broadcast like any elementwise op. ``name`` is only displayed, never turned into code.

    >>> import sympy as sp
    >>> import symgrad as sg
    >>> f = sg.define_op("bilinear_sin", lambda x, y: x * y + sp.sin(x))
    >>> v = sg.Variable([0.0, 1.0])
    >>> with sg.GradientTape() as tape:
    ...     z = sg.reduce_sum(f(v, 2.0))
    >>> tape.gradient(z, v).numpy().round(4)
    array([3.    , 2.5403])
    """
    if not isinstance(name, str):
        raise TypeError(f"sg.define_op: name must be a str, got {type(name).__name__}")
    if not callable(formula):
        raise TypeError(f"sg.define_op({name!r}): formula must be callable")
    label = repr(name)
    arguments = _arguments(formula)
    expr = _expression(formula, len(arguments), label)
    return DefinedOp(_make_op(expr, len(arguments), numpy, label), label, expr, arguments)
