"""A loop kernel as one LLVM IR function: the loop nest, its scalar body and its stores.

A CPU loop kernel (``templates.loop_source``: ``_k<i>_cpu(n0, .., x0, .., r0, ..)``) is a
small Python function in a narrow subset: ``for`` over ``range``, ``if``, integer index
arithmetic, array loads and stores, ``+=`` accumulators and one call of the kernel's scalar
body (``_k<i>_point``). numba spends most of a small program's build typing and lowering
it (and, before that, refreshing its typing registries: about 0.3 s per process). Here the
loop's source is translated into IR statement by statement and the body's printed
statements are inlined at its call through ``body._Emitter`` (the instructions numba emits
for them, with the kernel's fast-math flags), so the result is numba's for the same array
types; ``cpu/native_loops.py`` compiles it with numba's LLVM pipeline and calls it as a
builtin function (``METH_FASTCALL``), like the scalar kernels of ``kernel.py``. The
builtin checks and unpacks its arguments and calls the loop as a function of its own
(``@SYMBOL_.loop``, not inlined) that takes the ints, data pointers, dimensions and strides
as arguments, as numba's inner function does: in one function with the checks, LLVM's
register allocator spilled the data pointers of the hot loop (the dense Jacobian's gather
loop ran 5-8% slower than numba's; now 4-6% faster, dispatch included).

The IR is written for the argument types of a call (``signature``): Python ints, and
float64 or bool arrays that are C-contiguous, aligned, in native byte order, of a given
rank. The function checks its arguments first and returns ``NotImplemented`` (no element
touched) where they are not those: the caller then runs numba's function. Elements are
addressed as numba addresses a C-contiguous array (the flat index from the runtime
dimensions). Anything outside the subset (slices, ``//``, integer or float32 arrays, njit
helpers such as ``vecmath``'s fast forms, sin/cos range checks) raises ``Unsupported``
with the reason, and the kernel stays numba's.

>>> src = '''def f(n0, x0, r0):
...     for i0 in range(n0):
...         e0, = g(x0[i0])
...         r0[i0] = e0'''
>>> text = loop_ir(src, ("g", ["a0"], ["t = a0*a0"], ["t + 1.0"]),
...                [("int",), ("array", "double", 1, "C"), ("array", "double", 1, "C")])
>>> [l.strip() for l in text.splitlines() if l.strip().startswith("%p0")]
... # doctest: +NORMALIZE_WHITESPACE
['%p0.t = fmul reassoc nsz contract afn double %v6, %v6',
 '%p0.r0 = fadd reassoc nsz contract afn double %p0.t, 0x3FF0000000000000']
"""

from __future__ import annotations

import ast
from typing import Optional

from .body import FLAGS, Unsupported, _Emitter, _function_name, double
from .kernel import NDARRAY, SWAPPED, TYPE_NUMS

C_CONTIGUOUS, ALIGNED = 0x1, 0x100          # NPY_ARRAY_* flags
INT = "i64"
_IBINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul"}
_ICMP = {ast.Lt: "slt", ast.LtE: "sle", ast.Gt: "sgt", ast.GtE: "sge", ast.Eq: "eq",
         ast.NotEq: "ne"}
_FCMP = {ast.Lt: "olt", ast.LtE: "ole", ast.Gt: "ogt", ast.GtE: "oge", ast.Eq: "oeq",
         ast.NotEq: "une"}
_FBINOPS = {ast.Add: "fadd", ast.Sub: "fsub", ast.Mult: "fmul", ast.Div: "fdiv"}


def signature(args: tuple) -> Optional[tuple]:
    """The argument types ``loop_ir`` writes for, from a call's arguments: ("int",) per
    Python int, ("array", kind, rank, layout) per aligned float64/bool ndarray in native
    byte order, layout "C" when it is C-contiguous, else "A" (any strides, as numba's
    layouts; a phantom of ``cpu/phantom.py`` counts as its array); None when one is
    anything else (numba's function runs).

    >>> import numpy as np
    >>> signature((3, np.zeros((2, 3)), np.zeros(4, bool)))
    (('int',), ('array', 'double', 2, 'C'), ('array', 'i1', 1, 'C'))
    >>> signature((np.zeros((4, 4))[:, ::2],)), signature((np.zeros(3, np.float32),))
    ((('array', 'double', 2, 'A'),), None)
    """
    import numpy as np

    out = []
    for a in args:
        if type(a) is int:
            out.append(("int",))
            continue
        if not isinstance(a, np.ndarray) or not a.flags.aligned or not a.dtype.isnative:
            return None
        kind = {"float64": "double", "bool": "i1"}.get(a.dtype.name)
        if kind is None:
            return None
        out.append(("array", kind, a.ndim, "C" if a.flags.c_contiguous else "A"))
    return tuple(out)


