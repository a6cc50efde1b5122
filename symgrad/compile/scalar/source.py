"""A scalar region printed as one straight-line function.

``_s<i>(a0, a1, ...)`` reads the elements it uses (``r<k>_<flat> = a<k>[i, j]``), runs
the region's statements (``t<k> = ...``: one template per distinct form, printed once by
``NumbaPrinter`` with libm math) and returns a tuple of new arrays, one per region
output, written element by element. Where every value is float64 or bool the statements
are one LLVM IR body ``_s<i>_body`` (``codegen/llvm``, as straight kernels' bodies are),
and the *whole* kernel, reads and writes included, is IR too (``codegen/llvm/kernel.py``):
``_s<i>_k`` is compiled by LLVM without numba's front end (``cpu/native_kernels.py``) and
the driver calls ``_s<i>_native``, which allocates the outputs and calls it. The njit
``_s<i>`` runs only where ``_s<i>_k`` refuses its arguments (another dtype or shape), and
``_s<i>_into`` where a fused loop calls it; numba compiles neither unless it is called,
and where ``_s<i>_k`` exists Python compiles their text only then too (``deferred_``: a
string literal, ``cpu/deferred.py``).

>>> import symgrad as sg
>>> from symgrad.compile.plan.fold import fold_graph
>>> from symgrad.compile.scalar.graph import scalar_graph
>>> u = sg.placeholder("u", shape=(2,))
>>> g, (r,) = scalar_graph(fold_graph([sg.stack([u[0] * u[1], u[1] - u[0]])]))
>>> parts = lower_region(r).text.split(chr(10) * 3)
>>> print(parts[0].splitlines()[2])
deferred_(globals(), ('_s1_body', '_s1_into', '_s1'), '''
>>> print(parts[-3])   # after its LLVM IR body and its _into form, in the literal
@numba.njit(cache=NUMBA_CACHE, error_model='numpy', fastmath=FASTMATH)
def _s1(a0):
    r0_0 = a0[0]
    r0_1 = a0[1]
    t0, t1 = _s1_body(r0_0, r0_1)
    o0 = np.empty((2,), np.float64)
    o0[0] = t0
    o0[1] = t1
    return (o0,)
''')
>>> print(parts[-1])   # after the kernel as IR (_s1_k)
def _s1_native(a0):
    o0 = np.empty((2,), np.float64)
    if _s1_k(a0, o0) is not None:
        return _s1(a0)   # not the arrays it was written for: numba's
    return (o0,)
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import re

import numpy as np

from ..codegen.llvm.body import double, function_ir, statements_ir
from ..codegen.llvm.kernel import kernel_ir, stores
from ..codegen.templates import INLINE_STATEMENTS, OPTIONS
from ..printing.printer import ZERO, NumbaPrinter, helpers_used
from .elements import region_code
from .graph import ScalarRegion

__all__ = ["LoweredRegion", "lower_region", "region_summary"]


@dataclass
class LoweredRegion:
    """The printed function of one region and the expressions it prints (for the
    helpers the module imports)."""

    region: ScalarRegion
    text: str
    exprs: list
    statements: int
    native: bool = False     # the whole kernel is IR: the driver calls ``_s<i>_native``


def _float_dtype(region: ScalarRegion) -> str:
    floats = {d.name for d in {n.dtype for n in region.members + region.inputs}
              if d.kind == "f"}       # names of the distinct dtypes (a Python property)
    return "float32" if floats == {"float32"} else "float64"


def _subscript(index: tuple) -> str:
    return "[" + (", ".join(map(str, index)) if index else "()") + "]"


_KINDS = {"float64": "double", "float32": "float", "bool": "i1"}
LLVM_BODIES = True
"""Statements as an LLVM IR body (``codegen/llvm``) where every value is float64, float32 or
bool: numba's front end then types the reads, one call and the writes only."""
NATIVE = True
"""The whole kernel (reads, statements, writes) as IR compiled by LLVM alone
(``codegen/llvm/kernel.py``, ``cpu/native_kernels.py``) where every value is float64 or
bool; the numba function stays as the fallback and for fused loops."""
_IR_KINDS = {"float64": "double", "bool": "i1"}
DEFERRED = True
"""Where the whole kernel is IR, numba's forms (``_s<i>``, ``_s<i>_into``, the body) are a
string literal compiled when first used (``cpu/deferred.py``), not module code."""


