"""2-D matmul split over the threads of a persistent pool, for ``target='parallel'``.

numpy's matmul releases the GIL, so row blocks (or contraction blocks) of one product run
at the same time on several cores even when BLAS itself is single-threaded (as with
``OPENBLAS_NUM_THREADS=1``). The split:

- **rows** of the output when M is the large side (``X @ W1``: 4096x64 @ 64x256);
- **contraction** when K dominates M and N (``X.T @ dZ``: 64x4096 @ 4096x256): each
  thread multiplies a K block, the partial products are summed (rounding differs from
  one ``np.matmul`` by the order of the sum);
- **columns** otherwise.

One ``np.matmul`` runs instead when the product is small (< ``MIN_WORK`` multiply-adds),
when an operand is not 2-D, when the dtype is not float or complex (integer matmul is not
BLAS: exact, and no faster in blocks), or when BLAS already runs multi-threaded
(``blas_threads() > 1``: splitting on top of BLAS's own threads oversubscribes the cores;
measured 2-4x slower on a 2-core machine).

>>> import numpy as np
>>> a, b = np.arange(12.0).reshape(4, 3), np.arange(6.0).reshape(3, 2)
>>> bool(np.array_equal(matmul(a, b, 2, min_work=0), a @ b))
True
>>> out = np.empty((4, 2))
>>> matmul(a, b, 2, out, min_work=0) is out
True
"""

from __future__ import annotations

import ctypes
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Optional

import numpy as np

MIN_WORK = 1 << 21
"""Below this many multiply-adds (M*N*K) one np.matmul runs: a pool handoff costs ~20 us."""

MIN_BLOCK = 16
"""No block is thinner than this along the split axis."""

_lock = threading.Lock()
_pool: Optional[ThreadPoolExecutor] = None
_blas: list = []


def _reset_after_fork() -> None:
    global _pool
    _pool = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


def pool(workers: int) -> ThreadPoolExecutor:
    """The shared pool (created on first use, again in a forked child)."""
    global _pool
    with _lock:
        if _pool is None or _pool._max_workers < workers:
            _pool = ThreadPoolExecutor(max(workers, 1), thread_name_prefix="symgrad-matmul")
        return _pool


def blas_threads() -> int:
    """How many threads numpy's OpenBLAS runs (1 when it cannot be asked)."""
    if not _blas:
        _blas.append(_ask_openblas())
    return _blas[0]


def _ask_openblas() -> int:
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line.lower()}
    except OSError:
        return 1
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name in ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_",
                     "openblas_get_num_threads"):
            fn = getattr(lib, name, None)
            if fn is not None:
                fn.restype = ctypes.c_int
                return int(fn())
    return 1


