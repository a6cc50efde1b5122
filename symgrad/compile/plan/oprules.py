"""What the compiler knows about particular ops, in tables keyed by their records
(``symgrad/ops``), never by name: which ops only move data (numpy views), which
reductions fuse into a kernel, which are identities, and how a step is emitted.

>>> L.transpose in VIEWS, C.matmul in VIEWS, R.reduce_sum in FUSED_REDUCTIONS
(True, False, True)
"""

from __future__ import annotations

import types

from ...ops.contraction import records as C
from ...ops.elementwise import records as E
from ...ops.indexing import records as I
from ...ops.layout import records as L
from ...ops.reductions import records as R
from ...ops.sources import CONSTANT, PLACEHOLDER

__all__ = ["CONSTANT", "PLACEHOLDER", "E", "S", "VIEWS", "FUSED_REDUCTIONS", "IDENTITIES",
           "REDUCTIONS", "FILLS", "CHEAP_VIEWS", "STEP_FORMS", "PARALLEL_STEP_FORMS",
           "FRESH_STEPS", "index_text", "threads_matmul"]

S = types.SimpleNamespace(**{op.name: op for op in (
    R.reduce_sum, R.reduce_mean, R.reduce_prod, R.reduce_max, R.reduce_min, R.unbroadcast,
    R.unbroadcast_any, R.axis_size, R.prod_others, L.transpose, L.reshape, L.reshape_like,
    L.expand_dims, L.broadcast_like, I.getitem, I.getitem_grad, C.matmul, E.cast)})
"""The structural records the compiler's passes name (``S.matmul``, ``S.unbroadcast``...),
from every family, as one namespace."""

VIEWS = frozenset({I.getitem, L.transpose, L.expand_dims, L.reshape, L.reshape_like,
                   L.broadcast_like})
"""Steps numpy runs as views (no copy; outputs that are views are copied on return)."""

CHEAP_VIEWS = frozenset({I.getitem, L.expand_dims, L.transpose, L.reshape})
"""Views through which a value still counts as a cheap read of its source."""

FUSED_REDUCTIONS = frozenset({R.reduce_sum, R.reduce_mean, R.unbroadcast})
"""Sums a kernel accumulates as outputs of its loop (static axes)."""

REDUCTIONS = frozenset({R.reduce_sum, R.reduce_mean, R.reduce_prod, R.reduce_max,
                        R.reduce_min})
"""Ops with ``axes``/``keepdims`` attributes whose dims drop or keep reduced axes."""

FRESH_STEPS = frozenset({C.matmul})
"""Steps whose result is a new array no other value shares (a later kernel may store into
it once nothing else reads it, see ``reuse.py``)."""

IDENTITIES = frozenset({E.identity, E.stop_gradient})
"""Ops whose value is their input's (the compiled graph reads the input)."""

FILLS = {E.ones_like: 1, E.zeros_like: 0}
"""Ops whose value is one number broadcast to their shape."""


def index_text(key: tuple) -> str:
    parts = []
    for k in key:
        if k is None:
            parts.append("None")
        elif k is Ellipsis:
            parts.append("...")
        elif isinstance(k, slice):
            parts.append(":".join("" if p is None else str(p) for p in (k.start, k.stop))
                         + ("" if k.step is None else f":{k.step}"))
        else:
            parts.append(str(k))
    return ", ".join(parts) if parts else "()"


def _getitem(node, ins: list) -> str:
    key = tuple(node.attrs["key"])
    if node.shape == () and Ellipsis not in key:
        key += (Ellipsis,)   # a 0-d view (kernels read it with [()]), not a numpy scalar
    return f"{ins[0]}[{index_text(key)}]"


def _matmul(node, ins: list):
    if all(i.dtype == node.dtype for i in node.inputs):
        return f"np.matmul({ins[0]}, {ins[1]})"
    return None


def threads_matmul(node) -> bool:
    """A matmul step the parallel target splits over its thread pool (2-D float)."""
    return node.op is C.matmul and len(node.shape) == 2 and \
        all(len(i.shape) == 2 for i in node.inputs) and node.dtype.kind in "fc" and \
        all(i.dtype == node.dtype for i in node.inputs)


def _threaded_matmul(node, ins: list):
    """2-D float products: split over the pool's threads at run time (threaded_matmul)."""
    if threads_matmul(node):
        return f"tmatmul_({ins[0]}, {ins[1]}, NTHREADS)"
    return _matmul(node, ins)


STEP_FORMS = {
    I.getitem: _getitem,
    L.transpose: lambda node, ins: f"{ins[0]}.transpose({node.attrs['perm']})",
    L.expand_dims: lambda node, ins: f"np.expand_dims({ins[0]}, {node.attrs['axes']})",
    L.reshape: lambda node, ins: f"{ins[0]}.reshape({node.attrs['shape']})",
    L.reshape_like: lambda node, ins: f"{ins[0]}.reshape({ins[1]}.shape)",
    L.broadcast_like: lambda node, ins: f"np.broadcast_to({ins[0]}, {ins[1]}.shape)",
    C.matmul: _matmul,
    E.cast: lambda node, ins: f"np.asarray({ins[0]}).astype(np.{node.dtype.name})",
}
"""How the cpu driver writes a step as one numpy line (None: call the reference)."""

PARALLEL_STEP_FORMS = {**STEP_FORMS, C.matmul: _threaded_matmul}
"""The parallel target's step forms: 2-D float matmuls run on the thread pool."""
