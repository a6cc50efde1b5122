"""A batch axis through a graph (JAX's ``vmap``): k vector–Jacobian products in one sweep.

``batch_graph`` rebuilds the part of a graph that depends on some *stand-in* tensors,
each replaced by a batched tensor with one extra leading axis of length k. Every node
downstream of a stand-in is rebuilt by its op record's **batching rule**
(``BATCH_RULES``, keyed by op record objects): it receives the node and its new inputs
(each batched, batch axis 0, or unbatched) and returns the batched node. Elementwise ops
(``expr`` included) insert size-1 axes after the batch axis and let broadcasting do the
rest; axis-taking ops shift their axes; reshapes prepend k; slices prepend a full slice;
matmul and einsum use their own batch dims. An op without a rule is batched by the
generic fallback (unstack along k, apply per slice, stack): correct, but its size grows
with k. Inputs an op reads only for their shape (``SHAPE_ONLY``, e.g. the ``like`` of
``unbroadcast``) never make a node batched.

``batched_gradients`` is ``sg.gradients(..., batched=True)``: the ordinary gradient
graph is built once with unbatched stand-in seeds, then batched, so its size is
independent of k.

>>> import numpy as np
>>> import symgrad as sg
>>> x = sg.placeholder("x", shape=(3,))
>>> seeds = np.eye(3)                                  # k = 3 seeds of y's shape
>>> (g,) = sg.gradients(x * x, [x], grad_ys=[seeds], batched=True)
>>> g.shape
(3, 3)
>>> sg.evaluate(g, {x: [1.0, 2.0, 3.0]})
array([[2., 0., 0.],
       [0., 4., 0.],
       [0., 0., 6.]])
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Callable, Optional

import numpy as np

from .arguments import UnconnectedGradients, check_seed, unconnected_policy
from .dtypes import is_bool
from .errors import ShapeError, UnconnectedGradientError
from .graph.naming import name_scope
from .graph.tensor import Tensor, describe
from .graph.traversal import topological_order
from .ops.functions import F
from .ops.contraction import records as C
from .ops.elementwise import records as E
from .ops.indexing import records as I
from .ops.layout import api as LA
from .ops.layout import band as B
from .ops.layout import records as L
from .ops.linalg.batching import LINALG_RULES
from .ops.reductions import records as R
from .ops.scans import records as SC
from .ops.registry import OpDef, apply
from .ops.sources import constant, placeholder
from .shapes import format_shape, is_fully_known

Rule = Callable[[Tensor, list, tuple, int], Tensor]


# --- helpers --------------------------------------------------------------------------------
def expand_to(x: Tensor, rank: int) -> Tensor:
    """A batched x (batch axis 0) with size-1 axes after the batch axis up to ``rank``
    unbatched dims, so that numpy broadcasting aligns it with rank-``rank`` tensors."""
    missing = rank - (x.ndim - 1)
    return F.expand_dims(x, tuple(range(1, 1 + missing))) if missing > 0 else x


def broadcast_batch(x: Tensor, k: int) -> Tensor:
    """An unbatched x repeated along a new leading axis of length k (any dims None)."""
    key = (id(x), k)
    if key in _broadcasts():
        return _broadcasts()[key][1]
    if is_fully_known(x.shape):
        out = LA.broadcast_to(F.expand_dims(x, (0,)), (k,) + tuple(x.shape))
    else:
        out = _broadcast_dynamic(x, k)
    _broadcasts()[key] = (x, out)  # x kept alive: its id is not reused while cached
    return out


# broadcast_batch's results during one batch_graph call (shared by every rule that needs
# the same tensor batched, e.g. the ``like`` of several scatters)
_LOCAL = threading.local()


def _broadcasts() -> dict:
    """This thread's memo of batched broadcasts and scatter likes (cleared after each
    batching; per thread, so graphs built in several threads never share it)."""
    cache = getattr(_LOCAL, "cache", None)
    if cache is None:
        cache = _LOCAL.cache = {}
    return cache


def clear_memo() -> None:
    """Forget this thread's memo (after each batched graph is built)."""
    _broadcasts().clear()


def _broadcast_dynamic(x: Tensor, k: int) -> Tensor:
    zeros = constant(np.zeros((k,) + (1,) * x.ndim, dtype=x.dtype))
    lead = F.expand_dims(x, (0,))
    return F.logical_or(lead, zeros) if is_bool(x.dtype) else F.add(lead, zeros)


