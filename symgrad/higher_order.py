"""Derivatives beyond one gradient: ``sg.jacobian`` and ``sg.hessians`` (``tf.hessians``).

Each is ONE batched reverse sweep (``sg.gradients(..., batched=True)``, see
``symgrad/batching.py``) seeded with the identity, so the graph's size does not grow with
the number of outputs. Shapes must be static. ``sparse=True`` returns the structured
form of ``symgrad.sparse``. The result is an ordinary graph Tensor: it can be
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
from .ops.functions import F
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


def identity_seeds(y: Tensor) -> Tensor:
    """The k = y.size one-hot seeds of y, shape ``(k,) + y.shape`` (a ``one_hot`` of
    ``arange(k)``: the graph holds k integers, not a k-by-k constant)."""
    k = int(np.prod(y.shape, dtype=np.int64))
    eye = F.one_hot(constant(np.arange(k, dtype=np.int64)), k, dtype=y.dtype)
    return F.reshape(eye, (k,) + tuple(y.shape))


def _unconnected(x: Tensor, y_shape: tuple, policy, api: str, k: int) -> Optional[Tensor]:
    if policy is UnconnectedGradients.ZERO:
        if is_fully_known(x.shape):
            return constant(np.zeros(y_shape + tuple(x.shape), dtype=x.dtype))
        lead = F.expand_dims(F.zeros_like(x), tuple(range(len(y_shape))))
        return lead + constant(np.zeros(y_shape + (1,) * x.ndim, dtype=x.dtype))
    if policy is UnconnectedGradients.RAISE:
        raise UnconnectedGradientError(f"{api}: x[{k}] {describe(x)} is not connected to y; "
                                       "use unconnected_gradients='none' or 'zero'")
    return None


def _check_x(x: Tensor, y_shape: tuple, api: str, what: str) -> None:
    """x may have unknown dims where the rows need no reshape (y of rank 1) or one -1 does."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{api}: {what} must be a symgrad Tensor, got {type(x).__name__} {x!r}")
    if len(y_shape) != 1 and sum(d is None for d in x.shape) > 1:
        _static_shape(x, api, what)


def _rows_shape(y_shape: tuple, x: Tensor) -> tuple:
    return y_shape + tuple(-1 if d is None else d for d in x.shape)


def _jacobians(y: Tensor, xs: list, policy, api: str) -> list:
    """One batched sweep seeded with the identity: rows d y[i] / d x, reshaped."""
    y_shape = _static_shape(y, api, "y")
    for k, x in enumerate(xs):
        _check_x(x, y_shape, api, f"x[{k}]")
    if int(np.prod(y_shape, dtype=np.int64)) == 0:
        rows = [None] * len(xs)
    else:
        rows = gradients(y, xs, grad_ys=identity_seeds(y), name=None, batched=True)
    results = []
    for k, (x, row) in enumerate(zip(xs, rows)):
        if row is None:
            results.append(_unconnected(x, y_shape, policy, api, k))
        else:
            results.append(row if len(y_shape) == 1 else F.reshape(row, _rows_shape(y_shape, x)))
    return results


def jacobian(y: Tensor, x: Any, unconnected_gradients: Any = "none",
             name: Optional[str] = "jacobian", sparse: bool = False,
             mode: str = "auto") -> Any:
    """The full Jacobian d y / d x, shape ``y.shape + x.shape`` (y's shape static; x may
    have unknown dims when y has rank 1, or one unknown dim).

    ``x`` may be a list of Tensors (a list of Jacobians is returned). An x that y does
    not depend on gives None ('none'), zeros ('zero') or UnconnectedGradientError
    ('raise'), as ``sg.gradients``. ``sparse=True``: a ``sg.SparseTensor`` in the exact
    pattern (docs/sparsity.md), by forward or reverse mode (``mode="auto"``: whichever
    colouring needs fewer colours; ``"forward"``, ``"reverse"``).

    >>> import symgrad as sg
    >>> x = sg.placeholder("x", shape=(3,))
    >>> sg.evaluate(sg.jacobian(sg.reduce_sum(x * x), x), {x: [1.0, 2.0, 3.0]})
    array([2., 4., 6.])
    """
    if sparse:
        from .sparse import sparse_jacobian

        return sparse_jacobian(y, x, mode=mode)
    policy = unconnected_policy(unconnected_gradients, "sg.jacobian")
    xs = list(x) if isinstance(x, (list, tuple)) else [x]
    with name_scope(name):
        results = _jacobians(y, xs, policy, "sg.jacobian")
    return results if isinstance(x, (list, tuple)) else results[0]


def hessians(ys: Any, xs: Any, name: str = "hessians", colocate_gradients_with_ops: bool = True,
             gate_gradients: bool = False, aggregation_method: Any = None,
             sparse: bool = False) -> list:
    """``tf.hessians``: for each x, the Hessian of sum(ys), shape ``x.shape + x.shape``.

    Only the diagonal blocks: ``hessians(y, [x, z])[1]`` is d2 y / dz2, with no cross
    terms. An x that ys do not depend on gives None; a second derivative that is
    unconnected (ys linear in x) gives zeros. ``hessians(x, x)`` (x itself among ys) is a
    ValueError, as in TF. ``aggregation_method`` has no effect.

    >>> import symgrad as sg
    >>> x = sg.placeholder("x", shape=(2,))
    >>> z = sg.placeholder("z", shape=())
    >>> hx, hz = sg.hessians(sg.reduce_sum(x) * z * z, [x, z])
    >>> sg.evaluate([hx, hz], {x: [1.0, 2.0], z: 3.0})
    [array([[0., 0.],
           [0., 0.]]), array(6.)]
    """
    if sparse:
        from .sparse import sparse_hessian

        return sparse_hessian(ys, list(xs) if isinstance(xs, (list, tuple)) else [xs])
    xs = list(xs) if isinstance(xs, (list, tuple)) else [xs]
    for k, x in enumerate(xs):
        if not isinstance(x, Tensor):
            raise ValueError(f"sg.hessians: xs[{k}] must be a symgrad Tensor with a static "
                             f"shape, got {type(x).__name__} {x!r}")
        _static_shape(x, "sg.hessians", f"xs[{k}]")
    ys_list = list(ys) if isinstance(ys, (list, tuple)) else [ys]
    for k, x in enumerate(xs):
        if any(y is x for y in ys_list):
            raise ValueError(f"sg.hessians: xs[{k}] {describe(x)} is also one of ys: the "
                             "gradient of x with respect to itself is the seed (ones), which "
                             "does not depend on x, and tf.hessians(x, x) raises ValueError "
                             "(TF's testHessianInvalidDimension); take the Hessian of a "
                             "function of x")
    with name_scope(name):
        firsts = gradients(ys, xs, name=None, gate_gradients=gate_gradients,
                           aggregation_method=aggregation_method)
        out = []
        for x, g in zip(xs, firsts):
            if g is None:
                out.append(None)
                continue
            (h,) = _jacobians(g, [x], UnconnectedGradients.ZERO, "sg.hessians")
            out.append(h)
    return out
