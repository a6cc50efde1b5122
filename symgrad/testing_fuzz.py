"""Seeded random programs over the registered ops, for the differential fuzzer.

``generate(seed)`` returns a ``Program``: Python source of ``fn(x0, x1, ...)`` built from
public symgrad ops, the placeholders' shapes (``None`` dims included) and the input arrays.
Op choice is driven by the registry (``symgrad.ops.registry.REGISTRY``): every public
elementwise op (arity and input kinds probed from its record), every structural op with
``examples`` (the shapes and keywords of its examples), and a few hand-written generators
for structural ops whose arguments need care (reductions, matmul, indexing, casts, scans).
Each candidate line is run at once on placeholders and eagerly on the arrays; a line either
raises (dropped) or extends the pool with a tensor whose runtime value is known, so op
domains are respected. ``symgrad.testing_fuzz_run`` compares the engines on a program.

>>> program = generate(3)
>>> program.seed, len(program.names) >= 1
(3, True)
>>> "def fn(" in program.source()
True
"""

from __future__ import annotations

import inspect
import re
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np

from .ops.registry import REGISTRY, OpDef

SHAPES = ((), (3,), (2, 3), (3, 1), (4,))
SCALARS = (0.0, 1.0, -1.0, 0.5, 2.0, 3.0)


@dataclass
class Program:
    """A random program: ``fn``'s body lines, its inputs, outputs and arrays."""

    seed: int
    names: list
    static_shapes: list  # placeholder shapes, None dims included
    arrays: list
    lines: list = field(default_factory=list)
    outputs: list = field(default_factory=list)
    tags: set = field(default_factory=set)  # ops and features the program uses
    stopped: Optional[str] = None  # a tensor given to sg.gradients' stop_gradients
    second_order: bool = False     # also compare Hessian-vector products

    def fn_source(self) -> str:
        body = ""
        for line in self.lines:
            body += f"    {line}\n"
            name = line.split(" = ", 1)[0]
            if name == self.stopped:
                body += f"    if hook is not None:  # stop_gradients=[{name}]\n"
                body += f"        {name} = hook({name})\n"
        hook = ", hook=None" if self.stopped else ""
        return (f"def fn({', '.join(self.names)}{hook}):\n{body}"
                f"    return [{', '.join(self.outputs)}]\n")

    def source(self) -> str:
        """A self-contained reproducer: ``fn``, ``placeholders()`` and ``arrays()``."""
        holders = ", ".join(f"sg.placeholder({n!r}, {s!r}, {a.dtype.name!r})"
                            for n, s, a in zip(self.names, self.static_shapes, self.arrays))
        arrays = ", ".join(array_literal(a) for a in self.arrays)
        order = "; second order" if self.second_order else ""
        return (f"# symgrad fuzz program, seed {self.seed}{order}\nimport numpy as np\n"
                f"import symgrad as sg\n\n\n{self.fn_source()}\n\n"
                f"def placeholders():\n    return [{holders}]\n\n\n"
                f"def arrays():\n    return [{arrays}]\n")

    def namespace(self) -> dict:
        import symgrad as sg

        scope: dict = {"np": np, "sg": sg}
        exec(compile(self.source(), f"<fuzz seed {self.seed}>", "exec"), scope)  # noqa: S102
        return scope


def array_literal(a: np.ndarray) -> str:
    return f"np.array({a.tolist()!r}, dtype={a.dtype.name!r})"


# --- what the registry says about each op ------------------------------------------------------
def arity(op: OpDef) -> Optional[int]:
    """Number of tensor inputs of an elementwise op (from its numpy or sympy form)."""
    nin = getattr(op.numpy, "nin", None)
    if isinstance(nin, int):
        return nin
    nargs = getattr(op.sympy, "nargs", None)
    if isinstance(nargs, frozenset) or type(nargs).__name__ == "FiniteSet":
        if len(nargs) == 1:
            return int(next(iter(nargs)))
    try:
        params = inspect.signature(op.sympy).parameters.values()
    except (TypeError, ValueError):
        return None
    positional = [p for p in params if p.kind == p.POSITIONAL_OR_KEYWORD and p.default is p.empty]
    return len(positional)


