"""The public control flow: ``sg.scan``, ``sg.fori_loop``, ``sg.while_loop``, ``sg.cond``.

On symbolic Tensors each traces its function(s) ONCE on placeholder stand-ins and builds
loop or branch nodes (``records.py``); on eager values (``sg.Variable``, inside a
``GradientTape``) it runs the Python loop step by step, so the tape records every step.

>>> import symgrad as sg
>>> x = sg.placeholder("x")
>>> y = sg.fori_loop(0, 3, lambda i, c: c * x, sg.constant(1.0))
>>> (g,) = sg.gradients(y, [x])
>>> sg.evaluate([y, g], {x: 2.0})
[array(8.), array(12.)]
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from ..errors import DTypeError, ShapeError
from ..graph.tensor import Tensor
from ..ops.functions import export
from ..ops.registry import apply, as_tensors
from ..ops.sources import CONSTANT
from .adjoint import cond_outputs
from .body import Body, marker, stand_in
from .records import SCAN, WHILE

__all__ = ["scan", "fori_loop", "while_loop", "cond"]


# --- structures: a Tensor or a list/tuple of Tensors ------------------------------------------
def _leaves(value: Any) -> tuple:
    """(leaves, pack): pack(leaves) rebuilds the structure of ``value``."""
    if isinstance(value, (list, tuple)):
        kind = type(value)
        return list(value), (lambda items: kind(items))
    return [value], (lambda items: items[0])


def _as_tensor(value: Any, api: str, what: str) -> Tensor:
    if isinstance(value, Tensor):
        return value
    if value is None:
        raise TypeError(f"{api}: {what} is None; expected a Tensor or an array")
    return as_tensors(SCAN, (np.asarray(value),))[0]


def _is_eager(values: list) -> bool:
    from ..tape.eager import EAGER_TYPES
    from ..tape.state import recording_tapes
    if any(isinstance(v, Tensor) for v in values):
        return False
    return any(isinstance(v, EAGER_TYPES) for v in values) or bool(recording_tapes())


def _check_same(new: Tensor, old: Tensor, api: str, what: str) -> None:
    if tuple(new.shape) != tuple(old.shape):
        raise ShapeError(f"{api}: {what} has shape {tuple(old.shape)} entering the step but "
                         f"{tuple(new.shape)} leaving it ('{new.name}', {new.op.name}); a loop "
                         "variable must keep its shape")
    if new.dtype != old.dtype:
        raise DTypeError(f"{api}: {what} has dtype {old.dtype.name} entering the step but "
                         f"{new.dtype.name} leaving it ('{new.name}'); cast it with sg.cast")


def _eager_value(value: Any) -> np.ndarray:
    return np.asarray(value.numpy() if hasattr(value, "numpy") else value)


# --- scan ---------------------------------------------------------------------------------------
def scan(fn: Callable, init: Any, xs: Any = None, length: Optional[int] = None,
         reverse: bool = False, checkpoint: Optional[int] = None, name: Optional[str] = None):
    """JAX's ``lax.scan``: ``fn(carry, x) -> (carry, y)``; returns ``(carry, ys)``.

    ``xs`` (a Tensor or list/tuple) is sliced along axis 0, ``ys`` stacked on a new axis 0
    (None when fn returns y None). ``checkpoint=k``: reverse mode stores every k-th carry
    and recomputes the steps between (docs/control_flow.md). The body is traced once; the
    loop is one op.

    >>> import symgrad as sg
    >>> c, ys = sg.scan(lambda c, x: (c * x, c), sg.constant(1.0), sg.constant([2.0, 3.0]))
    >>> sg.evaluate([c, ys], {})
    [array(6.), array([1., 2.])]
    """
    if checkpoint is not None and (not isinstance(checkpoint, int) or checkpoint < 1):
        raise ValueError(f"sg.scan: checkpoint must be None or a positive int, got {checkpoint!r}")
    init_leaves, pack_c = _leaves(init)
    x_leaves, pack_x = _leaves(xs) if xs is not None else ([], None)
    if _is_eager(init_leaves + x_leaves):
        return _eager_scan(fn, init, xs, length, reverse)
    init_t = [_as_tensor(v, "sg.scan", f"init[{j}]") for j, v in enumerate(init_leaves)]
    xs_t = [_as_tensor(v, "sg.scan", f"xs[{j}]") for j, v in enumerate(x_leaves)]
    steps = _scan_length(xs_t, length)
    carry_in = [stand_in(t, f"carry{j}") for j, t in enumerate(init_t)]
    x_in = [stand_in(t, f"x{j}", tuple(t.shape[1:])) for j, t in enumerate(xs_t)]
    since = marker()
    result = fn(pack_c(carry_in), pack_x(x_in) if xs is not None else None)
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise TypeError("sg.scan: fn must return a pair (carry, y), got "
                        f"{type(result).__name__}")
    carry_out, y = result
    out_leaves, _ = _leaves(carry_out)
    if len(out_leaves) != len(init_t):
        raise ShapeError(f"sg.scan: fn returned {len(out_leaves)} carries for "
                         f"{len(init_t)} in init; the carry must keep its structure")
    out_t = [_as_tensor(v, "sg.scan", f"carry[{j}]") for j, v in enumerate(out_leaves)]
    out_t = [_cast_literal(o, c) for o, c in zip(out_t, carry_in)]
    for j, (o, c) in enumerate(zip(out_t, carry_in)):
        _check_same(o, c, "sg.scan", f"carry[{j}]")
    y_leaves, pack_y = _leaves(y) if y is not None else ([], None)
    y_t = [_as_tensor(v, "sg.scan", f"y[{j}]") for j, v in enumerate(y_leaves)]
    body = Body(carry_in + x_in, out_t + y_t, since)
    outs = _scan_nodes(body, init_t, xs_t, steps if not xs_t else None, reverse, checkpoint, name)
    carries, ys = outs[:len(init_t)], outs[len(init_t):]
    return pack_c(carries), (pack_y(ys) if y is not None else None)


def _cast_literal(out: Tensor, like: Tensor) -> Tensor:
    """A constant returned as a carry (a Python number) takes the carry's dtype."""
    if out.op is CONSTANT and out.dtype != like.dtype and out.shape == like.shape:
        return as_tensors(SCAN, (np.asarray(out.attrs["value"], like.dtype),))[0]
    return out


