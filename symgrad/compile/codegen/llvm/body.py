"""Huge scalar bodies written as LLVM IR, one instruction per operation.

numba compiles a Python body by translating its bytecode, typing every statement and
lowering it to LLVM, at about 0.3 ms of CPU per statement, while LLVM itself needs a
tenth of that: a straight-line body of tens of thousands of statements
(``lower.lower_straight``) spends nearly all its compile time in numba's front end.
For such a body the scalar function is written here directly as LLVM IR: each node's
template (its printed statement over slots ``Q<k>_``) is translated once into IR
instructions over slots, and each node instantiates its template. The IR is what numba
emits for the same Python text (``fadd``/``fmul``/... with the kernel's fast-math flags,
``llvm.sin.f64`` for ``math.sin``, libm ``tanh`` for ``math.tanh``, ``fcmp`` ordered
comparisons but ``une`` for ``!=``, ``fsub -0.0, x`` for ``-x``, ``llvm.pow.f64`` for a
float power, ``uitofp`` for a bool read as a number, njit helpers called through numba's
calling convention), so the results are numba's; a conditional ``(a if c else b)`` is a
``select`` (both arms are pure). float32 values are ``float`` (``f32(..)`` literals,
``llvm.sin.f32``, ``tanhf``). A template outside that subset (an integer power, an
integer value, float32 mixed with float64, an unknown call) leaves the kernel to numba
(``function_ir`` returns None).

``llvm_link.body_function`` makes the numba function that calls such a body.

>>> t = template_ir("math.sin(Q0_*0.5) + Q1_")
>>> print(instantiate(t, "%u3", ["%a0", "%u2"])[0])
  %u3.0 = fmul reassoc nsz contract afn double %a0, 0x3FE0000000000000
  %u3.1 = call reassoc nsz contract afn double @llvm.sin.f64(double %u3.0)
  %u3 = fadd reassoc nsz contract afn double %u3.1, %u2
"""

from __future__ import annotations

import ast
import math
import struct

import numpy as np
from dataclasses import dataclass
from typing import Optional

RAISING_HELPERS = ("symgrad.compile.kernel_lib.linalg_checks:",)
"""Helpers that may raise (the linalg checks, whose module has ``MESSAGES``): a body that
calls one returns an i32, 0 or the ``raise_code`` of the first check that failed, and
``link.body_function`` raises ``sg.LinAlgError`` with that check's message."""


IR_CHECKS = {RAISING_HELPERS[0] + name: predicate for name, predicate in (
    ("solve_pivot_", "oeq"), ("inv_pivot_", "oeq"), ("triangular_pivot_", "oeq"),
    ("cholesky_pivot_", "ule"))}
"""The linalg checks defined in the IR itself (``helper_declaration``): the ``fcmp``
predicate under which each fails against 0.0, as its njit function in
``kernel_lib/linalg_checks.py`` raises (``p == 0.0``, ``not d > 0.0``; the value passed
through). numba compiles no helper for them (half a second of the pendulum's build:
numba's compiler started for one check); the call stays (``noinline``: the optimiser
sees what it saw of numba's helper, so results are unchanged bit for bit). They stay
among the helpers called (the raising status, ``link``'s messages), not linked
(``linked``)."""


def linked(helpers) -> list:
    """The helpers of ``helpers`` ((spec, kinds)) whose njit functions are linked."""
    return [(spec, kinds) for spec, kinds in helpers if spec not in IR_CHECKS]


