"""The differential fuzzer: one random program through every engine, compared.

For a ``Program`` (``symgrad.testing_fuzz``), the outputs and their gradients (with random
cotangents as ``grad_ys``) are computed by ``sg.evaluate`` (the reference), by
``sg.function`` on cpu and parallel, and by the eager ``GradientTape``; values, NaN and
connectedness (None) must agree, with dtype-appropriate tolerances. Where finite
differences are stable, the gradient is also checked against them (dot-product test).
A failure is classified (known classes are named) and shrunk to a minimal reproducer.

    python -m symgrad.testing_fuzz_run 500 [--start 0] [--targets cpu,parallel]

>>> outcome = check(generate(3), targets=())
>>> outcome.ok, outcome.failure
(True, None)
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
import time
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from .testing_fuzz import Program, generate

TOLERANCE = {"float64": (1e-7, 1e-9), "float32": (2e-4, 1e-5)}
TARGETS = ("cpu", "parallel")


@dataclass
class Outcome:
    """The result of one program: ok, or the first failure (engine, message, class)."""

    program: Program
    failure: Optional[str] = None
    engine: str = ""
    kind: str = ""
    checks: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.failure is None

    def report(self) -> str:
        return (f"fuzz seed {self.program.seed}: {self.engine}: {self.failure}\n"
                f"class: {self.kind or 'unknown'}\n"
                f"reproducer (python -c 'from symgrad.testing_fuzz_run import replay; "
                f"replay(SOURCE)'):\n{self.program.source()}")


class Mismatch(Exception):
    """Two engines disagree."""


# --- engines -------------------------------------------------------------------------------
class Graph:
    """The program traced on placeholders, with gradients of its float outputs."""

    def __init__(self, program: Program):
        import symgrad as sg

        scope = program.namespace()
        self.source = program.source()
        self.fn, self.arrays = scope["fn"], scope["arrays"]()
        self.xs = scope["placeholders"]()
        self.stopped: list = []
        self.hook = self.stopped.append if program.stopped else None
        self.ys = self.fn(*self.xs, hook=self._keep) if self.hook else self.fn(*self.xs)
        rng = np.random.default_rng(program.seed + 1)
        self.float_ys = [k for k, y in enumerate(self.ys) if y.dtype.kind == "f"]
        self.sources = [k for k, x in enumerate(self.xs) if x.dtype.kind == "f"]
        self.cotangents = [rng.standard_normal(self.reference_shape(k))
                           .astype(self.ys[k].dtype) for k in self.float_ys]
        stop = self.stopped or None
        self.grads = (sg.gradients([self.ys[k] for k in self.float_ys],
                                   [self.xs[k] for k in self.sources],
                                   grad_ys=self.cotangents, stop_gradients=stop)
                      if self.float_ys else [])
        self.outputs = list(self.ys) + list(self.grads)
        # second order: the gradient of sum_j <w_j, grad_j> (Hessian-vector products)
        self.connected = [j for j, g in enumerate(self.grads) if g is not None]
        self.weights = [rng.standard_normal(self.arrays[self.sources[j]].shape)
                        for j in self.connected]
        self.second = []
        if program.second_order and self.connected:
            total = sum(sg.reduce_sum(sg.cast(self.grads[j], "float64") * w)
                        for j, w in zip(self.connected, self.weights))
            self.second = sg.gradients(total, [self.xs[k] for k in self.sources],
                                       stop_gradients=stop)
            self.outputs += list(self.second)
        # float32 anywhere: intermediates may round differently (tolerance of float32)
        self.precision = "float32" if "float32" in program.source() else "float64"

    def _keep(self, tensor):
        self.stopped.append(tensor)
        return tensor

    def reference_shape(self, k: int) -> tuple:
        import symgrad as sg

        return np.shape(sg.evaluate(self.ys[k], dict(zip(self.xs, self.arrays))))


def run_evaluate(graph: Graph) -> list:
    import symgrad as sg

    with np.errstate(all="ignore"):
        return sg.evaluate(graph.outputs, dict(zip(graph.xs, graph.arrays)))


def run_compiled(graph: Graph, target: str) -> list:
    import symgrad as sg

    compiled = sg.function(graph.xs, graph.outputs, target=target)
    with np.errstate(all="ignore"):
        return list(compiled(*graph.arrays))


def run_tape(graph: Graph) -> list:
    """The eager tape (nested for second order); the stopped tensor is sg.stop_gradient."""
    import symgrad as sg

    variables = [sg.Variable(a, name=f"x{k}") for k, a in enumerate(graph.arrays)]
    sources = [variables[k] for k in graph.sources]
    kwargs = {"hook": sg.stop_gradient} if graph.hook else {}
    grads, second = [], []
    with np.errstate(all="ignore"):
        with sg.GradientTape() as outer:
            with sg.GradientTape() as tape:
                ys = graph.fn(*variables, **kwargs)
            if graph.float_ys:
                grads = tape.gradient([ys[k] for k in graph.float_ys], sources,
                                      output_gradients=graph.cotangents)
            if graph.second:
                total = sum(sg.reduce_sum(sg.cast(grads[j], "float64") * w)
                            for j, w in zip(graph.connected, graph.weights))
        if graph.second:
            second = outer.gradient(total, sources)
    return [np.asarray(y) for y in ys] + [None if g is None else np.asarray(g)
                                          for g in list(grads) + list(second)]


# --- comparison ------------------------------------------------------------------------------
def _label(graph: Graph, k: int) -> str:
    n, m = len(graph.ys), len(graph.ys) + len(graph.grads)
    if k < n:
        return f"output {k}"
    if k < m:
        return f"gradient {k - n} (d/d x{graph.sources[k - n]})"
    return f"second order {k - m} (d/d x{graph.sources[k - m]})"


def compare(graph: Graph, want: list, got: list, engine: str) -> None:
    """Raise Mismatch unless ``got`` agrees with ``want`` (the sg.evaluate results)."""
    for k, (w, g) in enumerate(zip(want, got)):
        what = f"{_label(graph, k)}"
        if (w is None) != (g is None):
            raise Mismatch(f"{what}: evaluate gives {'None' if w is None else 'a value'}, "
                           f"{engine} gives {'None' if g is None else 'a value'}")
        if w is None:
            continue
        w, g = np.asarray(w), np.asarray(g)
        if w.shape != g.shape:
            raise Mismatch(f"{what}: shape {w.shape} vs {g.shape}")
        if w.dtype.kind != "f":
            if not np.array_equal(w, g.astype(w.dtype)):
                raise Mismatch(f"{what}: {w.tolist()!r} vs {g.tolist()!r}")
            continue
        rtol, atol = TOLERANCE[graph.precision]
        scale = max(1.0, float(np.nanmax(np.abs(np.where(np.isfinite(w), w, 0.0)), initial=0)))
        if not np.allclose(g, w, rtol=rtol, atol=atol * scale, equal_nan=True):
            bad = ~np.isclose(g, w, rtol=rtol, atol=atol * scale, equal_nan=True)
            raise Mismatch(f"{what}: evaluate {w[bad][:4].tolist()!r} vs {engine} "
                           f"{g[bad][:4].tolist()!r} at {np.argwhere(bad)[:4].tolist()!r}")


def check_finite_differences(graph: Graph, grads: list) -> Optional[str]:
    """The dot-product test <c, J t> = <J^T c, t> where central differences are stable
    (float64 inputs, finite values; two step sizes must agree, else the point is a kink)."""
    import symgrad as sg

    if "stop_gradient" in graph.source or not graph.float_ys or \
            any(graph.arrays[k].dtype != np.float64 for k in graph.sources):
        return "skipped"
    if any(g is not None and not np.all(np.isfinite(g)) for g in grads):
        return "skipped"
    rng = np.random.default_rng(0)
    tangents = [rng.standard_normal(graph.arrays[k].shape) for k in graph.sources]
    loss = sum(sg.reduce_sum(sg.cast(graph.ys[k], "float64") * c.astype(np.float64))
               for k, c in zip(graph.float_ys, graph.cotangents))

    def directional(eps: float) -> float:
        values = []
        for sign in (1.0, -1.0):
            arrays = list(graph.arrays)
            for k, t in zip(graph.sources, tangents):
                arrays[k] = graph.arrays[k] + sign * eps * t
            with np.errstate(all="ignore"):
                values.append(float(sg.evaluate(loss, dict(zip(graph.xs, arrays)))))
        return (values[0] - values[1]) / (2.0 * eps)

    fd, coarse = directional(1e-6), directional(1e-4)
    exact = sum(float(np.sum(g * t)) for g, t in zip(grads, tangents) if g is not None)
    scale = max(1.0, abs(exact), abs(coarse))
    if not np.isfinite(fd) or abs(fd - coarse) > 1e-4 * scale:
        return "skipped"
    if abs(fd - exact) > 1e-5 * scale:
        raise Mismatch(f"<grad, t> = {exact!r} but finite differences give {fd!r}")
    return "ok"


# --- one program -------------------------------------------------------------------------------
KNOWN = {  # failure classes being fixed in the compiler (issue 8, item 3)
    "ITE": "no numba form for ITE (where on computed comparisons meets max/relu)",
    "_Cycle": "schedule cycle in regions (where, floor, matmul of fused results, casts)",
    "pow0-NaN": "compiled code folds d/dx x**0.0 to 0 where sg.evaluate gives NaN",
    "index-0d": "0-d results of indexing do not compile",
}


def classify(outcome: Outcome) -> str:
    """The known class of a failure (a key of KNOWN), or a short description."""
    message, tags = outcome.failure or "", outcome.program.tags
    if "ITE" in message:
        return "ITE"
    if "_Cycle" in message or "cycle" in message.lower():
        return "_Cycle"
    if outcome.engine in TARGETS and "pow0" in tags and "nan" in message.lower():
        return "pow0-NaN"
    if outcome.engine in TARGETS and "index-0d" in tags and "raised" in message:
        return "index-0d"
    head = message.split(":", 1)[0] if "raised" in message else "mismatch"
    return f"{outcome.engine}: {head}"


def _step(outcome: Outcome, engine: str, action) -> Optional[object]:
    try:
        return action()
    except Mismatch as exc:
        outcome.failure, outcome.engine = str(exc), engine
    except Exception as exc:  # noqa: BLE001 - an engine crash is a finding
        text = [t.strip() for t in f"{exc}".strip().splitlines()] or [""]
        line = next((t for t in text if t.startswith("numba:")), text[0])
        outcome.failure = f"raised {type(exc).__name__}: {line[:300]}"
        outcome.engine = engine
    return None


def check(program: Program, targets: tuple = TARGETS, tape: bool = True,
          fd: bool = True) -> Outcome:
    """Run ``program`` through every engine; the first disagreement is the failure."""
    outcome = Outcome(program)
    graph = _step(outcome, "graph", lambda: Graph(program))
    want = graph and _step(outcome, "evaluate", lambda: run_evaluate(graph))
    if not outcome.ok:
        outcome.kind = classify(outcome)
        return outcome
    engines = [(t, lambda t=t: run_compiled(graph, t)) for t in targets]
    engines += [("tape", lambda: run_tape(graph))] if tape else []
    for engine, run in engines:
        got = _step(outcome, engine, run)
        if got is not None:
            _step(outcome, engine, lambda: compare(graph, want, got, engine))
        if not outcome.ok:
            break
        outcome.checks.append(engine)
    if outcome.ok and fd:
        first = want[len(graph.ys):len(graph.ys) + len(graph.grads)]
        result = _step(outcome, "finite differences",
                       lambda: check_finite_differences(graph, first))
        outcome.checks.append(f"fd {result}")
    if not outcome.ok:
        outcome.kind = classify(outcome)
    return outcome


def replay(source: str, targets: tuple = TARGETS) -> Outcome:
    """Check a reproducer printed by the fuzzer (the source of ``Program.source()``)."""
    seed = int(re.search(r"seed (\d+)", source).group(1))
    program = Program(seed, [], [], [])
    program.source = lambda: source  # type: ignore[method-assign]
    program.second_order = "; second order" in source.splitlines()[0]
    stopped = re.search(r"stop_gradients=\[(\w+)\]", source)
    program.stopped = stopped.group(1) if stopped else None
    if re.search(r"\w\[-?\d+(, -?\d+)*\]", source):   # the tags classify() reads
        program.tags.add("index-0d")
    if re.search(r"sg\.pow\(.*, 0\.0\)|\*\* 0\.0", source):
        program.tags.add("pow0")
    return check(program, targets)


# --- shrinking ------------------------------------------------------------------------------------
def _uses(line: str) -> set:
    return set(re.findall(r"\b([xv]\d+)\b", line.split(" = ", 1)[1]))


def prune(program: Program) -> Program:
    """Drop the lines no output depends on."""
    needed, kept = set(program.outputs), []
    for line in reversed(program.lines):
        name = line.split(" = ", 1)[0]
        if name in needed:
            kept.append(line)
            needed |= _uses(line)
    return _with(program, lines=kept[::-1])


def _with(program: Program, **changes) -> Program:
    return dataclasses.replace(program, **changes)


def shrink(outcome: Outcome, budget: int = 25, targets: tuple = TARGETS) -> Outcome:
    """A smaller program failing the same way (engine and class), by dropping outputs and
    replacing a line by one of its operands; at most ``budget`` re-checks."""
    best = outcome
    candidates = [prune(_with(best.program, outputs=[o])) for o in best.program.outputs]
    candidates.insert(0, prune(best.program))
    for candidate in candidates:
        budget -= 1
        trial = check(candidate, targets)
        if trial.engine == best.engine and trial.kind == best.kind:
            best = trial
            break
    k = len(best.program.lines) - 1
    while k >= 0 and budget > 0:
        line = best.program.lines[k]
        for operand in sorted(_uses(line)):
            lines = list(best.program.lines)
            lines[k] = f"{line.split(' = ', 1)[0]} = {operand}"
            budget -= 1
            trial = check(prune(_with(best.program, lines=lines)), targets)
            if trial.engine == best.engine and trial.kind == best.kind:
                best = trial
                break
        k = min(k - 1, len(best.program.lines) - 1)
    return best


# --- many programs ------------------------------------------------------------------------------
def main(argv: Optional[list] = None) -> int:
    parser = argparse.ArgumentParser(description="symgrad differential fuzzer")
    parser.add_argument("n", type=int, help="number of programs")
    parser.add_argument("--start", type=int, default=0, help="first seed")
    parser.add_argument("--targets", default="cpu,parallel")
    parser.add_argument("--no-shrink", action="store_true")
    args = parser.parse_args(argv)
    targets = tuple(t for t in args.targets.split(",") if t)
    classes: dict = {}
    start = time.perf_counter()
    for seed in range(args.start, args.start + args.n):
        outcome = check(generate(seed), targets)
        if not outcome.ok:
            first = outcome.kind not in classes
            classes.setdefault(outcome.kind, []).append(seed)
            if first and not args.no_shrink:
                outcome = shrink(outcome, targets=targets)
            print(("NEW " if first else "") + outcome.report(), flush=True)
        if (seed - args.start + 1) % 25 == 0:
            print(f"... {seed - args.start + 1} programs, {time.perf_counter() - start:.0f} s",
                  file=sys.stderr, flush=True)
    elapsed = time.perf_counter() - start
    print(f"\n{args.n} programs (seeds {args.start}..{args.start + args.n - 1}) in "
          f"{elapsed:.0f} s; failures: {sum(map(len, classes.values()))}")
    for kind, seeds in classes.items():
        known = " (known)" if kind in KNOWN else ""
        print(f"  {kind}{known}: {len(seeds)} seeds {seeds[:20]}")
    return 1 if classes else 0


if __name__ == "__main__":
    sys.exit(main())
