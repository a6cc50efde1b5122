"""Whether the cpu backend is dry-running a new module on dummy arguments (to compile its
kernels before ``sg.function`` returns): a loop then compiles its body but does not run
(a while loop on dummy data need not end; a long scan would be wasted time). And whether
``sg.function`` defers its numba compile (``deferring``: a scan body compiles only what
runs, the fused loop's kernel or the body's driver)."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator

_state = threading.local()


def is_dry_run() -> bool:
    return getattr(_state, "dry", False)


@contextmanager
def dry_running() -> Iterator[None]:
    old = is_dry_run()
    _state.dry = True
    try:
        yield
    finally:
        _state.dry = old


def is_deferred() -> bool:
    """Whether ``sg.function`` should leave its numba compile for later (a scan body that
    may run as a fused loop: its own driver's kernels then never run)."""
    return getattr(_state, "defer", False)


@contextmanager
def deferring() -> Iterator[None]:
    """Within: ``eager.compile_module`` binds ``COMPILE_LATER_`` on the module (a thunk
    that compiles it as it would have) instead of compiling."""
    old = is_deferred()
    _state.defer = True
    try:
        yield
    finally:
        _state.defer = old