def helper_declaration(spec: str, kinds: tuple) -> str:
    """The IR that declares helper ``spec`` (numba's calling convention: status =
    f(&result, &excinfo, args..)), or defines it where it is one of ``IR_CHECKS``.

    >>> text = helper_declaration(RAISING_HELPERS[0] + "cholesky_pivot_", ("double",))
    >>> [line.split(" @")[0] for line in text.splitlines()]   # not d > 0.0 fails
    ['define internal i32', '  store double %p, ptr %r', '  %c = fcmp ule double %p, 0.0', \
'  %s = zext i1 %c to i32', '  ret i32 %s', '}']
    """
    symbol = helper_symbol(spec, kinds)
    predicate = IR_CHECKS.get(spec)
    if predicate is None or len(kinds) != 1:
        return f"declare i32 @{symbol}(ptr, ptr{''.join(', ' + k for k in kinds)})"
    return "\n".join([f"define internal i32 @{symbol}(ptr %r, ptr %e, {kinds[0]} %p) "
                      "noinline nounwind {", f"  store {kinds[0]} %p, ptr %r",
                      f"  %c = fcmp {predicate} {kinds[0]} %p, 0.0",
                      "  %s = zext i1 %c to i32", "  ret i32 %s", "}"])


def raise_code(spec: str) -> int:
    """A raising helper's nonzero failure code (stable: from its spec's text)."""
    import zlib

    return (zlib.crc32(spec.encode()) & 0x3FFFFFFF) | 1
FLAGS = "reassoc nsz contract afn"   # templates.FASTMATH, as LLVM flags
# A body of more statements than this drops 'reassoc': LLVM's Reassociate pass takes a
# tree of single-use reassociable operations whole, at a cost that grows faster than
# quadratically with its leaves, and the sums of a gradient make one such tree across
# thousands of nodes (deep chain of 6,667 levels, 33,800 statements: Reassociate 1.3 s,
# LLVM 5.2 s in all; without 'reassoc' 2.5 s; keeping it on products only, or dropping it
# on each node's last operation only, left long chains to the machine combiner or the
# register allocator: 10-20 s). The cost at run time: 6-10% on deep chains (the loop
# sums keep their flags). Below, the flags are numba's and so are the results.
REASSOC_STATEMENTS = 12_000
LONG_FLAGS = "nsz contract afn"

# one-argument functions numba lowers to an LLVM intrinsic (``mathimpl.unary_math_intr``,
# numpy's floor/ceil ufunc loops) or to a libm call (``unary_math_extern``)
INTRINSICS = {"sin": "llvm.sin.f64", "cos": "llvm.cos.f64", "exp": "llvm.exp.f64",
              "log": "llvm.log.f64", "log10": "llvm.log10.f64", "fabs": "llvm.fabs.f64",
              "abs": "llvm.fabs.f64", "floor": "llvm.floor.f64", "ceil": "llvm.ceil.f64"}
EXTERNS = {"tanh", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
           "expm1", "log1p", "erf", "erfc", "sqrt"}
BINARY_EXTERNS = {"atan2"}
_MODULES = {"math": ("sin", "cos", "exp", "log", "log10", "fabs", "tanh", "tan", "asin",
                     "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "expm1",
                     "log1p", "erf", "erfc", "sqrt", "atan2"),
            "np": ("floor", "ceil")}
_BINOPS = {ast.Add: "fadd", ast.Sub: "fsub", ast.Mult: "fmul", ast.Div: "fdiv"}
_FCMP = {ast.Lt: "olt", ast.LtE: "ole", ast.Gt: "ogt", ast.GtE: "oge", ast.Eq: "oeq",
         ast.NotEq: "une"}
_ICMP = {ast.Eq: "eq", ast.NotEq: "ne"}


class Unsupported(Exception):
    """A template outside the subset written as IR: the kernel stays numba's."""


def double(value: float) -> str:
    """An exact LLVM double constant.

    >>> double(0.5), double(float("nan"))
    ('0x3FE0000000000000', '0x7FF8000000000000')
    """
    if math.isnan(value):
        return "0x7FF8000000000000"
    return "0x%016X" % struct.unpack("<Q", struct.pack("<d", value))[0]


@dataclass
class TemplateIR:
    """A node template as IR: ``lines`` formatted with ``n`` (the node's value name) and
    ``s<k>`` (the slots' operands); ``result`` the value's operand (``{n}`` when the
    last line defines it); ``declares`` the functions it calls."""

    lines: list
    result: str
    declares: set
    helpers: set = frozenset()   # (spec, number of arguments) of the helpers it calls


FLOATS = {"double": "f64", "float": "f32"}   # float kinds and their intrinsic suffixes


