"""Timing of the compile phases: each is logged through ``logging.getLogger("symgrad")``
(DEBUG per phase, INFO for the whole compile, numba's compile included), and a compile
that runs longer than ``SHOW_AFTER`` seconds shows its phases on stderr when stderr is a
terminal (``sg.function(..., progress=True)`` or ``SYMGRAD_PROGRESS=1``: always, from the
start; ``False`` or ``SYMGRAD_PROGRESS=0``: never). One short line per phase, naming the
function by its first inputs (``label``); a loop body compiled inside it is named after it.

>>> import logging
>>> phases = Phases("f(x)", stream=None)
>>> with phases.phase("fold"):
...     pass
>>> phases.done()
>>> [name for name, _ in phases.times]
['fold']
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from contextlib import contextmanager
from typing import Iterator, Optional, TextIO

logger = logging.getLogger("symgrad")
SHOW_AFTER = 2.0   # seconds before a compile starts showing its phases on a terminal
ENV = "SYMGRAD_PROGRESS"
"""``1``/``true``/``yes``: progress=True for every ``sg.function`` that leaves it None;
``0``/``false``/``no``: progress=False."""

_ACTIVE = threading.local()   # the Phases of the compiles running on this thread, outermost first


def _terminal() -> Optional[TextIO]:
    stream = sys.stderr
    try:
        return stream if stream.isatty() else None
    except (AttributeError, ValueError):
        return None


def progress_stream(progress: Optional[bool]) -> dict:
    """``Phases`` keyword arguments for ``sg.function(..., progress=)``: None shows long
    compiles on a terminal (or as ``SYMGRAD_PROGRESS`` says), True shows them on stderr
    whatever it is, False never.

    >>> progress_stream(False)
    {'stream': None}
    """
    if progress is None:
        asked = os.environ.get(ENV, "").strip().lower()
        progress = True if asked in ("1", "true", "yes") else \
            False if asked in ("0", "false", "no") else None
    if progress is None:
        return {}
    return {"stream": sys.stderr, "show_after": 0.0} if progress else {"stream": None}


def label(names: list, limit: int = 40) -> str:
    """How progress names a function of inputs ``names``: the first few, then how many.

    >>> label(["x", "y"])
    'f(x, y)'
    >>> label([f"capture__loop{i}" for i in range(170)])
    'f(capture__loop0, capture__loop1, ... 170 inputs)'
    """
    shown, width = [], 0
    for name in names:
        if shown and width + len(name) > limit:
            return f"f({', '.join(shown)}, ... {len(names)} inputs)"
        shown.append(name)
        width += len(name) + 2
    return f"f({', '.join(shown)})"


def innermost() -> Optional["Phases"]:
    """The innermost compile running on this thread (None outside ``sg.function``)."""
    stack = getattr(_ACTIVE, "stack", None)
    return stack[-1] if stack else None


class Phases:
    """The phases of one compile of ``what`` (e.g. ``"f(x, y)"``; ``target`` only for the
    log). Created inside another compile (a loop body compiled during its dry run), it is
    named ``"<outer>: loop body"`` and shows where the outer one shows."""

    def __init__(self, what: str, stream: Optional[TextIO] = ...,
                 show_after: Optional[float] = None, target: Optional[str] = None):
        outer = innermost()
        if outer is not None:
            what = f"{outer.what}: loop body"
            if stream is ...:
                stream = outer.stream
                show_after = 0.0 if outer.shown else show_after
        self.what, self.target = what, target
        self.stream = _terminal() if stream is ... else stream
        self.start = time.perf_counter()
        self.times: list = []
        self.current = "start"
        self.open: list = []          # [name] of each running phase, outermost first
        self.shown = False
        self.lock = threading.Lock()
        self.timer = None
        if self.stream is not None:
            self.timer = threading.Timer(SHOW_AFTER if show_after is None else show_after,
                                         self._show)
            self.timer.daemon = True
            self.timer.start()

    def _show(self) -> None:
        with self.lock:
            self.shown = True
            if self.current != "start":      # shown from the start: the first phase says it
                self._line(f"{self.current}...")

    def _line(self, text: str) -> None:
        elapsed = time.perf_counter() - self.start
        self.stream.write(f"symgrad: compiling {self.what}: {text} ({elapsed:.1f} s)\n")
        self.stream.flush()

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Time the phase ``name`` (phases nest: "module" holds "lower and cse"); log it when
        it ends, under ``relabel``'s name if it turned out to be another."""
        cell = [name]
        with self.lock:
            self.open.append(cell)
            self.current = name
            if self.shown:
                self._line(f"{name}...")
        t0 = time.perf_counter()
        try:
            yield
        finally:
            with self.lock:
                self.open.remove(cell)
                self.current = self.open[-1][0] if self.open else cell[0]
        seconds = time.perf_counter() - t0
        self.times.append((cell[0], seconds))
        logger.debug("sg.function %s: %s %.3f s", self.what, cell[0], seconds)

    def relabel(self, name: str) -> None:
        """The innermost running phase is ``name`` after all (it was labelled before it ran:
        a "numba load" that found numba's cache incomplete is a compile).

        >>> phases = Phases("f(x)", stream=None)
        >>> with phases.phase("numba load"):
        ...     phases.relabel("numba compile")
        >>> phases.times[0][0]
        'numba compile'
        """
        with self.lock:
            if self.open and self.open[-1][0] != name:
                self.open[-1][0] = self.current = name
                if self.shown:
                    self._line(f"{name}...")

    def done(self) -> None:
        """Log the whole compile (and end the terminal display)."""
        self.close()
        total = time.perf_counter() - self.start
        summary = ", ".join(f"{name} {seconds:.3f} s" for name, seconds in self.times)
        where = self.what if self.target is None else f"{self.what} target={self.target!r}"
        logger.info("sg.function %s compiled in %.3f s (%s)", where, total, summary)
        with self.lock:
            if self.shown:
                self._line("done")

    def close(self) -> None:
        """End the timer (the compile is done, failed or was interrupted)."""
        if self.timer is not None:
            self.timer.cancel()

    @contextmanager
    def running(self) -> Iterator["Phases"]:
        """While this compile runs: the one a compile started inside it is named after;
        a Ctrl-C becomes ``interrupted()``'s one line, and the timer ends however it ends.

        >>> outer = Phases("f(x)", stream=None)
        >>> with outer.running():
        ...     Phases("f(capture__loop0)", stream=None).what
        'f(x): loop body'
        """
        stack = getattr(_ACTIVE, "stack", None)
        if stack is None:
            stack = _ACTIVE.stack = []
        stack.append(self)
        try:
            yield self
        except KeyboardInterrupt as exc:
            if getattr(exc, "symgrad_build_", False):
                raise                  # a loop body's build, already said in one line
            raise self.interrupted() from None
        finally:
            stack.remove(self)
            self.close()

    def interrupted(self) -> KeyboardInterrupt:
        """The one-line ``KeyboardInterrupt`` that ends a build stopped by Ctrl-C (raise it
        ``from None``; uncaught, it is shown as one line, without a traceback)."""
        self.close()
        elapsed = time.perf_counter() - self.start
        exc = KeyboardInterrupt(
            f"symgrad: build of {self.what} interrupted during {self.current} "
            f"({elapsed:.1f} s); nothing half-written is kept: the next build compiles "
            "what is missing")
        exc.symgrad_build_ = True
        _quiet_hook()
        return exc


def _quiet_hook() -> None:
    """Show an uncaught build interrupt (``Phases.interrupted``) as its one line; every other
    exception goes to the hook that was there before (installed once, when first needed;
    tests/test_progress.py runs a script that is interrupted)."""
    if getattr(sys.excepthook, "symgrad_quiet_", False):
        return
    previous = sys.excepthook

    def hook(kind, value, tb):
        if getattr(value, "symgrad_build_", False):
            sys.stderr.write(f"{kind.__name__}: {value}\n")
            sys.stderr.flush()
        else:
            previous(kind, value, tb)
    hook.symgrad_quiet_ = True
    sys.excepthook = hook
