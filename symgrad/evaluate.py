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


def output_list(outputs: Any, api: str) -> tuple:
    """(list of Tensors or None, whether a single Tensor was given) for ``api``'s outputs."""
    if isinstance(outputs, Tensor) or outputs is None:
        return [outputs], True
    outputs = list(outputs)
    for k, o in enumerate(outputs):
        if o is not None and not isinstance(o, Tensor):
            raise TypeError(f"{api}: outputs[{k}] must be a Tensor or None, got "
                            f"{type(o).__name__}")
    return outputs, False


def _feed_values(placeholders: list, feed_dict: Mapping) -> dict:
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
    outputs, single = output_list(outputs, "sg.evaluate")
    order = topological_order([o for o in outputs if o is not None])
    values = _feed_values(placeholders_of(order), feed_dict or {})
    for node in order:
        if node.op.name == "placeholder":
            continue
        if node.op.name == "constant":
            values[id(node)] = node.attrs["value"]
            continue
        values[id(node)] = run_node(node, [values[id(i)] for i in node.inputs])
    results = [None if o is None else np.array(values[id(o)], copy=True) for o in outputs]
    return results[0] if single else results