KINDS = ("f", "b")  # input kinds probed: float, bool


def input_kinds(op: OpDef, n: int) -> tuple:
    """Every assignment of float/bool inputs (of three tried) that the public op accepts."""
    import symgrad as sg

    public = getattr(sg, op.name, None)
    accepted = []
    for kinds in (("f",) * n, ("b",) + ("f",) * (n - 1), ("b",) * n):
        args = [sg.placeholder("p", (2,), "float64" if k == "f" else "bool") for k in kinds]
        try:
            public(*args)
        except Exception:  # noqa: BLE001 - a refused kind assignment
            continue
        accepted.append(kinds)
    return tuple(dict.fromkeys(accepted))


def elementwise_menu() -> list:
    """(op, arity, accepted input kinds) of every public elementwise op."""
    import symgrad as sg

    menu = []
    for op in REGISTRY.values():
        if op.kind != "elementwise" or not op.public or not hasattr(sg, op.name):
            continue
        n = arity(op)
        kinds = input_kinds(op, n) if n else ()
        if kinds:
            menu.append((op, n, kinds))
    return menu


def example_menu() -> list:
    """(op, public name, example) for every structural op record with examples."""
    return [(op, ex.public or op.name, ex) for op in REGISTRY.values()
            if op.kind == "structural" and op.public for ex in op.examples]


_MENUS: dict = {}


def menus() -> dict:
    if not _MENUS:
        _MENUS["elementwise"] = elementwise_menu()
        _MENUS["examples"] = example_menu()
    return _MENUS


# --- the program under construction -------------------------------------------------------------
@dataclass
class Entry:
    """A pool tensor: its variable name, eager value and static shape."""

    name: str
    value: np.ndarray
    static: tuple

    @property
    def kind(self) -> str:
        kind = self.value.dtype.kind
        return "f" if kind == "f" else "b" if kind == "b" else "i"

    @property
    def shape(self) -> tuple:
        return self.value.shape


class Builder:
    """Runs each candidate line on placeholders and eagerly; keeps the lines that work."""

    def __init__(self, seed: int, rng: np.random.Generator, n_inputs: int):
        import symgrad as sg

        self.sg, self.rng = sg, rng
        self.program = Program(seed, [], [], [])
        self.sym: dict = {"np": np, "sg": sg}
        self.eager: dict = {"np": np, "sg": sg}
        self.pool: list = []
        for k in range(n_inputs):
            self.add_input(f"x{k}")

    def add_input(self, name: str) -> None:
        rng = self.rng
        shape = SHAPES[rng.integers(len(SHAPES))]
        dtype = "float32" if rng.random() < 0.15 else "float64"
        static = tuple(None if rng.random() < 0.3 else d for d in shape)
        array = rng.uniform(-2.0, 2.0, shape).round(3).astype(dtype)
        program = self.program
        program.names.append(name)
        program.static_shapes.append(static)
        program.arrays.append(array)
        self.sym[name] = self.sg.placeholder(name, static, dtype)
        self.eager[name] = self.sg.Variable(array, name=name)
        self.pool.append(Entry(name, array, static))
        if None in static:
            program.tags.add("None-dim")

    def run(self, expr: str, tags: tuple = ()) -> Optional[Entry]:
        """Add ``v<n> = expr`` when it builds on placeholders and eagerly; else None."""
        name = f"v{len(self.pool)}"
        line = f"{name} = {expr}"
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                exec(line, self.sym)  # noqa: S102 - our own generated source
                if isinstance(self.sym[name], (list, tuple)):
                    line = f"{line}[{self.rng.integers(len(self.sym[name]))}]"
                    exec(line, self.sym)  # noqa: S102
                exec(line, self.eager)  # noqa: S102
        except Exception:  # noqa: BLE001 - a refused combination: drop the line
            return None
        tensor, value = self.sym[name], np.asarray(self.eager[name])
        if not isinstance(tensor, self.sg.Tensor) or not _fits(tensor.shape, value.shape):
            return None
        if value.dtype.kind == "f" and not _tame(value, self.rng):
            return None
        entry = Entry(name, value, tuple(tensor.shape))
        self.program.lines.append(line)
        self.program.tags.update(tags)
        self.pool.append(entry)
        return entry

    def pick(self, kind: str = "f", like: Optional[tuple] = None) -> Optional[Entry]:
        """A random pool entry of ``kind`` (recent ones preferred), broadcastable with
        ``like`` when given."""
        found = [e for e in self.pool if e.kind == kind
                 and (like is None or _broadcastable(e.shape, like))]
        if not found:
            return None
        weights = np.arange(1, len(found) + 1, dtype=float)
        return found[self.rng.choice(len(found), p=weights / weights.sum())]


