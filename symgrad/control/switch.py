"""``sg.switch_case``: TF's ``tf.switch_case`` as a chain of ``sg.cond`` ops, so only the
taken branch runs and only it carries gradient (each cond's own reverse mode).

An index that names no branch runs ``default`` (TF; without a default, the last branch).

>>> import symgrad as sg
>>> i, x = sg.placeholder("i", dtype="int32"), sg.placeholder("x")
>>> y = sg.switch_case(i, [lambda: x * 2.0, lambda: x * x], default=lambda: -x)
>>> (g,) = sg.gradients(y, [x])
>>> [sg.evaluate([y, g], {i: k, x: 3.0}) for k in (1, 7)]
[[array(9.), array(6.)], [array(-3.), array(-1.)]]
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from ..errors import DTypeError, ShapeError
from ..graph.tensor import Tensor
from ..ops.functions import F
from .api import cond

__all__ = ["switch_case"]


def _branches(branch_fns: Any) -> list:
    """``[(key, fn)]`` from a list of callables, a dict ``{int: fn}`` or ``(int, fn)`` pairs."""
    if isinstance(branch_fns, dict):
        pairs = list(branch_fns.items())
    elif isinstance(branch_fns, (list, tuple)) and branch_fns and all(
            isinstance(p, tuple) and len(p) == 2 for p in branch_fns):
        pairs = list(branch_fns)
    elif isinstance(branch_fns, (list, tuple)):
        pairs = list(enumerate(branch_fns))
    else:
        raise TypeError(f"sg.switch_case: branch_fns must be a list of callables, a dict "
                        f"{{int: callable}} or (int, callable) pairs, got "
                        f"{type(branch_fns).__name__}")
    if not pairs:
        raise ValueError("sg.switch_case: branch_fns is empty; give at least one branch")
    for key, fn in pairs:
        if not isinstance(key, (int, np.integer)) or isinstance(key, bool):
            raise TypeError(f"sg.switch_case: branch keys must be ints, got {key!r}")
        if not callable(fn):
            raise TypeError(f"sg.switch_case: branch {key} is {type(fn).__name__}, not a "
                            "callable")
    keys = [int(k) for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError(f"sg.switch_case: branch keys must be unique, got {keys}")
    return sorted(((int(k), fn) for k, fn in pairs), key=lambda p: p[0])


def _check_index(index: Tensor) -> None:
    if tuple(index.shape) != ():
        raise ShapeError(f"sg.switch_case: branch_index '{index.name}' has shape "
                         f"{tuple(index.shape)}; it must be a scalar int32 or int64")
    if np.dtype(index.dtype).kind not in "iu":
        raise DTypeError(f"sg.switch_case: branch_index '{index.name}' has dtype "
                         f"{np.dtype(index.dtype).name}; it must be an integer (cast it with "
                         "sg.cast(index, 'int32'))")


def switch_case(branch_index: Any, branch_fns: Any, default: Optional[Callable] = None,
                name: Optional[str] = None):
    """TF's ``tf.switch_case``: ``branch_fns[branch_index]()``; an index with no branch runs
    ``default()`` (None: the last branch, TF). The branches return the same structure."""
    pairs = _branches(branch_fns)
    if default is not None and not callable(default):
        raise TypeError(f"sg.switch_case: default is {type(default).__name__}, not a callable")
    if default is None:
        pairs, default = pairs[:-1], pairs[-1][1]
    if not isinstance(branch_index, Tensor):
        value = np.asarray(branch_index.numpy() if hasattr(branch_index, "numpy")
                           else branch_index)
        if value.shape != () or value.dtype.kind not in "iu":
            raise TypeError(f"sg.switch_case: branch_index must be a scalar integer, got "
                            f"{value!r}")
        return dict(pairs).get(int(value), default)()
    _check_index(branch_index)

    def chain(k: int):
        if k == len(pairs):
            return default()
        key, fn = pairs[k]
        return cond(F.equal(branch_index, key), fn, lambda: chain(k + 1),
                    name=name if k == 0 else None)

    try:
        return chain(0)
    except (ShapeError, DTypeError) as exc:      # name switch_case, not its conds
        keys = [k for k, _ in pairs] + ["default"]
        raise type(exc)(f"sg.switch_case (branches {keys}): the branches must return the "
                        f"same structure, shapes and dtypes: {exc}") from None
