"""A fused loop's module (``fused.py``, ``fused_while.py``): recalled or built, cached.

``recall(kind, parts)`` loads the loop module that an earlier build remembered under
``parts`` (the body modules' keys and the loop's shapes: a warm build reads no plan), with
what was remembered beside it; ``build(kind, text)`` loads or writes the module of
``text``, cached under the hash of ``kind`` and ``text``; ``remember`` records its key for
the next warm build.

>>> recall("fused scan", None)                 # a body without a key: nothing to recall
(None, None)
"""

from __future__ import annotations

import hashlib
from typing import Optional

from ..cache import warm
from ..cache.modules import load_or_build

__all__ = ["recall", "build", "remember"]


def _not_cached() -> str:
    raise LookupError("the fused loop's module is not in the cache")


def recall(kind: str, parts: Optional[str]) -> tuple:
    """(the loop module remembered under ``parts``, what was remembered with it), or
    (None, None) where none was, or its module is not in the cache (or not verified)."""
    known = warm.recall(kind, parts) if parts else None
    if known is None:
        return None, None
    try:
        module, _, _ = load_or_build(known["loop"], _not_cached)
    except Exception:  # noqa: BLE001 - not in the cache (or not verified): build it
        return None, None
    return module, known


def build(kind: str, text: str) -> tuple:
    """(the module of ``text``, its key): loaded from the cache or written; raises what
    loading it raises."""
    key = hashlib.sha256((f"{kind} loop\n" + text).encode()).hexdigest()
    module, _, _ = load_or_build(key, lambda: text)
    return module, key


def remember(kind: str, parts: Optional[str], known: dict) -> None:
    """Keep ``known`` (``{"loop": key, ...}``) for a warm build of the same loop."""
    if parts:
        warm.remember(kind, parts, known)
