"""The public contraction functions: ``sg.matmul``, ``sg.einsum``, ``sg.tensordot``
(records in ``records.py``)."""

from __future__ import annotations

from typing import Optional

import numpy as np

from ...shapes import normalize_axes
from ..checks import rank_of
from ..functions import export
from ..registry import apply
from . import records as C

__all__ = [
    "matmul", "einsum", "tensordot",
]


def matmul(a, b, name: Optional[str] = None):
    """Matrix product with ``np.matmul`` semantics (1-D operands, broadcast batch dims)."""
    return apply(C.matmul, (a, b), None, name)


def einsum(subscripts: str, *operands, name: Optional[str] = None):
    """Einstein summation over explicit subscripts (no ellipsis), numpy's rules.

    >>> import symgrad as sg
    >>> sg.einsum("ij,j->i", np.eye(2), np.array([3.0, 4.0])).numpy()
    array([3., 4.])
    """
    if not operands:
        raise ValueError("einsum: at least one operand is required")
    C.parse_subscripts(subscripts, [rank_of(o) for o in operands])
    return apply(C.einsum, operands, {"subscripts": subscripts.replace(" ", "")}, name)


def einsum_mask(like, subscripts: str, name: Optional[str] = None):
    return apply(C.einsum_mask, (like,), {"subscripts": subscripts}, name)


def _tensordot_axes(axes, rank_a: int, rank_b: int) -> tuple:
    if isinstance(axes, (int, np.integer)) and not isinstance(axes, bool):
        n = int(axes)
        if not 0 <= n <= min(rank_a, rank_b):
            raise ValueError(f"tensordot: axes={n} must be in [0, {min(rank_a, rank_b)}] for "
                             f"operands of ranks {rank_a} and {rank_b}")
        return tuple(range(rank_a - n, rank_a)), tuple(range(n))
    try:
        a_axes, b_axes = axes
    except (TypeError, ValueError):
        raise ValueError(f"tensordot: axes must be an int or a pair of axis lists, "
                         f"got {axes!r}") from None
    a_axes = (a_axes,) if isinstance(a_axes, (int, np.integer)) else tuple(a_axes)
    b_axes = (b_axes,) if isinstance(b_axes, (int, np.integer)) else tuple(b_axes)
    if len(a_axes) != len(b_axes):
        raise ValueError(f"tensordot: axes {axes!r} name {len(a_axes)} axes of a but "
                         f"{len(b_axes)} of b")
    norm_a = [normalize_axes(int(a), rank_a, "tensordot")[0] for a in a_axes]
    norm_b = [normalize_axes(int(b), rank_b, "tensordot")[0] for b in b_axes]
    if len(set(norm_a)) != len(norm_a) or len(set(norm_b)) != len(norm_b):
        raise ValueError(f"tensordot: axes {axes!r} repeat an axis")
    return tuple(norm_a), tuple(norm_b)


def tensordot(a, b, axes, name: Optional[str] = None):
    """Sum of products over ``axes`` (an int n: the last n of a with the first n of b; or
    a pair of axis lists), ``np.tensordot``'s result layout.

    >>> import symgrad as sg
    >>> sg.tensordot(np.ones((2, 3)), np.ones((3, 4)), 1).shape
    (2, 4)
    """
    axes = _tensordot_axes(axes, rank_of(a), rank_of(b))
    return apply(C.tensordot, (a, b), {"axes": axes}, name)


export(globals())
