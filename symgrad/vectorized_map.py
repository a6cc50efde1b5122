"""``sg.vectorized_map`` and ``sg.map_fn`` (TF): one function over the leading axis.

``fn`` is traced ONCE on stand-ins shaped like one element (``elems[0]``), then the traced
graph is rebuilt with a leading batch axis by the batching rules of ``batching.py`` (the
machinery of ``sg.jacobian``'s batched sweeps): every node downstream of a stand-in
gets the batch axis, the real ``elems`` replace the stand-ins, and tensors ``fn`` closed
over stay unbatched (their gradients sum over the batch). Before batching, small vectors
that ``fn`` stacks and indexes are split into their scalar components
(``components.py``): batched, they are columns that fuse, as if written with arrays. The result is ordinary graph
nodes (no loop), compiled as one kernel where the ops allow, and differentiated by the
ordinary reverse sweep.

An op without a batching rule (``argmax``, a nested loop, a ``sg.define_op`` op) makes the
whole map a ``sg.scan`` over the leading axis on the same traced body (TF's
``fallback_to_while_loop``); ``vectorized_map`` says so in a warning naming the op, and
raises instead with ``fallback_to_while_loop=False``. A leading length unknown until
the call (``None``) also takes the scan.

``elems`` is a Tensor (or array) or a nested tuple/list/dict of them sharing the leading
axis; ``fn`` receives one element of the same structure (TF: the tuple is one argument).

>>> import numpy as np
>>> import symgrad as sg
>>> x = sg.placeholder("x", shape=(4, 3))
>>> w = sg.placeholder("w", shape=(3,))
>>> y = sg.vectorized_map(lambda row: sg.reduce_sum(row * w), x)
>>> y.shape
(4,)
>>> xv = np.arange(12.0).reshape(4, 3)
>>> sg.evaluate(y, {x: xv, w: [1.0, 0.0, -1.0]})
array([-2., -2., -2., -2.])
>>> (gw,) = sg.gradients(sg.reduce_sum(y), [w])         # sums over the batch
>>> sg.evaluate(gw, {x: xv, w: [1.0, 0.0, -1.0]})
array([18., 22., 26.])
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, Optional

import numpy as np

from .control.api import _is_eager, _scan_nodes, scan
from .control.body import Body, marker, stand_in
from .errors import ShapeError
from .graph.naming import name_scope
from .graph.tensor import Tensor
from .ops.functions import F
from .ops.sources import constant

__all__ = ["vectorized_map", "map_fn"]


# --- nested structures: tuples, lists, dicts of leaves ---------------------------------------
def flatten(value: Any) -> tuple:
    """(leaves, pack): ``pack(leaves)`` rebuilds the nested structure of ``value``.

    >>> leaves, pack = flatten((1, [2, 3], {"b": 5, "a": 4}))
    >>> leaves
    [1, 2, 3, 4, 5]
    >>> pack([x * 10 for x in leaves])
    (10, [20, 30], {'a': 40, 'b': 50})

    A namedtuple (``sg.math.top_k``'s ``TopK``) is rebuilt as itself, field by field.
    """
    if isinstance(value, (tuple, list)):
        parts = [flatten(v) for v in value]
        kind = type(value)
    elif isinstance(value, dict):
        keys = sorted(value)
        parts = [flatten(value[key]) for key in keys]
    else:
        return [value], (lambda items: items[0])
    sizes = [len(leaves) for leaves, _ in parts]
    leaves = [leaf for part, _ in parts for leaf in part]

    def pack(items: list) -> Any:
        out, start = [], 0
        for (_, sub), size in zip(parts, sizes):
            out.append(sub(items[start:start + size]))
            start += size
        if isinstance(value, dict):
            return dict(zip(keys, out))
        return kind(*out) if hasattr(value, "_fields") else kind(out)
    return leaves, pack


def _tensor(value: Any, api: str, what: str) -> Tensor:
    if isinstance(value, Tensor):
        return value
    if value is None:
        raise TypeError(f"{api}: {what} is None; expected a Tensor or an array")
    return constant(np.asarray(value))


def _length(leaves: list, api: str) -> Optional[int]:
    """The shared leading length of the elems (None when unknown until the call)."""
    for j, t in enumerate(leaves):
        if t.ndim == 0:
            raise ShapeError(f"{api}: elems[{j}] '{t.name}' is a scalar; elems are mapped "
                             "over their leading axis (give each a leading axis)")
    known = {t.shape[0] for t in leaves if t.shape[0] is not None}
    if len(known) > 1:
        described = ", ".join(f"elems[{j}] '{t.name}' has {t.shape[0]}"
                              for j, t in enumerate(leaves))
        raise ShapeError(f"{api}: the elems must share their leading length, got {described}")
    if not leaves:
        raise ValueError(f"{api}: elems is empty; pass at least one Tensor")
    return known.pop() if len(known) == 1 and None not in {t.shape[0] for t in leaves} else None


# --- the map ---------------------------------------------------------------------------------
def _trace(fn: Callable, leaves: list, pack: Callable, api: str) -> tuple:
    """fn traced once on one element: (stand-ins, output leaves, pack of the output, since)."""
    ins = [stand_in(t, f"elem{j}", tuple(t.shape[1:])) for j, t in enumerate(leaves)]
    since = marker()
    result = fn(pack(ins))
    out_leaves, pack_out = flatten(result)
    outs = [_tensor(v, api, f"fn's output[{j}]") for j, v in enumerate(out_leaves)]
    return ins, outs, pack_out, since


def _batched(ins: list, outs: list, leaves: list, k: int) -> list:
    """The traced outputs rebuilt with the leading batch axis (NoBatchingRule when an op
    on the path has no rule)."""
    from .batching import (batch_graph, broadcast_batch, clear_memo, extra_rules,
                           strict_batching)
    from .batching_control import CONTROL_RULES, clear_loops
    from .components import split_components
    replace = {id(s): (s, e) for s, e in zip(ins, leaves)}
    outs = split_components(outs, ins)      # x = stack([a, b]); x[0] is a: fuses when batched
    try:
        with strict_batching(), extra_rules(CONTROL_RULES):
            mapped = batch_graph(outs, replace, k)
        return [t if was_batched else broadcast_batch(t, k) for t, was_batched in mapped]
    finally:
        clear_memo()
        clear_loops()


def _map(fn: Callable, elems: Any, api: str, warn: bool, strict: bool,
         name: Optional[str]) -> tuple:
    """(output leaves, pack) of fn mapped over elems' leading axis."""
    from .batching import NoBatchingRule     # loaded when first used (import stays light)
    leaves_in, pack = flatten(elems)
    if _is_eager(leaves_in):
        return _eager(fn, leaves_in, pack)
    leaves = [_tensor(v, api, f"elems[{j}]") for j, v in enumerate(leaves_in)]
    k = _length(leaves, api)
    with name_scope(name or api.split(".")[-1]):
        ins, outs, pack_out, since = _trace(fn, leaves, pack, api)
        if k is not None:
            try:
                return _batched(ins, outs, leaves, k), pack_out
            except NoBatchingRule as missing:
                if strict:
                    raise ValueError(
                        f"{api}: op '{missing.op.name}' has no batching rule; pass "
                        "fallback_to_while_loop=True to map it with a scan") from None
                if warn:
                    warnings.warn(f"{api}: op '{missing.op.name}' has no batching rule; "
                                  "falling back to a scan over the leading axis (a loop)",
                                  stacklevel=3)
        body = Body(ins, outs, since)
        return _scan_nodes(body, [], leaves, None, False, None, None), pack_out


def _eager(fn: Callable, leaves: list, pack: Callable) -> tuple:
    """Eager values (inside a GradientTape): the tape records the steps of a scan."""
    holder: list = []

    def step(carry, xs):
        out_leaves, pack_out = flatten(fn(pack(list(xs))))
        holder[:] = [pack_out]
        return carry, list(out_leaves)
    _, ys = scan(step, (), list(leaves))
    return list(ys), holder[0]


def vectorized_map(fn: Callable, elems: Any, fallback_to_while_loop: bool = True,
                   name: Optional[str] = None) -> Any:
    """TF's ``tf.vectorized_map``: ``fn`` on every element of ``elems`` along axis 0, as
    one batched graph (fn traced once). Returns fn's output structure, each leaf with the
    leading axis. An op without a batching rule: a ``sg.scan`` with a warning naming it
    (``fallback_to_while_loop=False``: ValueError).

    >>> import symgrad as sg
    >>> a, b = sg.constant([1.0, 2.0]), sg.constant([[1.0, 1.0], [2.0, 2.0]])
    >>> s, p = sg.vectorized_map(lambda e: (e[0] + sg.reduce_sum(e[1]), e[0] * e[1]), (a, b))
    >>> sg.evaluate([s, p], {})
    [array([3., 6.]), array([[1., 1.],
           [4., 4.]])]
    """
    leaves, pack = _map(fn, elems, "sg.vectorized_map", warn=True,
                        strict=not fallback_to_while_loop, name=name)
    return pack(leaves)


def map_fn(fn: Callable, elems: Any, dtype: Any = None, fn_output_signature: Any = None,
           name: Optional[str] = None) -> Any:
    """TF's ``tf.map_fn``: fn on every element of ``elems`` along axis 0. Built like
    ``vectorized_map`` (one batched graph), with a silent scan where an op has no rule.
    ``fn_output_signature`` (or the older ``dtype``): a dtype or a structure of dtypes
    like fn's output; the results are cast to it.

    >>> import symgrad as sg
    >>> doubled = sg.map_fn(lambda v: v * 2, sg.constant([1, 2]), fn_output_signature="float32")
    >>> sg.evaluate(doubled, {})
    array([2., 4.], dtype=float32)
    """
    if dtype is not None and fn_output_signature is not None:
        raise ValueError("sg.map_fn: pass fn_output_signature or dtype, not both")
    signature = fn_output_signature if fn_output_signature is not None else dtype
    leaves, pack = _map(fn, elems, "sg.map_fn", warn=False, strict=False, name=name)
    if isinstance(signature, (tuple, list, dict)):
        want, got = _structure(signature), _structure(pack(leaves))
        if want != got:
            raise TypeError(f"sg.map_fn: fn_output_signature has the structure {want} but fn "
                            f"returns {got}; give the dtypes in fn's nesting (tuple vs list "
                            "matters, as in TF)")
    if signature is not None:
        leaves = [F.cast(t, d) if t.dtype != d else t
                  for t, d in zip(leaves, _dtypes(signature, len(leaves)))]
    return pack(leaves)


def _structure(value: Any) -> str:
    """The nesting of ``value`` with its leaves as ``*``: ``(*, [*, *])``.

    >>> _structure((1, [2, 3], {"b": 5}))
    "(*, [*, *], {'b': *})"
    """
    if isinstance(value, tuple):
        inner = ", ".join(_structure(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(_structure(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_structure(value[k])}" for k in sorted(value)) + "}"
    return "*"


def _dtypes(signature: Any, n: int) -> list:
    found, _ = flatten(signature)
    if len(found) == 1:
        found = found * n
    if len(found) != n:
        raise ValueError(f"sg.map_fn: fn_output_signature has {len(found)} dtypes but fn "
                         f"returns {n} tensors; give one dtype per output")
    return [np.dtype(d) for d in found]