def _batched(arg: Tensor, was_batched: bool, k: int) -> Tensor:
    return arg if was_batched else broadcast_batch(arg, k)


def _shift(axes: Any) -> tuple:
    return tuple(int(a) + 1 for a in axes)


def _same(node: Tensor, inputs: tuple, **changes: Any) -> Tensor:
    """The node's op on new inputs, with some attrs changed."""
    return apply(node.op, tuple(inputs), {**node.attrs, **changes})


# --- rules ----------------------------------------------------------------------------------
def elementwise_rule(node: Tensor, args: list, batched: tuple, k: int) -> Tensor:
    rank = node.ndim
    return _same(node, [expand_to(a, rank) if b else a for a, b in zip(args, batched)])


def _attrs_same(node, args, batched, k):
    """Ops on trailing axes only (``TRAILING_CORE``): leading axes pass."""
    return _same(node, args)


# Ops that act on their input's trailing ``core`` axes only; every leading axis passes to
# the output unchanged, in place. One table for both batch axes: here (vmap) a new leading
# axis passes, so the op is applied as it is; the Dask chunking analysis
# (``distributed/axes.py``) derives from it that a rows' axis among the leading ones stays
# where it is, and that one inside the core cannot be chunked.
TRAILING_CORE: dict = {
    E.cast: 0, I.one_hot: 0, B.tril: 2, B.triu: 2, B.diag: 1, B.diag_part: 2, B.trace: 2,
}


def _axes_rule(attr: str) -> Rule:
    def rule(node, args, batched, k):
        return _same(node, args, **{attr: _shift(node.attrs[attr])})
    return rule


def _axis_rule(node, args, batched, k):
    return _same(node, args, axis=node.attrs["axis"] + 1)


def _all_batched_axis(node, args, batched, k):
    """concat, stack: every input batched, axis shifted."""
    return _same(node, [_batched(a, b, k) for a, b in zip(args, batched)],
                 axis=node.attrs["axis"] + 1)


def _transpose(node, args, batched, k):
    return _same(node, args, perm=(0,) + _shift(node.attrs["perm"]))


def _reshape(node, args, batched, k):
    return _same(node, args, shape=(k,) + tuple(node.attrs["shape"]))


# the largest bool ``like`` constant (entries) a rule builds; beyond, the like is computed
LIKE_CONSTANT_MAX = 1 << 24


def _like(node: Tensor, args: list, batched: tuple, k: int, index: int) -> Tensor:
    """A tensor of shape ``(k,) + like.shape`` for an input read only for its shape: for a
    static shape a bool constant (the compiler fuses a scatter whose ``like`` is known
    before any kernel runs: ``compile/plan/scatter.py``), else the input repeated along k."""
    like = node.inputs[index]
    if (not batched[index] and is_fully_known(like.shape)
            and k * int(np.prod(like.shape, dtype=np.int64)) <= LIKE_CONSTANT_MAX):
        key = ("like", tuple(like.shape), k)
        if key not in _broadcasts():
            _broadcasts()[key] = (like, constant(np.zeros((k,) + tuple(like.shape), bool)))
        return _broadcasts()[key][1]
    return _batched(args[index], batched[index], k)


def _reshape_like(node, args, batched, k):
    if is_fully_known(node.shape):
        return F.reshape(args[0], (k,) + tuple(node.shape))
    return _same(node, [args[0], _like(node, args, batched, k, 1)])


def _broadcast_like(node, args, batched, k):
    x = expand_to(args[0], node.ndim)
    if is_fully_known(node.shape):
        return LA.broadcast_to(x, (k,) + tuple(node.shape))
    return _same(node, [x, _like(node, args, batched, k, 1)])


def _unbroadcast(node, args, batched, k):
    g = args[0]
    lead = (g.ndim - 1) - node.ndim
    if lead > 0:  # the extra leading dims of the contribution (never the batch axis)
        g = F.reduce_sum(g, tuple(range(1, 1 + lead)))
    c, t = g.shape[1:], node.shape
    if is_fully_known(c) and is_fully_known(t):
        axes = tuple(1 + i for i, (ci, ti) in enumerate(zip(c, t)) if ti == 1 and ci != 1)
        return F.reduce_sum(g, axes, keepdims=True) if axes else g
    return _same(node, [g, _like(node, args, batched, k, 1)])


def _getitem(node, args, batched, k):
    return _same(node, args, key=(slice(None),) + tuple(node.attrs["key"]))


def _getitem_grad(node, args, batched, k):
    return _same(node, [args[0], _like(node, args, batched, k, 1)],
                 key=(slice(None),) + tuple(node.attrs["key"]))


