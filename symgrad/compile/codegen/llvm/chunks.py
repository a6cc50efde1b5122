"""Where a huge scalar kernel is cut into chunks, each its own LLVM function.

LLVM's optimisation and code generation take time that grows faster than a function's
size (the greedy register allocator wherever many values live long, as a gradient's
forward values do), so one function of tens of thousands of statements was compiled at
lower levels (IR passes -O1, code generation -O0) and ran 30-40% slower. A deep kernel
(``deep``) of more than ``CHUNK_STATEMENTS`` statements is therefore cut into consecutive
chunks of about that many (equal shares, so that the size of a chunk, and the speed of a
call, do not jump at a threshold); ``kernel.kernel_ir`` writes each as a ``noinline``
internal function called in turn by the kernel's entry, and every chunk is compiled at
higher levels (``native.CHUNK_LEVELS``): the build is linear in the statements. A value
used in a later chunk than its own is stored to a scratch buffer (8 bytes a slot) after
the statement that computes it and loaded before the first statement of each later chunk
that reads it; a slot is reused once the last chunk that reads its value has run. Input
elements are loaded by each chunk that reads them, an output element is stored by the
chunk that computes it (an element that is a constant or an input's element by chunks of
their own).

>>> steps = [("Q0_+1.0", ["r0"], "t0", ("double",), "double"),
...          ("Q0_*Q1_", ["t0", "r0"], "t1", ("double", "double"), "double"),
...          ("Q0_*Q1_", ["t1", "t0"], "t2", ("double", "double"), "double")]
>>> body = ["  %t0 = ...", "  %t1 = ...", "  %t2 = ..."]
>>> p = plan(steps, body, {}, [0, 1, 2], {"r0": "double"}, [[(0, "%t2")]], limit=1)
>>> p.bounds, p.slots
([(0, 1), (1, 2), (2, 3)], 2)
>>> p.live_in
[[], [('%t0', 0, 'double', 1)], [('%t1', 1, 'double', 2), ('%t0', 0, 'double', 2)]]
>>> p.live_out
[[('%t0', 0, 'double', 0)], [('%t1', 1, 'double', 1)], []]
>>> p.reads, p.writes
([['r0'], ['r0'], []], [[], [], [(0, 0, '%t2')]])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

CHUNK_STATEMENTS = 500
"""About the statements of one chunk (the cost model's knob; see ``bounds``). Measured
(build_time.py, CPU s of the build / us per call, two rounds each, alternating): 250: d
14.4, 13.5 s / 21.3 us, f25 6.6, 5.9 s / 36.6-37.7 us; 500: d 12.8, 13.5 s / 20.9-21.0 us,
f25 5.9, 6.0 s / 36.1-36.5 us. LLVM alone at 1,000: d about as fast, f25's code generation
20% slower (more values live across its tanh calls). With the short passes
(``native.CHUNK_LEVELS``), f25's LLVM CPU s / us per call: 250: 2.72 / 35.3, 500: 2.87,
3.00 / 35.6, 35.1, 1,000: 3.49 / 35.4."""

STACK_SCRATCH = 1 << 18
"""Bytes of scratch up to which it is on the entry function's stack; above, it is
allocated per call (``malloc``): threads' stacks may be small."""


HEADER = "; symgrad chunks "


DEEP = 50
"""Statements per output element stored from which a kernel is cut into chunks (``deep``)."""

def deep(statements: int, stored: int) -> bool:
    """Whether a kernel of ``statements`` that stores ``stored`` output elements one by
    one is cut into chunks (when it has more than ``CHUNK_STATEMENTS``): a deep program
    (RK4 500 steps: 8,000 statements an element, 32 -> 21 us per call; 25 layers: 64, 56
    -> 37 us; 200 layers: 505-540 -> 392-399 us at the same build time, 29 s), not a wide
    one, a Jacobian's (pendulum: 43, mass action: 1.4), whose chunks gained at most 16% per
    call at code generation -O1 (9.3 -> 7.8 us; 6.4 -> 6.6 us) for 2-5 times the LLVM
    time of the one function at -O0, and lost 40% at -O0 (9.1 -> 13.1 us, 6.3 -> 8.0 us):
    it stays one function. There is no size budget any more: with the chunks' short
    passes (``native.CHUNK_LEVELS``) LLVM's time in chunks is linear in the statements
    and no longer above the one function's (200 layers, about 900,000 lines of IR: 23.8-25.2
    s against 24.4 s of LLVM; at IR passes -O1 it was 44 s against 31 s of the build).

    >>> deep(72_000, 9), deep(3_278, 2_300), deep(66_000, 129)
    (True, False, True)
    """
    return statements >= DEEP * max(1, stored)


def header(n: int, largest: int) -> str:
    """The first line of a chunked kernel's IR: its chunks and the size of the largest
    (statements, element reads and writes)."""
    return f"{HEADER}{n} largest {largest}\n"


def chunking(ir_text: str) -> Optional[tuple]:
    """(chunks, size of the largest) of a kernel's IR, None when it is one function.

    >>> chunking(header(3, 480) + "define ..."), chunking("define ...")
    ((3, 480), None)
    """
    if not ir_text.startswith(HEADER):
        return None
    words = ir_text[:ir_text.index("\n")].split()
    return int(words[3]), int(words[5])


def bounds(weights: list, limit: int) -> list:
    """Consecutive ranges of the statements of ``weights`` (a statement's instructions that
    touch memory or compute: 1, plus the output elements it is stored to) in
    ``ceil(total / limit)`` chunks of about equal weight (one chunk up to ``limit``).

    >>> bounds([1] * 5, 10), bounds([1] * 11, 10), bounds([1] * 25, 10)
    ([(0, 5)], [(0, 5), (5, 11)], [(0, 8), (8, 16), (16, 25)])
    >>> bounds([1, 1, 9, 1, 1, 1], 5)       # a statement stored to 8 outputs
    [(0, 2), (2, 3), (3, 6)]
    """
    total = sum(weights)
    n = max(1, -(-total // max(1, limit)))
    out, start, acc, k = [], 0, 0, 1
    for entry, w in enumerate(weights):
        if k < n and entry > start and acc + w > total * k / n:
            out.append((start, entry))
            start, k = entry, k + 1
            while k < n and acc >= total * k / n:
                k += 1
        acc += w
    out.append((start, len(weights)))
    return out


@dataclass
class Plan:
    """``bounds``: body-entry ranges per chunk; per chunk, ``reads``: the input elements
    it loads, ``live_in`` / ``live_out``: (SSA value, slot, kind, body entry) it loads from
    / stores to the scratch (before the entry that first reads it / after the one that
    computes it), ``writes``: (output, flat index, operand) it stores; ``slots``: the
    scratch's size in slots."""

    bounds: list
    reads: list = field(default_factory=list)
    live_in: list = field(default_factory=list)
    live_out: list = field(default_factory=list)
    writes: list = field(default_factory=list)
    slots: int = 0


def _defined(steps: list, owners: list, value: dict) -> tuple:
    """({SSA value: kind}, {SSA value: body entry}) of the steps that have instructions (a
    step's value is its own name, or the operand ``statements_ir`` recorded)."""
    kinds, entries = {}, {}
    for entry, i in enumerate(owners):
        name, kind = steps[i][2], steps[i][4]
        for ssa in {"%" + name, value.get(name, "%" + name)}:
            if ssa.startswith("%"):
                kinds[ssa], entries[ssa] = kind, entry
    return kinds, entries


def plan(steps: list, body: list, value: dict, owners: list, read_kinds: dict,
         writes: list, limit: int = CHUNK_STATEMENTS) -> Plan:
    """The chunks of a kernel: ``steps``, ``body``, ``value``, ``owners`` as
    ``body.statements_ir`` makes them; ``read_kinds``: {read name: kind}; ``writes``: per
    output, the (flat index, operand) it stores one by one. Output elements that are
    constants or inputs' elements are stored by chunks of their own, after the others
    (at most ``limit`` each): LLVM's instruction scheduler takes time quadratic in the
    loads and stores of a block."""
    kinds, entries = _defined(steps, owners, value)
    weights = [1] * len(body)
    rest = []
    for j, items in enumerate(writes):
        for flat, op in items:
            if op in entries:
                weights[entries[op]] += 1
            else:
                rest.append((j, flat, op))
    p = Plan(bounds(weights, limit))
    for k in range(0, len(rest), max(1, limit)):
        p.bounds.append((len(body), len(body)))
    chunk_of = [0] * len(body)
    for c, (start, end) in enumerate(p.bounds):
        chunk_of[start:end] = [c] * (end - start)
    where = {op: chunk_of[entry] for op, entry in entries.items()}
    n = len(p.bounds)
    reads = [dict() for _ in range(n)]
    uses = [dict() for _ in range(n)]          # chunk -> {SSA value from an earlier chunk}
    last: dict = {}
    for entry, i in enumerate(owners):
        c = chunk_of[entry]
        for a in steps[i][1]:
            if a is None:
                continue
            op = value.get(a) or ("%" + a if a.isidentifier() else a)
            if not op.startswith("%"):
                continue
            if op[1:] in read_kinds:
                reads[c][op[1:]] = True
            elif where.get(op, c) != c:
                uses[c].setdefault(op, entry)
                last[op] = max(last.get(op, c), c)
    p.writes = [[] for _ in range(n)]
    for j, items in enumerate(writes):
        for flat, op in items:
            if op in where:
                p.writes[where[op]].append((j, flat, op))
    first = n - -(-len(rest) // max(1, limit))
    for k, (j, flat, op) in enumerate(rest):
        c = first + k // max(1, limit)
        if op.startswith("%") and op[1:] in read_kinds:
            reads[c][op[1:]] = True
        p.writes[c].append((j, flat, op))
    p.reads = [list(r) for r in reads]
    _assign_slots(p, where, kinds, uses, last, entries)
    return p


def _assign_slots(p: Plan, where: dict, kinds: dict, uses: list, last: dict,
                  entries: dict) -> None:
    """Scratch slots: a value's slot is taken in its chunk and free again after the chunk
    of its last reader (a chunk's loads and stores are interleaved)."""
    n = len(p.bounds)
    born = [[] for _ in range(n)]
    for op in last:
        born[where[op]].append(op)
    dying = [[] for _ in range(n)]
    for op, c in last.items():
        dying[c].append(op)
    slot: dict = {}
    free: list = []
    for c in range(n):
        p.live_in.append([(op, slot[op], kinds[op], first) for op, first in uses[c].items()])
        out = []
        for op in born[c]:
            if free:
                s = free.pop()
            else:
                s, p.slots = p.slots, p.slots + 1
            slot[op] = s
            out.append((op, s, kinds[op], entries[op]))
        p.live_out.append(out)
        free += [slot[op] for op in dying[c]]
        free.sort(reverse=True)
