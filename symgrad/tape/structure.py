"""Nested structures of sources and targets (lists, tuples, dicts), TF's ``nest`` in small.

>>> flatten([1, (2, {"b": 3, "a": 4})])
[1, 2, 4, 3]
>>> unflatten([0, (0, {"b": 0, "a": 0})], [1, 2, 4, 3])
[1, (2, {'b': 3, 'a': 4})]
>>> flatten_like(["y1", "y2"], None)
[None, None]
"""

from __future__ import annotations

from typing import Any

_SEQUENCES = (list, tuple)


def flatten(structure: Any) -> list:
    """The leaves in order (dicts by sorted key); a leaf gives a one-element list."""
    if isinstance(structure, _SEQUENCES):
        return [leaf for item in structure for leaf in flatten(item)]
    if isinstance(structure, dict):
        return [leaf for key in sorted(structure) for leaf in flatten(structure[key])]
    return [structure]


def unflatten(structure: Any, leaves: list) -> Any:
    """``structure`` with its leaves replaced by ``leaves`` (in ``flatten`` order)."""
    return _build(structure, iter(leaves))


def _build(node: Any, iterator: Any) -> Any:
    """A module-level function, not a recursive closure: a closure that calls itself is a
    reference cycle, which would keep the leaves alive until the garbage collector runs."""
    if isinstance(node, _SEQUENCES):
        return type(node)(_build(item, iterator) for item in node)
    if isinstance(node, dict):
        built = {key: _build(node[key], iterator) for key in sorted(node)}
        return {key: built[key] for key in node}
    return next(iterator)


def flatten_like(structure: Any, values: Any) -> list:
    """``values`` split along ``structure``'s containers (a leaf's value is taken whole).

    So a Python list given for a single target is one array, as in ``sg.gradients``.
    """
    if values is None:
        return [None] * len(flatten(structure))
    if isinstance(structure, _SEQUENCES):
        if not isinstance(values, _SEQUENCES) or len(values) != len(structure):
            count = len(values) if isinstance(values, _SEQUENCES) else "a single value"
            raise ValueError(f"GradientTape.gradient: output_gradients has {count} entries "
                             f"but target has {len(structure)}; pass one entry (or None) "
                             "per target")
        return [leaf for s, v in zip(structure, values) for leaf in flatten_like(s, v)]
    if isinstance(structure, dict):
        if not isinstance(values, dict) or set(values) != set(structure):
            raise ValueError("GradientTape.gradient: output_gradients must be a dict with "
                             "the target's keys")
        return [leaf for key in sorted(structure)
                for leaf in flatten_like(structure[key], values[key])]
    if isinstance(values, _SEQUENCES) and len(values) == 1 and hasattr(values[0], "shape"):
        return [values[0]]  # [array] for a single target, as TF's nest would allow
    return [values]
