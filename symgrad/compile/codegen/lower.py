"""A kernel's region as sympy: one expression per output over one symbol per input, and
one ``sympy.cse(..., order="none")`` over all of them (values and gradients together).

>>> import symgrad as sg
>>> from symgrad.compile.plan.fold import fold_graph
>>> from symgrad.compile.plan.regions import build_plan
>>> x = sg.placeholder("x", shape=(4,))
>>> y = sg.reduce_sum(sg.sin(x) * x + sg.sin(x))
>>> lowered = lower_kernel(build_plan(fold_graph([y])).kernels[0])
>>> lowered.replacements, lowered.results
([(t0, sin(a0))], [a0*t0 + t0])
"""

from __future__ import annotations

import itertools
import re
import warnings
from dataclasses import dataclass
from typing import Optional

import numpy as np
import sympy as sp
from sympy.utilities.exceptions import SymPyDeprecationWarning

from ...ops.symbols import dtype_kind, input_symbol
from ..printing.powers import power_chains
from ..printing.printer import ZERO, NumbaPrinter, number
from ..printing.rootcmp import root_comparisons
from ..plan.regions import Kernel

_RESERVED = re.compile(r"^([inotvscruq]\d+|c|nc|lo|hi|math|np|numba|prange|f32|acc\d*|"
                       r"shape|run|args)$")


@dataclass
class LoweredKernel:
    """``symbols[k]`` stands for ``kernel.inputs[k]``; ``results[j]`` is the value of
    ``sources[j]`` (the distinct region nodes the outputs need) after ``replacements``."""

    kernel: Kernel
    symbols: list
    sources: list
    exprs: list
    replacements: list
    results: list
    float_dtype: str
    printed: Optional[tuple] = None   # templates.printed: the body's texts, printed once
    texts: Optional[list] = None      # straight kernels: the statements, already printed
    # straight kernels: (template text over slots Q<k>_, argument texts, value name, slot
    # kinds, value kind) per statement, for bodies written as LLVM IR (llvm_body)
    steps: Optional[list] = None


def symbol_names(nodes: list) -> list:
    """Identifiers for kernel inputs: symgrad's own (``a0, a1, ..``), never a user's name
    (names become comments, escaped: see ``templates.quoted``)."""
    return [f"a{k}" for k in range(len(nodes))]


def _symbol(name: str, dtype) -> sp.Symbol:
    kind = dtype_kind(dtype)
    if kind == "f":
        return sp.Symbol(name, real=True)
    if kind == "i":
        return sp.Symbol(name, integer=True)
    return sp.Symbol(name)


def kernel_float_dtype(kernel: Kernel) -> str:
    """float32 when the region computes in float32 only, else float64."""
    kinds = {n.dtype for n in kernel.nodes} | {n.dtype for n in kernel.inputs}
    floats = {d.name for d in kinds if d.kind == "f"}
    return "float32" if floats == {"float32"} else "float64"


# A region node whose inlined expression would exceed this many operations (counted as a
# tree) is bound to a symbol of its own: sympy re-evaluates every composed expression it
# builds (Mul/Pow canonicalisation calls gcd, expand, ...), which is exponential on deep
# shared DAGs. Below the limit, inlining lets cse share work between values and gradients.
INLINE_LIMIT = 64


def region_exprs(kernel: Kernel) -> tuple:
    """(input symbols, {id(region node): sympy expression}, bound intermediates).

    Expressions are over the input symbols and the intermediates ``u<k>``; ``bound`` lists
    ``(u<k>, expression)`` in region order."""
    names = symbol_names(kernel.inputs)
    symbols = [_symbol(n, i.dtype) for n, i in zip(names, kernel.inputs)]
    value = {id(i): s for i, s in zip(kernel.inputs, symbols)}
    size = {id(i): 1 for i in kernel.inputs}
    bound = []
    for node in kernel.nodes:
        args = []
        for i in node.inputs:
            if id(i) in value:
                args.append(value[id(i)])
            else:
                args.append(number(i.uniform))
        positional = tuple(input_symbol(k, dtype_kind(i.dtype)) for k, i in enumerate(node.inputs))
        formula = sp.sympify(node.op.formula(positional, node.attrs))
        expr = _exact_in_comparisons(_substitute(formula, positional, args))
        floats = {i.dtype.name for i in node.inputs if dtype_kind(i.dtype) == "f"}
        if len(floats) == 1:   # sqrt(b) < c: thresholds in the type the comparison reads
            expr = root_comparisons(expr, floats.pop())
        tree_size = 1 + sum(size.get(id(i), 1) for i in node.inputs)
        if tree_size > INLINE_LIMIT and not expr.is_Atom:
            symbol = _symbol(f"u{len(bound)}", node.dtype)
            bound.append((symbol, expr))
            expr, tree_size = symbol, 1
        value[id(node)] = expr
        size[id(node)] = tree_size
    return symbols, value, bound