def _scan_length(xs: list, length: Optional[int]):
    if not xs:
        if length is None:
            raise ValueError("sg.scan: pass xs or length (the number of steps)")
        if not isinstance(length, (int, np.integer)) or length < 0:
            raise ValueError(f"sg.scan: length must be a non-negative int, got {length!r}")
        return int(length)
    for j, x in enumerate(xs):
        if len(x.shape) == 0:
            raise ShapeError(f"sg.scan: xs[{j}] '{x.name}' is a scalar; xs are sliced along "
                             "axis 0")
    known = {x.shape[0] for x in xs if x.shape[0] is not None}
    if len(known) > 1:
        described = ", ".join(f"xs[{j}] '{x.name}' {x.shape[0]}" for j, x in enumerate(xs))
        raise ShapeError(f"sg.scan: xs have unequal lengths along axis 0: {described}")
    steps = known.pop() if known else None
    if length is not None and steps is not None and length != steps:
        raise ShapeError(f"sg.scan: length={length} but xs have length {steps}")
    return steps


def _scan_nodes(body: Body, init: list, xs: list, length, reverse: bool, checkpoint,
                name: Optional[str]) -> list:
    inputs = tuple(init) + tuple(xs) + tuple(body.captures)
    attrs = {"body": body, "n_carry": len(init), "n_x": len(xs), "length": length,
             "reverse": bool(reverse), "checkpoint": checkpoint, "replay": None}
    return [apply(SCAN, inputs, {**attrs, "index": k}, name)
            for k in range(len(body.outputs))]


def _eager_scan(fn, init, xs, length, reverse):
    from ..ops.functions import F
    x_leaves, pack_x = _leaves(xs) if xs is not None else ([], None)
    steps = len(_eager_value(x_leaves[0])) if x_leaves else int(length)
    carry, ys = init, [None] * steps
    for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
        x = pack_x([v[t] for v in x_leaves]) if xs is not None else None
        carry, ys[t] = fn(carry, x)
    if not steps or ys[0] is None:
        return carry, None
    y_leaves, pack_y = _leaves(ys[0])
    columns = [[_leaves(y)[0][j] for y in ys] for j in range(len(y_leaves))]
    return carry, pack_y([F.stack(col, 0) for col in columns])