def _kind(symbol) -> str:
    return "double" if symbol.is_real else "i64" if symbol.is_integer else "i1"


_SLOT = re.compile(r"Q(\d+)_")


def _printed(template, printer: NumbaPrinter) -> list:
    """A template's text split at its slots (printed once per template)."""
    if template.text is None:
        template.text = _SLOT.split(printer.doprint(template.expr))
    return template.text


def _steps(statements: list, kinds: dict, shared: dict) -> list:
    """``function_ir``'s steps of the statements (arguments by their names), made once per
    region (``shared``: the body and the whole kernel share them; a symbol's kind is its
    own)."""
    if "steps" in shared:
        return shared["steps"]
    steps = []
    joined: dict = {}
    for s in statements:
        text = joined.get(id(s.template))
        if text is None:
            text = joined[id(s.template)] = "".join(
                f"Q{p}_" if k % 2 else p for k, p in enumerate(s.template.text))
        steps.append((text, [a.name for a in s.args], s.symbol.name,
                      tuple(map(kinds.__getitem__, s.args)), kinds[s.symbol]))
    shared["steps"] = steps
    return steps


def _made(steps: list, helpers: dict, shared: dict):
    """``statements_ir`` of the steps, once per region (the body and the whole kernel
    print the same statements: the body's arguments carry the reads' names)."""
    if "made" not in shared:
        shared["made"] = statements_ir(steps, helpers)
    return shared["made"]


def _element(e, kinds: dict):
    """(IR value text, kind) of an output element, or None."""
    import sympy

    if e is ZERO:                # printing.ZERO: a float 0 sympy may not fold away
        return double(0.0), "double"
    if e.is_Symbol:
        return (e.name, kinds[e]) if e in kinds else None
    if e is sympy.true or e is sympy.false:
        return ("true" if e is sympy.true else "false"), "i1"
    if e.is_Number:
        try:
            return double(float(e)), "double"
        except TypeError:        # zoo: no float
            return None
    return None


