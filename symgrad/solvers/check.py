"""The convergence check of a solve: ``x`` passed through, or ``sg.ConvergenceError``.

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
"""

from __future__ import annotations

import numpy as np

from ..errors import ConvergenceError
from ..graph.tensor import Tensor
from ..ops.opdef import OpDef
from ..ops.registry import apply


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