def constant(value: float, kind: str) -> str:
    """An exact LLVM constant of a float kind (a float's value rounded to float32 first,
    as ``np.float32(value)``; LLVM writes float constants as doubles)."""
    return double(float(np.float32(value)) if kind == "float" else value)


class _Emitter:
    """Emits one template: operands are (text, kind) with kind "double" (float64),
    "float" (float32) or "i1" (bool); mixed float kinds are left to numba (its promotion
    rules would apply), a bool read as a float64 is converted as numba converts it."""

    def __init__(self, kinds: tuple, helpers: dict, flags: str):
        self.kinds, self.helpers, self.flags = kinds, helpers, flags
        self.lines: list = []
        self.declares: set = set()
        self.called: set = set()

    def temp(self, text: str, kind: str = "double") -> tuple:
        name = f"{{n}}.{len(self.lines)}"
        self.lines.append(f"  {name} = {text}")
        return name, kind

    def emit(self, node: ast.AST) -> tuple:
        """(operand, kind) of an expression."""
        method = getattr(self, "_" + type(node).__name__, None)
        if method is None:
            raise Unsupported(type(node).__name__)
        return method(node)

    def number(self, node: ast.AST) -> tuple:
        """A float operand (a bool read as a number is 0.0 or 1.0 in float64, as numba
        casts it)."""
        return self.as_number(*self.emit(node))

    def as_number(self, operand: str, kind: str) -> tuple:
        if kind == "i1":
            return self.temp(f"uitofp i1 {operand} to double")
        return operand, kind

    def numbers(self, nodes) -> tuple:
        """(operands, their one float kind)."""
        pairs = [self.number(n) for n in nodes]
        kinds = {k for _, k in pairs}
        if len(kinds) != 1:
            raise Unsupported("float32 and float64 mixed")
        return [op for op, _ in pairs], kinds.pop()

    def condition(self, node: ast.AST) -> str:
        """An i1 operand (a number's truth value is ``x != 0``, as numba's)."""
        operand, kind = self.emit(node)
        if kind in FLOATS:
            return self.temp(f"fcmp {self.flags} une {kind} {operand}, "
                             f"{constant(0.0, kind)}", "i1")[0]
        return operand

    def _Name(self, node):
        if node.id.startswith("Q") and node.id.endswith("_") and node.id[1:-1].isdigit():
            k = int(node.id[1:-1])
            if k >= len(self.kinds) or self.kinds[k] is None:
                raise Unsupported(f"slot {k} of an unsupported type")
            return "{s%d}" % k, self.kinds[k]
        raise Unsupported(node.id)

    def _Constant(self, node):
        if isinstance(node.value, bool):
            return ("true" if node.value else "false"), "i1"
        if isinstance(node.value, (int, float)):
            return double(float(node.value)), "double"
        raise Unsupported(repr(node.value))

    def _Attribute(self, node):
        if isinstance(node.value, ast.Name) and node.value.id == "math":
            if node.attr == "nan":
                return double(math.nan), "double"
            if node.attr == "inf":
                return double(math.inf), "double"
        raise Unsupported(node.attr)

    def _UnaryOp(self, node):
        if isinstance(node.op, ast.UAdd):
            return self.emit(node.operand)
        if isinstance(node.op, ast.Not):
            operand, kind = self.emit(node.operand)
            if kind != "i1":
                raise Unsupported("not of a number")
            return self.temp(f"xor i1 {operand}, true", "i1")
        if isinstance(node.op, ast.USub):
            if isinstance(node.operand, ast.Constant) and \
                    isinstance(node.operand.value, (int, float)) and \
                    not isinstance(node.operand.value, bool):
                return double(-float(node.operand.value)), "double"   # folded by CPython
            operand, kind = self.number(node.operand)
            return self.temp(f"fsub {self.flags} {kind} {constant(-0.0, kind)}, {operand}",
                             kind)
        raise Unsupported(type(node.op).__name__)

    def _BinOp(self, node):
        if isinstance(node.op, ast.Pow):     # numba: llvm.pow for a float exponent
            if isinstance(node.right, ast.Constant) and \
                    not isinstance(node.right.value, float):
                raise Unsupported("an integer power")     # numba's int_power
            if self.emit(node.right)[1] == "i1":
                raise Unsupported("a bool exponent")
            (left, right), kind = self.numbers([node.left, node.right])
            callee = f"llvm.pow.{FLOATS[kind]}"
            self.declares.add(f"declare {kind} @{callee}({kind}, {kind})")
            return self.temp(f"call {self.flags} {kind} @{callee}({kind} {left}, "
                             f"{kind} {right})", kind)
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise Unsupported(type(node.op).__name__)
        (left, right), kind = self.numbers([node.left, node.right])
        return self.temp(f"{op} {self.flags} {kind} {left}, {right}", kind)

    def _Compare(self, node):
        if len(node.ops) != 1:
            raise Unsupported("chained comparison")
        (left, lk), (right, rk) = self.emit(node.left), self.emit(node.comparators[0])
        if lk == rk == "i1":
            if type(node.ops[0]) not in _ICMP:
                raise Unsupported(type(node.ops[0]).__name__)
            return self.temp(f"icmp {_ICMP[type(node.ops[0])]} i1 {left}, {right}", "i1")
        if type(node.ops[0]) not in _FCMP:
            raise Unsupported(type(node.ops[0]).__name__)
        (left, lk), (right, rk) = self.as_number(left, lk), self.as_number(right, rk)
        if lk != rk:
            raise Unsupported("float32 and float64 compared")
        return self.temp(f"fcmp {self.flags} {_FCMP[type(node.ops[0])]} {lk} {left}, "
                         f"{right}", "i1")

    def _BoolOp(self, node):
        op = "and" if isinstance(node.op, ast.And) else "or"
        operands = [self.emit(v) for v in node.values]
        if any(kind != "i1" for _, kind in operands):
            raise Unsupported("and/or of numbers")
        out = operands[0][0]
        for operand, _ in operands[1:]:
            out, _ = self.temp(f"{op} i1 {out}, {operand}", "i1")
        return out, "i1"

    def _IfExp(self, node):
        cond = self.condition(node.test)
        (a, ak), (b, bk) = self.emit(node.body), self.emit(node.orelse)
        if ak != bk:        # a bool and a number: the selection is a float64
            (a, ak), (b, bk) = self.as_number(a, ak), self.as_number(b, bk)
            if ak != bk:
                raise Unsupported("float32 and float64 selected")
        return self.temp(f"select i1 {cond}, {ak} {a}, {bk} {b}", ak)

    def _Call(self, node):
        if isinstance(node.func, ast.Name) and node.func.id in self.helpers:
            return self._helper(node)
        if isinstance(node.func, ast.Name) and node.func.id == "f32" and \
                len(node.args) == 1 and not node.keywords:
            return self._f32(node.args[0])
        name = _function_name(node.func)
        if node.keywords or name is None:
            raise Unsupported("call")
        args, kind = self.numbers(node.args)
        f = "" if kind == "double" else "f"
        if name in INTRINSICS and len(args) == 1:
            callee = INTRINSICS[name].replace(".f64", "." + FLOATS[kind])
            self.declares.add(f"declare {kind} @{callee}({kind})")
        elif name in EXTERNS and len(args) == 1:
            callee = name + f
            self.declares.add(f"declare {kind} @{callee}({kind}) #1")
        elif name in BINARY_EXTERNS and len(args) == 2:
            callee = name + f
            self.declares.add(f"declare {kind} @{callee}({kind}, {kind}) #1")
        else:
            raise Unsupported(name)
        typed = ", ".join(f"{kind} {a}" for a in args)
        return self.temp(f"call {self.flags} {kind} @{callee}({typed})", kind)

    def _f32(self, arg: ast.AST) -> tuple:
        """``f32(x)``: a float32 literal, or a float64 value rounded to float32."""
        operand, kind = self.number(arg)
        if kind == "float":
            return operand, kind
        if operand.startswith("0x"):
            value = struct.unpack("<d", struct.pack("<Q", int(operand, 16)))[0]
            return constant(value, "float"), "float"
        return self.temp(f"fptrunc double {operand} to float", "float")

    def _helper(self, node):
        """An njit helper (``support.sign_``, ..) of float arguments of one kind: a call
        of its numba-compiled function (numba's calling convention: status = f(&result,
        &excinfo, args..), ignored: the helpers never raise), linked in at codegen."""
        if node.keywords:
            raise Unsupported("call")
        spec = self.helpers[node.func.id]
        args, kind = self.numbers(node.args)
        kinds = (kind,) * len(args)
        self.called.add((spec, kinds))
        result, _ = self.temp(f"alloca {kind}")
        excinfo, _ = self.temp("alloca ptr")
        typed = "".join(f", {kind} {a}" for a in args)
        status, _ = self.temp(f"call i32 @{helper_symbol(spec, kinds)}(ptr {result}, ptr "
                              f"{excinfo}{typed})", "i32")
        if spec.startswith(RAISING_HELPERS):     # the first failure's code kept in %fail
            failed, _ = self.temp(f"icmp ne i32 {status}, 0", "i1")
            before, _ = self.temp("load i32, ptr %fail", "i32")
            first, _ = self.temp(f"icmp eq i32 {before}, 0", "i1")
            both, _ = self.temp(f"and i1 {failed}, {first}", "i1")
            code, _ = self.temp(f"select i1 {both}, i32 {raise_code(spec)}, i32 {before}",
                                "i32")
            self.lines.append(f"  store i32 {code}, ptr %fail")
        return self.temp(f"load {kind}, ptr {result}", kind)