def _to_front(x: Tensor, axis: int) -> Tensor:
    """``x`` with its axis ``axis`` moved to the front (the batch axis)."""
    if axis == 0:
        return x
    return F.transpose(x, (axis,) + tuple(a for a in range(x.ndim) if a != axis))


def _offset_indices(idx: Tensor, k: int, n: int, wrap: bool) -> Tensor:
    """Batched indices (k, ...) into an axis of length n, as indices into the k slices of
    length n laid end to end (batch b's index i: b n + i). An index out of range (after
    numpy's wrap if ``wrap``) becomes k n, out of range of the merged axis too, so the
    gather still raises instead of reading another batch's slice."""
    idx = F.cast(idx, np.int64) if idx.dtype != np.int64 else idx
    if wrap:
        idx = F.where(F.less(idx, constant(np.int64(0))), F.add(idx, constant(np.int64(n))), idx)
    offsets = constant((np.arange(k, dtype=np.int64) * n).reshape((k,) + (1,) * (idx.ndim - 1)))
    valid = F.logical_and(F.greater_equal(idx, constant(np.int64(0))),
                          F.less(idx, constant(np.int64(n))))
    return F.where(valid, F.add(idx, offsets), constant(np.int64(k * n)))


def _gather(node, args, batched, k):
    """gather(params, indices): a mapped index gathers from the unbatched params at once
    (the batch axis lands at ``axis``: moved to the front); batched params too are merged
    with their batch axis (k slices end to end along ``axis``) and the indices offset."""
    axis, wrap = node.attrs["axis"], node.attrs["wrap"]
    if not batched[1]:
        return _axis_rule(node, args, batched, k)
    params, idx = args
    if not batched[0]:
        return _to_front(_same(node, [params, idx]), axis)
    shape = tuple(params.shape[1:])
    if not is_fully_known(shape):
        return fallback_rule(node, args, batched, k)
    n = shape[axis]
    perm = tuple(range(1, axis + 1)) + (0,) + tuple(range(axis + 1, len(shape) + 1))
    merged = F.reshape(F.transpose(params, perm), shape[:axis] + (k * n,) + shape[axis + 1:])
    out = apply(I.gather, (merged, _offset_indices(idx, k, n, wrap)),
                {"axis": axis, "wrap": wrap})     # wrap: the error type of x[idx]
    return _to_front(out, axis)


def _gather_grad(node, args, batched, k):
    """gather's scatter-add with a mapped index: into the k slices laid end to end along
    ``axis`` (as ``_gather``), then split back into the batch axis."""
    axis, wrap = node.attrs["axis"], node.attrs["wrap"]
    if not batched[1]:
        return _same(node, [args[0], args[1], _like(node, args, batched, k, 2)],
                     axis=axis + 1)
    shape = tuple(node.shape)
    if not is_fully_known(shape):
        return fallback_rule(node, args, batched, k)
    g = _batched(args[0], batched[0], k)
    n = shape[axis]
    perm = tuple(range(1, axis + 1)) + (0,) + tuple(range(axis + 1, g.ndim))
    like = constant(np.zeros(shape[:axis] + (k * n,) + shape[axis + 1:], bool))
    out = apply(I.gather_grad, (F.transpose(g, perm), _offset_indices(args[1], k, n, wrap),
                                like), {"axis": axis, "wrap": wrap})
    return _to_front(F.reshape(out, shape[:axis] + (k, n) + shape[axis + 1:]), axis)


def _linrec(node, args, batched, k):
    a, b = args
    b = _batched(b, batched[1], k)
    if batched[0]:
        a = expand_to(a, node.ndim)
    return _same(node, [a, b], axis=node.attrs["axis"] + 1)


def _diag_fill(node, args, batched, k):
    g = expand_to(args[0], node.ndim - 1)
    return _same(node, [g, _like(node, args, batched, k, 1)])


def _concat_part(node, args, batched, k):
    values = [a if b else F.expand_dims(a, (0,)) for a, b in zip(args[1:], batched[1:])]
    return _same(node, [args[0]] + values, axis=node.attrs["axis"] + 1)


def _broadcast_to(node, args, batched, k):
    shape = tuple(node.attrs["shape"])
    return _same(node, [expand_to(args[0], len(shape))], shape=(k,) + shape)




def _tile_grad(node, args, batched, k):
    return _same(node, [args[0], _like(node, args, batched, k, 1)],
                 multiples=(1,) + tuple(node.attrs["multiples"]))