class _Array:
    """An array argument: element kind, data pointer, dimensions, and the distance
    between neighbours along each axis: elements (layout "C") or bytes ("A")."""

    def __init__(self, kind: str, data: str, dims: list, steps: list, layout: str):
        self.kind, self.data, self.dims, self.steps = kind, data, dims, steps
        self.layout = layout


class _PointEmitter(_Emitter):
    """``body._Emitter`` over named values (the inlined body's parameters and statements)
    instead of template slots."""

    def __init__(self, env: dict):
        super().__init__((), dict.fromkeys(EXACT_HELPERS, ""), FLAGS)
        self.env = env

    def _Name(self, node):
        if node.id in self.env:
            return self.env[node.id]
        raise Unsupported(f"the name {node.id} in the scalar body")

    def _Call(self, node):
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name not in EXACT_HELPERS and _function_name(node.func) is None and \
                not name == "f32":
            raise Unsupported(f"a call of {ast.unparse(node.func)}")
        return super()._Call(node)

    def _helper(self, node):
        """``support``'s exact helpers (their njit functions compare without fast-math
        flags and select an argument, or multiply by one): written inline as selects."""
        if node.keywords:
            raise Unsupported("a call with keywords")
        args, kind = self.numbers(node.args)
        if kind != "double":
            raise Unsupported("a float32 helper")
        return EXACT_HELPERS[node.func.id](self, *args)


def _max(e, x, y):
    ge = e.temp(f"fcmp oge double {x}, {y}", "i1")[0]
    nan = e.temp(f"fcmp une double {x}, {x}", "i1")[0]
    return e.temp(f"select i1 {e.temp(f'or i1 {ge}, {nan}', 'i1')[0]}, double {x}, "
                  f"double {y}")


def _min(e, x, y):
    le = e.temp(f"fcmp ole double {x}, {y}", "i1")[0]
    nan = e.temp(f"fcmp une double {x}, {x}", "i1")[0]
    return e.temp(f"select i1 {e.temp(f'or i1 {le}, {nan}', 'i1')[0]}, double {x}, "
                  f"double {y}")


def _sign(e, x, one):
    pos = e.temp(f"fcmp ogt double {x}, 0.0", "i1")[0]
    neg = e.temp(f"fcmp olt double {x}, 0.0", "i1")[0]
    minus = e.temp(f"fneg double {one}")[0]
    times = e.temp(f"fmul double {x}, {one}")[0]
    rest = e.temp(f"select i1 {neg}, double {minus}, double {times}")[0]
    return e.temp(f"select i1 {pos}, double {one}, double {rest}")


def _relu(e, x, zero):
    le = e.temp(f"fcmp ole double {x}, {zero}", "i1")[0]
    return e.temp(f"select i1 {le}, double {zero}, double {x}")


EXACT_HELPERS = {"max_": _max, "min_": _min, "sign_": _sign, "relu_": _relu}
"""The njit helpers of ``kernel_lib/support.py`` whose results are exact (no rounding), so
the IR's selects give numba's values bit for bit."""


