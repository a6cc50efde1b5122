"""``sg.custom_root`` and ``sg.root``: roots of ``f(x) = 0`` differentiated implicitly.

The forward is the user's solve (``custom_root``) or a Newton ``sg.while_loop`` with the
symbolic Jacobian (``root``); its result is wrapped in ONE ``@sg.custom_gradient`` node
whose inputs are the tensors ``f`` captures (found by tracing ``f`` once on a stand-in, as
a loop body is: ``control/body.py``). Its gradient is the implicit function theorem's:
for ``f(x*, theta) = 0``, ``dx*/dtheta = -J^-1 df/dtheta`` with ``J = df/dx`` at the
root, so reverse mode solves ``J^T lam = upstream`` once and returns
``-(df/dtheta)^T lam`` (``sg.gradients`` of ``f(x*)`` with ``grad_ys=-lam``, x* held
constant). The solve's
iterations are never differentiated, and the gradient is built of ordinary ops (it reads
``x*``, the custom node itself), so it can be differentiated again.

>>> import symgrad as sg
>>> a = sg.placeholder("a")
>>> x = sg.root(lambda x: x * x * x - a, 1.0)
>>> (g,) = sg.gradients(x, a)
>>> [round(float(v), 6) for v in sg.evaluate([x, g], {a: 8.0})]   # 8^(1/3), 1/(3 * 4)
[2.0, 0.083333]
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..control.api import while_loop
from ..control.body import Body, marker, stand_in
from ..custom_gradient import custom_gradient
from ..differentiate import gradients
from ..errors import ShapeError
from ..graph.tensor import Tensor
from ..ops.functions import F
from ..ops.linalg.api import solve as linear_solve
from ..ops.sources import constant
from .check import checked, static_float

__all__ = ["custom_root", "root"]


def _as_guess(value: Any, api: str) -> Tensor:
    """The initial guess as a float64 tensor (a Tensor keeps its float dtype)."""
    return static_float(value, api, "the initial guess", "roots are graph ops", every=True)


def _residual(f: Callable, x: Tensor, api: str) -> Tensor:
    r = f(x)
    if not isinstance(r, Tensor):
        r = constant(np.asarray(r, dtype=x.dtype))
    if tuple(r.shape) != tuple(x.shape):
        raise ShapeError(f"{api}: f(x) has shape {tuple(r.shape)} but x has shape "
                         f"{tuple(x.shape)}; f must return a residual of x's shape")
    return r


def _captures(f: Callable, guess: Tensor, api: str) -> list:
    """The float tensors ``f`` closes over (traced once on a stand-in for x)."""
    since = marker()
    probe = stand_in(guess, "root_x")
    body = Body([probe], [_residual(f, probe, api)], since)
    return [c for c in body.captures if c.dtype.kind == "f"]


def _implicit(f: Callable, guess: Tensor, x: Tensor, adjoint: Callable, api: str) -> Tensor:
    """``x`` (the solve's result) with the implicit gradient wrt ``f``'s captures.
    ``adjoint(x_star, residual, upstream)`` returns ``lam`` with ``J^T lam = upstream``."""
    if tuple(x.shape) != tuple(guess.shape) or x.dtype != guess.dtype:
        raise ShapeError(f"{api}: solve returned shape {tuple(x.shape)} {x.dtype.name}; "
                         f"expected the initial guess's {tuple(guess.shape)} "
                         f"{guess.dtype.name}")
    captures = _captures(f, guess, api)
    if not captures:
        return F.stop_gradient(x)
    held: dict = {}

    @custom_gradient
    def implicit_root(*theta):
        def grad(upstream):
            x_star = held["root"]
            r = _residual(f, x_star, api)
            lam = adjoint(x_star, r, upstream)
            # every capture held: one may be computed from another (the trace can capture
            # both a and a * a), and the outer sweep chains them; a total derivative
            # here would count that path twice
            return gradients(r, list(theta), grad_ys=-lam,
                             stop_gradients=[x_star, *theta])
        return x, grad

    held["root"] = implicit_root(*captures)
    return held["root"]


def custom_root(f: Callable, initial_guess: Any, solve: Callable,
                tangent_solve: Callable) -> Tensor:
    """JAX's ``lax.custom_root``: ``solve(f, initial_guess)`` (built of symgrad ops, say an
    ``sg.while_loop``) gives a root of ``f(x) -> residual`` (x's shape); its derivative
    with respect to every tensor ``f`` captures is the implicit one.
    ``tangent_solve(g, y)`` solves the linear system ``g(x) = y``; symgrad differentiates
    in reverse mode, so ``g`` is the transposed map ``v -> J^T v`` at the root (a
    ``tangent_solve`` that solves ``g(x) = y`` for any linear ``g`` serves both, as in JAX).
    The derivative never goes through ``solve``; with respect to ``initial_guess`` it is
    zero (JAX's too).

    >>> import symgrad as sg
    >>> a = sg.placeholder("a")
    >>> def newton(f, x0):
    ...     step = lambda i, x: x - f(x) / (3.0 * x * x)
    ...     return sg.fori_loop(0, 30, step, x0)
    >>> x = sg.custom_root(lambda x: x * x * x - a, sg.constant(1.0), newton,
    ...                    lambda g, y: y / g(1.0))
    >>> (g,) = sg.gradients(x, a)
    >>> [round(float(v), 6) for v in sg.evaluate([x, g], {a: 27.0})]
    [3.0, 0.037037]
    """
    api = "sg.custom_root"
    guess = _as_guess(initial_guess, api)
    x = solve(f, guess)
    if not isinstance(x, Tensor):
        raise TypeError(f"{api}: solve returned {type(x).__name__}; expected a Tensor")

    def adjoint(x_star: Tensor, r: Tensor, upstream: Tensor) -> Tensor:
        def transposed(v: Any) -> Tensor:
            v = v if isinstance(v, Tensor) else constant(
                np.broadcast_to(np.asarray(v, dtype=r.dtype), r.shape).copy())
            (jt_v,) = gradients(r, [x_star], grad_ys=v, stop_gradients=[x_star],
                                unconnected_gradients="zero")
            return jt_v
        return tangent_solve(transposed, upstream)

    return _implicit(f, guess, x, adjoint, api)


def _norm(r: Tensor) -> Tensor:
    return F.sqrt(F.reduce_sum(r * r))


def _dense_jacobian(r: Tensor, x: Tensor, n: int) -> Tensor:
    """``dr/dx`` as an (n, n) matrix: one batched reverse sweep seeded with the identity
    (``sg.jacobian``'s), with ``x`` held: when x is the root's own custom node, the sweep
    must not call its gradient (the one being built)."""
    seeds = constant(np.eye(n, dtype=r.dtype).reshape((n,) + tuple(r.shape)))
    (rows,) = gradients(r, [x], grad_ys=seeds, batched=True, stop_gradients=[x],
                        unconnected_gradients="zero")
    return F.reshape(rows, (n, n))


def root(f: Callable, x0: Any, method: str = "newton", tol: float = 1e-10,
         max_iter: int = 50) -> Tensor:
    """A root of ``f(x) -> residual`` (x's shape) by Newton's method from ``x0``.

    The solve is one ``sg.while_loop``: each step solves ``J dx = f(x)`` with the dense
    symbolic Jacobian (``sg.jacobian``) and stops when the residual's 2-norm is at most
    ``tol`` or after ``max_iter`` steps. Not converged (or a NaN residual):
    ``sg.ConvergenceError`` naming the residual norm and the iterations, raised when the
    graph runs (``sg.evaluate``, compiled functions). Derivatives with respect to every
    tensor ``f`` captures are implicit: one ``sg.linalg.solve`` with ``J^T`` at the root.

    >>> import numpy as np, symgrad as sg
    >>> p = sg.placeholder("p", shape=(2,))
    >>> x = sg.root(lambda x: sg.stack([x[0] + x[1] - p[0], x[0] * x[1] - p[1]]),
    ...             np.array([3.0, 0.5]))
    >>> sg.evaluate(x, {p: [3.0, 2.0]}).round(8)          # x + y = 3, x y = 2
    array([2., 1.])
    """
    api = "sg.root"
    if method != "newton":
        raise ValueError(f"{api}: method={method!r}; expected 'newton'")
    if not (isinstance(max_iter, (int, np.integer)) and max_iter >= 0):
        raise ValueError(f"{api}: max_iter={max_iter!r}; expected an int >= 0")
    guess = _as_guess(x0, api)
    n = int(np.prod(guess.shape, dtype=int))

    def newton(f: Callable, start: Tensor) -> Tensor:
        def step(i, x, norm):
            r = _residual(f, x, api)
            J = _dense_jacobian(r, x, n)
            dx = linear_solve(J, F.reshape(r, (n, 1)))
            x = x - F.reshape(dx, guess.shape)
            return i + 1, x, _norm(_residual(f, x, api))

        def more(i, x, norm):
            return F.logical_and(i < max_iter, norm > tol)

        start_norm = _norm(_residual(f, start, api))
        i, x, norm = while_loop(more, step, [constant(np.int64(0)), start, start_norm])
        return checked(x, norm, i, tol=tol, api=api)

    def adjoint(x_star: Tensor, r: Tensor, upstream: Tensor) -> Tensor:
        J = _dense_jacobian(r, x_star, n)
        lam = linear_solve(J, F.reshape(upstream, (n, 1)), adjoint=True)
        return F.reshape(lam, guess.shape)

    return _implicit(f, guess, newton(f, guess), adjoint, api)
