"""``sg.odeint``: adaptive ODE solves (JAX's ``odeint`` signature) with derivatives.

``odeint(f, y0, t, *args)`` integrates ``dy/dt = f(y, t, *args)`` from ``t[0]`` and
returns y at every time of ``t`` stacked on axis 0. The solve is a compiled loop
(``dopri5.py``: Dormand–Prince; ``stiff.py``: Rodas4 with the symbolic Jacobian). Its
result passes through ONE ``odeint`` node whose inputs are the raw solve, its step count,
the time it reached, ``y0``, ``t`` and the tensors ``f`` captures (``args`` and any
tensor ``f`` closes over: found by tracing ``f`` once on stand-ins, ``control/body.py``).
That node checks the solve (``sg.ConvergenceError`` past ``max_steps``) and carries the
derivatives (``odeint_grad.py``): reverse mode by the continuous adjoint (dopri5, as JAX)
or by forward sensitivities (the stiff method), forward mode by sensitivities; never
through the solver's steps, and built of ordinary ops (more ``odeint`` nodes), so they
can be differentiated again.

>>> import numpy as np, symgrad as sg
>>> k = sg.placeholder("k")
>>> ys = sg.odeint(lambda y, t, k: -k * y, 1.0, np.array([0.0, 1.0]), k)
>>> (g,) = sg.gradients(ys[1], k)                  # d/dk exp(-k) = -exp(-k)
>>> np.allclose(sg.evaluate([ys[1], g], {k: 0.5}), [np.exp(-0.5), -np.exp(-0.5)])
True
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..errors import DTypeError, ShapeError
from ..graph.tensor import Tensor
from ..ops.functions import F
from ..ops.sources import constant
from .check import as_array, not_eager, static_float
from .odeint_grad import API, solve

__all__ = ["odeint"]

METHODS = {"dopri5": "dopri5", "bdf": "rodas4", "radau": "rodas4", "rodas4": "rodas4"}


# --- the public function ----------------------------------------------------------------
_GRAPH_OP = "odeint is a graph op"
_ARGS_HINT = " (args as separate arguments)"


def _as_float(value: Any, what: str, dtype=None) -> Tensor:
    return static_float(value, API, what, _GRAPH_OP, dtype, _ARGS_HINT)


def _as_arg(value: Any, j: int) -> Tensor:
    not_eager(value, API, f"args[{j}]", _GRAPH_OP)
    return constant(as_array(value, API, f"args[{j}]", _ARGS_HINT))


def _closed(f: Callable, y0: Tensor, args: tuple) -> Callable:
    """``fun(y, t) = f(y, t, *args)``, its result checked to be a float of y's shape."""
    def fun(y: Tensor, t: Tensor) -> Tensor:
        out = f(y, t, *args)
        if not isinstance(out, Tensor):
            out = constant(np.broadcast_to(np.asarray(out, dtype=y0.dtype), y0.shape).copy())
        if tuple(out.shape) != tuple(y0.shape):
            raise ShapeError(f"{API}: f(y, t, *args) returned shape {tuple(out.shape)} but "
                             f"y0 has shape {tuple(y0.shape)}; f must return dy/dt of y's "
                             "shape")
        if out.dtype.kind != "f":
            raise DTypeError(f"{API}: f(y, t, *args) returned dtype {out.dtype.name}; "
                             "expected a float tensor")
        return F.cast(out, y0.dtype) if out.dtype != y0.dtype else out
    return fun


def _check_options(method: str, rtol: float, atol: float, max_steps: int) -> str:
    if method not in METHODS:
        raise ValueError(f"{API}: method={method!r}; expected one of 'dopri5' (non-stiff), "
                         "'bdf' or 'radau' (stiff: both run Rodas4, docs/solvers.md)")
    for name, tol in (("rtol", rtol), ("atol", atol)):
        if not (isinstance(tol, (int, float, np.floating)) and float(tol) > 0):
            raise ValueError(f"{API}: {name}={tol!r}; expected a float > 0")
    if isinstance(max_steps, bool) or not (isinstance(max_steps, (int, np.integer))
                                           and max_steps > 0):
        raise ValueError(f"{API}: max_steps={max_steps!r}; expected an int > 0")
    return METHODS[method]


def odeint(f: Callable, y0: Any, t: Any, *args: Any, rtol: float = 1.4e-8,
           atol: float = 1.4e-8, method: str = "dopri5", max_steps: int = 100_000,
           full_output: bool = False) -> Any:
    """y at the times ``t`` (increasing) for ``dy/dt = f(y, t, *args)``, ``y(t[0]) = y0``.

    JAX's ``jax.experimental.ode.odeint``: ``y0`` any static shape, the result has shape
    ``(len(t),) + y0.shape``. ``method="dopri5"`` (Dormand–Prince, non-stiff) or
    ``"bdf"``/``"radau"`` (stiff: both run Rodas4, an L-stable Rosenbrock method with the
    symbolic Jacobian). Steps are chosen for ``rtol``/``atol`` (per component, RMS norm).
    More than ``max_steps`` steps (over the whole solve): ``sg.ConvergenceError`` when
    the graph runs. Derivatives with respect to ``y0``, ``t``, ``args`` and every tensor
    ``f`` closes over, in reverse and forward mode (docs/solvers.md).
    ``full_output=True`` returns ``(ys, info)`` with ``info["steps"]`` the steps tried
    (accepted and rejected; an int64 tensor), as ``scipy.integrate.odeint``'s ``nst``.

    >>> import numpy as np, symgrad as sg
    >>> ys, info = sg.odeint(lambda y, t: -y, np.ones(2), np.linspace(0.0, 1.0, 3),
    ...                      full_output=True)
    >>> out, steps = sg.evaluate([ys, info["steps"]], {})
    >>> np.allclose(out[-1], np.exp(-1.0)), int(steps) > 0
    (True, True)
    """
    if not callable(f):
        raise TypeError(f"{API}: f must be callable f(y, t, *args), got {type(f).__name__}")
    kind = _check_options(method, rtol, atol, max_steps)
    y0 = _as_float(y0, "y0")
    t = _as_float(t, "t", y0.dtype)
    if t.ndim != 1 or t.shape[0] < 1:
        raise ShapeError(f"{API}: t has shape {tuple(t.shape)}; expected a 1-D array of "
                         "at least one time")
    if t.dtype != y0.dtype:
        t = F.cast(t, y0.dtype)
    args = tuple(a if isinstance(a, Tensor) else _as_arg(a, j) for j, a in enumerate(args))
    options = (kind, float(rtol), float(atol), int(max_steps))
    ys, steps = solve(_closed(f, y0, args), y0, t, options)
    return (ys, {"steps": steps}) if full_output else ys
