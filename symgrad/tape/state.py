"""Which tapes are recording right now (per thread), and the pause switch.

Kept apart from ``eager`` and ``tape`` so both can use it without an import cycle.

>>> recording_tapes()
[]
>>> with pause_recording():
...     is_paused()
True
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator

_local = threading.local()


def _stack() -> list:
    if not hasattr(_local, "tapes"):
        _local.tapes = []
        _local.paused = 0
    return _local.tapes


def push(tape: Any) -> None:
    """Make ``tape`` active (innermost)."""
    _stack().append(tape)
    tape._entered = stamp()


def stamp() -> int:
    """A number larger than every earlier one: the order in which tapes and accumulators were
    entered (nesting, not creation, decides who sees whose computations)."""
    _local.entries = getattr(_local, "entries", 0) + 1
    return _local.entries


def tapes_entered_after(entered: int) -> list:
    """The recording tapes entered after the stamp ``entered`` (inner to it)."""
    return [t for t in recording_tapes() if getattr(t, "_entered", 0) > entered]


def remove(tape: Any) -> None:
    """Make ``tape`` inactive (it need not be the innermost one)."""
    stack = _stack()
    for k in range(len(stack) - 1, -1, -1):
        if stack[k] is tape:
            del stack[k]
            return


def is_active(tape: Any) -> bool:
    return any(t is tape for t in _stack())


def is_paused() -> bool:
    _stack()
    return _local.paused > 0


def recording_tapes() -> list:
    """The active tapes that record now, outermost first (none while paused)."""
    stack = _stack()
    if _local.paused:
        return []
    return [t for t in stack if t._recording]


@contextlib.contextmanager
def pause_recording() -> Iterator[None]:
    """No tape records anything inside (used for non-differentiable results)."""
    _stack()
    _local.paused += 1
    try:
        yield
    finally:
        _local.paused -= 1


# --- forward accumulators (sg.ForwardAccumulator, symgrad/tape/forward.py) ------------------
def accumulators() -> list:
    """The active forward accumulators, outermost first (the list itself: forward.py
    pushes and removes them)."""
    if not hasattr(_local, "accumulators"):
        _local.accumulators = []
    return _local.accumulators


def recording_accumulators() -> list:
    """The active accumulators that see ops now (none while paused)."""
    stack = accumulators()
    if is_paused():
        return []
    return [a for a in stack if a._recording]