def node_formula(node) -> tuple:
    """(positional symbols, the op's sympy form over them) of an elementwise LNode."""
    positional = tuple(input_symbol(k, dtype_kind(i.dtype)) for k, i in enumerate(node.inputs))
    return positional, sp.sympify(node.op.formula(positional, node.attrs))


def node_expression(node, formula: tuple, args: list) -> sp.Basic:
    """An elementwise node's value over ``args`` (sympy values of its inputs), as a region
    node's expression is made (``node_formula``'s form; bools and numbers converted where
    sympy needs it; exact zeros in comparisons; root comparisons in the inputs' type)."""
    positional, form = formula
    expr = _exact_in_comparisons(_substitute(form, positional, args))
    floats = {i.dtype.name for i in node.inputs if dtype_kind(i.dtype) == "f"}
    if len(floats) == 1:
        expr = root_comparisons(expr, floats.pop())
    return expr


def _substitute(formula: sp.Basic, positional: tuple, args: list) -> sp.Basic:
    """``formula`` over the region's values. A computed bool (a comparison, ``And``, ..)
    used as a number (``b + x``, ``b >= x``, ``ceil(b)``) is numpy's 0/1: sympy refuses a
    Boolean in arithmetic, so there it becomes ``Piecewise((1, b), (0, True))``; a number
    used as a bool (``logical_and(x, 3.0)``) is numpy's ``x != 0``. The fewest such
    conversions that make a well-formed expression are made (a condition stays one).
    The conversions are built only when the plain substitution is not well formed:
    ``Ne(big_expression, 0)`` costs sympy seconds on large regions."""
    plain = _try_replace(formula, positional, args)
    if plain is not None and _well_formed(plain):
        return plain
    other = [_as_number(a) if _as_number(a) is not a else _as_bool(a) for a in args]
    flags = [k for k, a in enumerate(args) if other[k] is not a]
    for count in range(len(flags) + 1):
        for chosen in itertools.combinations(flags, count):
            values = [other[k] if k in chosen else a for k, a in enumerate(args)]
            expr = _try_replace(formula, positional, values)
            if expr is not None and (count == len(flags) or _well_formed(expr)):
                return expr
    return formula.xreplace(dict(zip(positional, args)))   # raises sympy's own error


def _try_replace(formula: sp.Basic, positional: tuple, values: list):
    """``formula`` with ``values`` for ``positional``, or None where sympy refuses them."""
    try:
        with warnings.catch_warnings():   # Add(And(..), x): rejected by _well_formed
            warnings.simplefilter("ignore", SymPyDeprecationWarning)
            return formula.xreplace(dict(zip(positional, values)))
    except TypeError:
        return None


def _as_bool(value: sp.Basic) -> sp.Basic:
    """A computed number as numpy's truth value ``value != 0`` (symbols unchanged: sympy
    takes them as bools)."""
    if isinstance(value, sp.Expr) and not value.is_Symbol:
        return sp.Ne(value, sp.S.Zero)
    return value


def _well_formed(expr: sp.Basic) -> bool:
    """No Boolean is an argument of arithmetic (sympy allows ``Add(And(..), x)``, deprecated)."""
    for sub in sp.preorder_traversal(expr):
        if isinstance(sub, sp.Expr) and not isinstance(sub, sp.Piecewise) and any(
                isinstance(a, sp.logic.boolalg.Boolean) and not isinstance(a, sp.Expr)
                for a in sub.args):
            return False
    return True


def _as_number(value: sp.Basic) -> sp.Basic:
    """A bool value as the number 0 or 1 (other values unchanged)."""
    if isinstance(value, sp.logic.boolalg.BooleanAtom):
        return sp.S.One if value else sp.S.Zero
    if isinstance(value, sp.Basic) and not isinstance(value, sp.Expr):
        return sp.Piecewise((sp.S.One, value), (sp.S.Zero, True))
    return value


def _exact_in_comparisons(expr: sp.Basic) -> sp.Basic:
    """``ZERO`` is the exact 0 where that cannot drop a NaN: compared (a comparison never
    makes one), and times factors that are finite numbers whatever the inputs."""
    if not expr.has(ZERO):
        return expr
    expr = expr.replace(lambda e: e.is_Relational and e.has(ZERO),
                        lambda e: e.xreplace({ZERO: sp.S.Zero}))
    return expr.replace(lambda e: e.is_Mul and ZERO in e.args and
                        all(_finite_number(a) for a in e.args if a is not ZERO),
                        lambda e: sp.S.Zero)


