"""The checks of a solve: its inputs (``static_float``) and its convergence (``checked``).

``static_float(value, api, what)`` is an input of ``sg.odeint`` or ``sg.root`` as a float
tensor of static shape: a Tensor as it is, an array-like as a constant (ints and bools
as floats); an eager value (``sg.Variable``), a pytree, a non-float or an unknown dim is
an error naming the API and the argument.

A solve written as a loop returns its iterate, the residual norm and the iteration count;
``checked(x, norm, iterations, tol=..., api=...)`` is one node whose forward is a copy of
``x`` when ``norm <= tol`` (a NaN norm fails) and raises otherwise, in ``sg.evaluate`` and
in compiled functions alike (a structural op runs its numpy forward as a step of the
driver, as the linalg ops raise ``sg.LinAlgError``). Its gradient is the identity in
``x``. The record is internal: it is not in ``REGISTRY`` (no public op of that name).

>>> import symgrad as sg
>>> from symgrad.solvers.check import checked
>>> x = sg.placeholder("x")
>>> y = checked(x, sg.constant(1e-3), sg.constant(7), tol=1e-10, api="sg.root")
>>> try:
...     sg.evaluate(y, {x: 2.0})
... except sg.ConvergenceError as e:
...     print(str(e)[:75])
sg.root: no convergence after 7 iteration(s): the residual norm is 0.001, a
>>> static_float([1, 2], "sg.root", "x0").dtype
dtype('float64')
>>> try:
...     static_float(["a"], "sg.root", "x0")
... except sg.DTypeError as e:
...     print(e)
sg.root: x0 has dtype str32; expected a float tensor
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ConvergenceError, DTypeError, EagerMixError, ShapeError
from ..graph.tensor import Tensor
from ..ops.opdef import OpDef
from ..ops.registry import apply
from ..ops.sources import constant
from ..shapes import is_fully_known

__all__ = ["checked", "not_eager", "as_array", "static_float"]


# --- the inputs -------------------------------------------------------------------------
_NO_PYTREES = "; symgrad has no pytrees: pass one float array or tensor per argument"


def not_eager(value: Any, api: str, what: str, graph_op: str) -> None:
    """An EagerMixError when ``value`` is an eager value (``sg.Variable``, a tape's
    tensor): ``graph_op`` says why (``"roots are graph ops"``)."""
    from ..tape.eager import EAGER_TYPES
    if isinstance(value, EAGER_TYPES):
        raise EagerMixError(f"{api}: {what} is an eager value ({type(value).__name__}); "
                            f"{graph_op}: use placeholders (or sg.function) rather than "
                            "sg.Variable")


def as_array(value: Any, api: str, what: str, hint: str = "") -> np.ndarray:
    """``value`` as one numeric array, or a DTypeError naming ``api`` and ``what`` (a
    tuple of tensors, a dict, ragged lists, complex values: symgrad has no pytrees);
    ``hint`` ends a pytree's message."""
    try:
        array = np.asarray(value)
    except (ValueError, TypeError) as exc:
        raise DTypeError(f"{api}: {what} is a {type(value).__name__} that is not one array "
                         f"({exc}){_NO_PYTREES}{hint}") from None
    if array.dtype.kind not in "fiub":
        pytree = f"{_NO_PYTREES}{hint}" if array.dtype.kind == "O" else ""
        raise DTypeError(f"{api}: {what} has dtype {array.dtype.name}; expected a float "
                         f"tensor{pytree}")
    return array


def static_float(value: Any, api: str, what: str, graph_op: str = "", dtype=None,
                 hint: str = "", every: bool = False) -> Tensor:
    """``value`` as a float tensor of static shape (an array-like's ints and bools as
    ``dtype``, float64 by default; ``every``: its floats too), or the error naming ``api``
    and ``what``; ``graph_op`` (say ``"odeint is a graph op"``) explains an eager value's
    error."""
    if isinstance(value, Tensor):
        tensor = value
    else:
        not_eager(value, api, what, graph_op or f"{api} is a graph op")
        array = as_array(value, api, what, hint)
        if array.dtype.kind in "iub" or every:
            array = array.astype(np.float64 if dtype is None else dtype)
        tensor = constant(array)
    if tensor.dtype.kind != "f":
        raise DTypeError(f"{api}: {what} has dtype {tensor.dtype.name}; expected a float "
                         "tensor")
    if not is_fully_known(tensor.shape):
        raise ShapeError(f"{api}: {what} has shape {tensor.shape} with unknown dims; "
                         f"{api} needs a static shape")
    return tensor


# --- the convergence check --------------------------------------------------------------


def _forward(x, norm, iterations, *, tol, api):
    norm = float(norm)
    if not norm <= tol:
        raise ConvergenceError(
            f"{api}: no convergence after {int(iterations)} iteration(s): the residual norm "
            f"is {norm:.3g}, above tol={tol:g}; raise max_iter, start closer to a root (x0), "
            "or check that f has one")
    return np.array(x, copy=True)


def _infer(x, norm, iterations, *, tol, api):
    return x.shape, x.dtype


def _vjp(g, out, x, norm, iterations, *, tol, api):
    return g, None, None


CONVERGED = OpDef("converged", "structural", numpy=_forward, infer=_infer, vjp=_vjp,
                  public=False, doc="x when the residual norm is at most tol, else "
                  "sg.ConvergenceError (a solve's last step)")


def checked(x: Tensor, norm: Tensor, iterations: Tensor, *, tol: float, api: str) -> Tensor:
    """``x`` when ``norm <= tol`` at run time, else ``sg.ConvergenceError``."""
    return apply(CONVERGED, (x, norm, iterations), {"tol": float(tol), "api": api})
