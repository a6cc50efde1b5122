"""sympy functions that ``sg.from_sympy`` writes with several symgrad ops (no record of
their own): reciprocal trigonometric and hyperbolic functions, ``sinc``, ``Heaviside``,
``gamma``, ``factorial``, ``polygamma(n, x)`` for an integer ``n > 0`` (an internal
record), ``besselj`` of integer order and the principal branch of
``LambertW``. Each builder receives the converter (``call(name, *inputs)`` applies
``sg.<name>`` to tensors and numbers) and the node's converted arguments; its gradients
are those of the ops it is written with (``LambertW``: a custom gradient,
``W / (x (1 + W)) = 1 / (exp(W) (1 + W))``, written with ``W`` itself so that it can be
differentiated again).

* ``sec = 1/cos``, ``csc = 1/sin``, ``cot = cos/sin``, ``sech = 1/cosh``, ``csch = 1/sinh``,
  ``coth = 1/tanh``; ``acot(x) = +-pi/2 - atan(x)`` (``-pi/2`` for ``x < 0``: ``atan(1/x)``, with
  sympy's ``acot(0) = pi/2`` and a finite gradient at 0), ``asec(x) = acos(1/x)``,
  ``acsc(x) = asin(1/x)``, ``acoth(x) = atanh(1/x)``,
  ``asech(x) = acosh(1/x)``, ``acsch(x) = asinh(1/x)``;
* ``sinc(x) = sin(x)/x`` (sympy's unnormalised sinc, numpy's ``sinc(x/pi)``), a Taylor
  polynomial for ``|x| < 1e-3`` so that every derivative is right at 0;
* ``Heaviside(x, h0)``: 0, ``h0`` (sympy: 1/2) at 0, 1; its gradient is 0 (as ``sign``);
* ``gamma(x) = s * exp(lgamma(x))`` with the sign ``s`` of Gamma (negative on
  ``(-1, 0)``, ``(-3, -2)``, ...); ``factorial(x) = gamma(x + 1)``;
* ``besselj(n, x)`` for an integer ``n``: Bessel's integral ``(1/pi) int_0^pi cos(n t - x
  sin t) dt`` by the trapezoidal rule on 129 nodes (exponentially accurate for this periodic
  integrand: the error is ``J_{256-n}(x) + J_{256+n}(x)``, below 1e-13 for ``|x| <= 100``);
* ``LambertW(x)`` (principal branch, ``x >= -1/e``; NaN below): Winitzki's approximation
  (a series at the branch point for ``x < -0.32``) and six Halley steps.

>>> import sympy as sp
>>> import symgrad as sg
>>> x = sp.Symbol("x")
>>> X = sg.placeholder("X", shape=(3,))
>>> t = sg.from_sympy(sp.Matrix([sp.sec(x), sp.gamma(x), sp.LambertW(x)]), {x: X})
>>> t.shape
(3, 1, 3)
>>> sg.evaluate(t, {X: [0.5, 1.0, 2.718281828459045]})[:, 0].round(6)
array([[ 1.139494,  1.850816, -1.096811],
       [ 1.772454,  1.      ,  1.567468],
       [ 0.351734,  0.567143,  1.      ]])
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import sympy as sp

from ..custom_gradient import custom_gradient
from ..ops.functions import F

API = "sg.from_sympy"
BESSEL_NODES = 128           # trapezoidal intervals on [0, pi]
HALLEY_STEPS = 6


def _reciprocal(name: str) -> Callable:
    return lambda c, x: c.call("reciprocal", c.call(name, x))


def _of_reciprocal(name: str) -> Callable:
    return lambda c, x: c.call(name, c.call("reciprocal", x))


def _cot(c, x):
    return c.call("divide", c.call("cos", x), c.call("sin", x))


def _acot(c, x):
    half_pi = c.call("where", c.call("less", x, 0.0), -math.pi / 2, math.pi / 2)
    return c.call("subtract", half_pi, c.call("arctan", x))


def _sinc(c, x):
    small = c.call("less", c.call("abs", x), 1e-3)
    x2 = c.call("square", x)
    taylor = c.call("add", 1.0, c.call("multiply", x2,
                                       c.call("add", -1.0 / 6.0, c.call("divide", x2, 120.0))))
    safe = c.call("where", small, 1.0, x)
    return c.call("where", small, taylor, c.call("divide", c.call("sin", safe), safe))


def _heaviside(c, x, h0=0.5):
    h0 = float(h0)
    step = c.call("multiply", c.call("add", c.call("sign", x), 1.0), 0.5)
    return c.call("where", c.call("equal", x, 0.0), h0, step)


def _gamma(c, x):
    odd = c.call("floormod", c.call("floor", x), 2.0)           # 1 where Gamma < 0 (x < 0)
    sign = c.call("where", c.call("greater", x, 0.0), 1.0,
                  c.call("subtract", 1.0, c.call("multiply", odd, 2.0)))
    return c.call("multiply", sign, c.call("exp", c.call("lgamma", x)))


def _factorial(c, x):
    return _gamma(c, c.call("add", x, 1.0))


def _besselj(c, order, x):
    n = int(order)
    nodes = np.linspace(0.0, np.pi, BESSEL_NODES + 1)
    weights = np.full(nodes.shape, 1.0 / BESSEL_NODES)
    weights[[0, -1]] *= 0.5
    dtype = getattr(x, "dtype", np.dtype("float64"))
    dtype = dtype if np.dtype(dtype).kind == "f" else np.dtype("float64")
    column = c.call("expand_dims", x, -1)
    phase = c.call("subtract", np.asarray(n * nodes, dtype),
                   c.call("multiply", column, np.asarray(np.sin(nodes), dtype)))
    return c.call("reduce_sum", c.call("multiply", c.call("cos", phase),
                                       np.asarray(weights, dtype)), -1)


def _lambertw_value(x):
    """W(x) on the principal branch by Halley's method (no gradient of its own)."""
    near = F.less(x, -0.32)
    p = F.sqrt(F.maximum(F.multiply(F.add(F.multiply(x, math.e), 1.0), 2.0), 0.0))
    series = F.add(-1.0, F.multiply(p, F.add(1.0, F.multiply(p, F.add(
        -1.0 / 3.0, F.multiply(p, 11.0 / 72.0))))))
    lx = F.log1p(F.where(near, 0.0, x))
    llx = F.log1p(lx)
    winitzki = F.multiply(lx, F.subtract(1.0, F.divide(llx, F.add(llx, 2.0))))
    w = F.where(near, series, winitzki)
    for _ in range(HALLEY_STEPS):
        e = F.exp(w)
        f = F.subtract(F.multiply(w, e), x)
        w1 = F.add(w, 1.0)
        denominator = F.subtract(F.multiply(e, w1),
                                 F.divide(F.multiply(F.add(w, 2.0), f), F.multiply(w1, 2.0)))
        done = F.equal(f, 0.0)
        step = F.divide(f, F.where(done, 1.0, denominator))
        w = F.where(done, w, F.subtract(w, step))
    outside = F.less(x, -1.0 / math.e)
    return F.where(outside, math.nan, w)


