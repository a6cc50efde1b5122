"""Unique node names and name scopes (``sg.gradients(..., name=...)`` uses a scope)."""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections import defaultdict
from typing import Iterator, Optional

_state = threading.local()
_counters: dict = defaultdict(itertools.count)


def _stack() -> list:
    if not hasattr(_state, "stack"):
        _state.stack = []
    return _state.stack


@contextlib.contextmanager
def name_scope(scope: Optional[str]) -> Iterator[None]:
    """Prefix the names of nodes created inside with ``scope/``."""
    if not scope:
        yield
        return
    _stack().append(scope)
    try:
        yield
    finally:
        _stack().pop()


def unique_name(base: str, given: Optional[str] = None) -> str:
    """``given`` (scoped) if the user named the node, else ``base_N``."""
    stack = getattr(_state, "stack", None)
    if not stack:                   # no scope: most nodes (the same names as below)
        return given if given else f"{base}_{next(_counters[('', base)])}"
    prefix = "/".join(stack)
    name = given if given else f"{base}_{next(_counters[(prefix, base)])}"
    return f"{prefix}/{name}" if prefix else name
