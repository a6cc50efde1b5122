"""Several tensors as one flat vector and back: the augmented states of the ODE solves.

The adjoint integrates ``[y, a, a_p]`` and the sensitivities ``[y, S]`` as one state
vector; ``cat`` flattens and joins tensors, ``split`` cuts a flat vector into tensors
shaped like a list of others.

>>> import numpy as np, symgrad as sg
>>> y, p = sg.constant(np.ones((2, 2))), sg.constant(np.arange(3.0))
>>> z = cat([y, p])
>>> size(z), [tuple(part.shape) for part in split(z, [y, p])]
(7, [(2, 2), (3,)])
"""

from __future__ import annotations

import numpy as np

from ..graph.tensor import Tensor
from ..ops.functions import F

__all__ = ["size", "flat", "split", "cat", "dot"]


def size(x: Tensor) -> int:
    """The number of elements of ``x`` (a static shape)."""
    return int(np.prod(tuple(x.shape), dtype=int))


def flat(x: Tensor) -> Tensor:
    return F.reshape(x, (size(x),))


def split(z: Tensor, like: list) -> list:
    """Slices of the flat ``z`` shaped like the tensors of ``like``, in order."""
    parts, start = [], 0
    for x in like:
        n = size(x)
        parts.append(F.reshape(F.getitem(z, (slice(start, start + n),)), tuple(x.shape)))
        start += n
    return parts


def cat(parts: list) -> Tensor:
    """The tensors of ``parts`` flattened and joined (one part: its flat form)."""
    flats = [flat(p) for p in parts]
    return flats[0] if len(flats) == 1 else F.concat(flats, 0)


def dot(a: Tensor, b: Tensor) -> Tensor:
    """The sum of ``a * b``."""
    return F.reduce_sum(a * b)