def _fits(static: tuple, shape: tuple) -> bool:
    return len(static) == len(shape) and all(s is None or s == d for s, d in zip(static, shape))


def _tame(value: np.ndarray, rng: np.random.Generator) -> bool:
    """Values a chain can go on from: finite and moderate, or (rarely) not."""
    finite = np.isfinite(value)
    if not finite.all():
        return rng.random() < 0.1
    return value.size == 0 or float(np.abs(value).max()) < 1e4


def _broadcastable(a: tuple, b: tuple) -> bool:
    try:
        np.broadcast_shapes(a, b)
    except ValueError:
        return False
    return True


# --- generators: each returns the source of one expression, or None --------------------------
def _in_domain(b: Builder, entry: Entry, op: OpDef) -> str:
    """``entry`` squashed into ``op``'s domain when its values leave it (mostly)."""
    lo, hi = op.domain
    values = entry.value.astype(float)
    default = (lo, hi) == (-2.0, 2.0)
    inside = np.all((values >= lo) & (values <= hi)) if not default \
        else np.all(np.abs(values) <= 4.0)
    if inside or b.rng.random() < 0.05:
        return entry.name
    return f"({lo!r} + {hi - lo!r} * sg.sigmoid({entry.name}))"


def _bool_source(b: Builder, like: Optional[tuple]) -> Optional[str]:
    found = b.pick("b", like)
    if found is not None and b.rng.random() < 0.7:
        return found.name
    a = b.pick("f", like)
    if a is None:
        return None
    op = ("<", "<=", ">", ">=")[b.rng.integers(4)]
    other = b.pick("f", np.broadcast_shapes(a.shape, like) if like is not None else a.shape)
    if other is not None and other is not a and b.rng.random() < 0.4:
        return f"({a.name} {op} {other.name})"   # computed values compared (issue 8's ITE)
    return f"({a.name} {op} {float(np.round(b.rng.uniform(-1, 1), 2))!r})"


def gen_elementwise(b: Builder) -> Optional[str]:
    menu = menus()["elementwise"]
    op, n, accepted = menu[b.rng.integers(len(menu))]
    # mostly the first accepted kinds (floats where an op takes them): a bool operand of
    # arithmetic is a rarer, separate class
    kinds = accepted[0 if b.rng.random() < 0.85 else b.rng.integers(len(accepted))]
    args, like = [], None
    for k, kind in enumerate(kinds):
        if kind == "b":
            src = _bool_source(b, like)
        elif k > 0 and b.rng.random() < 0.2:
            src = repr(SCALARS[b.rng.integers(len(SCALARS))])
        else:
            entry = b.pick("i" if b.rng.random() < 0.08 else "f", like) or b.pick("f", like)
            if entry is None:
                return None
            like = entry.shape if like is None else np.broadcast_shapes(like, entry.shape)
            src = _in_domain(b, entry, op)
        if src is None:
            return None
        args.append(src)
    if op.name == "pow" and args[1] == "0.0":
        b.program.tags.add("pow0")
    b.program.tags.add(op.name)
    return f"sg.{op.name}({', '.join(args)})"


