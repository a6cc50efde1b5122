"""Index checks of the assembly ops, run before anything is written (every engine calls the
records' numpy forwards, which call these first; the cuda steps defer them as device flags).

>>> import numpy as np
>>> check_segment_ids("unsorted_segment_sum", np.array([0, -1, 3]), 3)
Traceback (most recent call last):
...
symgrad.errors.SegmentIdError: unsorted_segment_sum: segment_ids[2] = 3 is out of range [0, 3) (num_segments = 3); negative ids are dropped (TF), larger ones are an error
"""

from __future__ import annotations

import numpy as np

from ...errors import SegmentIdError

__all__ = ["check_segment_ids", "check_sorted_ids", "check_nd_indices"]


def _position(bad: np.ndarray) -> str:
    return ", ".join(str(int(i)) for i in np.argwhere(bad)[0])


def check_segment_ids(op: str, ids, n: int) -> np.ndarray:
    """``ids`` as int64; an id ``>= n`` raises ``SegmentIdError`` naming the op, the position
    in ``segment_ids`` and the value (negative ids are allowed: TF drops them)."""
    ids = np.asarray(ids).astype(np.int64, copy=False)
    if ids.size and ids.max() >= n:   # one pass without a temporary; then find the first
        bad = ids >= n
        where = _position(bad)
        value = int(ids[tuple(np.argwhere(bad)[0])])
        raise SegmentIdError(f"{op}: segment_ids[{where}] = {value} is out of range "
                             f"[0, {n}) (num_segments = {n}); negative ids are dropped (TF), "
                             "larger ones are an error")
    return ids


def check_sorted_ids(op: str, ids) -> np.ndarray:
    """``segment_sum``'s ids: non-negative and non-decreasing (TF's errors)."""
    ids = np.asarray(ids).astype(np.int64, copy=False)
    negative = ids < 0
    if negative.any():
        k = int(np.argmax(negative))
        raise SegmentIdError(f"{op}: segment ids must be >= 0, got segment_ids[{k}] = "
                             f"{int(ids[k])}")
    if ids.size > 1:
        down = np.diff(ids) < 0
        if down.any():
            k = int(np.argmax(down)) + 1
            raise SegmentIdError(f"{op}: segment ids are not increasing: segment_ids[{k}] = "
                                 f"{int(ids[k])} follows {int(ids[k - 1])}; use "
                                 "sg.unsorted_segment_sum for unsorted ids")
    return ids


def check_nd_indices(op: str, indices, shape: tuple) -> np.ndarray:
    """``indices[..., k]`` in ``[0, shape[k])`` for each k (TF: negative indices too are an
    error); ``SegmentIdError`` names the op, the position in ``indices`` and the value."""
    indices = np.asarray(indices).astype(np.int64, copy=False)
    k = indices.shape[-1]
    limits = np.asarray(shape[:k], dtype=np.int64)
    bad = (indices < 0) | (indices >= limits)
    if bad.any():
        pos = tuple(int(i) for i in np.argwhere(bad)[0])
        row = ", ".join(map(str, pos[:-1]))
        index = indices[pos[:-1]].tolist()
        raise SegmentIdError(f"{op}: indices[{row}] = {index} does not index into shape "
                             f"{tuple(int(d) for d in shape)} (entry {pos[-1]} = "
                             f"{int(indices[pos])} is not in [0, {int(limits[pos[-1]])}))")
    return indices