def _function_name(func: ast.AST) -> Optional[str]:
    """``math.sin`` / ``math_sin_`` (``lower.alias_module_calls``) / ``abs``: the name."""
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        if func.attr in _MODULES.get(func.value.id, ()):
            return func.attr
        return None
    if isinstance(func, ast.Name):
        if func.id == "abs":
            return "abs"
        for module, names in _MODULES.items():
            prefix = module + "_"
            if func.id.startswith(prefix) and func.id.endswith("_") and \
                    func.id[len(prefix):-1] in names:
                return func.id[len(prefix):-1]
    return None


def helper_symbol(spec: str, kinds: tuple) -> str:
    """The placeholder symbol of helper ``spec`` for arguments of ``kinds`` in a body's IR
    (``llvm_link`` puts the compiled function's name in its place)."""
    return f"symgrad.helper.{'.'.join(kinds)}.{spec.replace(':', '.')}"


def template_ir(text: str, kinds: tuple = (), result: str = "double",
                helpers: Optional[dict] = None, flags: str = FLAGS) -> TemplateIR:
    """A printed node template (slots ``Q<k>_`` of ``kinds``: "double", "i1" or None for
    another type; the node's value of kind ``result``; ``helpers``: {alias: "pkg.mod:fn"}
    of the njit helpers it may call; ``flags`` the fast-math flags of its floating-point
    operations) as IR (raises ``Unsupported``)."""
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError as exc:
        raise Unsupported(text) from exc
    emitter = _Emitter(tuple(kinds) or ("double",) * 8, helpers or {}, flags)
    value, kind = emitter.emit(tree)
    if kind != result:
        raise Unsupported(f"a {kind} value for a {result} node")
    result = value
    lines = emitter.lines
    if lines and result == f"{{n}}.{len(lines) - 1}":   # the last line defines the value
        lines[-1] = lines[-1].replace(result + " =", "{n} =", 1)
        result = "{n}"
    return TemplateIR(lines, result, emitter.declares, frozenset(emitter.called))


