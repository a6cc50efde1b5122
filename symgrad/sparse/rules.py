"""Per-op dependency rules of ``sg.sparsity``: a table keyed by op record objects.

A rule gets the node, its inputs' dependency patterns (boolean ``scipy.sparse.csr_array``
of shape ``(input.size, n)``, or None where the input does not depend on x) and ``n``; it
returns the node's pattern ``(node.size, n)`` or None. Most rules build a boolean
*selection matrix* R (node.size × input.size: output entry i reads input entry j) and
return ``R @ P``. Ops without a rule are handled conservatively (every output entry
depends on everything its inputs depend on); docs/sparsity.md lists them.
"""

from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from ..ops.contraction import records as contraction
from ..ops.elementwise import records as E
from ..ops.indexing import records as indexing
from ..ops.layout import band
from ..ops.layout import records as layout
from ..ops.reductions import records as reductions
from ..ops.scans import records as scan
from ..ops.sources import CONSTANT

RULES: dict = {}
# elementwise ops whose derivative is zero wherever it exists (TF: sign's gradient is zeros)
ZERO_DERIVATIVE = {E.sign}


def _sp():
    import scipy.sparse as sparse   # scipy is imported lazily, by symgrad.sparse only
    return sparse


def size_of(shape: tuple) -> int:
    return int(np.prod(shape, dtype=np.int64))


def selection(out_ids: np.ndarray, in_ids: np.ndarray, n_out: int, n_in: int):
    """Boolean R (n_out × n_in) with R[out_ids[k], in_ids[k]] = True."""
    out_ids, in_ids = np.ravel(out_ids), np.ravel(in_ids)
    data = np.ones(out_ids.size, dtype=bool)
    r = _sp().coo_array((data, (out_ids, in_ids)), shape=(n_out, n_in)).tocsr()
    r.sum_duplicates()
    return r


def empty(rows: int, n: int):
    return _sp().csr_array((rows, n), dtype=bool)


def union(parts: list, rows: int, n: int):
    """The union of patterns (None entries skipped); None when there are none."""
    parts = [p for p in parts if p is not None]
    if not parts:
        return None
    out = parts[0]
    for p in parts[1:]:
        out = out + p
    return out.astype(bool)


def conservative(node, pats: list, n: int):
    """Every output entry depends on everything any input entry depends on."""
    used = [p.indices for p in pats if p is not None]
    if not used:
        return None
    cols = np.unique(np.concatenate(used))
    rows = size_of(node.shape)
    indptr = np.arange(rows + 1, dtype=np.int64) * cols.size
    return _sp().csr_array((np.ones(rows * cols.size, bool), np.tile(cols, rows), indptr),
                           shape=(rows, n))


def _ids(shape: tuple) -> np.ndarray:
    return np.arange(size_of(shape), dtype=np.int64).reshape(shape)


# --- elementwise ---------------------------------------------------------------------------
def elementwise_rule(node, pats: list, n: int):
    """The same entry of each input after broadcasting; only inputs used as values."""
    from ..differentiate.partials import has_float_path
    if node.op in ZERO_DERIVATIVE:
        return None
    rows = size_of(node.shape)
    parts = []
    for k, (t, p) in enumerate(zip(node.inputs, pats)):
        if p is None or not has_float_path(node, k):
            continue
        parts.append(broadcast_rows(p, t.shape, node.shape))
    return union(parts, rows, n)


def broadcast_rows(p, shape: tuple, out_shape: tuple):
    """The pattern ``p`` of a tensor of ``shape`` broadcast to ``out_shape``."""
    if tuple(shape) == tuple(out_shape):
        return p
    ids = np.broadcast_to(_ids(shape), out_shape)
    return selection(np.arange(ids.size), ids, ids.size, size_of(shape)) @ p


# --- data movement: the op's own numpy forward on entry ids ---------------------------------
def moves(data: Optional[tuple] = (0,), values: tuple = (),
          attrs: Optional[dict] = None) -> Callable:
    """A rule for ops that only move entries: ``op.numpy`` runs on arrays of entry ids + 1
    (0 = no entry, e.g. a pad's fill) for the ``data`` inputs (None: all inputs); ``values``
    inputs must be constants (gather's indices); the other inputs only give a shape."""
    def rule(node, pats: list, n: int):
        args, offset, blocks = [], 0, []
        for k, t in enumerate(node.inputs):
            if data is None or k in data:
                args.append(_ids(t.shape) + 1 + offset)
                blocks.append(pats[k] if pats[k] is not None else empty(size_of(t.shape), n))
                offset += size_of(t.shape)
            elif k in values:
                if t.op is not CONSTANT:
                    return conservative(node, pats, n)
                args.append(np.asarray(t.attrs["value"]))
            else:
                args.append(np.zeros(t.shape, t.dtype))
        kw = dict(node.attrs, **(attrs or {}))
        out = np.asarray(node.op.numpy(*args, **kw)).astype(np.int64).ravel()
        stacked = _sp().vstack(blocks, format="csr") if len(blocks) > 1 else blocks[0]
        keep = out > 0
        r = selection(np.arange(out.size)[keep], out[keep] - 1, out.size, offset)
        return (r @ stacked).astype(bool)
    return rule