class _Writer:
    """Translates one loop function's AST into IR lines."""

    def __init__(self, point: tuple):
        self.point = point                 # (name, params, statements, results)
        self.lines: list = []
        self.allocas: list = []
        self.declares: set = set()
        self.vars: dict = {}               # local name -> (alloca, kind)
        self.arrays: dict = {}             # parameter name -> _Array
        self.values: dict = {}             # parameter name -> (operand, kind)
        self.count = 0
        self.inlined = 0

    def fresh(self, stem: str = "v") -> str:
        self.count += 1
        return f"%{stem}{self.count}"

    def emit(self, text: str, stem: str = "v") -> str:
        name = self.fresh(stem)
        self.lines.append(f"  {name} = {text}")
        return name

    def label(self, name: str) -> None:
        self.lines.append(f"{name}:")

    # --- expressions --------------------------------------------------------------------
    def expr(self, node: ast.AST) -> tuple:
        """(operand, kind) with kind "i64", "double", "i1" or "lit" (an int literal)."""
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool):
                return ("true" if node.value else "false"), "i1"
            if isinstance(node.value, int):
                return str(node.value), "lit"
            if isinstance(node.value, float):
                return double(node.value), "double"
            raise Unsupported(repr(node.value))
        if isinstance(node, ast.Name):
            if node.id in self.values:
                return self.values[node.id]
            if node.id in self.vars:
                slot, kind = self.vars[node.id]
                return self.emit(f"load {_llvm(kind)}, ptr {slot}"), kind
            raise Unsupported(f"the name {node.id}")
        if isinstance(node, ast.BinOp):
            return self.binop(node)
        if isinstance(node, ast.UnaryOp):
            operand, kind = self.expr(node.operand)
            if isinstance(node.op, ast.USub) and kind == "lit":
                return str(-int(operand)), "lit"
            if isinstance(node.op, ast.USub) and kind == "double":
                return self.emit(f"fsub {FLAGS} double -0.0, {operand}"), "double"
            if isinstance(node.op, ast.USub) and kind == INT:
                return self.emit(f"sub i64 0, {operand}"), INT
            if isinstance(node.op, ast.Not) and kind == "i1":
                return self.emit(f"xor i1 {operand}, true"), "i1"
            raise Unsupported(type(node.op).__name__)
        if isinstance(node, ast.Compare):
            return self.compare(node)
        if isinstance(node, ast.BoolOp):
            operands = [self.truth(v) for v in node.values]
            op = "and" if isinstance(node.op, ast.And) else "or"
            out = operands[0]
            for o in operands[1:]:
                out = self.emit(f"{op} i1 {out}, {o}")
            return out, "i1"
        if isinstance(node, ast.IfExp):
            cond = self.truth(node.test)
            (a, ak), (b, bk) = self.unify(self.expr(node.body), self.expr(node.orelse))
            return self.emit(f"select i1 {cond}, {_llvm(ak)} {a}, {_llvm(bk)} {b}"), ak
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.Subscript):
            return self.load(node)
        raise Unsupported(type(node).__name__)

    def truth(self, node: ast.AST) -> str:
        operand, kind = self.expr(node)
        if kind == "i1":
            return operand
        if kind == "double":
            return self.emit(f"fcmp {FLAGS} une double {operand}, 0.0")
        return self.emit(f"icmp ne i64 {operand}, 0")

    def unify(self, a: tuple, b: tuple) -> tuple:
        """Two operands in one kind (numba's promotion: int with float is float, a bool
        with a number is that number)."""
        kinds = {a[1], b[1]}
        if len(kinds) == 1:
            if kinds == {"lit"}:
                return (a[0], INT), (b[0], INT)
            return a, b
        to = "double" if "double" in kinds else INT
        return self.cast(*a, to), self.cast(*b, to)

    def cast(self, operand: str, kind: str, to: str) -> tuple:
        if kind == to:
            return operand, kind
        if kind == "lit":
            return (double(float(int(operand))) if to == "double" else operand), to
        if kind == "i1" and to == "double":
            return self.emit(f"uitofp i1 {operand} to double"), to
        if kind == "i1" and to == INT:
            return self.emit(f"zext i1 {operand} to i64"), to
        if kind == INT and to == "double":
            return self.emit(f"sitofp i64 {operand} to double"), to
        raise Unsupported(f"a {kind} value as {to}")

    def binop(self, node: ast.BinOp) -> tuple:
        a, b = self.unify(self.expr(node.left), self.expr(node.right))
        kind = a[1]
        if kind == "i1":
            a, b = self.cast(*a, INT), self.cast(*b, INT)
            kind = INT
        if kind == INT and type(node.op) in _IBINOPS:
            return self.emit(f"{_IBINOPS[type(node.op)]} i64 {a[0]}, {b[0]}"), INT
        if kind == "double" and type(node.op) in _FBINOPS:
            return self.emit(f"{_FBINOPS[type(node.op)]} {FLAGS} double {a[0]}, {b[0]}"), kind
        raise Unsupported(f"{type(node.op).__name__} of {kind} values")

    def compare(self, node: ast.Compare) -> tuple:
        left = self.expr(node.left)
        out = None
        for op, right_node in zip(node.ops, node.comparators):
            right = self.expr(right_node)
            a, b = self.unify(left, right)
            if a[1] == INT and type(op) in _ICMP:
                test = self.emit(f"icmp {_ICMP[type(op)]} i64 {a[0]}, {b[0]}")
            elif a[1] == "double" and type(op) in _FCMP:
                test = self.emit(f"fcmp {FLAGS} {_FCMP[type(op)]} double {a[0]}, {b[0]}")
            elif a[1] == "i1" and isinstance(op, (ast.Eq, ast.NotEq)):
                test = self.emit(f"icmp {_ICMP[type(op)]} i1 {a[0]}, {b[0]}")
            else:
                raise Unsupported(f"{type(op).__name__} of {a[1]} values")
            out = test if out is None else self.emit(f"and i1 {out}, {test}")
            left = right
        return out, "i1"

    def call(self, node: ast.Call) -> tuple:
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and \
                f.value.id == "np" and f.attr in ("uint64", "int64") and len(node.args) == 1:
            return self.cast(*self.expr(node.args[0]), INT)   # an index, never negative
        raise Unsupported("a call in the loop")

    # --- arrays ---------------------------------------------------------------------------
    def address(self, node: ast.Subscript) -> tuple:
        if not isinstance(node.value, ast.Name) or node.value.id not in self.arrays:
            raise Unsupported("a subscript of something other than an array")
        array = self.arrays[node.value.id]
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if len(items) != len(array.dims):
            raise Unsupported("a subscript of another rank")
        flat = None
        for item, step in zip(items, array.steps):
            if isinstance(item, ast.Slice):
                raise Unsupported("a slice")
            index = self.cast(*self.expr(item), INT)[0]
            term = index if step == "1" else self.emit(f"mul i64 {index}, {step}")
            flat = term if flat is None else self.emit(f"add i64 {flat}, {term}")
        item = "i8" if array.kind == "i1" or array.layout == "A" else "double"
        if flat is None:
            return array.data, array.kind
        return self.emit(f"getelementptr inbounds {item}, ptr {array.data}, i64 {flat}"), \
            array.kind

    def load(self, node: ast.Subscript) -> tuple:
        value = node.value
        if isinstance(value, ast.Attribute) and value.attr == "shape" and \
                isinstance(value.value, ast.Name) and value.value.id in self.arrays and \
                isinstance(node.slice, ast.Constant):
            return self.arrays[value.value.id].dims[node.slice.value], INT
        at, kind = self.address(node)
        if kind == "i1":
            byte = self.emit(f"load i8, ptr {at}")
            return self.emit(f"icmp ne i8 {byte}, 0"), "i1"
        return self.emit(f"load double, ptr {at}"), "double"

    def store(self, node: ast.Subscript, value: tuple) -> None:
        at, kind = self.address(node)
        if kind == "i1":
            if value[1] != "i1":
                raise Unsupported("a number stored into a bool array")
            self.lines.append(f"  store i8 {self.emit(f'zext i1 {value[0]} to i8')}, ptr {at}")
        else:
            operand, _ = self.cast(*value, "double")
            self.lines.append(f"  store double {operand}, ptr {at}")

    # --- statements -----------------------------------------------------------------------
    def assign(self, name: str, value: tuple) -> None:
        if name in self.values or name in self.arrays:
            raise Unsupported(f"an assignment to parameter {name}")
        if name not in self.vars:
            kind = INT if value[1] == "lit" else value[1]
            slot = f"%var.{name}"
            self.allocas.append(f"  {slot} = alloca {_llvm(kind)}")
            self.vars[name] = (slot, kind)
        slot, kind = self.vars[name]
        operand, _ = self.cast(*value, kind)
        self.lines.append(f"  store {_llvm(kind)} {operand}, ptr {slot}")

    def statements(self, body: list) -> None:
        for s in body:
            self.statement(s)

    def statement(self, s: ast.stmt) -> None:
        if isinstance(s, ast.Assign) and len(s.targets) == 1:
            target = s.targets[0]
            if isinstance(target, ast.Tuple):
                values = self.inline(s.value)
                if len(values) != len(target.elts) or \
                        not all(isinstance(t, ast.Name) for t in target.elts):
                    raise Unsupported("an unpacking")
                for t, v in zip(target.elts, values):
                    self.assign(t.id, v)
            elif isinstance(target, ast.Name):
                self.assign(target.id, self.expr(s.value))
            elif isinstance(target, ast.Subscript):
                self.store(target, self.expr(s.value))
            else:
                raise Unsupported("an assignment")
        elif isinstance(s, ast.AugAssign) and isinstance(s.op, ast.Add):
            add = ast.BinOp(left=_as_load(s.target), op=ast.Add(), right=s.value)
            if isinstance(s.target, ast.Name):
                self.assign(s.target.id, self.binop(add))
            elif isinstance(s.target, ast.Subscript):
                self.store(s.target, self.binop(add))
            else:
                raise Unsupported("an augmented assignment")
        elif isinstance(s, ast.For):
            self.loop(s)
        elif isinstance(s, ast.If):
            self.branch(s)
        else:
            raise Unsupported(type(s).__name__)

    def loop(self, s: ast.For) -> None:
        it = s.iter
        if not (isinstance(s.target, ast.Name) and isinstance(it, ast.Call) and
                isinstance(it.func, ast.Name) and it.func.id == "range" and
                1 <= len(it.args) <= 2 and not s.orelse):
            raise Unsupported("a loop other than for i in range(a, b)")
        bounds = [self.cast(*self.expr(a), INT)[0] for a in it.args]
        start, stop = ("0", bounds[0]) if len(bounds) == 1 else bounds
        n = self.fresh("L")[1:]
        counter = f"%{n}.i"
        self.allocas.append(f"  {counter} = alloca i64")
        self.lines.append(f"  store i64 {start}, ptr {counter}")
        self.lines.append(f"  br label %{n}.head")
        self.label(f"{n}.head")
        i = self.emit(f"load i64, ptr {counter}")
        more = self.emit(f"icmp slt i64 {i}, {stop}")
        self.lines.append(f"  br i1 {more}, label %{n}.body, label %{n}.end")
        self.label(f"{n}.body")
        self.assign(s.target.id, (i, INT))
        self.statements(s.body)
        self.lines.append(f"  %{n}.next = add nsw i64 {i}, 1")
        self.lines.append(f"  store i64 %{n}.next, ptr {counter}")
        self.lines.append(f"  br label %{n}.head")
        self.label(f"{n}.end")

    def jump(self, test: ast.AST, yes: str, no: str) -> None:
        """Branch on ``test`` as Python (and numba) evaluates it: ``and``/``or`` and chained
        comparisons short-circuit (as control flow, which LLVM then treats as numba's: a
        select instead would let it vectorise a short edge loop that numba leaves scalar,
        with a vector preamble in every row)."""
        if isinstance(test, ast.BoolOp):
            for k, value in enumerate(test.values):
                if k == len(test.values) - 1:
                    self.jump(value, yes, no)
                    return
                nxt = self.fresh("C")[1:]
                if isinstance(test.op, ast.And):
                    self.jump(value, nxt, no)
                else:
                    self.jump(value, yes, nxt)
                self.label(nxt)
        if isinstance(test, ast.Compare) and len(test.ops) > 1:
            left = test.left
            for k, (op, right) in enumerate(zip(test.ops, test.comparators)):
                pair = ast.Compare(left=left, ops=[op], comparators=[right])
                if k == len(test.ops) - 1:
                    self.jump(pair, yes, no)
                    return
                nxt = self.fresh("C")[1:]
                self.jump(pair, nxt, no)
                self.label(nxt)
                left = right
        self.lines.append(f"  br i1 {self.truth(test)}, label %{yes}, label %{no}")

    def branch(self, s: ast.If) -> None:
        n = self.fresh("B")[1:]
        self.jump(s.test, f"{n}.then", f"{n}.else")
        self.label(f"{n}.then")
        self.statements(s.body)
        self.lines.append(f"  br label %{n}.end")
        self.label(f"{n}.else")
        self.statements(s.orelse)
        self.lines.append(f"  br label %{n}.end")
        self.label(f"{n}.end")

    def inline(self, node: ast.AST) -> list:
        """The scalar body's results at a call ``point(args)``: its statements inlined."""
        name, params, statements, results = self.point
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and
                node.func.id == name and not node.keywords and len(node.args) == len(params)):
            raise Unsupported("a call other than the scalar body's")
        env = {}
        for p, a in zip(params, node.args):
            operand, kind = self.expr(a)
            env[p] = self.cast(operand, kind, INT) if kind == "lit" else (operand, kind)
            if env[p][1] == INT:
                raise Unsupported("an integer argument of the scalar body")
        prefix = f"%p{self.inlined}"
        self.inlined += 1
        texts = [(s.partition("=")[0].strip(), s.partition("=")[2]) for s in statements]
        texts += [(f"r{j}", r) for j, r in enumerate(results)]
        out = []
        for j, (target, text) in enumerate(texts):
            emitter = _PointEmitter(env)
            try:
                tree = ast.parse(text.strip(), mode="eval").body
            except SyntaxError as exc:
                raise Unsupported(text) from exc
            value, kind = emitter.emit(tree)
            n = f"{prefix}.{target}"
            lines = emitter.lines
            if lines and value == f"{{n}}.{len(lines) - 1}":
                lines[-1] = lines[-1].replace(value + " =", "{n} =", 1)
                value = "{n}"
            self.lines += [line.format(n=n) for line in lines]
            self.declares |= emitter.declares
            env[target] = (value.format(n=n), kind)
            if j >= len(statements):
                out.append(env[target])
        return out