def gen_example(b: Builder) -> Optional[str]:
    """A structural op on the shapes of one of its registry examples."""
    menu = menus()["examples"]
    op, public, ex = menu[b.rng.integers(len(menu))]
    args = []
    for shape in ex.shapes:
        entry = b.pick("f", shape)
        if entry is None or np.broadcast_shapes(entry.shape, shape) != tuple(shape):
            entry = b.pick("f")
            src = f"sg.reduce_mean({entry.name})"
        else:
            src = entry.name
        if entry.shape != tuple(shape) or b.rng.random() < 0.3:
            src = f"({src} * {array_literal(b.rng.uniform(0.5, 1.5, shape).round(2))})"
        args.append(src)
    kwargs = "".join(f", {k}={v!r}" for k, v in ex.kwargs.items())
    inputs = f"[{', '.join(args)}]" if ex.listed else ", ".join(args)
    b.program.tags.add(op.name)
    return f"sg.{public}({inputs}{kwargs})"


def _axis(b: Builder, entry: Entry) -> Optional[int]:
    rank = len(entry.shape)
    return None if rank == 0 else int(b.rng.integers(-rank, rank))


def gen_reduce(b: Builder) -> Optional[str]:
    names = [op.name for op in REGISTRY.values() if op.public and op.kind == "structural"
             and op.name.startswith("reduce_")]
    name = names[b.rng.integers(len(names))]
    entry = b.pick("f")
    axis = None if b.rng.random() < 0.4 else _axis(b, entry)
    keep = ", keepdims=True" if b.rng.random() < 0.3 else ""
    b.program.tags.add(name)
    return f"sg.{name}({entry.name}, axis={axis!r}{keep})"


def gen_matmul(b: Builder) -> Optional[str]:
    mats = [e for e in b.pool if e.kind == "f" and len(e.shape) == 2]
    if not mats:
        return None
    a = mats[b.rng.integers(len(mats))]
    k = a.shape[1]
    partners = [e for e in mats if e.shape[0] == k]
    if partners and b.rng.random() < 0.6:
        other = partners[b.rng.integers(len(partners))].name
    else:
        other = array_literal(b.rng.uniform(-1, 1, (k, int(b.rng.integers(1, 4)))).round(2))
    b.program.tags.add("matmul")
    return f"sg.matmul({a.name}, {other})" if b.rng.random() < 0.5 else f"({a.name} @ {other})"


def gen_layout(b: Builder) -> Optional[str]:
    entry = b.pick("f" if b.rng.random() < 0.9 else "i")
    if entry is None:
        return None
    rank = len(entry.shape)
    choices = [f"sg.reshape({entry.name}, (-1,))", f"sg.reshape({entry.name}, (1, -1))"]
    if rank >= 2:
        choices += [f"sg.transpose({entry.name})", f"{entry.name}.T",
                    f"sg.transpose({entry.name}, perm=(1, 0))"]
    b.program.tags.add("layout")
    return choices[b.rng.integers(len(choices))]


def _index_key(b: Builder, shape: tuple) -> Optional[str]:
    parts = []
    for d in shape:
        options = [":", "1:", "::-1", ":2", "None, :"]
        if d > 0:
            options += [str(int(b.rng.integers(d))), str(-int(b.rng.integers(1, d + 1)))] * 2
        parts.append(options[b.rng.integers(len(options))])
    if not parts:
        return "None" if b.rng.random() < 0.5 else "..."
    if len(parts) > 1 and b.rng.random() < 0.2:
        parts[0] = "..."
    return ", ".join(parts)


def gen_index(b: Builder) -> Optional[str]:
    entry = b.pick("f" if b.rng.random() < 0.9 else "i")
    if entry is None:
        return None
    key = _index_key(b, entry.shape)
    scalars = sum(part.strip().lstrip("-").isdigit() for part in key.split(","))
    if len(entry.shape) and scalars == len(entry.shape):
        b.program.tags.add("index-0d")
    b.program.tags.add("getitem")
    return f"{entry.name}[{key}]"


