"""The scalar pass's settings (module attributes, so tests can change them; every one is
part of the compile key through the regions it chooses, and of the warm key).

The choice is a cost model (``cost.py``), not a size threshold: a region is worked per
element where its total cost (run time over ``BUILD_CALLS`` calls plus build time) is less
than the loop kernels' and steps' it replaces, and the build time the program's scalar
kernels add fits a budget that grows with the program.
``BUILD_CALLS``: the calls a build is weighed against (a policy, not a measurement: one
second of build is worth 10 us a call at 1e5; a dense 128-vector Jacobian saving ~2 us a
call for ~0.7 s more build keeps its loops, a 100-species index-array Jacobian saving
~400 us a call for ~1.5 s is one kernel).
``DISPATCH_NS``: one call of a loop kernel, a structural step or a scalar kernel from the
driver. ``STATEMENT_NS``: one statement of straight-line code. ``ELEMENT_NS``: one element
of one op in a fused loop (vector code). ``BUILD_IR_STATEMENT_US`` and
``BUILD_IR_ELEMENT_US``: building one statement, and one element the kernel reads or
writes, of a kernel written whole as LLVM IR (float64 and bool values, ``source.NATIVE``):
the element rules, the IR text and LLVM, linear in the kernel (measured cold on a loaded
2-core machine: ~0.13 ms per statement of a chain of 1,600 to 25,600 statements;
~25-40 us per element of an index-array Jacobian, 10,000-40,000 elements written by a
few nodes), and ``BUILD_IR_NODE_US`` per node of the region (its graph work: the element
rule's call and arrays; 0.3-0.6 ms per entry of ``x[i] * x[i + 1]`` stacked over 400 to
6,400 entries, three nodes, one statement, one element read and one written each). A kernel numba compiles (float32 or integer values):
``BUILD_STATEMENT_US`` per statement (an LLVM IR body's) and ``BUILD_ELEMENT_US`` +
``BUILD_ELEMENT_SQ_US`` per element of the kernel: one element a kernel reads or writes
(numba's front end types each line, and the time per line grows with the function:
measured 2.3 ms each at 200 elements, 8.5 ms at 1,600, on a 2-core machine).
``BUILD_UNIT_US``: building one loop kernel or step (its share of the driver and module:
measured ~60 ms per getitem step). ``BUILD_BASE_US`` +
``BUILD_PER_NODE_US`` per node of the folded graph: the build time all scalar kernels of a
program may add together over the loops they replace.
``SCATTER_CALLS``: the calls a getitem_grad costs as a numpy step after a scalar kernel
(its step, zeros, the scatter: ~3 us per (40, 40) row of a mass-action Jacobian); in the
loop form it is fused into the kernel that makes its input. ``SCATTER_ELEMENT_NS`` and
``MOVE_ELEMENT_NS``: per element of a structural step of the loop form that scatters with
``np.add.at`` (a gather_grad: 9-12 ns measured on (n, 2n) rows, n = 50-200) or gathers
and segment-sums (fancy indexing, the compiled scatter loop: 1.5-2.5 ns), see
``step_cost.py``.
``MAX_TERMS``: the most terms one element's statement may sum (a reduction's inputs per
output element, a matmul's k): a sum is one statement, and the printers recurse per term.
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
BUILD_IR_STATEMENT_US = 130.0
BUILD_IR_ELEMENT_US = 20.0
BUILD_IR_NODE_US = 150.0
BUILD_STATEMENT_US = 200.0
BUILD_ELEMENT_US = 1200.0
BUILD_ELEMENT_SQ_US = 4.6
BUILD_UNIT_US = 5e4
BUILD_BASE_US = 2e6
BUILD_PER_NODE_US = 1e4
SCATTER_CALLS = 3.0
SCATTER_ELEMENT_NS = 10.0
MOVE_ELEMENT_NS = 2.0
BUILD_CALLS = 1e5
MAX_TERMS = 64
MIN_STEPS = 2
SCALAR_ELEMENTS: Optional[int] = None
ENABLED = True

NAMES = ("ENABLED", "SCALAR_ELEMENTS", "MIN_STEPS", "DISPATCH_NS", "STATEMENT_NS",
         "ELEMENT_NS", "BUILD_STATEMENT_US", "BUILD_ELEMENT_US", "BUILD_ELEMENT_SQ_US",
         "BUILD_IR_STATEMENT_US", "BUILD_IR_ELEMENT_US", "BUILD_IR_NODE_US", "BUILD_UNIT_US",
         "BUILD_BASE_US", "BUILD_PER_NODE_US", "SCATTER_CALLS", "SCATTER_ELEMENT_NS",
         "MOVE_ELEMENT_NS", "BUILD_CALLS", "MAX_TERMS")
"""Every setting the choice depends on (the warm key reads them, ``cache/warm.py``)."""


def key() -> tuple:
    """What the folded-and-planned graph depends on here (the warm key)."""
    return tuple(globals()[name] for name in NAMES)