# --- sums: each input entry flows into one output entry ----------------------------------------
def sums(target: Callable, data: int = 0) -> Callable:
    """``target(node, out_ids)``: for each entry of input ``data``, the output entry it is
    summed into (an array of the input's shape; -1: none)."""
    def rule(node, pats: list, n: int):
        p = pats[data]
        if p is None:
            return None
        t = node.inputs[data]
        into = target(node, _ids(node.shape))
        if into is None:
            return conservative(node, pats, n)
        into = np.broadcast_to(into, t.shape).ravel()
        keep = into >= 0
        r = selection(into[keep], np.arange(into.size)[keep], size_of(node.shape),
                      size_of(t.shape))
        return (r @ p).astype(bool)
    return rule


def _keep_axes(x_shape: tuple, axes) -> tuple:
    return tuple(1 if a in axes else d for a, d in enumerate(x_shape))


def _reduced_into(node, out_ids):
    x = node.inputs[0]
    axes = node.attrs["axes"]
    axes = tuple(range(x.ndim)) if axes is None else tuple(a % max(x.ndim, 1) for a in axes)
    return out_ids.reshape(_keep_axes(x.shape, axes))


def _unbroadcast_into(node, out_ids):
    return out_ids.reshape(node.inputs[1].shape)


def _tile_into(node, out_ids):
    return np.tile(out_ids, node.attrs["multiples"])


def _gather_grad_into(node, out_ids):
    indices = node.inputs[1]
    if indices.op is not CONSTANT:
        return None
    a = node.attrs
    return indexing._gather_numpy(out_ids, np.asarray(indices.attrs["value"]), a["axis"],
                                  a["wrap"])


def _trace_into(node, out_ids):
    shape = node.inputs[0].shape
    into = np.full(shape, -1, dtype=np.int64)
    k = np.arange(min(shape[-2:]))
    into[..., k, k] = out_ids[..., None]
    return into


def prod_others_rule(node, pats: list, n: int):
    """Each entry depends on every entry along ``axes`` (its reduction's group)."""
    p = pats[0]
    if p is None:
        return None
    x = node.inputs[0]
    axes = tuple(node.attrs["axes"])
    group_shape = _keep_axes(x.shape, axes)
    groups = np.broadcast_to(_ids(group_shape), x.shape)
    size = size_of(x.shape)
    red = selection(groups, np.arange(size), size_of(group_shape), size) @ p
    return (selection(np.arange(size), groups, size, size_of(group_shape)) @ red).astype(bool)


# --- scans ----------------------------------------------------------------------------------------
def _scan_selection(shape: tuple, axis: int, exclusive: bool, reverse: bool):
    """R[i, j]: output i reads entry j at or before it along ``axis`` (scan order)."""
    ids = np.moveaxis(_ids(shape), axis, -1)
    m = ids.shape[-1]
    i, j = np.tril_indices(m, -1 if exclusive else 0)
    if reverse:
        i, j = m - 1 - i, m - 1 - j
    flat = ids.reshape(-1, m)
    size = size_of(shape)
    return selection(flat[:, i], flat[:, j], size, size)


def scan_rule(node, pats: list, n: int):
    p = pats[0]
    if p is None:
        return None
    a = node.attrs
    return (_scan_selection(node.shape, a["axis"], a["exclusive"], a["reverse"]) @ p
            ).astype(bool)


def linrec_rule(node, pats: list, n: int):
    """out_t = a_t out_(t-1) + b_t: every a and b entry up to t along the axis."""
    joined = elementwise_like(node, pats, n)
    if joined is None:
        return None
    a = node.attrs
    return (_scan_selection(node.shape, a["axis"], False, a["reverse"]) @ joined).astype(bool)


def elementwise_like(node, pats: list, n: int):
    parts = [broadcast_rows(p, t.shape, node.shape) for t, p in zip(node.inputs, pats)
             if p is not None]
    return union(parts, size_of(node.shape), n)


# --- contractions: iteration-space index arrays, a constant operand's nonzero pattern ----------
def _nonzero(t) -> np.ndarray:
    if t.op is CONSTANT:
        return np.asarray(t.attrs["value"]) != 0
    return np.ones(t.shape, dtype=bool)


def contract(node, pats: list, n: int, spaces: list, out_ids: np.ndarray):
    """``spaces[k]``: operand k's entry ids, broadcast over the iteration space;
    ``out_ids`` the output's. Operand k reaches an output entry where every other
    operand's entry is structurally nonzero."""
    masks = [np.broadcast_to(_nonzero(t).ravel()[s], out_ids.shape)
             for t, s in zip(node.inputs, spaces)]
    parts = []
    rows = size_of(node.shape)
    for k, (t, p) in enumerate(zip(node.inputs, pats)):
        if p is None:
            continue
        keep = np.ones(out_ids.shape, dtype=bool)
        for m, mask in enumerate(masks):
            if m != k:
                keep &= mask
        r = selection(out_ids[keep], np.broadcast_to(spaces[k], out_ids.shape)[keep], rows,
                      size_of(t.shape))
        parts.append(r @ p)
    return union(parts, rows, n)


