"""The ``odeint`` node (the solve checked) and its derivatives: the adjoint, sensitivities.

Reverse mode, ``method="dopri5"``: the continuous adjoint, as JAX's ``odeint``. Between
output times ``t[i]`` and ``t[i-1]`` (from the last) one solve integrates the augmented
state ``[y, a, a_p]`` backward (in ``s = -t``): ``dy/ds = -f``, ``da/ds = a^T df/dy``,
``da_p/ds = a^T df/dp``, starting from ``y = ys[i]``; after it the upstream ``g[i-1]`` is
added to ``a``. At the end ``a`` is the gradient of ``y0`` and ``a_p`` of the parameters
``p`` (the tensors ``f`` captures); ``t[i]`` gets ``g[i] . f(ys[i], t[i])`` and ``t[0]``
gets ``-(a - g[0]) . f(y0, t0)``. The backward solves of all intervals run as ONE loop
(``odeint_sweep.py``: the steps land on the output times, where y restarts and g is
added) through one ``odeint_sweep`` node, defined here: its derivatives are those of the
per-interval form, where each backward solve is itself an ``odeint`` node (an adjoint of
the adjoint gives second derivatives), so the node, the ``odeint`` node and the adjoint
that builds both live in one module, above the loop (``odeint_sweep.py``) and the flat
state helpers (``flat.py``), which import nothing of it. Memory:
no steps are stored; cost: one backward solve of 2n + P unknowns. Why the continuous
adjoint: the forward loop stores nothing and the gradient is as accurate as the
tolerances, at the price of a re-integration of y backward, which is stable for
non-stiff systems only.

Reverse mode, stiff methods, and forward mode (``sg.jvp``) for both: forward
sensitivities. ``S = dy/d(direction)`` obeys ``dS/dt = J S + (df/dp) P'`` with
``S(t0) = y0' - f(y0, t0) t0'``, integrated with y in one solve of ``n (1 + m)`` unknowns
(m directions; every state, sensitivities included, under the error control); outputs add
``f(ys[i], t[i]) t[i]'``. Reverse mode of a stiff solve takes ``m = n + P`` directions (one
per element of y0 and of the parameters) and contracts them with the upstream: backward
re-integration of a stiff y is unstable (its decaying modes grow backward), and a stiff
system is usually small. Forward mode takes one direction per tangent.
"""

from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from ..control.api import scan
from ..control.body import Body, marker, stand_in
from ..differentiate import gradients
from ..errors import ConvergenceError
from ..ops.jvp import JVP_RULES
from ..ops.opdef import OpDef
from ..ops.registry import apply
from ..graph.tensor import Tensor
from ..ops.functions import F
from ..ops.sources import constant
from .flat import cat, dot, flat, size, split
from .odeint_sweep import check as sweep_check, sweep

__all__ = ["vjp", "jvp", "solve", "Spec", "ODEINT", "SWEEP"]

API = "sg.odeint"


class Spec:
    """What an ``odeint`` node knows of its solve: the closed ``fun(y, t)``, the method and
    its options. Its repr names only the options (compiled modules are shared)."""

    def __init__(self, fun: Callable, method: str, rtol: float, atol: float, max_steps: int,
                 blocks: Optional[tuple] = None):
        self.fun, self.method, self.blocks = fun, method, blocks
        self.rtol, self.atol, self.max_steps = rtol, atol, max_steps

    def options(self) -> tuple:
        return self.method, self.rtol, self.atol, self.max_steps

    def __repr__(self) -> str:
        return (f"odeint({self.method}, rtol={self.rtol:g}, atol={self.atol:g}, "
                f"max_steps={self.max_steps})")


# --- the node ---------------------------------------------------------------------------
def _forward(ys, steps, reached, y0, t, *params, spec):
    t = np.asarray(t)
    if t.size > 1 and not np.all(np.diff(t) >= 0):
        raise ValueError(f"{API}: t must be nondecreasing; got t = {np.array2string(t)[:80]}")
    if not float(reached) >= float(t[-1]):
        raise ConvergenceError(
            f"{API}: the {spec.method} solve stopped at t={float(reached):.6g} before "
            f"t[-1]={float(t[-1]):.6g} after {int(steps)} step(s) (max_steps="
            f"{spec.max_steps}); raise max_steps, loosen rtol/atol, use method='bdf' for a "
            "stiff system, or check f for a blow-up (NaN)")
    return np.array(ys, copy=True)


