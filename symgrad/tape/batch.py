"""The tape's Jacobians as ONE batched backward pass: ``GradientTape.jacobian`` and
``GradientTape.batch_jacobian`` (TF's ``experimental_use_pfor=True``).

The records between the sources and the target are replayed as a graph (each source and
each other eager input a placeholder), ``sg.gradients(..., batched=True)`` builds the k
vector-Jacobian products as one batched sweep (``symgrad/batching.py``), and that graph
is run eagerly on the recorded values. While another tape records (a Jacobian to be
differentiated again), or with a custom gradient on the path, the tape goes back to one
backward pass per row (its vjps are tape ops; the sweep's fused ``expr`` nodes are not).

For ``batch_jacobian``, a target of shape ``(b,) + I`` and a source of shape ``(b,) + J``
give shape ``(b,) + I + J`` with entry ``[n, i, j] = d sum_m target[m, i] / d
source[n, j]`` (TF's definition: the per-example Jacobian when examples do not interact).

>>> import numpy as np
>>> import symgrad as sg
>>> x = sg.Variable(np.arange(6.0).reshape(2, 3))
>>> with sg.GradientTape() as tape:
...     y = x * x
>>> tape.batch_jacobian(y, x).numpy()[1]
array([[ 6.,  0.,  0.],
       [ 0.,  8.,  0.],
       [ 0.,  0., 10.]])
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..custom_op import group_of
from ..errors import ShapeError, TapeError, UnconnectedGradientError
from ..graph.traversal import topological_order
from ..ops.functions import F
from ..ops.layout.api import stack
from ..ops.registry import apply
from ..ops.sources import CONSTANT, PLACEHOLDER, constant, placeholder
from . import state
from .backward import backward, key_of
from .eager import EagerTensor, as_eager
from .seeds import check_eager, policy


# --- the batched backward pass ----------------------------------------------------------------
def _replay(records: list, target: EagerTensor, sources: list) -> Optional[tuple]:
    """The records between sources and target as a graph: ``(y, source placeholders,
    feed)`` where feed maps every placeholder to its eager value; None where a custom
    gradient is on the path (its grad_fn is the tape's business)."""
    keys = {key_of(s): k for k, s in enumerate(sources)}
    feed: dict = {}
    sym: dict = {}
    holders = []
    for k, s in enumerate(sources):
        ph = placeholder(f"source_{k}", tuple(s.shape), s.dtype)
        holders.append(ph)
        feed[ph] = s
        sym.setdefault(key_of(s), ph)
    reach = set(keys)
    for rec in records:
        if not any(key_of(i) in reach for i in rec.inputs):
            continue
        if group_of(rec) is not None:
            return None
        tensors = []
        for inp in rec.inputs:
            key = key_of(inp) if key_of(inp) in keys else inp._id
            if key not in sym:
                ph = placeholder(f"recorded_{len(feed)}", tuple(inp.shape), inp.dtype)
                feed[ph] = inp
                sym[key] = ph
            tensors.append(sym[key])
        sym[rec.out._id] = apply(rec.op, tuple(tensors), dict(rec.attrs))
        reach.add(rec.out._id)
    return sym.get(key_of(target)), holders, feed


def _run_eagerly(outputs: list, feed: dict) -> list:
    """Evaluate graph Tensors op by op with eager values (recorded by active tapes)."""
    values: dict = {id(ph): value for ph, value in feed.items()}
    for node in topological_order([o for o in outputs if o is not None]):
        if id(node) in values:
            continue
        if node.op is CONSTANT:
            values[id(node)] = EagerTensor(node.attrs["value"])
        elif node.op is PLACEHOLDER:
            raise RuntimeError(f"tape Jacobian: placeholder '{node.name}' was not fed")
        else:
            values[id(node)] = apply(node.op, tuple(values[id(i)] for i in node.inputs),
                                     dict(node.attrs))
    return [None if o is None else values[id(o)] for o in outputs]


def batched_vjps(tape: Any, target: EagerTensor, sources: list,
                 seeds: np.ndarray) -> Optional[list]:
    """``seeds`` (k,) + target.shape: the k vjps per source, each (k,) + source.shape
    (None: unconnected), in one batched pass; None when the tape must go row by row."""
    from ..differentiate.gradients import gradients

    if state.recording_tapes():  # the sweep's ``expr`` nodes have no tape vjp
        return None
    replayed = _replay(list(tape._records), target, sources)
    if replayed is None:
        return None
    y, holders, feed = replayed
    if y is None:
        return [None] * len(sources)
    grads = gradients([y], holders, grad_ys=[constant(seeds)], batched=True, name="tape")
    return _run_eagerly(grads, feed)


def identity_seeds(shape: tuple, dtype: Any) -> np.ndarray:
    k = int(np.prod(shape, dtype=np.int64))
    return np.eye(k, dtype=dtype).reshape((k,) + tuple(shape))


def reshaped(value: Any, shape: tuple) -> Any:
    """A result in its final shape: numpy when no tape records, else an eager op."""
    if not state.recording_tapes():
        return EagerTensor(np.reshape(value._value, shape))
    return F.reshape(value, shape)


def check_pfor(tape: Any, api: str, experimental_use_pfor: bool) -> None:
    """TF: without pfor the Jacobian is a loop of gradient calls, so eagerly it needs a
    persistent tape (RuntimeError otherwise; a used tape gets the usual error first)."""
    if not experimental_use_pfor and not tape.persistent and not tape._used:
        raise TapeError(f"GradientTape.{api}: GradientTape must be created with "
                        f"persistent=True to compute the {api} with eager execution enabled "
                        "and with experimental_use_pfor set to False")


# --- batch_jacobian ---------------------------------------------------------------------------
def _check_shapes(y: EagerTensor, source: Any) -> None:
    for what, shape in (("target", tuple(y.shape)), ("source", tuple(source.shape))):
        if len(shape) < 2:
            raise ShapeError(f"GradientTape.batch_jacobian: {what} shape {shape} must have "
                             "rank at least 2 (a leading batch axis and at least one more)")
    if y.shape[0] != source.shape[0]:
        raise ShapeError(f"GradientTape.batch_jacobian: Need first dimension of target shape "
                         f"{y.shape} and source shape {tuple(source.shape)} to match (both "
                         "must have a leading batch axis of the same length)")


def _batch_seeds(y: EagerTensor) -> np.ndarray:
    """(K, b) + I with seed[i, :, i] = 1: the inner index i of every example at once."""
    inner = tuple(y.shape[1:])
    k = int(np.prod(inner, dtype=np.int64))
    eye = np.eye(k, dtype=y.dtype).reshape((k, 1) + inner)
    return np.ascontiguousarray(np.broadcast_to(eye, (k,) + tuple(y.shape)))


def _rows(tape: Any, y: EagerTensor, source: Any) -> list:
    """One gradient per inner index i of y: d sum_b y[b, i] / d source."""
    rows = []
    for index in np.ndindex(*y.shape[1:]):
        seed = np.zeros(y.shape, y.dtype)
        seed[(slice(None),) + index] = 1
        final = backward(list(tape._records), [y], [EagerTensor(seed)], {key_of(source)})
        rows.append(final.get(key_of(source)))
    return rows


def _from_rows(rows: list, y: EagerTensor, source: Any, shape: tuple) -> Any:
    if not state.recording_tapes():
        flat = [np.zeros(source.shape, source.dtype) if r is None else r._value for r in rows]
        return EagerTensor(np.stack(flat, axis=1).reshape(shape))
    full = [F.zeros_like(as_eager(source)) if r is None else r for r in rows]
    return F.reshape(stack(full, axis=1), shape)


def batch_jacobian(tape: Any, target: Any, source: Any, unconnected_gradients: Any,
                   experimental_use_pfor: bool = True) -> Any:
    """The body of ``GradientTape.batch_jacobian`` (see the module docstring)."""

    rule = policy(unconnected_gradients)
    check_eager(target, "GradientTape.batch_jacobian: target")
    check_eager(source, "GradientTape.batch_jacobian: source")
    y = as_eager(target)
    _check_shapes(y, source)
    check_pfor(tape, "batch_jacobian", experimental_use_pfor)
    tape._start_call("batch_jacobian")
    shape = tuple(y.shape) + tuple(source.shape[1:])
    try:
        batched = batched_vjps(tape, y, [source], _batch_seeds(y))
        rows = _rows(tape, y, source) if batched is None else None
    finally:
        tape._finish_call()
    if batched is not None and batched[0] is not None:
        value = batched[0]  # (K, b) + J -> (b, K) + J -> (b,) + I + J
        if not state.recording_tapes():
            return EagerTensor(np.moveaxis(value._value, 0, 1).reshape(shape))
        perm = (1, 0) + tuple(range(2, value.ndim))
        return F.reshape(F.transpose(value, perm), shape)
    if rows is not None and not all(r is None for r in rows):
        return _from_rows(rows, y, source, shape)
    if rule == "zero":
        return EagerTensor(np.zeros(shape, source.dtype))
    if rule == "raise":
        raise UnconnectedGradientError(
            f"GradientTape.batch_jacobian: source '{source.name}' is not connected to "
            "the target; use unconnected_gradients='none' or 'zero'")
    return None