# Ops whose attribute ``attr`` names input axes, and what they do along them: ``kind`` is
# how a reduction combines (sum, mean, prod, max, min), None for a rank-keeping op along
# the axes (scans, reverse, roll, split). One table for both batch axes: vmap shifts the
# named axes by one; the Dask chunking analysis (``distributed/axes.py``) cuts the rows
# where a reduction's axes include them and refuses them along a rank-keeping op's axes.
AXIS_ATTR: dict = {
    R.reduce_sum: ("axes", "sum"), R.reduce_mean: ("axes", "mean"),
    R.reduce_prod: ("axes", "prod"), R.reduce_max: ("axes", "max"),
    R.reduce_min: ("axes", "min"), SC.cumsum: ("axis", None), SC.cumprod: ("axis", None),
    SC.shift: ("axis", None), L.split: ("axis", None), L.reverse: ("axes", None),
    L.roll: ("axes", None),
}


def _named_axes(node, args, batched, k):
    attr, _ = AXIS_ATTR[node.op]
    value = node.attrs[attr]
    return _same(node, args, **{attr: value + 1 if isinstance(value, int) else _shift(value)})


# Ops with one attribute entry per input axis, and the entry that leaves an axis alone.
# One table for both batch axes: vmap prepends the neutral entry for the new axis; the
# Dask chunking analysis (``distributed/axes.py``) lets the rows' axis pass where its
# entry is the neutral one.
PER_AXIS: dict = {L.pad: ("paddings", (0, 0)), L.tile: ("multiples", 1)}


def per_axis_entries(node: Tensor) -> tuple:
    """The node's per-axis entries (``PER_AXIS``), each normalised to a hashable value."""
    attr, _ = PER_AXIS[node.op]
    return tuple(tuple(e) if isinstance(e, (list, tuple)) else e for e in node.attrs[attr])


def _per_axis(node, args, batched, k):
    attr, neutral = PER_AXIS[node.op]
    return _same(node, args, **{attr: (neutral,) + per_axis_entries(node)})


def _matmul(node, args, batched, k):
    """np.matmul with the batch axis as a leading batch dim of both operands."""
    a_in, b_in = node.inputs
    a, b = args
    a_vec, b_vec = a_in.ndim == 1, b_in.ndim == 1
    if a_vec:  # a row matrix (1, m)
        a = F.expand_dims(a, (a.ndim - 1,))
    if b_vec:  # a column matrix (m, 1)
        b = F.expand_dims(b, (b.ndim,))
    dims_a = a.ndim - 2 - (1 if batched[0] else 0)
    dims_b = b.ndim - 2 - (1 if batched[1] else 0)
    lead = max(dims_a, dims_b)

    def align(t, was_batched, dims):
        if not was_batched:
            t = F.expand_dims(t, (0,))
        return F.expand_dims(t, tuple(range(1, 1 + lead - dims))) if lead > dims else t

    out = F.matmul(align(a, batched[0], dims_a), align(b, batched[1], dims_b))
    drop = ((out.ndim - 2,) if a_vec else ()) + ((out.ndim - 1,) if b_vec else ())
    return LA.squeeze(out, drop) if drop else out


def _batched_einsum(subscripts: str, args: list, batched: tuple) -> Tensor:
    inputs, out = C.parse_subscripts(subscripts, [a.ndim - b for a, b in zip(args, batched)])
    used = set("".join(inputs)) | set(out)
    letter = next(c for c in C.LETTERS if c not in used)
    subs = [letter + s if b else s for s, b in zip(inputs, batched)]
    return F.einsum(",".join(subs) + "->" + letter + out, *args)


def _einsum(node, args, batched, k):
    return _batched_einsum(node.attrs["subscripts"], args, batched)


def _tensordot(node, args, batched, k):
    a, b = node.inputs
    return _batched_einsum(C.tensordot_subscripts(a.ndim, b.ndim, node.attrs["axes"]),
                           args, batched)


class NoBatchingRule(Exception):
    """Raised by the fallback rule under ``strict_batching()``: ``op`` has no rule."""

    def __init__(self, op: OpDef):
        super().__init__(op.name)
        self.op = op


@contextmanager
def strict_batching():
    """Inside, an op without a batching rule raises ``NoBatchingRule`` instead of being
    unstacked along k (``sg.vectorized_map`` then falls back to a scan)."""
    previous = getattr(_LOCAL, "strict", False)
    _LOCAL.strict = True
    try:
        yield
    finally:
        _LOCAL.strict = previous