def _native(name: str, region: ScalarRegion, statements: list, reads: list, used: set,
            results: list, exprs: list, shared: dict) -> tuple:
    """(lines binding ``name + '_k'`` to the whole kernel as IR and ``name + '_native'``
    calling it, None) or (None, why numba's function runs instead)."""
    from ..kernel_lib.deferred import jit_disabled

    if not NATIVE or jit_disabled():
        return None, "the IR path is off (scalar.source.NATIVE)"
    bad = sorted({d.name for d in {n.dtype for n in region.inputs + region.members +
                                   region.outputs} if d.name not in _IR_KINDS})
    if bad:
        return None, f"{', '.join(bad)} values (the IR writer covers float64 and bool)"
    kinds = {}
    inputs = []
    for node, array in zip(region.inputs, reads):
        got = [(index, array[index].name) for index in np.ndindex(*array.shape)
               if array[index] in used]
        kinds.update({array[index]: _kind(array[index]) for index in np.ndindex(*array.shape)})
        inputs.append((_IR_KINDS[node.dtype.name], tuple(node.shape), got))
    kinds.update({s.symbol: _kind(s.symbol) for s in statements})
    if any(k not in ("double", "i1") for k in kinds.values()):
        return None, "an integer element (the IR writer covers float64 and bool)"
    outputs = []
    for node, array in zip(region.outputs, results):
        elements = [_element(e, kinds) for e in array.flat]
        if any(e is None for e in elements):
            return None, "an output element the IR writer does not write"
        outputs.append((_IR_KINDS[node.dtype.name], tuple(node.shape), elements))
    steps = _steps(statements, kinds, shared)
    helpers = dict(helpers_used(exprs))
    made = kernel_ir(inputs, steps, outputs, helpers, _made(steps, helpers, shared))
    if made is None:
        return None, "a statement outside the IR subset"
    if '"""' in made[0] or "\\" in made[0]:
        return None, "IR text the module cannot quote"
    size = len(statements) + sum(len(r) for _, _, r in inputs) + \
        sum(stores(kind, e) for kind, _, e in outputs)
    args = ", ".join(f"a{k}" for k in range(len(reads)))
    outs = [f"o{j}" for j in range(len(results))]
    lines = [f"# {name}_k: the whole kernel as LLVM IR (reads, {len(statements)} statements, "
             "writes), compiled by LLVM without numba's front end",
             "from symgrad.compile.cpu.native_kernels import native_kernel as native_kernel_",
             f'{name}_k = native_kernel_("""{made[0]}""", {made[1]!r}, {len(statements)}, '
             f'"{name}_k", globals(), {size})',
             f'globals().setdefault("NATIVE_KERNELS_", {{}})["{name}_k"] = {name}_k', "", "",
             f"def {name}_native({args}):"]
    for j, node in enumerate(region.outputs):
        shape = "(" + "".join(f"{d}, " for d in node.shape).rstrip(" ") + ")"
        lines.append(f"    o{j} = np.empty({shape}, np.{node.dtype.name})")
    lines += [f"    if {name}_k({', '.join([args] * bool(args) + outs)}) is not None:",
              f"        return {name}({args})   # not the arrays it was written for: numba's",
              f"    return ({''.join(o + ', ' for o in outs).rstrip(' ')})"]
    return lines, None


def _llvm_body(name: str, statements: list, reads: list, outputs: list, exprs: list,
               float_dtype: str, shared: dict):
    """(lines defining ``name`` as an LLVM IR body of the statements, from the ``reads``
    to the ``outputs``), or None where ``codegen/llvm`` cannot write it."""
    from ..kernel_lib.deferred import jit_disabled

    if not LLVM_BODIES or jit_disabled() or float_dtype != "float64" or not outputs:
        return None
    kinds = {s: _kind(s) for s in reads}
    kinds.update({s.symbol: _kind(s.symbol) for s in statements})
    if any(k not in _KINDS.values() for k in kinds.values()):
        return None
    steps = _steps(statements, kinds, shared)
    inputs = tuple(kinds[r] for r in reads)
    outs = tuple(kinds[o] for o in outputs)
    helpers = dict(helpers_used(exprs))
    made = function_ir(inputs, steps, [o.name for o in outputs],
                       len(steps) <= INLINE_STATEMENTS, helpers, outs,
                       [r.name for r in reads], _made(steps, helpers, shared))
    if made is None or '"""' in made[0] or "\\" in made[0]:
        return None
    return [f"# {name}: LLVM IR, {len(steps)} statements",
            "from symgrad.compile.codegen.llvm.link import deferred_body as llvm_body_",
            f'{name} = llvm_body_("""{made[0]}""", {inputs!r}, {outs!r}, {made[1]!r})']


