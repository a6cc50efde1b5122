"""Power chains: every power of one base through at most two divisions and one square root.

After ``cse``, a kernel often holds several powers of one base: the pair potential
``r**-12 - r**-6`` with ``r = sqrt(r2)`` and its gradient print as ``1/(r2**6*sqrt(r2))``,
``1/(r2**3*sqrt(r2))``, ``1/sqrt(r2)``, ``(1/r2)**6``: one division per power. A hand-written
loop divides once and multiplies. ``power_chains`` does the same: per base ``b``

* ``q = 1/b`` when a negative integer power is used (``b**-n = q**n``),
* ``s = sqrt(b)`` for half powers (``b**(n + 1/2) = b**n * s``),
* ``h = 1/s`` for negative half powers (``b**(-n - 1/2) = q**n * h``, or ``h**(2n + 1)``
  without ``q``); not ``sqrt(q)``, which is inf where ``1/b`` overflows (subnormal ``b``),

and each integer power of ``q``, ``h``, ``b`` is a product of shared squarings (an
addition chain). Values at singular points are those of the plain form: ``b = 0`` gives
``inf`` for negative powers, ``b < 0`` NaN for half powers and finite integer powers,
``b = inf`` 0 for negative powers, subnormal ``b`` finite half powers, NaN stays NaN.
Signed zeros may differ (kernels compile with ``nsz``).

>>> import sympy as sp
>>> b, g = sp.symbols("b g", real=True)
>>> st, res = power_chains([], [b**-6 - b**-3, g * b**sp.Rational(-13, 2)])
>>> [(s.name, e) for s, e in st]
[('q0_s', sqrt(b)), ('q0', 1/b), ('q0_h', 1/q0_s), ('q0_2', q0**2), ('q0_3', q0*q0_2), ('q0_6', q0_3**2)]
>>> res
[-q0_3 + q0_6, g*q0_6*q0_h]
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp

_MAX_EXP = 64
_HALF = sp.Rational(1, 2)


def _exponent(e):
    """``e`` as a Rational n/2 (n integer) if the chains handle it (0 < |e| <= 64, not 1;
    a float such as ``2.5`` counts), else None."""
    if e.is_Float and e.is_finite and float(2 * e).is_integer():
        e = sp.Rational(int(2 * e), 2)
    if e.is_Rational and e.q in (1, 2) and e != 1 and e != 0 and abs(e) <= _MAX_EXP:
        return e
    return None


@dataclass
class _Base:
    exps: set = field(default_factory=set)
    neg_int_uses: int = 0

    def worth_it(self) -> bool:
        """The chain costs fewer divisions, square roots and pow calls than the plain form
        (each distinct negative power divides once, an integer power past 4 calls pow)
        or a negative power is used more than once (one shared reciprocal)."""
        neg = [e for e in self.exps if e < 0]
        half = [e for e in self.exps if e.q == 2]
        plain = len(neg) + (1 if half else 0) + 2 * sum(1 for e in self.exps
                                                          if e.q == 1 and abs(e) > 4)
        return plain > self.cost() or self.neg_int_uses >= 2

    def cost(self) -> int:
        neg_int = any(e < 0 and e.q == 1 for e in self.exps)
        neg_half = any(e < 0 and e.q == 2 for e in self.exps)
        pos_half = any(e > 0 and e.q == 2 for e in self.exps)
        return int(neg_int) + int(pos_half or neg_half) + int(neg_half)


def _roots(statements: list) -> dict:
    """{t: (b, e)} for statements ``t = b**e`` (so ``t**n`` is the power ``b**(e*n)``)."""
    return {s: (expr.base, _exponent(expr.exp)) for s, expr in statements
            if expr.is_Pow and not expr.base.is_Number and _exponent(expr.exp) is not None}


def _as_power(node, roots: dict):
    """(base, exponent) of a Pow node the chains handle, seen through ``roots``, or None."""
    if not node.is_Pow or node.base.is_Number or not node.exp.is_Number:
        return None
    base, e = node.base, _exponent(node.exp)
    if e is not None and base in roots and e.is_Integer:
        base, e = roots[base][0], _exponent(roots[base][1] * e)
    return (base, e) if e is not None else None


def _collect(exprs: list, roots: dict) -> dict:
    bases: dict = {}
    for expr in exprs:
        for node in sp.preorder_traversal(expr):
            found = _as_power(node, roots)
            if found is not None:
                entry = bases.setdefault(found[0], _Base())
                entry.exps.add(found[1])
                if found[1] < 0 and found[1].q == 1:
                    entry.neg_int_uses += int(-found[1])
    return bases


def _chain(unit, needed: set, name: str, out: list) -> dict:
    """{n: symbol or expression for unit**n} for every n in ``needed`` (n >= 1), each a
    product of two earlier entries; new statements are appended to ``out``."""
    got = {1: unit}

    def build(n: int) -> None:
        if n in got:
            return
        if n % 2 == 0:
            build(n // 2)
            expr = got[n // 2] ** 2
        else:
            a = max((a for a in got if n - a in got), default=None)
            if a is None:
                build(n - 1)
                a = n - 1
            expr = got[a] * got[n - a]
        sym = sp.Symbol(f"{name}_{n}", real=True)
        out.append((sym, expr))
        got[n] = sym

    for n in sorted(needed):
        build(n)
    return got


def _plan(k: int, base, entry: _Base, rewrite, out: list) -> dict:
    """Statements for one base (appended to ``out``) and {exponent: replacement}."""
    exps = entry.exps
    neg_int = any(e < 0 and e.q == 1 for e in exps)
    neg_half = any(e < 0 and e.q == 2 for e in exps)
    pos_half = any(e > 0 and e.q == 2 for e in exps)
    b = rewrite(base)
    name = f"q{k}"
    q = s = h = None
    if pos_half or neg_half:
        s = sp.Symbol(f"{name}_s", real=True)
        out.append((s, sp.Pow(b, _HALF)))
    if neg_int:
        q = sp.Symbol(name, real=True)
        out.append((q, sp.Pow(b, -1)))
    if neg_half:    # 1/sqrt(b), not sqrt(1/b): 1/b overflows for subnormal b
        h = sp.Symbol(f"{name}_h", real=True)
        out.append((h, sp.Pow(s, -1)))
    # integer powers of each unit: b (positive), q (negative), h (negative halves, no q)
    pos = {int(e - _HALF) if e.q == 2 else int(e) for e in exps if e > 0} - {0}
    negq = {int(-e) if e.q == 1 else int(-e - _HALF) for e in exps if e < 0 and q is not None}
    negh = {int(-2 * e) for e in exps if e < 0 and e.q == 2 and q is None}
    bp = _chain(b, pos, f"{name}_p", out)
    qp = _chain(q, negq - {0}, name, out) if q is not None else {}
    hp = _chain(h, negh, f"{name}_h", out) if h is not None else {}
    table = {}
    for e in exps:
        if e.q == 1:
            table[e] = bp[int(e)] if e > 0 else qp[int(-e)]
        elif e > 0:
            k_ = int(e - _HALF)
            table[e] = s if k_ == 0 else bp[k_] * s
        elif q is not None:
            k_ = int(-e - _HALF)
            table[e] = h if k_ == 0 else qp[k_] * h
        else:
            table[e] = hp[int(-2 * e)]
    return table


def power_chains(statements: list, results: list) -> tuple:
    """(statements, results) with the powers of each base that pays rewritten through one
    reciprocal, one square root (and its reciprocal) and shared products (see the module docstring). New
    statements come first; order them with ``lower._in_dependency_order``."""
    roots = _roots(statements)
    bases = _collect([e for _, e in statements] + list(results), roots)
    chosen = [(b, entry) for b, entry in bases.items() if entry.worth_it()]
    if not chosen:
        return statements, results
    tables: dict = {}

    def rewrite(expr):
        def swap(node):
            found = _as_power(node, roots)
            if found is not None and found[0] in tables and found[1] in tables[found[0]]:
                return tables[found[0]][found[1]]
            return None
        return expr.replace(lambda n: swap(n) is not None, swap)

    new: list = []
    for k, (base, entry) in enumerate(chosen):
        tables[base] = _plan(k, base, entry, rewrite, new)
    return new + [(s, rewrite(e)) for s, e in statements], [rewrite(r) for r in results]