def _bounds(n: int, parts: int) -> list:
    step = -(-n // parts)
    return [(lo, min(n, lo + step)) for lo in range(0, n, step)]


def plan_split(m: int, k: int, n: int, nthreads: int, min_work: int = MIN_WORK) -> tuple:
    """(axis, parts): axis 'rows', 'k', 'cols' or None (one np.matmul).

    >>> plan_split(4096, 64, 256, 2), plan_split(64, 4096, 256, 2), plan_split(8, 8, 8, 2)
    (('rows', 2), ('k', 2), (None, 1))
    """
    if nthreads < 2 or m * n * k < min_work:
        return None, 1
    if k >= 4 * max(m, n):
        axis, length = "k", k
    elif m >= n:
        axis, length = "rows", m
    else:
        axis, length = "cols", n
    parts = min(nthreads, length // MIN_BLOCK)
    return (axis, parts) if parts >= 2 else (None, 1)


def matmul(a, b, nthreads: int, out=None, min_work: int = MIN_WORK) -> np.ndarray:
    """``np.matmul(a, b, out=out)`` computed in blocks on ``nthreads`` threads (see the
    module); ``out``: a C-contiguous array of the product's shape and dtype, or None."""
    if (type(a) is not np.ndarray or type(b) is not np.ndarray or a.ndim != 2 or b.ndim != 2
            or a.dtype != b.dtype or a.dtype.kind not in "fc" or a.shape[1] != b.shape[0]
            or blas_threads() > 1):
        return np.matmul(a, b, out=out)
    (m, k), n = a.shape, b.shape[1]
    axis, parts = plan_split(m, k, n, nthreads, min_work)
    if axis is None:
        return np.matmul(a, b, out=out)
    blocks = _bounds({"rows": m, "k": k, "cols": n}[axis], parts)
    if axis == "k":   # the first block's product is written into out, the others added
        jobs = [(a[:, lo:hi], b[lo:hi], out if j == 0 else None)
                for j, (lo, hi) in enumerate(blocks)]
    else:
        out = np.empty((m, n), a.dtype) if out is None else out
        if axis == "rows":
            jobs = [(a[lo:hi], b, out[lo:hi]) for lo, hi in blocks]
        else:
            jobs = [(a, b[:, lo:hi], out[:, lo:hi]) for lo, hi in blocks]
    results = _run(jobs)
    if axis != "k":
        return out
    total = results[0]
    for r in results[1:]:
        total += r
    return total


def _one(a, b, out):
    return np.matmul(a, b) if out is None else np.matmul(a, b, out=out)


def _run(jobs: list) -> list:
    """Runs jobs[1:] on the pool and jobs[0] here; waits for all before returning. The
    pool's work items reach the jobs through ``box``, emptied before returning: a pool
    thread keeps no view of the output (see ``run_chunks``)."""
    box = [jobs]
    calls = [(_boxed, (box, j)) for j in range(1, len(jobs))]
    futures = [pool(len(jobs) - 1).submit(fn, *args) for fn, args in calls]
    try:
        first = _one(*jobs[0])
    finally:
        rest = _finish(futures, calls)
        box.clear()
    return [first] + rest


def _boxed(box: list, j: int):
    return _one(*box[0][j])


def _finish(futures: list, calls: list) -> list:
    """The futures' results; a job no pool thread has started yet runs here instead.

    On a loaded machine a pool thread may wait milliseconds for a core; a ``prange``
    region (OpenMP) waits for it at its barrier, which made W2's parallel call 10x its
    serial time at load average 7 (docs/threads_and_buffers.md). Cancelling a job that has
    not started and running it on the calling thread bounds that wait by the job itself.
    """
    out = []
    for f, (fn, args) in zip(futures, calls):
        out.append(fn(*args) if f.cancel() else f.result())
    return out


CHUNKS_PER_THREAD = 4
"""A pooled kernel's rows are cut into this many chunks per thread, taken in turn by the
caller and the pool threads: a thread the OS preempts holds back one small chunk, not
half the work."""


def run_chunks(fn, nc: int, *args, threads: int = 0) -> int:
    """``fn(c, nc, *args)`` for each chunk ``c < nc``, taken in turn by the caller and up
    to ``threads - 1`` pool threads (``threads``: default ``ceil(nc / CHUNKS_PER_THREAD)``;
    a kernel's ``_chunk`` loop, compiled with ``nogil=True``); returns the sum of what they
    return (a loop that checks sin/cos ranges returns how many elements failed; others
    return None, 0). A pool thread that starts after the caller took the last chunk does
    nothing; one that has not started is cancelled (``_finish``).

    >>> run_chunks(lambda c, nc, xs: xs.append(c) or c, 3, [])
    3
    """
    if nc <= 1:
        return fn(0, 1, *args) or 0
    helpers = min(nc, threads or -(-nc // CHUNKS_PER_THREAD)) - 1
    taken = iter(range(nc))   # next() on it is atomic under the GIL
    box = [args]   # emptied on return: a pool thread's finished work item keeps no array

    def work() -> int:
        total = 0
        for c in taken:
            total += fn(c, nc, *box[0]) or 0
        return total

    if helpers < 1:
        return work()
    futures = [pool(helpers).submit(work) for _ in range(helpers)]
    try:
        first = work()
    finally:
        rest = _finish(futures, [(lambda: 0, ()) for _ in futures])
        box.clear()   # else the caller's next output may be allocated before this one is
        # freed (by the pool thread, later): the heap grows, is trimmed, and every call
        # faults its output's pages in again (W2: ~200 page faults per call)
    return first + sum(rest)