def gen_cast(b: Builder) -> Optional[str]:
    entry = b.pool[b.rng.integers(len(b.pool))]
    targets = ("float64", "float32", "int32", "int64", "bool") if entry.kind == "f" \
        else ("float64", "float32")
    b.program.tags.add("cast")
    return f"sg.cast({entry.name}, {targets[b.rng.integers(len(targets))]!r})"


def gen_misc(b: Builder) -> Optional[str]:
    """Scans, gathers, arg-reductions, one_hot, einsum, tensordot."""
    entry = b.pick("f")
    axis, rng, name = _axis(b, entry), b.rng, entry.name
    choices = []
    if axis is not None:
        d = entry.shape[axis]
        choices += [f"sg.cumsum({name}, axis={axis}, exclusive={bool(rng.random() < .3)}, "
                    f"reverse={bool(rng.random() < .3)})",
                    f"sg.cumprod({name}, axis={axis}, reverse={bool(rng.random() < .3)})",
                    f"sg.argmax({name}, axis={axis})", f"sg.argmin({name}, axis={axis})",
                    f"sg.one_hot(sg.argmax({name}, axis={axis}), {d + 1})"]
        if d > 0:
            idx = rng.integers(d, size=int(rng.integers(1, 4))).tolist()
            choices.append(f"sg.gather({name}, np.array({idx!r}), axis={axis})")
    if len(entry.shape) == 2:
        k = entry.shape[1]
        vec = array_literal(rng.uniform(-1, 1, (k,)).round(2))
        choices += [f"sg.einsum('ij,j->i', {name}, {vec})", f"sg.einsum('ij->j', {name})",
                    f"sg.einsum('ij,ij->i', {name}, {name})",
                    f"sg.tensordot({name}, {vec}, axes=1)"]
    if not choices:
        return None
    src = choices[rng.integers(len(choices))]
    b.program.tags.add(src[3:src.index("(")])
    return src


GENERATORS: tuple = ((gen_elementwise, 10), (gen_example, 2), (gen_reduce, 2),
                     (gen_matmul, 1), (gen_layout, 1), (gen_index, 2), (gen_cast, 1),
                     (gen_misc, 2))


def generate(seed: int, n_ops: Optional[int] = None, n_inputs: Optional[int] = None) -> Program:
    """The random program of ``seed`` (2 to 8 ops by default)."""
    rng = np.random.default_rng(seed)
    b = Builder(seed, rng, int(n_inputs or rng.integers(1, 4)))
    target = int(n_ops or rng.integers(2, 9))
    gens, weights = zip(*GENERATORS)
    p = np.array(weights, float) / sum(weights)
    for _ in range(20 * target):
        if len(b.program.lines) >= target:
            break
        b.run(gens[rng.choice(len(gens), p=p)](b) or "None")
    _choose_outputs(b)
    program = b.program
    inner = [line.split(" = ", 1)[0] for line in program.lines]
    inner = [name for name, e in zip(inner, b.pool[len(program.names):])
             if e.kind == "f" and name not in program.outputs]
    if inner and rng.random() < 0.25:
        program.stopped = inner[rng.integers(len(inner))]
        program.tags.add("stop_gradients")
    program.second_order = bool(rng.random() < 0.3)
    return program


def _choose_outputs(b: Builder) -> None:
    """The sinks (computed tensors no later line reads), floats first, at most three."""
    computed = b.pool[len(b.program.names):]
    text = "\n".join(b.program.lines)
    sinks = [e for e in computed
             if not re.search(rf"\b{e.name}\b", text.split(f"{e.name} = ", 1)[1])]
    sinks.sort(key=lambda e: e.kind != "f")
    outputs = [e.name for e in sinks[:3]] or [b.pool[0].name]
    b.program.outputs = outputs
