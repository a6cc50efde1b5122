"""Whether the cpu backend is dry-running a new module on dummy arguments (to compile its
kernels before ``sg.function`` returns): a loop then compiles its body but does not run
(a while loop on dummy data need not end; a long scan would be wasted time)."""

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
