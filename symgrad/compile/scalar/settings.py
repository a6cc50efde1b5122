"""The scalar pass's settings (module attributes, so tests can change them; every one is
part of the compile key through the regions it chooses, and of the warm key).

The choice is a cost model (``cost.py``), not a size threshold: a region is worked per
element where one straight-line call is cheaper than the loop kernels and steps it
replaces, and its build size stays within a bound that grows with the program.
``DISPATCH_NS``: one call of a loop kernel, a structural step or a scalar kernel from the
driver. ``STATEMENT_NS``: one statement of straight-line code. ``ELEMENT_NS``: one element
of one op in a fused loop (vector code). ``BUILD_BASE`` + ``BUILD_PER_NODE`` per node of
the folded graph: the statements, reads and writes one scalar kernel may have (today a
statement costs tens of microseconds to build, a read or write about 0.3 ms).
``MIN_STEPS``: a region is a candidate only when the kernel planner would split it with at
least this many structural steps (a region of elementwise nodes and the sums a loop fuses
is one loop kernel already). ``SCALAR_ELEMENTS``: None, or the rule before the cost model
(a node and each input of at most this many elements; tests force it). ``ENABLED``:
False turns the pass off (every region planned as before).
"""

from typing import Optional

DISPATCH_NS = 1000.0
STATEMENT_NS = 1.0
ELEMENT_NS = 0.25
BUILD_BASE = 4096
BUILD_PER_NODE = 64
MIN_STEPS = 2
SCALAR_ELEMENTS: Optional[int] = None
ENABLED = True

NAMES = ("ENABLED", "SCALAR_ELEMENTS", "MIN_STEPS", "DISPATCH_NS", "STATEMENT_NS",
         "ELEMENT_NS", "BUILD_BASE", "BUILD_PER_NODE")
"""Every setting the choice depends on (the warm key reads them, ``cache/warm.py``)."""


def key() -> tuple:
    """What the folded-and-planned graph depends on here (the warm key)."""
    return tuple(globals()[name] for name in NAMES)
