"""Timing of the compile phases: each is logged through ``logging.getLogger("symgrad")``
(DEBUG per phase, INFO for the whole compile, numba's compile included), and a compile
that runs longer than ``SHOW_AFTER`` seconds shows its phases on stderr when stderr is a
terminal (``sg.function(..., progress=True)``: always, from the start; ``False``: never).

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
import sys
import threading
import time
from contextlib import contextmanager
from typing import Iterator, Optional, TextIO

logger = logging.getLogger("symgrad")
SHOW_AFTER = 2.0   # seconds before a compile starts showing its phases on a terminal


def _terminal() -> Optional[TextIO]:
    stream = sys.stderr
    try:
        return stream if stream.isatty() else None
    except (AttributeError, ValueError):
        return None


def progress_stream(progress: Optional[bool]) -> dict:
    """``Phases`` keyword arguments for ``sg.function(..., progress=)``: None shows long
    compiles on a terminal, True shows them on stderr whatever it is, False never.

    >>> progress_stream(False)
    {'stream': None}
    """
    if progress is None:
        return {}
    return {"stream": sys.stderr, "show_after": 0.0} if progress else {"stream": None}


class Phases:
    """The phases of one compile of ``what`` (e.g. ``"f(x, y) target='cpu'"``)."""

    def __init__(self, what: str, stream: Optional[TextIO] = ...,
                 show_after: Optional[float] = None):
        self.what = what
        self.stream = _terminal() if stream is ... else stream
        self.start = time.perf_counter()
        self.times: list = []
        self.current = "start"
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
            self._line(f"{self.current}...")

    def _line(self, text: str) -> None:
        elapsed = time.perf_counter() - self.start
        self.stream.write(f"symgrad: compiling {self.what}: {text} ({elapsed:.1f} s)\n")
        self.stream.flush()

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Time the phase ``name``; log it when it ends."""
        with self.lock:
            self.current = name
            if self.shown:
                self._line(f"{name}...")
        t0 = time.perf_counter()
        yield
        seconds = time.perf_counter() - t0
        self.times.append((name, seconds))
        logger.debug("sg.function %s: %s %.3f s", self.what, name, seconds)

    def done(self) -> None:
        """Log the whole compile (and end the terminal display)."""
        if self.timer is not None:
            self.timer.cancel()
        total = time.perf_counter() - self.start
        summary = ", ".join(f"{name} {seconds:.3f} s" for name, seconds in self.times)
        logger.info("sg.function %s compiled in %.3f s (%s)", self.what, total, summary)
        with self.lock:
            if self.shown:
                self._line("done")