def fallback_rule(node: Tensor, args: list, batched: tuple, k: int) -> Tensor:
    """Any op: unstack the batched inputs along k, apply the op per slice, stack."""
    if getattr(_LOCAL, "strict", False):
        raise NoBatchingRule(node.op)
    pieces = [LA.unstack(a, 0) if b else None for a, b in zip(args, batched)]
    outs = [_same(node, [p[i] if b else a for a, b, p in zip(args, batched, pieces)])
            for i in range(k)]
    return LA.stack(outs, 0)


BATCH_RULES: dict = {
    R.prod_others: _axes_rule("axes"),
    C.matmul: _matmul, L.transpose: _transpose, L.reshape: _reshape,
    L.reshape_like: _reshape_like, L.expand_dims: _axes_rule("axes"),
    L.broadcast_like: _broadcast_like, R.unbroadcast: _unbroadcast,
    I.getitem: _getitem, I.getitem_grad: _getitem_grad,
    I.gather: _gather, I.gather_grad: _gather_grad,
    SC.linrec: _linrec,
    C.einsum: _einsum, C.tensordot: _tensordot,
    B.diag_fill: _diag_fill,
    L.concat: _all_batched_axis, L.concat_part: _concat_part, L.stack: _all_batched_axis,
    L.unstack: _axis_rule, L.squeeze: _axes_rule("axes"),
    L.broadcast_to: _broadcast_to, L.tile_grad: _tile_grad,
    # the families shared with the Dask chunking analysis (distributed/axes.py)
    **{op: _named_axes for op in AXIS_ATTR}, **{op: _attrs_same for op in TRAILING_CORE},
    **{op: _per_axis for op in PER_AXIS}, **LINALG_RULES,
}

# Inputs an op reads only for their shape: a batched one never makes the output batched.
SHAPE_ONLY: dict = {
    L.broadcast_like: (1,), L.reshape_like: (1,), R.unbroadcast: (1,),
    R.unbroadcast_any: (1, 2), I.getitem_grad: (1,), I.gather_grad: (2,),
    L.tile_grad: (1,), B.diag_fill: (1,), C.einsum_mask: (0,), R.axis_size: (0,),
    E.zeros_like: (0,), E.ones_like: (0,),
}


@contextmanager
def extra_rules(rules: dict):
    """Inside, ``rules`` (op record -> rule) are consulted before ``BATCH_RULES``
    (``sg.vectorized_map`` adds the loops' rules of ``batching_control.py``)."""
    previous = getattr(_LOCAL, "extra", {})
    _LOCAL.extra = {**previous, **rules}
    try:
        yield
    finally:
        _LOCAL.extra = previous


def rule_for(op: OpDef) -> Rule:
    """The batching rule of an op record (elementwise ops share one; others: fallback)."""
    rule = getattr(_LOCAL, "extra", {}).get(op) or BATCH_RULES.get(op)
    if rule is not None:
        return rule
    return elementwise_rule if op.kind == "elementwise" else fallback_rule


def _shape_only(op: OpDef, n_inputs: int) -> tuple:
    if op is L.concat_part:
        return tuple(range(1, n_inputs))
    return SHAPE_ONLY.get(op, ())


# --- the transform --------------------------------------------------------------------------
def batch_graph(outputs: list, replace: dict, k: int) -> list:
    """``outputs`` with each stand-in ``replace[id(t)] = (t, batched)`` swapped for its
    batched tensor (leading axis k). Returns ``(tensor, is_batched)`` per output (None
    stays None); unbatched results do not depend on any stand-in."""
    new: dict = {key: (value, True) for key, (_, value) in replace.items()}
    _broadcasts().clear()
    maps = _LOCAL.__dict__.setdefault("maps", [])
    maps.append(new)
    try:
        _walk(outputs, new, k)
    finally:
        maps.pop()
        _broadcasts().clear()
    return [None if o is None else new.get(id(o), (o, False)) for o in outputs]


def batched_so_far() -> dict:
    """The batched tensors of the ``batch_graph`` call in progress (a ``replace`` map for a
    nested call: a rule that traces a body, such as a loop's, batches it with the values
    the body reads from the outer graph already batched)."""
    maps = _LOCAL.__dict__.get("maps") or [{}]
    return {key: (None, t) for key, (t, was_batched) in maps[-1].items() if was_batched}