def instantiate(template: TemplateIR, name: str, operands: list) -> tuple:
    """(IR lines, value operand) of one node: ``name`` its value, ``operands`` its slots'."""
    fields = {f"s{k}": op for k, op in enumerate(operands)}
    fields["n"] = name
    text = "\n".join(template.lines).format(**fields) if template.lines else ""
    return text, template.result.format(**fields)


def operand(text: str) -> str:
    """A statement argument (a name, or a literal such as ``0.5``, ``(-2.0)`` or
    ``f32(0.5)``)."""
    if text.isidentifier():
        return "%" + text
    if text.startswith("f32(") and text.endswith(")"):
        return constant(float(text[4:-1].strip("()")), "float")
    return double(float(text.strip("()")))


def statements_ir(steps: list, helpers: Optional[dict] = None) -> Optional[tuple]:
    """(IR lines, {name: operand} of values that are not their own SSA name, declarations,
    helpers called, the index of the step each entry of the lines comes from) of the
    ``steps`` (as ``function_ir``'s), or None when one is outside the subset."""
    translated: dict = {}
    declares: set = set()
    called: set = set()
    value: dict = {}
    body = []
    owners = []
    flags = FLAGS if len(steps) <= REASSOC_STATEMENTS else LONG_FLAGS
    for i, (text, args, name, kinds, kind) in enumerate(steps):
        template = translated.get((text, kinds, kind))
        if template is None:
            try:
                template = template_ir(text, kinds, kind, helpers, flags)
            except Unsupported:
                return None
            translated[(text, kinds, kind)] = template
            declares |= template.declares
            called |= template.helpers
        ops = [None if a is None else value.get(a) or operand(a) for a in args]
        lines, result = instantiate(template, "%" + name, ops)
        if lines:
            body.append(lines)
            owners.append(i)
        if result != "%" + name:
            value[name] = result
    return body, value, declares, called, owners