def _as_load(target: ast.AST) -> ast.AST:
    copy = ast.parse(ast.unparse(target), mode="eval").body
    return copy


def _llvm(kind: str) -> str:
    return "i64" if kind in (INT, "lit") else kind


def _entry(w: _Writer, params: list, types: tuple) -> list:
    """The argument checks and unpacking: lines, ending in a branch to ``%run``."""
    lines = [f"  %count = icmp eq i64 %nargs, {len(params)}",
             "  br i1 %count, label %a0, label %bad"]
    for k, (name, t) in enumerate(zip(params, types)):
        x = f"%x.{name}"
        lines += [f"a{k}:", f"  {x}.pp = getelementptr inbounds ptr, ptr %args, i64 {k}",
                  f"  {x} = load ptr, ptr {x}.pp",
                  f"  {x}.tp = getelementptr inbounds i8, ptr {x}, i64 8",
                  f"  {x}.type = load ptr, ptr {x}.tp"]
        nxt = f"a{k + 1}" if k + 1 < len(params) else "run"
        if t[0] == "int":
            lines += [f"  {x}.ok = icmp eq ptr {x}.type, @PyLong_Type",
                      f"  br i1 {x}.ok, label %a{k}.v, label %bad", f"a{k}.v:",
                      f"  {x}.v = call i64 @PyLong_AsLongLong(ptr {x})",
                      f"  br label %{nxt}"]
            w.values[name] = (f"{x}.v", INT)
            continue
        _, kind, rank, layout = t
        fields = [("nd", 24, "i32"), ("descr", 56, "ptr"), ("flags", 64, "i32"),
                  ("data", 16, "ptr"), ("dimsp", 32, "ptr")]
        lines += [f"  {x}.ok0 = icmp eq ptr {x}.type, @{NDARRAY}",
                  f"  br i1 {x}.ok0, label %a{k}.f, label %bad", f"a{k}.f:"]
        for field, offset, ty in fields:
            lines += [f"  {x}.{field}.p = getelementptr inbounds i8, ptr {x}, i64 {offset}",
                      f"  {x}.{field} = load {ty}, ptr {x}.{field}.p"]
        lines += [f"  {x}.num.p = getelementptr inbounds i8, ptr {x}.descr, i64 28",
                  f"  {x}.num = load i32, ptr {x}.num.p",
                  f"  {x}.order.p = getelementptr inbounds i8, ptr {x}.descr, i64 26",
                  f"  {x}.order = load i8, ptr {x}.order.p",
                  f"  {x}.fl = and i32 {x}.flags, {C_CONTIGUOUS * (layout == 'C') | ALIGNED}",
                  f"  {x}.t1 = icmp eq i32 {x}.nd, {rank}",
                  f"  {x}.t2 = icmp eq i32 {x}.num, {TYPE_NUMS[kind]}",
                  f"  {x}.t3 = icmp ne i8 {x}.order, {SWAPPED}",
                  f"  {x}.t4 = icmp eq i32 {x}.fl, "
                  f"{C_CONTIGUOUS * (layout == 'C') | ALIGNED}",
                  f"  {x}.t12 = and i1 {x}.t1, {x}.t2", f"  {x}.t34 = and i1 {x}.t3, {x}.t4",
                  f"  {x}.ok = and i1 {x}.t12, {x}.t34",
                  f"  br i1 {x}.ok, label %a{k}.d, label %bad", f"a{k}.d:"]
        dims = []
        for d in range(rank):
            lines += [f"  {x}.dp{d} = getelementptr inbounds i64, ptr {x}.dimsp, i64 {d}",
                      f"  {x}.d{d} = load i64, ptr {x}.dp{d}"]
            dims.append(f"{x}.d{d}")
        steps = ["1"] * rank
        if layout == "A":                      # bytes between neighbours: the strides
            lines += [f"  {x}.stp.p = getelementptr inbounds i8, ptr {x}, i64 40",
                      f"  {x}.stp = load ptr, ptr {x}.stp.p"]
            for d in range(rank):
                lines += [f"  {x}.sp{d} = getelementptr inbounds i64, ptr {x}.stp, i64 {d}",
                          f"  {x}.st{d} = load i64, ptr {x}.sp{d}"]
                steps[d] = f"{x}.st{d}"
        for d in range(rank - 2, -1, -1) if layout == "C" else ():   # elements along d
            if steps[d + 1] == "1":
                steps[d] = dims[d + 1]
            else:
                lines.append(f"  {x}.s{d} = mul i64 {steps[d + 1]}, {dims[d + 1]}")
                steps[d] = f"{x}.s{d}"
        lines.append(f"  br label %{nxt}")
        w.arrays[name] = _Array(kind, f"{x}.data", dims, steps, layout)
    if not params:
        lines[1] = "  br i1 %count, label %run, label %bad"
    return lines