def _walk(outputs: list, new: dict, k: int) -> None:
    for node in topological_order([o for o in outputs if o is not None]):
        if id(node) in new or not node.inputs:
            continue
        mapped = [new.get(id(i), (i, False)) for i in node.inputs]
        if all(t is i and not b for (t, b), i in zip(mapped, node.inputs)):
            continue  # nothing upstream changed: keep the node itself
        args = [t for t, _ in mapped]
        flags = tuple(b for _, b in mapped)
        only = _shape_only(node.op, len(args))
        if not any(b for j, b in enumerate(flags) if j not in only):
            args = [F.getitem(a, (0,)) if b else a for a, b in zip(args, flags)]
            new[id(node)] = (_same(node, args), False)
        else:
            new[id(node)] = (rule_for(node.op)(node, args, flags, k), True)


def _batched_seed(y: Tensor, index: int, grad_y: Any) -> Tensor:
    if grad_y is None:
        raise ValueError(f"sg.gradients(batched=True): grad_ys[{index}] is None; every y "
                         "needs a batch of seeds of shape (k,) + y.shape")
    seed = grad_y if isinstance(grad_y, Tensor) else constant(np.asarray(grad_y, dtype=y.dtype))
    if seed.ndim < 1:
        raise ShapeError(f"sg.gradients(batched=True): grad_ys[{index}] must have a leading "
                         f"batch axis, got shape {format_shape(seed.shape)}")
    check_seed("sg.gradients(batched=True)", f"grad_ys[{index}][0]",
               f"ys[{index}] {describe(y)}", seed.dtype, seed.shape[1:], y.dtype, y.shape)
    return seed


def _batch_size(seeds: list) -> int:
    sizes = {s.shape[0] for s in seeds}
    if None in sizes or len(sizes) != 1:
        raise ShapeError("sg.gradients(batched=True): every grad_ys entry needs the same "
                         f"static batch length k (leading axis), got "
                         f"{', '.join(format_shape(s.shape) for s in seeds)}")
    return sizes.pop()


def batched_gradients(gradients: Callable, ys: list, xs: list, grad_ys: Any,
                      name: Optional[str] = "gradients", stop_gradients: Any = None,
                      unconnected_gradients: Any = UnconnectedGradients.NONE,
                      **kwargs: Any) -> list:
    """``sg.gradients(ys, xs, grad_ys, batched=True)``: one sweep for k seeds per y.

    Each grad_ys entry has shape ``(k,) + y.shape``; each result ``(k,) + x.shape``
    (None where unconnected, zeros for 'zero', as ``sg.gradients``). ``gradients`` is
    ``sg.gradients`` itself, passed in by it: this graph transform sits below differentiate.
    """
    policy = unconnected_policy(unconnected_gradients, "sg.gradients")
    if grad_ys is None:
        raise ValueError("sg.gradients(batched=True): grad_ys is required (one batch of "
                         "seeds of shape (k,) + y.shape per y)")
    grad_list = list(grad_ys) if isinstance(grad_ys, (list, tuple)) else [grad_ys]
    if len(grad_list) != len(ys):
        raise ValueError(f"sg.gradients: grad_ys has {len(grad_list)} entries but ys has "
                         f"{len(ys)}; pass one entry per y")
    seeds = [_batched_seed(y, j, g) for j, (y, g) in enumerate(zip(ys, grad_list))]
    k = _batch_size(seeds)
    stand_ins = [placeholder(f"batch_seed_{j}", y.shape, y.dtype) for j, y in enumerate(ys)]
    grads = gradients(ys, xs, grad_ys=stand_ins, name=name, stop_gradients=stop_gradients,
                      **kwargs)
    replace = {id(s): (s, F.cast(b, s.dtype) if b.dtype != s.dtype else b)
               for s, b in zip(stand_ins, seeds)}
    with name_scope(name):
        out = batch_graph(grads, replace, k)
        try:
            return [_finish(x, j, r, k, policy) for j, (x, r) in enumerate(zip(xs, out))]
        finally:
            _broadcasts().clear()


def _finish(x: Tensor, index: int, result: Optional[tuple], k: int, policy) -> Optional[Tensor]:
    if result is not None:
        tensor, was_batched = result
        return tensor if was_batched else broadcast_batch(tensor, k)
    if policy is UnconnectedGradients.ZERO:
        return broadcast_batch(F.zeros_like(x), k)
    if policy is UnconnectedGradients.RAISE:
        raise UnconnectedGradientError(
            f"sg.gradients: xs[{index}] {describe(x)} is not connected to any of ys; use "
            "unconnected_gradients='none' or 'zero' to allow this")
    return None
