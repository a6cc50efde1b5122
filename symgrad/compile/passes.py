"""The machinery of ``sg.function``'s pipeline: a ``Pass`` is a named step that takes the
compile's ``Context``, fills in what it computes and returns a short line saying what it
decided; ``run_passes`` runs a list of them in order, timing each (a progress phase
too, ``progress.py``) and recording ``PassRecord``s that ``f.explain(passes=True)``
lists. The list itself is in ``function.py``.

>>> from symgrad.compile.progress import Phases
>>> ctx = Context(inputs=[], outputs=[], mode=None, spec=None, math="fast",
...               phases=Phases("f()", stream=None))
>>> def double(ctx): ctx.extra["n"] = 2; return "n = 2"
>>> run_passes(ctx, [Pass("double", double)])
>>> [(r.name, r.decided) for r in ctx.records], ctx.extra
([('double', 'n = 2')], {'n': 2})
>>> pass_lines(ctx.records)[0].split(",")[0]
'passes: 1'
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Union

from .progress import Phases


@dataclass
class Context:
    """What one compile knows so far; each pass reads earlier fields and sets its own."""

    inputs: list
    outputs: list
    mode: Any                    # symgrad.outputs.OutputMode
    spec: Any                    # the target (compile/targets)
    math: str
    phases: Phases
    graph: Any = None            # fold
    plan: Any = None             # plan, nests
    key: Optional[str] = None    # key
    module: Any = None           # module
    source: Optional[str] = None
    built: bool = False
    function: Any = None         # bind (or the device module pass)
    records: list = field(default_factory=list)
    extra: dict = field(default_factory=dict)


@dataclass(frozen=True)
class PassRecord:
    """One pass as it ran: its name, seconds and what it decided."""

    name: str
    seconds: float
    decided: str


@dataclass(frozen=True)
class Pass:
    """``run(ctx) -> str`` (what it decided); ``phase``: its progress/log label (a
    function of the context when it depends on it), None to time it without a phase."""

    name: str
    run: Callable[[Context], str]
    phase: Union[str, Callable[[Context], str], None] = ""

    def label(self, ctx: Context) -> Optional[str]:
        if self.phase is None:
            return None
        return self.phase(ctx) if callable(self.phase) else (self.phase or self.name)


def run_passes(ctx: Context, passes: list) -> None:
    """Run ``passes`` in order on ``ctx``, appending a ``PassRecord`` for each."""
    for p in passes:
        label = p.label(ctx)
        t0 = time.perf_counter()
        if label is None:
            decided = p.run(ctx)
        else:
            with ctx.phases.phase(label):
                decided = p.run(ctx)
        ctx.records.append(PassRecord(p.name, time.perf_counter() - t0, decided))


def pass_lines(records: list) -> list:
    """The "passes" section of ``explain``: one line per pass, in the order they ran."""
    total = sum(r.seconds for r in records)
    lines = [f"passes: {len(records)}, {total:.3f} s"]
    width = max((len(r.name) for r in records), default=0)
    lines += [f"  {r.name:<{width}}  {r.seconds:7.3f} s  {r.decided}" for r in records]
    return lines