def lower_region(region: ScalarRegion) -> LoweredRegion:
    statements, reads, results = region_code(region.members, region.inputs, region.outputs)
    shared: dict = {}     # the statements' IR steps, made once
    float_dtype = _float_dtype(region)
    printer = NumbaPrinter(float_dtype, "libm", True)
    used: set = set()
    for s in statements:
        used.update(s.args)
    for array in results:
        used |= {e for e in array.flat if e.is_Symbol}
    name = f"_s{region.node.index}"
    args = [f"a{k}" for k in range(len(reads))]
    lines = [f"@numba.njit({OPTIONS})", f"def {name}({', '.join(args)}):"]
    read_symbols = []
    for k, array in enumerate(reads):
        for index in np.ndindex(*array.shape):
            if array[index] in used:
                read_symbols.append(array[index])
                lines.append(f"    {array[index].name} = a{k}{_subscript(index)}")
    templates = list({id(s.template): s.template for s in statements}.values())
    for t in templates:
        _printed(t, printer)
    exprs = [t.expr for t in templates] + [e for a in results for e in a.flat]
    temps = {s.symbol for s in statements}
    outputs = list(dict.fromkeys(e for a in results for e in a.flat if e in temps))
    ir_types = all(d.name in ("float64", "bool")
                   for d in {n.dtype for n in region.inputs + region.members})
    body = _llvm_body(name + "_body", statements, read_symbols, outputs, exprs,
                      float_dtype, shared) if ir_types else None   # float32 and integers: numba's
    head = []
    if body is not None:
        head = body
        values = ", ".join(o.name for o in outputs) + ("," if len(outputs) == 1 else "")
        lines.append(f"    {values} = {name}_body({', '.join(r.name for r in read_symbols)})")
    else:
        for s in statements:
            text = "".join(s.args[int(p)].name if k % 2 else p
                           for k, p in enumerate(s.template.text))
            lines.append(f"    {s.symbol.name} = {text}")
    names = []
    for j, (node, array) in enumerate(zip(region.outputs, results)):
        shape = "(" + "".join(f"{d}, " for d in node.shape).rstrip(" ") + ")"
        lines.append(f"    o{j} = np.empty({shape}, np.{node.dtype.name})")
        lines += [f"    o{j}{_subscript(index)} = {printer.doprint(array[index])}"
                  for index in np.ndindex(*array.shape)]
        names.append(f"o{j}")
    lines.append(f"    return ({''.join(n + ', ' for n in names).rstrip(' ')})")
    into = _into(lines, name, len(names))
    native, why = _native(name, region, statements, reads, used, results, exprs, shared)
    numba_forms = "\n".join(head + ["", ""] * bool(head) + into + ["", ""] + lines)
    if native and DEFERRED and "'''" not in numba_forms and "\\" not in numba_forms:
        defined = tuple([name + "_body"] * bool(head) + [name + "_into", name])
        text = "\n".join([f"# {', '.join(defined)}: numba's forms (where {name}_k declines its "
                          "arguments; fused loops), compiled from this text when first used",
                          "from symgrad.compile.cpu.deferred import deferred as deferred_",
                          f"deferred_(globals(), {defined!r}, '''", numba_forms, "''')",
                          "", ""] + native)
        return LoweredRegion(region, text, exprs, len(statements), True)
    tail = ["", ""] + native if native else \
        ["", "", f'globals().setdefault("NUMBA_REASONS_", {{}})[{region.node.index}] = {why!r}']
    return LoweredRegion(region, numba_forms + "\n" + "\n".join(tail), exprs, len(statements),
                         native is not None)


def _into(lines: list, name: str, n_out: int) -> list:
    """``<name>_into(a..., o0, o1, ...)``: the same function writing its results into the
    arrays it is given (a fused loop's buffers, ``compile/loops/fused.py``; every element
    is read before any is written, so an output may be an input)."""
    outs = "".join(f", o{j}" for j in range(n_out))
    head = lines[1].replace(f"def {name}(", f"def {name}_into(")
    head = head.replace("():", f"({outs[2:]}):") if head.endswith("():") else \
        head.replace("):", f"{outs}):")
    out = [lines[0], head]
    out += [x for x in lines[2:-1] if " = np.empty(" not in x]
    return out


def region_summary(region: ScalarRegion) -> str:
    """``"12 nodes (getitem x4, multiply x2, ...)"``: what a scalar kernel computes."""
    ops = Counter(n.op.name for n in region.members)
    names = ", ".join(op if c == 1 else f"{op} x{c}" for op, c in sorted(ops.items()))
    return f"{len(region.members)} nodes ({names})"