def _finite_number(expr: sp.Basic) -> bool:
    """A finite number, or a selection of finite numbers (whatever the inputs are)."""
    if expr.is_Number:
        return bool(expr.is_finite)
    if isinstance(expr, sp.Piecewise):
        return all(_finite_number(v) for v, _ in expr.args)
    return False


def _in_dependency_order(assignments: list) -> list:
    """Assignments (symbol, expr) ordered so that every symbol is defined before use."""
    pending = {s: e for s, e in assignments}
    ordered, done = [], set()
    for root, _ in assignments:
        stack = [(root, False)]
        while stack:
            sym, expanded = stack.pop()
            if sym in done:
                continue
            if expanded:
                done.add(sym)
                ordered.append((sym, pending[sym]))
                continue
            stack.append((sym, True))
            stack.extend((d, False) for d in pending[sym].free_symbols
                         if d in pending and d not in done)
    return ordered


# A kernel of more region nodes than this is lowered node by node (``lower_straight``):
# sympy's cost per composed expression (canonicalisation, assumptions) and one cse over
# thousands of statements made compile time grow far faster than the graph (a deep chain of
# 20,000 nodes: lowering + printing about 60 s); LLVM removes what cse would have shared.
STRAIGHT_NODES = 400


def lower_kernel(kernel: Kernel) -> LoweredKernel:
    if len(kernel.nodes) > STRAIGHT_NODES:
        return lower_straight(kernel)
    symbols, value, bound = region_exprs(kernel)
    sources = []
    for out in kernel.outputs:
        if out.source not in sources:
            sources.append(out.source)
    exprs = [value[id(s)] for s in sources]
    replacements, reduced = sp.cse([e for _, e in bound] + exprs,
                                   symbols=sp.numbered_symbols("t"), order="none")
    statements = list(replacements) + [(u, r) for (u, _), r in zip(bound, reduced)]
    results = list(reduced[len(bound):])
    statements, results = power_chains(statements, results)
    if bound or len(statements) != len(replacements):
        statements = _in_dependency_order(statements)
    return LoweredKernel(kernel, symbols, sources, exprs, statements, results,
                         kernel_float_dtype(kernel))


# --- node by node ------------------------------------------------------------------------

_SLOT = re.compile(r"Q(\d+)_")


def _attrs_key(attrs: dict) -> tuple:
    """A hashable key of a node's attributes (sympy formulas by their structural hash)."""
    items = []
    for name in sorted(attrs):
        item = attrs[name]
        try:
            hash(item)
        except TypeError:
            item = repr(item)
        items.append((name, type(item), item))
    return tuple(items)


def _slot_constant(node, value: dict) -> bool:
    """A float constant input that may be a slot of the template (printed as a literal):
    finite and non-zero (a zero keeps ``ZERO``'s rules)."""
    return id(node) not in value and dtype_kind(node.dtype) == "f" and \
        bool(np.isfinite(node.uniform)) and float(node.uniform) != 0.0


def _under_add_mul(expr: sp.Basic, slots: set) -> bool:
    """Every occurrence of the ``slots`` is a term or factor of an Add or Mul (where a
    literal prints as the number would: no power, function or comparison reads it)."""
    stack = [(expr, None)]
    while stack:
        e, parent = stack.pop()
        if e in slots and not (parent is not None and (parent.is_Add or parent.is_Mul)):
            return False
        stack.extend((a, e) for a in e.args)
    return True


def _node_template(node, value: dict, float_dtype: str, cache: dict) -> tuple:
    """(sympy form over slots ``Q<k>_``, its printed text split at the slots, {slot: the
    literal of a constant slot}) of one region node, shared by every node of the same op,
    attributes and input kinds (and constants, where a literal would not print as the
    number does)."""
    slotted = [_slot_constant(i, value) for i in node.inputs]
    ins = tuple(("v" if id(i) in value or slot else repr(i.uniform), i.dtype)
                for i, slot in zip(node.inputs, slotted))
    key = (node.op, _attrs_key(node.attrs), node.dtype, ins)   # dtypes hash as their names
    found = cache.get(key)
    if found is None:
        found = cache[key] = _template(node, value, float_dtype, slotted)
    if found is False:        # a constant slot is read as more than a term or factor
        key = key[:3] + (tuple((k, repr(i.uniform)) for k, i in enumerate(node.inputs)
                               if id(i) not in value),)
        found = cache.get(key)
        if found is None:
            found = cache[key] = _template(node, value, float_dtype, [False] * len(slotted))
    expr, parts = found
    literals = {}
    for k, (i, slot) in enumerate(zip(node.inputs, slotted)):
        if slot:
            literal_key = ("literal", repr(float(i.uniform)))
            text = cache.get(literal_key)
            if text is None:
                text = NumbaPrinter(float_dtype, "libm", True).number(number(i.uniform),
                                                                      integer=False)
                text = cache[literal_key] = f"({text})" if text.startswith("-") else text
            literals[k] = text
    return expr, parts, literals


