"""Derivatives beyond one gradient: ``sg.jacobian`` and ``sg.hessians`` (``tf.hessians``).

Both are built from ordinary ``sg.gradients`` calls, one per component of the output,
each seeded with a one-hot ``grad_ys``; the rows are joined with ``sg.stack`` and
``sg.reshape``. Shapes must be static. The result is an ordinary graph Tensor: it can be
evaluated, compiled by ``sg.function`` and differentiated again.

>>> import symgrad as sg
>>> x = sg.placeholder("x", shape=(2,))
>>> y = x * x * x
>>> sg.evaluate(sg.jacobian(y, x), {x: [1.0, 2.0]})
array([[ 3.,  0.],
       [ 0., 12.]])
>>> (h,) = sg.hessians(sg.reduce_sum(y), x)
>>> sg.evaluate(h, {x: [1.0, 2.0]})
array([[ 6.,  0.],
       [ 0., 12.]])
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .arguments import UnconnectedGradients, unconnected_policy
from .differentiate import gradients
from .errors import ShapeError, UnconnectedGradientError
from .graph.naming import name_scope
from .graph.tensor import Tensor, describe
from .ops import api as F
from .ops.layout_api import stack
from .ops.sources import constant
from .shapes import format_shape, is_fully_known


def _static_shape(t: Tensor, api: str, what: str) -> tuple:
    if not isinstance(t, Tensor):
        raise TypeError(f"{api}: {what} must be a symgrad Tensor, got {type(t).__name__} {t!r}")
    if not is_fully_known(t.shape):
        raise ShapeError(f"{api}: {what} {describe(t)} has shape {format_shape(t.shape)}; "
                         "the Jacobian needs a static shape (give the placeholder a full "
                         "shape)")
    return tuple(t.shape)


def _one_hot_seeds(y: Tensor) -> list:
    """One constant per entry of ``y``: 1 at that entry, 0 elsewhere (y's dtype)."""
    n = int(np.prod(y.shape, dtype=np.int64))
    seeds = []
    for k in range(n):
        seed = np.zeros(n, dtype=y.dtype)
        seed[k] = 1
        seeds.append(constant(seed.reshape(y.shape)))
    return seeds


def _assemble(rows: list, y_shape: tuple, x: Tensor) -> Tensor:
    """Rows d y[k] / d x (None: zeros) as one Tensor of shape y_shape + x.shape."""
    rows = [F.zeros_like(x) if r is None else r for r in rows]
    if len(rows) == 1:
        return F.reshape(rows[0], y_shape + tuple(x.shape))
    return F.reshape(stack(rows, axis=0), y_shape + tuple(x.shape))


def _unconnected(x: Tensor, y_shape: tuple, policy, api: str, k: int) -> Optional[Tensor]:
    if policy is UnconnectedGradients.ZERO:
        return constant(np.zeros(y_shape + tuple(x.shape), dtype=x.dtype))
    if policy is UnconnectedGradients.RAISE:
        raise UnconnectedGradientError(f"{api}: x[{k}] {describe(x)} is not connected to y; "
                                       "use unconnected_gradients='none' or 'zero'")
    return None


def _jacobians(y: Tensor, xs: list, policy, api: str) -> list:
    y_shape = _static_shape(y, api, "y")
    for k, x in enumerate(xs):
        _static_shape(x, api, f"x[{k}]")
    rows = [gradients(y, xs, grad_ys=seed, name=None) for seed in _one_hot_seeds(y)]
    results = []
    for k, x in enumerate(xs):
        column = [row[k] for row in rows]
        if all(r is None for r in column):
            results.append(_unconnected(x, y_shape, policy, api, k))
        else:
            results.append(_assemble(column, y_shape, x))
    return results


def jacobian(y: Tensor, x: Any, unconnected_gradients: Any = "none",
             name: Optional[str] = "jacobian") -> Any:
    """The full Jacobian d y / d x, shape ``y.shape + x.shape`` (static shapes).

    ``x`` may be a list of Tensors (a list of Jacobians is returned). An x that y does
    not depend on gives None ('none'), zeros ('zero') or UnconnectedGradientError
    ('raise'), as ``sg.gradients``.

    >>> import symgrad as sg
    >>> x = sg.placeholder("x", shape=(3,))
    >>> sg.evaluate(sg.jacobian(sg.reduce_sum(x * x), x), {x: [1.0, 2.0, 3.0]})
    array([2., 4., 6.])
    """
    policy = unconnected_policy(unconnected_gradients, "sg.jacobian")
    xs = list(x) if isinstance(x, (list, tuple)) else [x]
    with name_scope(name):
        results = _jacobians(y, xs, policy, "sg.jacobian")
    return results if isinstance(x, (list, tuple)) else results[0]


def hessians(ys: Any, xs: Any, name: str = "hessians", colocate_gradients_with_ops: bool = True,
             gate_gradients: bool = False, aggregation_method: Any = None) -> list:
    """``tf.hessians``: for each x, the Hessian of sum(ys), shape ``x.shape + x.shape``.

    Only the diagonal blocks: ``hessians(y, [x, z])[1]`` is d2 y / dz2, with no cross
    terms. An x that ys do not depend on gives None; a second derivative that is
    unconnected (ys linear in x) gives zeros. ``aggregation_method`` has no effect.

    >>> import symgrad as sg
    >>> x = sg.placeholder("x", shape=(2,))
    >>> z = sg.placeholder("z", shape=())
    >>> hx, hz = sg.hessians(sg.reduce_sum(x) * z * z, [x, z])
    >>> sg.evaluate([hx, hz], {x: [1.0, 2.0], z: 3.0})
    [array([[0., 0.],
           [0., 0.]]), array(6.)]
    """
    xs = list(xs) if isinstance(xs, (list, tuple)) else [xs]
    with name_scope(name):
        firsts = gradients(ys, xs, name=None, gate_gradients=gate_gradients,
                           aggregation_method=aggregation_method)
        out = []
        for k, (x, g) in enumerate(zip(xs, firsts)):
            _static_shape(x, "sg.hessians", f"xs[{k}]")
            if g is None:
                out.append(None)
                continue
            (h,) = _jacobians(g, [x], UnconnectedGradients.ZERO, "sg.hessians")
            out.append(h)
    return out
