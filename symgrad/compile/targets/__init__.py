"""Compile targets as objects: ``cpu``, ``parallel`` and ``cuda``. Each owns its compile
options (math, loop nests, scatter fusion, threads), what ``f.explain()`` says about
where its steps run, and (device targets) how a plan becomes a compiled function. Code
outside this package asks a target object; it never compares target names.

>>> from symgrad.compile.targets import get
>>> get("cpu").nests, get("cuda").scatter, get("cuda").math("fast")
(True, False, 'libm')
>>> get("gpu")
Traceback (most recent call last):
...
ValueError: sg.function: unknown target 'gpu'; use one of ('cpu', 'parallel', 'cuda')
"""

from __future__ import annotations

from .base import Target
from .cpu import CPU, PARALLEL
from .cuda import CUDA

__all__ = ["Target", "CPU", "PARALLEL", "CUDA", "TARGETS", "NAMES", "get"]

TARGETS: dict = {t.name: t for t in (CPU, PARALLEL, CUDA)}
NAMES = tuple(TARGETS)


def get(target) -> Target:
    """The target object named ``target`` (a Target is returned as is)."""
    if isinstance(target, Target):
        return target
    found = TARGETS.get(target) if isinstance(target, str) else None
    if found is None:
        raise ValueError(f"sg.function: unknown target {target!r}; use one of {NAMES}")
    return found