def loop_ir(source: str, point: tuple, types: tuple) -> str:
    """The IR module text of ``ptr @SYMBOL_(ptr self, ptr args, i64 nargs)``: the loop
    function ``source`` for arguments of ``types`` (``signature``'s), with ``point`` =
    (the scalar body's name, its parameter names, its printed statements ``name = expr``,
    its printed results) inlined at its call. Raises ``Unsupported`` (with the reason)
    outside the subset."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise Unsupported("source") from exc
    functions = [s for s in tree.body if isinstance(s, ast.FunctionDef)]
    if len(functions) != 1:
        raise Unsupported("not one function")
    fn = functions[0]
    params = [a.arg for a in fn.args.args]
    if len(params) != len(types) or fn.args.vararg or fn.args.kwonlyargs:
        raise Unsupported("arguments")
    w = _Writer(point)
    entry = _entry(w, params, types)
    w.lines = []
    w.statements(fn.body)
    body = w.lines
    passed = [v for v, _ in w.values.values()]      # the loop's own function takes the
    for a in w.arrays.values():                     # unpacked arguments (as numba's
        passed += [a.data] + [d for d in a.dims + a.steps if d.startswith("%")]
    passed = list(dict.fromkeys(passed))            # inner function does)
    typed = ", ".join(f"{'ptr' if v.endswith('.data') else 'i64'} {v}" for v in passed)
    lines = (["define ptr @SYMBOL_(ptr %self, ptr %args, i64 %nargs) #0 {", "entry:"]
             + entry + ["run:", f"  call void @SYMBOL_.loop({typed})",
                        "  call void @Py_IncRef(ptr @_Py_NoneStruct)",
                        "  ret ptr @_Py_NoneStruct",
                        "bad:", "  call void @Py_IncRef(ptr @_Py_NotImplementedStruct)",
                        "  ret ptr @_Py_NotImplementedStruct", "}",
                        f"define internal void @SYMBOL_.loop({typed}) #2 {{", "entry:"]
             + w.allocas + body + ["  ret void", "}"])
    declares = set(w.declares) | {
        "declare void @Py_IncRef(ptr)", "declare i64 @PyLong_AsLongLong(ptr)",
        "@_Py_NoneStruct = external global i8", "@_Py_NotImplementedStruct = external global i8",
        "@PyLong_Type = external global i8", f"@{NDARRAY} = external global i8"}
    text = "\n".join(lines + sorted(declares) + ["attributes #0 = { nounwind }",
                                                 "attributes #1 = { nounwind memory(read) }",
                                                 "attributes #2 = { nounwind noinline }"])
    return text + "\n"


def size(text: str) -> int:
    """Instructions of a loop's IR (LLVM's levels, ``native.opt_level``)."""
    return sum(1 for line in text.splitlines() if line.startswith("  "))