# --- fori_loop ----------------------------------------------------------------------------------
def fori_loop(lower: Any, upper: Any, body: Callable, init: Any, name: Optional[str] = None):
    """JAX's ``lax.fori_loop``: ``body(i, carry) -> carry`` for i in [lower, upper).

    Int bounds give a scan over ``i`` (reverse mode stores one carry per step); Tensor
    bounds give a while loop.
    """
    _check_bound(lower, "lower")
    _check_bound(upper, "upper")
    n_init = len(_leaves(init)[0])

    def run_body(i, carry):
        out = body(i, carry)
        if len(_leaves(out)[0]) != n_init:
            raise ShapeError(f"sg.fori_loop: body returned {len(_leaves(out)[0])} values for "
                             f"{n_init} in init; body(i, carry) must return the new carry "
                             "only, of init's structure (for a per-step output y use "
                             "sg.scan(lambda carry, i: (carry, y), init, xs))")
        return out

    if isinstance(lower, (int, np.integer)) and isinstance(upper, (int, np.integer)):
        index = np.arange(int(lower), max(int(lower), int(upper)), dtype=np.int64)
        if _is_eager(_leaves(init)[0]):
            carry = init
            for i in index:
                carry = run_body(int(i), carry)
            return carry
        carry, _ = scan(lambda c, i: (run_body(i, c), None), init,
                        as_tensors(SCAN, (index,))[0], name=name)
        return carry
    leaves, pack = _leaves(init)

    def step(i, *values):
        out = run_body(i, pack(list(values)))
        return [i + 1] + _leaves(out)[0]

    out = while_loop(lambda i, *values: i < upper, step, [lower] + leaves, name=name)
    return pack(out[1:])


def _check_bound(value: Any, what: str) -> None:
    """fori_loop's bounds are integers: Python ints, numpy integers or integer Tensors."""
    if isinstance(value, (bool, np.bool_)):
        kind = "bool"
    else:
        dtype = getattr(value, "dtype", None)
        dtype = np.dtype(dtype) if dtype is not None else np.asarray(value).dtype
        if dtype.kind in "iu":
            return
        kind = type(value).__name__ if isinstance(value, (float, np.floating)) else dtype.name
    example = 3 if what == "upper" else 0
    raise TypeError(f"sg.fori_loop: {what} must be an int or an integer scalar Tensor, got "
                    f"{kind} {_short(value)}; pass an int (e.g. {what}={example}) or cast it "
                    "with sg.cast(..., 'int64')")