def _infer(ys, steps, reached, y0, t, *params, spec):
    return ys.shape, ys.dtype


def _vjp(g, out, ys, steps, reached, y0, t, *params, spec):
    return (None, None, None) + tuple(vjp(spec, g, out, y0, t, list(params)))


def _jvp(tangents, out, ys, steps, reached, y0, t, *params, spec):
    return jvp(spec, tangents[3:], out, y0, t, list(params))


ODEINT = OpDef("odeint", "structural", numpy=_forward, infer=_infer, vjp=_vjp,
               public=False, doc="y of sg.odeint at the times t (the solve checked); "
               "its derivatives are the adjoint's or the sensitivities'")


# --- the solve --------------------------------------------------------------------------
def _integrate(spec: Spec, y0: Tensor, t: Tensor) -> tuple:
    if spec.method == "dopri5":
        from .dopri5 import dopri5
        return dopri5(spec.fun, y0, t, spec.rtol, spec.atol, spec.max_steps)
    from .stiff import rodas4
    return rodas4(spec.fun, y0, t, spec.rtol, spec.atol, spec.max_steps, spec.blocks)


def params_of(fun: Callable, y0: Tensor, t: Tensor) -> list:
    """The float tensors ``fun(y, t)`` captures (traced once on stand-ins)."""
    since = marker()
    y, tt = stand_in(y0, "ode_y"), stand_in(F.getitem(t, (0,)), "ode_t")
    body = Body([y, tt], [fun(y, tt)], since)
    return [c for c in body.captures if c.dtype.kind == "f"]


def solve(fun: Callable, y0: Tensor, t: Tensor, options: tuple,
          blocks: Optional[tuple] = None) -> tuple:
    """``fun``'s solution at ``t`` as one checked, differentiable ``odeint`` node, and the
    number of steps tried. ``options``: (method, rtol, atol, max_steps); ``blocks``: a
    sensitivity system's (n, m) (``stiff.py``)."""
    spec = Spec(fun, *options, blocks=blocks)
    params = params_of(fun, y0, t)
    ys, steps, reached = _integrate(spec, y0, t)
    node = apply(ODEINT, (ys, steps, reached, y0, t) + tuple(params), {"spec": spec})
    return node, steps




def _f_at(spec, ys: Tensor, t: Tensor) -> Tensor:
    """``f(ys[i], t[i])`` for every i, stacked (a scan of f)."""
    _, values = scan(lambda c, x: (c, spec.fun(x[0], x[1])), constant(np.zeros(())),
                     [ys, t])
    return values


# --- reverse mode: the continuous adjoint ------------------------------------------------
def _adjoint(spec, g: Tensor, ys: Tensor, y0: Tensor, t: Tensor, params: list,
             one_loop: bool = True) -> tuple:
    """(y0's, t's, the parameters' gradients). ``one_loop``: the backward solve over every
    interval is one loop (``odeint_sweep.py``); False: a scan of one solve an interval
    (the formulation the one loop's derivatives are taken from)."""
    fun, n_t = spec.fun, int(t.shape[0])
    like = [y0, y0] + list(params)

    def augmented(z, s):
        y, a = split(z, like)[:2]
        fy = fun(y, -s)
        # held: y, the parameters and the time s (a first step's time is computed from
        # the state, which reads the forward solve: differentiating through it would
        # differentiate the odeint node again, without end)
        held = [y] + list(params) + ([s] if isinstance(s, Tensor) else [])
        grads = gradients(fy, [y] + list(params), grad_ys=a, stop_gradients=held,
                          unconnected_gradients="zero", name=None)
        return cat([-fy] + list(grads))

    zeros_p = [F.zeros_like(p) for p in params]
    if n_t == 1:
        return g[0], F.zeros_like(t), zeros_p
    if one_loop:
        z, steps, reached, end = sweep(spec, augmented, g, ys, y0, t, params)
        n = size(y0)
        out = apply(SWEEP, (z, steps, reached, end, g, ys, y0, t) + tuple(params),
                    {"spec": spec, "skip": n})
        acc = F.getitem(out, (slice(n, None),))
        a, *p_bars = split(acc, [y0] + list(params))
        fs = _f_at(spec, ys, t)
        t_bars = F.reduce_sum(F.reshape(g * fs, (n_t, -1)), 1)
        t0_bar = -dot(a - F.getitem(g, (0,)), F.getitem(fs, (0,)))
        t_bar = F.concat([F.reshape(t0_bar, (1,)), F.getitem(t_bars, (slice(1, None),))], 0)
        return a, t_bar, p_bars

    def back(carry, x):
        a, acc = carry
        y_i, g_i, t_i, t_prev, g_prev = x
        t_bar = dot(g_i, fun(y_i, t_i))
        z0 = cat([y_i, a, acc]) if params else cat([y_i, a])
        span = F.stack([-t_i, -t_prev])
        zs, _ = solve(augmented, z0, span, spec.options())
        z1 = F.getitem(zs, (1,))
        parts = split(z1, like)
        a = parts[1] + g_prev
        acc = cat(parts[2:]) if params else acc
        return (a, acc), t_bar

    last = slice(1, None)
    first = slice(None, -1)
    acc0 = cat(zeros_p) if params else constant(np.zeros((1,), y0.dtype))
    xs = [F.getitem(ys, (last,)), F.getitem(g, (last,)), F.getitem(t, (last,)),
          F.getitem(t, (first,)), F.getitem(g, (first,))]
    (a, acc), t_bars = scan(back, (F.getitem(g, (n_t - 1,)), acc0), xs, reverse=True)
    t0_bar = -dot(a - F.getitem(g, (0,)), fun(y0, F.getitem(t, (0,))))
    t_bar = F.concat([F.reshape(t0_bar, (1,)), t_bars], 0)
    p_bars = split(acc, params) if params else []
    return a, t_bar, p_bars


