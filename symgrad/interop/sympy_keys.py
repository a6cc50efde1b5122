"""Mapping keys that are functions of time: ``sympy.physics.mechanics`` writes its models in
``dynamicsymbols`` (``q(t)``, an undefined function applied to ``t``) and their time
derivatives (``q(t).diff(t)``, a ``Derivative``). ``plain_keys`` puts a fresh ``Dummy``
symbol in their place, in the expression and in the mapping, derivatives first: one
``xreplace`` matches a node before its arguments, so ``Derivative(q(t), t)`` is replaced
whole and never becomes the derivative of a symbol (0).

>>> import sympy as sp
>>> from sympy.physics.mechanics import dynamicsymbols
>>> q, u = dynamicsymbols("q u")
>>> t = dynamicsymbols._t
>>> expr, mapping = plain_keys(sp.sin(q) * q.diff(t) + u, {q: 1.0, q.diff(t): 2.0, u: 3.0})
>>> sorted(str(k) for k in mapping), all(isinstance(k, sp.Symbol) for k in mapping)
(['_Derivative(q(t), t)', '_q(t)', '_u(t)'], True)
>>> expr.free_symbols == set(mapping)
True
"""

from __future__ import annotations

from typing import Any, Mapping

import sympy as sp
from sympy.core.function import AppliedUndef

from ..errors import FeedError

API = "sg.from_sympy"


def is_time_function(key: Any) -> bool:
    """``q(t)`` (an undefined function applied to symbols) or a derivative of one."""
    if isinstance(key, sp.Derivative):
        return isinstance(key.expr, AppliedUndef)
    return isinstance(key, AppliedUndef)


def plain_keys(expr: Any, mapping: Mapping) -> tuple:
    """``(expr, mapping)`` with every ``q(t)``/``q(t).diff(t)`` key a fresh Dummy symbol.
    A derivative in ``expr`` that is not a key is a FeedError (replacing ``q(t)`` inside it
    would make it 0)."""
    if not isinstance(mapping, Mapping) or not any(is_time_function(k) for k in mapping):
        return expr, mapping
    if isinstance(expr, (sp.Basic, sp.MatrixBase)):
        for derivative in expr.atoms(sp.Derivative):
            if derivative not in mapping:
                raise FeedError(f"{API}: the expression has {derivative}, which is not in "
                                f"mapping; map it too ({{{derivative}: value}}; "
                                "dynamicsymbols and their derivatives are accepted as keys)")
    rule, plain = {}, {}
    for key, value in mapping.items():
        if is_time_function(key):
            rule[key] = sp.Dummy(str(key))
            plain[rule[key]] = value
        else:
            plain[key] = value
    if isinstance(expr, (sp.Basic, sp.MatrixBase)):
        expr = expr.xreplace(rule)
    return expr, plain
