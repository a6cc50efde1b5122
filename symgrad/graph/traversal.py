"""Graph traversal without recursion (graphs can be 10,000 levels deep)."""

from __future__ import annotations

from typing import Iterable

from ..errors import GraphError
from .tensor import Tensor


def topological_order(outputs: Iterable[Tensor], stop: Iterable[Tensor] = ()) -> list:
    """Every ancestor of ``outputs`` (themselves included), inputs before consumers; the
    walk does not enter the nodes of ``stop`` (nor lists them)."""
    order: list = []
    seen: set = {id(t) for t in stop}
    for root in outputs:
        if root is None or id(root) in seen:
            continue
        stack = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                order.append(node)
                continue
            if id(node) in seen:
                continue
            seen.add(id(node))
            stack.append((node, True))
            for inp in reversed(node.inputs):
                if id(inp) not in seen:
                    stack.append((inp, False))
    return order


def placeholders_of(order: Iterable[Tensor]) -> list:
    """The placeholders among ``order``; two different placeholders with one name is an error."""
    found: dict = {}
    result = []
    for node in order:
        if node.op.name != "placeholder":
            continue
        other = found.get(node.name)
        if other is not None and other is not node:
            raise GraphError(
                f"two different placeholders are named '{node.name}' in one graph; placeholder "
                "names must be unique within a graph you differentiate, evaluate or compile")
        if other is None:
            found[node.name] = node
            result.append(node)
    return result