def _template(node, value: dict, float_dtype: str, slotted: list):
    args = [_symbol(f"Q{k}_", i.dtype) if id(i) in value or slot else number(i.uniform)
            for k, (i, slot) in enumerate(zip(node.inputs, slotted))]
    positional = tuple(input_symbol(k, dtype_kind(i.dtype)) for k, i in enumerate(node.inputs))
    formula = sp.sympify(node.op.formula(positional, node.attrs))
    expr = _exact_in_comparisons(_substitute(formula, positional, args))
    floats = {i.dtype.name for i in node.inputs if dtype_kind(i.dtype) == "f"}
    if len(floats) == 1:
        expr = root_comparisons(expr, floats.pop())
    constant_slots = {args[k] for k, slot in enumerate(slotted) if slot}
    if constant_slots and not _under_add_mul(expr, constant_slots):
        return False
    text = NumbaPrinter(float_dtype, "libm", True).doprint(expr)   # libm: see below
    return expr, _SLOT.split(text)   # text, slot, text, slot, ..., text


def lower_straight(kernel: Kernel) -> LoweredKernel:
    """One statement per region node, printed from a template per distinct op signature
    (no composed sympy expression, no cse): time linear in the kernel's size. Printed with
    libm, as every kernel with more than ``templates.FAST_MATH_SITES`` vector math calls.
    ``texts`` holds the statements; ``replacements`` the distinct templates (for the
    helpers they call)."""
    float_dtype = kernel_float_dtype(kernel)
    names = symbol_names(kernel.inputs)
    symbols = [_symbol(n, i.dtype) for n, i in zip(names, kernel.inputs)]
    value = {id(i): n for i, n in zip(kernel.inputs, names)}
    cache: dict = {}
    texts: list = []
    steps: list = []
    joined: dict = {}
    for node in kernel.nodes:
        expr, parts, literals = _node_template(node, value, float_dtype, cache)
        args = [literals.get(k) or value.get(id(i)) for k, i in enumerate(node.inputs)]
        if len(parts) == 3 and not parts[0] and not parts[2]:   # the node is its input
            value[id(node)] = args[int(parts[1])]
            continue
        text = "".join(args[int(p)] if k % 2 else p for k, p in enumerate(parts))
        name = f"u{len(texts)}"
        texts.append(f"{name} = {text}")
        template = joined.get(id(parts))
        if template is None:
            template = joined[id(parts)] = "".join(f"Q{p}_" if k % 2 else p
                                                   for k, p in enumerate(parts))
        steps.append((template, args, name, tuple(_ir_kind(i.dtype) for i in node.inputs),
                      _ir_kind(node.dtype)))
        value[id(node)] = name
    replacements = [(sp.Symbol(f"q{k}_"), found[0])
                    for k, found in enumerate(v for v in cache.values()
                                              if isinstance(v, tuple))]
    sources = []
    for out in kernel.outputs:
        if out.source not in sources:
            sources.append(out.source)
    results = [_symbol(value[id(s)], s.dtype) for s in sources]
    return LoweredKernel(kernel, symbols, sources, list(results), replacements, results,
                         float_dtype, texts=texts, steps=steps)


def _ir_kind(dtype) -> Optional[str]:
    """The LLVM type of a value in a body written as IR (``llvm_body``): float64, float32
    and bool only (None: another type, the body stays numba's)."""
    return _IR_KINDS.get(dtype)


_IR_KINDS = {np.dtype("float64"): "double", np.dtype("float32"): "float",
             np.dtype("bool"): "i1"}   # keyed by dtype: dtype.name is slow


_MODULE_CALL = re.compile(r"\b(math|np)\.(\w+)\(")


def alias_module_calls(texts: list) -> tuple:
    """(texts with ``math.sin(`` written ``math_sin_(``, the lines binding those names):
    numba types a global function once per statement instead of a module attribute
    lookup and then the function (a straight body of 3,500 statements: 16% less compile).

    >>> alias_module_calls(["u0 = math.sin(a0)*np.floor(a1)"])
    (['u0 = math_sin_(a0)*np_floor_(a1)'], ['math_sin_ = math.sin', 'np_floor_ = np.floor'])
    """
    used: set = set()

    def alias(match) -> str:
        used.add((match.group(1), match.group(2)))
        return f"{match.group(1)}_{match.group(2)}_("
    texts = [_MODULE_CALL.sub(alias, text) for text in texts]
    return texts, [f"{m}_{f}_ = {m}.{f}" for m, f in sorted(used)]
