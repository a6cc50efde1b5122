"""The reverse table of ``sg.from_sympy``: sympy function class -> symgrad op, read from
the op records.

Every public elementwise record carries its scalar sympy form (``records.py``). The form is
built on fresh symbols; where it is one sympy head applied to those symbols (and numbers),
that head and the argument pattern name the op:

* ``sin = record("sin", np.sin, sp.sin, ...)`` gives ``sin -> sin``;
* ``sqrt``'s form ``sp.sqrt(x)`` is ``Pow(x, 1/2)``, so ``Pow(x, 1/2) -> sqrt`` (and
  ``square``, ``reciprocal``, ``rsqrt``, ``exp2`` likewise; ``pow`` takes any other power);
* a TF-convention class (``TfAbs``, ``TfMax``, ``Erfc``, ...) adds the plain sympy head of
  its ``standard()`` form (``Abs``, ``Max``, ``erfc``); ``Relu``'s ``Max(x, 0)`` gives
  ``Max(0, x) -> relu``;
* a subclass of a sympy function (``Tanh``, ``LogicalNot``) adds that sympy class.

A new record with such a form appears here by itself. One entry is not derivable from a
record: sympy's ``loggamma`` is symgrad's ``lgamma`` (``log|Gamma(x)|``; equal for x > 0,
where sympy's ``loggamma`` is real; scipy's ``gammaln``, which ``sympy.lambdify`` prints for
it, is ``log|Gamma|`` everywhere).

>>> import sympy as sp
>>> table = reverse_table()
>>> sorted(entry.op.name for entry in table[sp.Pow])
['exp2', 'pow', 'reciprocal', 'rsqrt', 'sqrt', 'square']
>>> covered()["Abs"], covered()["atan2"]
('abs', 'arctan2')
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

import numpy as np
import sympy as sp

from ..ops.opdef import REGISTRY, OpDef

# sympy heads symgrad computes with another record's form (see the module docstring)
ALIASES = {sp.loggamma: "lgamma"}


@dataclass(frozen=True)
class Entry:
    """``op`` applies to a node of the head class whose args match ``pattern``: an int k is
    the op's input k; a sympy number must equal the argument."""

    op: OpDef
    pattern: tuple

    @property
    def numbers(self) -> int:
        return sum(not isinstance(p, int) for p in self.pattern)

    def match(self, args: tuple) -> Optional[list]:
        """The args as the op's inputs (by position), or None when they do not fit."""
        if len(args) != len(self.pattern):
            return None
        inputs: list = [None] * sum(isinstance(p, int) for p in self.pattern)
        for p, arg in zip(self.pattern, args):
            if isinstance(p, int):
                inputs[p] = arg
            elif not (arg.is_Number and float(arg) == float(p)):
                return None
        return inputs


def _arity(op: OpDef) -> Optional[int]:
    nin = getattr(op.numpy, "nin", None)
    if isinstance(nin, int):
        return nin
    nargs = getattr(op.sympy, "nargs", None)
    if isinstance(nargs, (set, frozenset, sp.FiniteSet)) and len(nargs) == 1:
        return int(next(iter(nargs)))
    for fn, skip in ((op.vjp, 2), (op.sympy, 0), (op.numpy, 0)):   # vjp(g, out, *inputs)
        if inspect.isfunction(fn):
            params = inspect.signature(fn).parameters.values()
            count = sum(p.kind is p.POSITIONAL_OR_KEYWORD and p.default is p.empty
                        for p in params) - skip
            if count > 0:
                return count
    return None


def _pattern(form, symbols: tuple) -> Optional[tuple]:
    """The argument pattern of ``form`` (a head applied to each symbol once, and numbers)."""
    if not isinstance(form, sp.Basic) or not form.args or form.is_Atom:
        return None
    pattern = []
    for arg in form.args:
        if arg in symbols:
            pattern.append(symbols.index(arg))
        elif arg.is_Number:
            pattern.append(arg)
        else:
            return None
    used = [p for p in pattern if isinstance(p, int)]
    return tuple(pattern) if sorted(used) == list(range(len(symbols))) else None


def _sympy_ancestor(form) -> Optional[sp.Basic]:
    """``form`` rebuilt with the nearest sympy class of its own (Tanh -> tanh), if any."""
    for cls in type(form).__mro__[1:]:
        if not cls.__module__.startswith("sympy."):
            continue
        try:
            rebuilt = cls(*form.args)
        except Exception:  # noqa: BLE001  (an abstract base: no such function)
            return None
        return rebuilt if type(rebuilt) is cls and rebuilt.args == form.args else None
    return None


def _forms(op: OpDef, symbols: tuple) -> list:
    """The sympy expressions that stand for ``op`` over ``symbols``."""
    try:
        form = op.formula(symbols, {})
    except Exception:  # noqa: BLE001  (a form that needs numbers, e.g. round)
        return []
    forms = [form]
    if type(form).__module__.startswith("symgrad"):
        standard = getattr(form, "standard", None)
        if standard is not None:
            try:
                forms.append(standard())
            except Exception:  # noqa: BLE001
                pass
        ancestor = _sympy_ancestor(form)
        if ancestor is not None:
            forms.append(ancestor)
    return forms


@lru_cache(maxsize=1)
def reverse_table() -> dict:
    """``{sympy class: [Entry, ...]}``, entries with numbers in their pattern first."""
    table: dict = {}
    for op in list(REGISTRY.values()):
        if op.kind != "elementwise" or not op.public or op.sympy is None:
            continue
        n = _arity(op)
        if not n:
            continue
        symbols = tuple(sp.Symbol(f"_from_sympy_{k}", real=True) for k in range(n))
        for form in _forms(op, symbols):
            pattern = _pattern(form, symbols)
            if pattern is None:
                continue
            entries = table.setdefault(type(form), [])
            if all(e.pattern != pattern for e in entries):
                entries.append(Entry(op, pattern))
    for head, name in ALIASES.items():
        table.setdefault(head, []).append(Entry(REGISTRY[name], (0,)))
    for entries in table.values():
        entries.sort(key=lambda e: -e.numbers)
    return table


def covered() -> dict:
    """``{sympy class name: op name}`` of the general entries (``Pow`` -> ``pow``); the
    special powers and ``Max(0, x)`` are listed by :func:`special_forms`."""
    out = {}
    for head, entries in reverse_table().items():
        for e in entries:
            if e.numbers == 0:
                out[head.__name__] = e.op.name
    return dict(sorted(out.items()))


def special_forms() -> list:
    """``[(sympy pattern text, op name)]`` of the entries with numbers in their pattern."""
    out = []
    for head, entries in reverse_table().items():
        for e in entries:
            if e.numbers:
                args = ", ".join(f"x{p}" if isinstance(p, int) else str(p) for p in e.pattern)
                out.append((f"{head.__name__}({args})", e.op.name))
    return sorted(out)


def is_nary(head: type) -> bool:
    """Heads that take any number of arguments (Max, Min, And, Or): folded pairwise."""
    return issubclass(head, sp.core.operations.LatticeOp)


def float_value(number) -> float:
    return float(np.float64(float(number)))
