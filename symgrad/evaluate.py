"""``sg.evaluate``: the numpy reference interpreter for any graph (gradients included).

>>> import symgrad as sg
>>> x = sg.placeholder("x", shape=(2,))
>>> sg.evaluate(x * x, {x: [1.0, 3.0]})
array([1., 9.])
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from .errors import FeedError, ShapeError, SymgradError
from .feeds import check_feed
from .graph.tensor import Tensor
from .graph.traversal import placeholders_of, topological_order
from .outputs import output_list  # noqa: F401  (sg.evaluate's outputs; was defined here)


def _feed_values(placeholders: list, feed_dict: Any) -> dict:
    if not isinstance(feed_dict, Mapping):
        raise TypeError(f"sg.evaluate: feed_dict must be a dict mapping placeholders (or "
                        f"their names) to arrays, got {type(feed_dict).__name__}; pass "
                        "{placeholder: array, ...}")
    by_name = {k: v for k, v in feed_dict.items() if isinstance(k, str)}
    values = {}
    for p in placeholders:
        if p in feed_dict:
            value = feed_dict[p]
        elif p.name in by_name:
            value = by_name[p.name]
        else:
            raise FeedError(f"sg.evaluate: placeholder '{p.name}' (shape {p.shape}, "
                            f"{p.dtype.name}) is needed but missing from feed_dict")
        values[id(p)] = check_feed(p, value, "sg.evaluate")
    return values


def run_node(node: Tensor, args: list) -> np.ndarray:
    """Compute one node with its op's numpy forward, naming the node on failure."""
    try:
        with np.errstate(all="ignore"):
            value = node.op.numpy(*args, **node.attrs)
    except SymgradError as exc:  # an op's own typed error (gather's index check): keep
        raise type(exc)(f"{exc} (op '{node.op.name}' at tensor '{node.name}')") from None
    except (ValueError, IndexError) as exc:
        shapes = ", ".join(f"'{i.name}' {np.shape(a)}" for i, a in zip(node.inputs, args))
        raise ShapeError(f"sg.evaluate: op '{node.op.name}' at tensor '{node.name}' failed "
                         f"on inputs {shapes}: {exc}") from exc
    return np.asarray(value, dtype=node.dtype)


def evaluate(outputs: Any, feed_dict: Mapping | None = None) -> Any:
    """Evaluate tensors with numpy; None entries pass through as None.

    ``feed_dict`` maps placeholder Tensors (or their names) to values. Returns a list,
    or a single array when ``outputs`` is a single Tensor.
    """
    from .sparse.tensor import split_sparse   # sg.SparseTensor outputs: csr_array results
    outputs, wrap_sparse = split_sparse(outputs)
    if wrap_sparse is not None:
        return wrap_sparse(evaluate(outputs, feed_dict))
    outputs, mode = output_list(outputs, "sg.evaluate")
    order = topological_order([o for o in outputs if o is not None])
    values = _feed_values(placeholders_of(order), {} if feed_dict is None else feed_dict)
    last_use = _last_uses(order, outputs)
    results = {}
    for step, node in enumerate(order):
        if node.op.name == "constant":
            values[id(node)] = node.attrs["value"]
        elif node.op.name != "placeholder":
            values[id(node)] = run_node(node, [values[id(i)] for i in node.inputs])
        if any(o is node for o in outputs):
            results[id(node)] = np.array(values[id(node)], copy=True)
        for dead in last_use.get(step, ()):        # free what no later node reads
            values.pop(dead, None)
    out = [None if o is None else results[id(o)] for o in outputs]
    return mode.pack(out)


def _last_uses(order: list, outputs: list) -> dict:
    """{step: ids of the values last read at that step}: a value dies after its last
    reader, or right after it is computed when nothing reads it (outputs are copied)."""
    last = {id(node): k for k, node in enumerate(order)}
    for k, node in enumerate(order):
        for i in node.inputs:
            last[id(i)] = k
    by_step: dict = {}
    for ident, k in last.items():
        by_step.setdefault(k, []).append(ident)
    return by_step