def held_jvp(y: Tensor, xs: list, tangents: list) -> Tensor:
    """The jvp of ``y`` with every x held: an x takes its given tangent only, never one
    flowing into it from another x (``sg.jvp`` adds both). In a solver's stage the state
    is computed from earlier stages, which read the parameters: its tangent must be S."""
    from ..dtypes import is_floating
    from ..forward import node_jvp
    from ..graph.traversal import topological_order
    given = {id(x): t for x, t in zip(xs, tangents)}
    carried: dict = dict(given)
    for node in topological_order([y], stop=list(xs)):
        ins = [carried.get(id(i)) for i in node.inputs]
        if any(t is not None for t in ins) and node.op.differentiable and is_floating(
                node.dtype):
            tangent = node_jvp(node, ins)
            if tangent is not None:
                carried[id(node)] = tangent
    out = carried.get(id(y))
    return F.zeros_like(y) if out is None else out


# --- the one backward loop's node: derivatives of the per-interval formulation ------------
def _per_interval(spec, inputs: list) -> Tensor:
    """``[a, a_p]`` by the per-interval formulation (``_adjoint(one_loop=False)``)."""
    g, ys, y0, t, *params = inputs
    a, _, p_bars = _adjoint(spec, g, ys, y0, t, params, one_loop=False)
    return cat([a] + list(p_bars)) if params else a


def _sweep_infer(z, steps, reached, end, *inputs, spec, skip):
    return z.shape, z.dtype


def _sweep_vjp(up, out, z, steps, reached, end, *inputs, spec, skip):
    xs = list(inputs)
    up = F.getitem(up, (slice(skip, None),))         # the backward y: not an output
    grads = gradients(_per_interval(spec, xs), xs, grad_ys=up, stop_gradients=xs,
                      unconnected_gradients="zero", name=None)
    return (None, None, None, None) + tuple(grads)


def _sweep_jvp(tangents, out, z, steps, reached, end, *inputs, spec, skip):
    dots = tangents[4:]
    if all(d is None for d in dots):
        return None
    xs = list(inputs)
    tangent = held_jvp(_per_interval(spec, xs), xs,
                       [F.zeros_like(x) if d is None else d for x, d in zip(xs, dots)])
    return F.concat([constant(np.zeros((skip,), dtype=tangent.dtype)), tangent], 0)


SWEEP = OpDef("odeint_sweep", "structural", numpy=sweep_check, infer=_sweep_infer,
              vjp=_sweep_vjp, public=False, doc="the continuous adjoint of sg.odeint's "
              "dopri5 solve in one backward loop (checked); its derivatives are the "
              "per-interval adjoint's")
JVP_RULES[SWEEP] = _sweep_jvp