def _lambertw(c, x, branch=None):
    if branch is not None and float(branch) != 0:
        raise NotImplementedError(f"{API}: LambertW(x, {branch}) has no symgrad op; only "
                                  "the principal branch LambertW(x) is supported")
    out: dict = {}

    @custom_gradient
    def lambertw(v):
        def grad(upstream):
            w = out["w"]
            return F.divide(upstream, F.multiply(F.exp(w), F.add(w, 1.0)))
        return _lambertw_value(v), grad

    out["w"] = lambertw(x)
    return out["w"]


def _polygamma(c, order, x):
    from ..ops.elementwise.records import polygamma    # internal record: an integer order
    return c.apply(polygamma, [x, np.int64(int(order))])


def _integer_order(node: sp.Basic) -> bool:
    order = node.args[0]
    return bool(order.is_Integer)


def _natural_order(node: sp.Basic) -> bool:
    order = node.args[0]
    return bool(order.is_Integer and order >= 0)


COMPOSITES: dict = {
    sp.sec: _reciprocal("cos"), sp.csc: _reciprocal("sin"), sp.cot: _cot,
    sp.sech: _reciprocal("cosh"), sp.csch: _reciprocal("sinh"), sp.coth: _reciprocal("tanh"),
    sp.acot: _acot, sp.asec: _of_reciprocal("arccos"), sp.acsc: _of_reciprocal("arcsin"),
    sp.acoth: _of_reciprocal("arctanh"), sp.asech: _of_reciprocal("arccosh"),
    sp.acsch: _of_reciprocal("arcsinh"), sp.sinc: _sinc, sp.Heaviside: _heaviside,
    sp.gamma: _gamma, sp.factorial: _factorial, sp.besselj: _besselj, sp.LambertW: _lambertw,
    sp.polygamma: _polygamma,
}
"""``{sympy class: builder(converter, *converted args)}``."""