def _short(value: Any) -> str:
    if isinstance(value, Tensor):
        return f"Tensor '{value.name}'"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _check_iterations(value: Any) -> Optional[int]:
    """while_loop's ``maximum_iterations``: None or a non-negative int."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"sg.while_loop: maximum_iterations must be None or an int, got "
                        f"{type(value).__name__} {_short(value)}; pass an int such as "
                        "maximum_iterations=100")
    if value < 0:
        raise ValueError(f"sg.while_loop: maximum_iterations must be >= 0, got {value}")
    return int(value)


# --- while_loop ---------------------------------------------------------------------------------
def while_loop(cond: Callable, body: Callable, loop_vars: Any,
               maximum_iterations: Optional[int] = None, name: Optional[str] = None):
    """TF's ``tf.while_loop``: repeat ``loop_vars = body(*loop_vars)`` while
    ``cond(*loop_vars)``; gradients flow through the iterations taken.

    >>> import symgrad as sg
    >>> out = sg.while_loop(lambda i, s: i < 4, lambda i, s: (i + 1, s * 2.0),
    ...                     [sg.constant(0), sg.constant(1.0)])
    >>> sg.evaluate(out, {})
    [array(4), array(16.)]
    """
    maximum_iterations = _check_iterations(maximum_iterations)
    leaves, pack = _leaves(loop_vars)
    if _is_eager(leaves):
        return _eager_while(cond, body, leaves, pack, maximum_iterations)
    init = [_as_tensor(v, "sg.while_loop", f"loop_vars[{j}]") for j, v in enumerate(leaves)]
    ins = [stand_in(t, f"var{j}") for j, t in enumerate(init)]
    since = marker()
    pred = _as_tensor(cond(*ins), "sg.while_loop", "cond's result")
    _check_predicate(pred, "sg.while_loop", "cond's result")
    outs, _ = _leaves(body(*ins))
    if len(outs) != len(init):
        raise ShapeError(f"sg.while_loop: body returned {len(outs)} values for "
                         f"{len(init)} loop_vars")
    outs = [_cast_literal(_as_tensor(o, "sg.while_loop", f"loop_vars[{j}]"), c)
            for j, (o, c) in enumerate(zip(outs, ins))]
    for j, (o, c) in enumerate(zip(outs, ins)):
        _check_same(o, c, "sg.while_loop", f"loop_vars[{j}]")
    cond_body = Body(ins, [pred], since)
    loop_body = Body(ins, outs, since)
    caps = list(loop_body.captures)
    for c in cond_body.captures:
        if not any(c is k for k in caps):
            caps.append(c)
    cond_pos = tuple(next(p for p, k in enumerate(caps) if k is c) for c in cond_body.captures)
    attrs = {"cond": cond_body, "body": loop_body, "n_vars": len(init),
             "n_body_caps": len(loop_body.captures), "cond_pos": cond_pos,
             "maximum_iterations": None if maximum_iterations is None else int(maximum_iterations)}
    inputs = tuple(init) + tuple(caps)
    nodes = [apply(WHILE, inputs, {**attrs, "index": k}, name) for k in range(len(init))]
    return pack(nodes)


def _eager_while(cond, body, values, pack, maximum_iterations):
    steps = 0
    while maximum_iterations is None or steps < maximum_iterations:
        if not bool(_eager_value(cond(*values))):
            break
        values = _leaves(body(*values))[0]
        steps += 1
    return pack(values)


def _check_predicate(pred: Tensor, api: str, what: str) -> None:
    if tuple(pred.shape) != ():
        raise ShapeError(f"{api}: {what} '{pred.name}' has shape {tuple(pred.shape)}; the "
                         "predicate must be a scalar bool: reduce it with sg.reduce_all(...) "
                         "(every element true) or sg.reduce_any(...) (some element true)")
    if pred.dtype != np.bool_:
        raise DTypeError(f"{api}: {what} '{pred.name}' has dtype {pred.dtype.name}; the "
                         "predicate must be bool (compare it, e.g. x > 0)")


# --- cond ---------------------------------------------------------------------------------------
def cond(pred: Any, true_fn: Callable, false_fn: Callable, name: Optional[str] = None):
    """TF's ``tf.cond``: ``true_fn()`` if the scalar bool ``pred`` else ``false_fn()``; only
    the taken branch runs, and only it carries gradient.

    >>> import symgrad as sg
    >>> x = sg.placeholder("x")
    >>> y = sg.cond(x > 0, lambda: sg.sqrt(x), lambda: -x)
    >>> (g,) = sg.gradients(y, [x])
    >>> sg.evaluate([y, g], {x: -4.0})
    [array(4.), array(-1.)]
    """
    if not isinstance(pred, Tensor):
        value = _eager_value(pred)
        if value.shape != ():
            raise ShapeError(f"sg.cond: pred has shape {value.shape}; it must be a scalar bool: "
                             "reduce it with sg.reduce_all(...) or sg.reduce_any(...)")
        return true_fn() if bool(value) else false_fn()
    _check_predicate(pred, "sg.cond", "pred")
    since = marker()
    t_leaves, pack = _leaves(true_fn())
    f_leaves, _ = _leaves(false_fn())
    if len(t_leaves) != len(f_leaves):
        raise ShapeError(f"sg.cond: true_fn returned {len(t_leaves)} values and false_fn "
                         f"{len(f_leaves)}; the branches must return the same structure")
    t_out = [_as_tensor(v, "sg.cond", f"true_fn output {j}") for j, v in enumerate(t_leaves)]
    f_out = [_as_tensor(v, "sg.cond", f"false_fn output {j}") for j, v in enumerate(f_leaves)]
    f_out = [_cast_literal(f, t) for f, t in zip(f_out, t_out)]
    t_out = [_cast_literal(t, f) for f, t in zip(f_out, t_out)]
    for j, (t, f) in enumerate(zip(t_out, f_out)):
        _check_branches(t, f, j)
    results = cond_node_outputs(pred, Body([], t_out, since), Body([], f_out, since), name)
    return pack(results)


def _check_branches(t: Tensor, f: Tensor, j: int) -> None:
    """Both branches of a cond give output ``j`` the same shape and dtype."""
    where = f"output {j}: "
    if tuple(t.shape) != tuple(f.shape):
        raise ShapeError(f"sg.cond: {where}true_fn returns shape {tuple(t.shape)} ('{t.name}') "
                         f"but false_fn returns shape {tuple(f.shape)} ('{f.name}'); both "
                         "branches must return the same shapes (broadcast one with "
                         "sg.broadcast_to, or reshape it)")
    if t.dtype != f.dtype:
        raise DTypeError(f"sg.cond: {where}true_fn returns dtype {t.dtype.name} ('{t.name}') "
                         f"but false_fn returns {f.dtype.name} ('{f.name}'); both branches "
                         "must return the same dtypes (cast one with sg.cast)")


def cond_node_outputs(pred: Tensor, true_body: Body, false_body: Body,
                      name: Optional[str] = None) -> list:
    return cond_outputs(pred, true_body, false_body, name)


export(globals())