# --- forward sensitivities ---------------------------------------------------------------
def sensitivities(spec, y0: Tensor, t: Tensor, params: list, s0: Tensor,
                  p_dots: list) -> Tensor:
    """``S`` at the times ``t``: shape (len(t), m) + y.shape, for m directions given by
    ``s0`` ((m,) + y.shape, ``S(t0)``) and ``p_dots`` (one (m,) + p.shape per parameter,
    or None)."""
    fun, m = spec.fun, int(s0.shape[0])
    moved = [(p, d) for p, d in zip(params, p_dots) if d is not None]
    shape = tuple(y0.shape)
    n = size(y0)

    def augmented(z, tt):
        y = F.reshape(F.getitem(z, (slice(0, n),)), shape)
        S = F.reshape(F.getitem(z, (slice(n, None),)), (m,) + shape)
        fy = fun(y, tt)
        xs = [y] + [p for p, _ in moved]
        columns = []
        for j in range(m):             # one forward sweep per direction
            d_j = held_jvp(fy, xs, [F.getitem(S, (j,))] + [F.getitem(d, (j,)) for _, d in moved])
            columns.append(flat(d_j))
        return F.concat([flat(fy)] + columns, 0)

    zs, _ = solve(augmented, cat([y0, s0]), t, spec.options(), blocks=(n, m))
    return F.reshape(F.getitem(zs, (slice(None), slice(n, None))), (-1, m) + shape)


def _by_sensitivities(spec, g: Tensor, ys: Tensor, y0: Tensor, t: Tensor,
                      params: list) -> tuple:
    """Reverse mode from n + P forward sensitivities (the stiff methods)."""
    n, sizes = size(y0), [size(p) for p in params]
    m = n + sum(sizes)
    shape = tuple(y0.shape)
    eye = np.eye(m, dtype=y0.dtype)
    s0 = constant(eye[:, :n].reshape((m,) + shape))
    p_dots, start = [], n
    for p, k in zip(params, sizes):
        p_dots.append(constant(eye[:, start:start + k].reshape((m,) + tuple(p.shape))))
        start += k
    S = sensitivities(spec, y0, t, params, s0, p_dots)          # (T, m) + shape
    axes = tuple(range(2, 2 + len(shape)))
    gS = F.reduce_sum(S * F.expand_dims(g, 1), axes)             # (T, m)
    total = F.reduce_sum(gS, 0)                                  # (m,)
    y0_bar = F.reshape(F.getitem(total, (slice(0, n),)), shape)
    p_bars, start = [], n
    for p, k in zip(params, sizes):
        p_bars.append(F.reshape(F.getitem(total, (slice(start, start + k),)), tuple(p.shape)))
        start += k
    fs = _f_at(spec, ys, t)                                      # (T,) + shape
    t_bars = F.reduce_sum(F.reshape(g * fs, (int(t.shape[0]), -1)), 1)
    f0 = F.getitem(fs, (0,))
    t0_bar = -dot(y0_bar - F.getitem(g, (0,)), f0)
    t_bar = F.concat([F.reshape(t0_bar, (1,)), F.getitem(t_bars, (slice(1, None),))], 0)
    return y0_bar, t_bar, p_bars


def vjp(spec, g: Tensor, ys: Tensor, y0: Tensor, t: Tensor, params: list) -> list:
    """Gradients of (y0, t, *params) given the upstream ``g`` of ``ys``."""
    if spec.method == "dopri5":
        y0_bar, t_bar, p_bars = _adjoint(spec, g, ys, y0, t, params)
    else:
        y0_bar, t_bar, p_bars = _by_sensitivities(spec, g, ys, y0, t, params)
    return [y0_bar, t_bar] + list(p_bars)


# --- forward mode ------------------------------------------------------------------------
def jvp(spec, tangents: list, ys: Tensor, y0: Tensor, t: Tensor,
        params: list) -> Optional[Tensor]:
    """The tangent of ``ys`` given tangents of (y0, t, *params) (None: none)."""
    y0_dot, t_dot, p_dots = tangents[0], tangents[1], list(tangents[2:])
    if y0_dot is None and t_dot is None and all(d is None for d in p_dots):
        return None
    s0 = F.zeros_like(y0) if y0_dot is None else y0_dot
    if t_dot is not None:
        s0 = s0 - spec.fun(y0, F.getitem(t, (0,))) * F.getitem(t_dot, (0,))
    batch = [None if d is None else F.expand_dims(d, 0) for d in p_dots]
    S = F.getitem(sensitivities(spec, y0, t, params, F.expand_dims(s0, 0), batch),
                  (slice(None), 0))
    if t_dot is not None:
        S = S + _f_at(spec, ys, t) * F.reshape(t_dot, (-1,) + (1,) * y0.ndim)
    return S


JVP_RULES[ODEINT] = _jvp