NUMBER_ARGS = {sp.besselj: (0,), sp.polygamma: (0,), sp.Heaviside: (1,), sp.LambertW: (1,)}
"""Arguments that must be numbers (an integer order, ``h0``, a branch): passed as Python
numbers, never as tensors."""

ACCEPTS: dict = {sp.besselj: (_integer_order, "integer orders n only (besselj(n, x))"),
                 sp.polygamma: (_natural_order, "integer orders n >= 0 only")}
"""Conditions on a node beyond its head, with what the error says when they fail."""

NEAREST: dict = {
    "DiracDelta": "it is 0 away from 0: drop the term, or write the jump with Heaviside",
    "Xor": "write it with And/Or/Not: (a | b) & ~(a & b)",
    "Integral": "evaluate it first with expr.doit(), or integrate with sg.odeint",
    "bessely": "besselj(n, x) of integer order n is supported",
    "besseli": "besselj(n, x) of integer order n is supported",
    "besselk": "besselj(n, x) of integer order n is supported",
    "beta": "beta(a, b) = gamma(a)*gamma(b)/gamma(a + b) (or exp of loggamma sums)",
    "uppergamma": "gamma and loggamma are supported", "lowergamma": "gamma and loggamma "
    "are supported", "zeta": "no near alternative (loggamma, digamma are supported)",
    "re": "symgrad computes with real numbers: drop re(...)", "im": "symgrad computes with "
    "real numbers: drop im(...)", "conjugate": "symgrad computes with real numbers: drop it",
    "frac": "frac(x) = x - floor(x)",
    "exp_polar": "use exp", "Ei": "no near alternative (exp, log are supported)",
    "fresnels": "no near alternative (sin, cos are supported)",
    "fresnelc": "no near alternative (sin, cos are supported)",
}
"""The nearest supported alternative of sympy functions that have no symgrad form."""


def unsupported(node: sp.Basic, text: str) -> str:
    """One short line: the sympy function, where it is, and what to use instead."""
    head = type(node)
    name = head.__name__
    if head in ACCEPTS:
        return f"{API}: {text} has no symgrad op: {name} takes {ACCEPTS[head][1]}"
    hint = NEAREST.get(name, "rewrite it with supported functions (listed by "
                             "symgrad.interop.sympy_table.covered())")
    return f"{API}: no symgrad op for the sympy function '{name}' (in {text}); {hint}"


def accepts(node: sp.Basic) -> bool:
    rule = ACCEPTS.get(type(node))
    return rule is None or rule[0](node)


def build(converter: Any, node: sp.Basic, values: list) -> Any:
    """The composite of ``node`` over its converted arguments."""
    numbers = NUMBER_ARGS.get(type(node), ())
    for k in numbers:
        if k < len(node.args) and not node.args[k].is_number:
            raise NotImplementedError(f"{API}: {type(node).__name__}'s argument {k} must be "
                                      f"a number, got {node.args[k]} (in {node})")
    args = [node.args[k] if k in numbers else v for k, v in enumerate(values)]
    return COMPOSITES[type(node)](converter, *args)