def matmul_rule(node, pats: list, n: int):
    a, b = node.inputs
    sa = (1,) + a.shape if a.ndim == 1 else a.shape
    sb = b.shape + (1,) if b.ndim == 1 else b.shape
    ia = _ids(a.shape).reshape(sa)[..., :, :, None]
    ib = _ids(b.shape).reshape(sb)[..., None, :, :]
    batch = np.broadcast_shapes(sa[:-2], sb[:-2])
    io = _ids(node.shape).reshape(batch + (sa[-2], 1, sb[-1]))
    space = np.broadcast_shapes(ia.shape, ib.shape, io.shape)
    return contract(node, pats, n, [np.broadcast_to(ia, space), np.broadcast_to(ib, space)],
                    np.broadcast_to(io, space))


def _letter_view(ids: np.ndarray, sub: str, letters: str) -> np.ndarray:
    """``ids`` (axes named by ``sub``) as an array over all ``letters`` (size-1 axes)."""
    moved = np.transpose(ids, [sub.index(c) for c in letters if c in sub])
    shape = [ids.shape[sub.index(c)] if c in sub else 1 for c in letters]
    return moved.reshape(shape)


def einsum_rule(node, pats: list, n: int):
    operands = node.inputs
    inputs, out = contraction.parse_subscripts(node.attrs["subscripts"],
                                               [o.ndim for o in operands])
    if any(len(set(s)) != len(s) for s in inputs):   # diagonals: not worth a rule
        return conservative(node, pats, n)
    letters = "".join(sorted(set("".join(inputs)) | set(out)))
    views = [_letter_view(_ids(t.shape), s, letters) for t, s in zip(operands, inputs)]
    io = _letter_view(_ids(node.shape), out, letters)
    space = np.broadcast_shapes(io.shape, *[v.shape for v in views])
    return contract(node, pats, n, [np.broadcast_to(v, space) for v in views],
                    np.broadcast_to(io, space))


def tensordot_rule(node, pats: list, n: int):
    a, b = node.inputs
    ax_a, ax_b = (tuple(x) for x in node.attrs["axes"])
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    sa = [next(letters) for _ in range(a.ndim)]
    sb = [next(letters) for _ in range(b.ndim)]
    for i, j in zip(ax_a, ax_b):
        sb[j % b.ndim] = sa[i % a.ndim]
    contracted = {sa[i % a.ndim] for i in ax_a}
    out = "".join(c for c in sa if c not in contracted) + "".join(
        c for c in sb if c not in contracted)
    sa, sb = "".join(sa), "".join(sb)
    letters = "".join(sorted(set(sa) | set(sb)))
    views = [_letter_view(_ids(a.shape), sa, letters), _letter_view(_ids(b.shape), sb, letters)]
    io = _letter_view(_ids(node.shape), out, letters)
    space = np.broadcast_shapes(io.shape, *[v.shape for v in views])
    return contract(node, pats, n, [np.broadcast_to(v, space) for v in views],
                    np.broadcast_to(io, space))


def _register() -> None:
    for op in (reductions.reduce_sum, reductions.reduce_mean, reductions.reduce_prod, reductions.reduce_max, reductions.reduce_min):
        RULES[op] = sums(_reduced_into)
    RULES[reductions.unbroadcast] = sums(_unbroadcast_into)
    RULES[layout.tile_grad] = sums(_tile_into)
    RULES[indexing.gather_grad] = sums(_gather_grad_into)
    RULES[band.trace] = sums(_trace_into)
    RULES[reductions.prod_others] = prod_others_rule
    for op in (layout.transpose, layout.reshape, layout.reshape_like, layout.expand_dims, layout.broadcast_like,
               indexing.getitem, indexing.getitem_grad, layout.unstack, layout.split, layout.squeeze,
               layout.broadcast_to, layout.tile, layout.reverse, layout.roll, layout.concat_part,
               band.tril, band.triu, band.diag, band.diag_part, band.diag_fill, scan.shift):
        RULES[op] = moves()
    RULES[layout.pad] = moves(attrs={"constant_values": 0})
    RULES[layout.concat] = moves(data=None)
    RULES[layout.stack] = moves(data=None)
    RULES[indexing.gather] = moves(values=(1,))
    RULES[E.cast] = moves(attrs={"dtype": np.int64})
    RULES[scan.cumsum] = scan_rule
    RULES[scan.cumprod] = scan_rule
    RULES[scan.linrec] = linrec_rule
    RULES[contraction.matmul] = matmul_rule
    RULES[contraction.einsum] = einsum_rule
    RULES[contraction.tensordot] = tensordot_rule


_register()
