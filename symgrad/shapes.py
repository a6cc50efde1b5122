"""Static shapes with unknown (None) dimensions: broadcasting, axes and reshapes.

>>> broadcast_shapes([(None, 1), (3,)])
(None, 3)
>>> normalize_axes(-1, 3)
(2,)
"""

from __future__ import annotations

from typing import Iterable, Optional, Sequence

from .errors import ShapeError

Shape = tuple  # tuple[Optional[int], ...]


def as_shape(shape: Iterable[Optional[int]] | int | None, context: str = "shape") -> Shape:
    """Normalise a shape spec to a tuple of non-negative ints and None."""
    if shape is None:
        return ()
    if isinstance(shape, int):
        shape = (shape,)
    out = []
    for d in shape:
        if d is None:
            out.append(None)
        elif isinstance(d, (int,)) or hasattr(d, "__index__"):
            d = int(d)
            if d < 0:
                raise ShapeError(f"{context}: dimension {d} in {tuple(shape)} is negative")
            out.append(d)
        else:
            raise ShapeError(f"{context}: dimension {d!r} in {shape!r} is not an int or None")
    return tuple(out)


def format_shape(shape: Shape) -> str:
    return "(" + ", ".join("None" if d is None else str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def broadcast_shapes(shapes: Sequence[Shape], op: str = "op", names: Sequence[str] = ()) -> Shape:
    """numpy broadcasting of static shapes; None matches anything."""
    if len(shapes) == 2 and shapes[0] == shapes[1] and type(shapes[0]) is tuple:
        return shapes[0]          # what the columns below make of two equal shapes
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for k in range(rank):
        dims = [s[len(s) - rank + k] for s in shapes if len(s) - rank + k >= 0]
        known = {d for d in dims if d is not None and d != 1}
        if len(known) > 1:
            described = ", ".join(
                f"{names[i] if i < len(names) else 'input ' + str(i)} {format_shape(s)}"
                for i, s in enumerate(shapes))
            raise ShapeError(f"{op}: shapes cannot be broadcast together: {described}")
        if known:
            out.append(known.pop())
        elif None in dims:
            out.append(None)
        else:
            out.append(1)
    return tuple(out)


def shapes_compatible(a: Shape, b: Shape) -> bool:
    """Same rank and every pair of dims equal or unknown."""
    return len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b))


def is_fully_known(shape: Shape) -> bool:
    return None not in shape


def normalize_axes(axis: int | Sequence[int] | None, rank: int, op: str = "op") -> tuple:
    """Sorted tuple of non-negative axes; None means every axis."""
    if axis is None:
        return tuple(range(rank))
    axes = (axis,) if isinstance(axis, int) or hasattr(axis, "__index__") and not isinstance(axis, (list, tuple)) else tuple(axis)
    out = []
    for a in axes:
        a = int(a)
        if not -rank <= a < max(rank, 1) or (rank == 0 and a not in (0, -1)):
            raise ShapeError(f"{op}: axis {a} is out of range for a tensor of rank {rank}")
        out.append(a % rank if rank else 0)
    if len(set(out)) != len(out):
        raise ShapeError(f"{op}: axis {axis} repeats an axis")
    return tuple(sorted(out)) if rank else ()


def reduced_shape(shape: Shape, axes: tuple, keepdims: bool) -> Shape:
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def size_of(shape: Shape) -> Optional[int]:
    n = 1
    for d in shape:
        if d is None:
            return None
        n *= d
    return n


def reshape_shape(in_shape: Shape, new_shape: Sequence[int], op: str = "reshape") -> Shape:
    """Static result of a reshape; a -1 is inferred when the input size is known."""
    new = [int(d) for d in new_shape]
    if sum(d == -1 for d in new) > 1:
        raise ShapeError(f"{op}: shape {tuple(new)} has more than one -1")
    if any(d < -1 for d in new):
        raise ShapeError(f"{op}: shape {tuple(new)} has a negative dimension")
    total = size_of(in_shape)
    known = 1
    for d in new:
        if d != -1:
            known *= d
    if -1 in new:
        if total is None:
            return tuple(None if d == -1 else d for d in new)
        if known == 0 or total % known:
            raise ShapeError(f"{op}: cannot reshape {format_shape(in_shape)} into {tuple(new)}")
        return tuple(total // known if d == -1 else d for d in new)
    if total is not None and total != known:
        raise ShapeError(f"{op}: cannot reshape {format_shape(in_shape)} (size {total}) into "
                         f"{tuple(new)} (size {known})")
    return tuple(new)
