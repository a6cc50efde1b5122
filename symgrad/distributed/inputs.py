"""The arguments of a dask call: checked, aligned, chunked.

Batch inputs (placeholders with a leading None) must be chunked alike along axis 0; their
other axes are rechunked to one chunk. Every other input (a parameter) becomes a dask
array of one chunk, so that it is shipped once to each worker and shared by every task
there. numpy arguments are accepted for both (a batch input in numpy is chunked like the
dask ones).
"""

from __future__ import annotations

import math
from typing import Any

import dask.array as da
import numpy as np

from ..errors import ChunkError, FeedError
from ..feeds import check_feed
from ..shapes import format_shape
from .analysis import is_batch_placeholder


def _context(placeholders: list) -> str:
    return f"f({', '.join(p.name for p in placeholders)})"


def check_dask(p: Any, value: da.Array, context: str) -> da.Array:
    """A dask argument with the placeholder's dtype and rank (static dims equal)."""
    if value.dtype != p.dtype:
        raise FeedError(f"{context}: argument '{p.name}' is a dask array of dtype "
                        f"{value.dtype.name} but placeholder '{p.name}' has dtype "
                        f"{p.dtype.name}; convert with .astype('{p.dtype.name}')")
    if value.ndim != len(p.shape) or any(
            d is not None and d != a for d, a in zip(p.shape, value.shape)):
        raise FeedError(f"{context}: argument '{p.name}' has shape {value.shape} but "
                        f"placeholder '{p.name}' has shape {format_shape(p.shape)}")
    return value


def row_chunks(placeholders: list, values: list) -> tuple:
    """The common chunks along axis 0 of the batch inputs given as dask arrays."""
    context = _context(placeholders)
    given = [(p, v) for p, v in zip(placeholders, values)
             if is_batch_placeholder(p) and isinstance(v, da.Array)]
    for p, v in given:
        if any(math.isnan(c) for c in v.chunks[0]):
            raise ChunkError(f"{context}: argument '{p.name}' has unknown chunk sizes along "
                             "axis 0; call .compute_chunk_sizes() on it first")
    chunks = {v.chunks[0] for _, v in given}
    if len(chunks) > 1:
        listed = "; ".join(f"'{p.name}' {v.chunks[0]}" for p, v in given)
        first = given[0][0].name
        raise ChunkError(f"{context}: the batch inputs (leading dim None) must be chunked "
                         f"alike along axis 0, got {listed}; rechunk them, for example "
                         f"arg.rechunk({{0: {first}.chunks[0]}})")
    if chunks:
        return chunks.pop()
    rows = {np.shape(v)[0] for p, v in zip(placeholders, values)
            if is_batch_placeholder(p) and np.ndim(v) > 0}
    return (rows.pop(),) if len(rows) == 1 else (0,) if not rows else _mismatch(placeholders)


def _mismatch(placeholders: list) -> tuple:
    raise ChunkError(f"{_context(placeholders)}: the batch inputs have different numbers "
                     "of rows")


def prepare(placeholders: list, values: list) -> tuple:
    """(dask arrays, one per input, and the row chunks) for a chunked call."""
    context = _context(placeholders)
    rows = row_chunks(placeholders, values)
    arrays = []
    for p, v in zip(placeholders, values):
        if isinstance(v, da.Array):
            v = check_dask(p, v, context)
        else:
            v = check_feed(p, v, context)
        batch = is_batch_placeholder(p)
        if batch and sum(rows) != v.shape[0]:
            raise ChunkError(f"{context}: argument '{p.name}' has {v.shape[0]} rows but the "
                             f"other batch inputs have {sum(rows)}")
        chunks = (rows,) + tuple((d,) for d in v.shape[1:]) if batch else \
            tuple((d,) for d in v.shape)
        if isinstance(v, da.Array):
            arrays.append(v if v.chunks == chunks else v.rechunk(chunks))
        else:
            arrays.append(da.from_array(v, chunks=chunks))
    return arrays, rows