def function_ir(inputs: tuple, steps: list, results: list, inline: bool,
                helpers: Optional[dict] = None, outputs: tuple = (),
                names: Optional[list] = None, made: Optional[tuple] = None) -> Optional[tuple]:
    """(IR module text, helpers called) of ``void @SYMBOL_(a0, .., ptr out)``
    (``body_function`` names it by the hash of the text), or None when a statement is
    outside the subset. ``inputs``: the kinds ("double", "i1") of the arguments;
    ``steps``: (template text, argument texts, value name, slot kinds, value kind) per
    statement in order; ``results``: the names (or literals) of the values stored to
    ``out[j]`` (8 bytes each), of the kinds ``outputs`` (default float64); ``helpers``:
    {alias: "pkg.mod:fn"} of the njit helpers templates call; ``names``: the arguments'
    names (default ``a<k>``), so that the statements of a whole kernel (``made``: its
    ``statements_ir``, reads named as here) serve the body unchanged."""
    if made is None:
        made = statements_ir(steps, helpers)
    if made is None:
        return None
    body, value, declares, called = made[:4]
    declares = set(declares)
    names = names or [f"a{k}" for k in range(len(inputs))]
    params = ", ".join([f"{kind} %{name}" for kind, name in zip(inputs, names)] +
                       ["ptr noalias %out"])
    raising = any(spec.startswith(RAISING_HELPERS) for spec, _ in called)
    head = [f"define weak_odr {'i32' if raising else 'void'} @SYMBOL_({params}) #0 {{",
            "entry:"]
    if raising:
        head += ["  %fail = alloca i32", "  store i32 0, ptr %fail"]
    stores = []
    for j, r in enumerate(results):
        v = value.get(r) or operand(r)
        kind = outputs[j] if outputs else "double"
        stores += [f"  %out.{j} = getelementptr inbounds double, ptr %out, i64 {j}",
                   f"  store {kind} {v}, ptr %out.{j}"]
    for spec, kinds in sorted(called):
        declares.add(helper_declaration(spec, kinds))
    attrs = "nounwind alwaysinline" if inline else "nounwind"
    ret = ["  %fail.r = load i32, ptr %fail", "  ret i32 %fail.r"] if raising else ["  ret void"]
    text = "\n".join(head + body + stores + ret + ["}", *sorted(declares),
                                             f"attributes #0 = {{ {attrs} }}",
                                             "attributes #1 = { nounwind memory(read) }"])
    return text + "\n", tuple(sorted(called))
