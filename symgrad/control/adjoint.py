"""Reverse mode of the loop and branch records (their ``vjp``).

``scan_adjoint`` builds the reverse scan: its carries are the cotangents of the forward
carries (``lam``) and the running sums of the captures' gradients (``acc``); its xs are
the forward carry history, the forward xs and the ys' cotangents. Its body is
``sg.gradients`` of the forward body (taken once, on the forward body's own stand-ins,
which become the reverse body's xs stand-ins) with ``grad_ys = lam + gy``.

With ``checkpoint=k`` the reverse scan replays segments from every k-th carry
(``records.Replay``); its own derivatives (second order, forward mode) are those of the
plain reverse scan over the full history (``replayed``). A cond's gradient is a cond of
the branches' gradients, each a body of its own, so it can be differentiated again.
"""

from __future__ import annotations

import numpy as np

from ..dtypes import is_floating
from ..ops.functions import F
from ..ops.registry import apply
from .body import Body, marker, stand_in


def _gradients(ys, xs, grad_ys):
    from ..differentiate import gradients
    return gradients(ys, xs, grad_ys=grad_ys, stop_gradients=list(xs),
                     unconnected_gradients="zero", name=None)


HOIST_ELEMENTS = 64
"""A loop-invariant value of the forward body (computed from captures only) with more
elements than this is computed once outside the reverse loop and read as a capture; a
smaller one (``p[0]`` of a parameter vector) is recomputed inside the reverse body, so a
body that is one scalar kernel reads its few captures rather than one capture per such
value (a 40-sub-step body had 160, each an argument of the kernel and the fused loop)."""


def _hoisted(body: Body) -> list:
    """The forward body's loop invariants the reverse body reads as captures."""
    varying = {id(t) for t in body.inputs}
    kept = []
    for node in body.order:
        if id(node) in varying or any(id(i) in varying for i in node.inputs):
            varying.add(id(node))
        elif node.inputs and not all(isinstance(d, int) and d >= 0 for d in node.shape):
            kept.append(node)                         # unknown size: hoisted
        elif node.inputs and int(np.prod(node.shape, dtype=np.int64)) > HOIST_ELEMENTS:
            kept.append(node)
    return kept


def scan_adjoint(body: Body, n_carry: int, n_x: int, init, xs, caps, hist, seeds_c, seeds_y,
                 length, reverse: bool, seeds_h=None, checkpoint=None) -> tuple:
    """Gradients of (init, xs, caps) given seeds for final carries and ys (None: none)."""
    C, X = body.inputs[:n_carry], body.inputs[n_carry:]
    Cout, Y = body.outputs[:n_carry], body.outputs[n_carry:]
    fc = [j for j in range(n_carry) if is_floating(C[j].dtype)]
    fy = [j for j, s in enumerate(seeds_y) if s is not None and is_floating(Y[j].dtype)]
    fx = [j for j in range(n_x) if is_floating(X[j].dtype)]
    ft = [i for i, t in enumerate(body.captures) if is_floating(t.dtype)]
    lam = [stand_in(C[j], "adj_carry") for j in fc]
    acc = [stand_in(body.captures[i], "adj_capture") for i in ft]
    gy = [stand_in(Y[j], "adj_y") for j in fy]
    seeds_h = seeds_h or [None] * n_carry      # cotangents of the history (second order)
    fh = [j for j in fc if seeds_h[j] is not None]
    gh = {j: stand_in(C[j], "adj_hist") for j in fh}
    wrt = [C[j] for j in fc] + [X[j] for j in fx] + [body.captures[i] for i in ft]
    grads = _gradients([Cout[j] for j in fc] + [Y[j] for j in fy], wrt, lam + gy) if wrt else []
    g_c, g_x, g_t = grads[:len(fc)], grads[len(fc):len(fc) + len(fx)], grads[len(fc) + len(fx):]
    g_c = [g + gh[j] if j in gh else g for j, g in zip(fc, g_c)]
    outs = list(g_c) + [a + g for a, g in zip(acc, g_t)] + list(g_x)
    reverse_body = Body(lam + acc + list(C) + list(X) + gy + [gh[j] for j in fh], outs,
                        body.since, outside=_hoisted(body))
    r_init = [F.zeros_like(init[j]) if seeds_c[j] is None else seeds_c[j] for j in fc]
    r_init += [F.zeros_like(caps[i]) for i in ft]
    r_xs = list(hist) + list(xs) + [seeds_y[j] for j in fy] + [seeds_h[j] for j in fh]
    replay, extra = None, ()
    if checkpoint is not None and checkpoint > 1:   # hist holds every k-th carry: replay
        replay = {"body": body, "n_carry": n_carry, "n_x": n_x, "k": checkpoint,
                  "reverse": reverse, "n_caps": len(caps), "n_init": len(init)}
        extra = tuple(caps) + tuple(init)           # init: for replayed's derivatives
    results = _apply_scan(reverse_body, r_init, r_xs, len(lam) + len(acc), length, not reverse,
                          replay, extra)
    init_grads = [None] * len(init)
    for k, j in enumerate(fc):
        init_grads[j] = results[k]
    cap_grads = [None] * len(caps)
    for k, i in enumerate(ft):
        cap_grads[i] = results[len(fc) + k]
    x_grads = [None] * len(xs)
    n_r = len(lam) + len(acc)
    for k, j in enumerate(fx):
        x_grads[j] = results[n_r + k]
    return tuple(init_grads + x_grads + cap_grads)


OPS: dict = {}
"""The loop records by role (``scan``, ``while_loop``, ``cond``), set by ``records.py`` when it
loads: this module builds reverse loops without importing the records (no import cycle)."""


def cond_outputs(pred, true_body: Body, false_body: Body, name=None) -> list:
    """The output nodes of one cond of ``true_body`` / ``false_body`` (captures merged)."""
    caps = list(true_body.captures)
    for c in false_body.captures:
        if not any(c is k for k in caps):
            caps.append(c)
    false_pos = tuple(next(p for p, k in enumerate(caps) if k is c)
                      for c in false_body.captures)
    attrs = {"true_body": true_body, "false_body": false_body, "false_pos": false_pos}
    return [apply(OPS["cond"], (pred,) + tuple(caps), {**attrs, "index": k}, name)
            for k in range(len(true_body.outputs))]


def _apply_scan(body: Body, init, xs, n_carry: int, length, reverse: bool, replay=None,
                extra: tuple = ()) -> list:
    """The outputs (final carries, then ys) of a scan node of ``body``."""
    inputs = tuple(init) + tuple(xs) + tuple(body.captures) + tuple(extra)
    attrs = {"body": body, "n_carry": n_carry, "n_x": len(xs), "length": length,
             "reverse": reverse, "checkpoint": None, "replay": replay}
    n_out = len(body.outputs)
    return [apply(OPS["scan"], inputs, {**attrs, "index": k}) for k in range(n_out)]


def history_nodes(op, inputs: tuple, attrs: dict, first: int, count: int) -> list:
    return [apply(op, inputs, {**attrs, "index": first + j}) for j in range(count)]


def scan_vjp(g, out, inputs: tuple, attrs: dict) -> tuple:
    body, n_carry, n_x = attrs["body"], attrs["n_carry"], attrs["n_x"]
    n_y = len(body.outputs) - n_carry
    index = attrs["index"]
    seeds_h = [g if index == n_carry + n_y + j else None for j in range(n_carry)]
    k = attrs["checkpoint"]
    if attrs["replay"] is not None:
        return replayed_vjp(g, inputs, attrs)
    if k is not None and k > 1 and any(h is not None for h in seeds_h):
        from ..errors import NoGradientError     # only replayed scans read this history
        raise NoGradientError(f"No gradient defined for operation 'scan' at tensor "
                              f"'{out.name}': the history of sg.scan(..., checkpoint=k) "
                              "holds every k-th carry and has no gradient of its own")
    seeds_c = [g if index == j else None for j in range(n_carry)]
    seeds_y = [g if index == n_carry + j else None for j in range(n_y)]
    init, xs, caps = inputs[:n_carry], inputs[n_carry:n_carry + n_x], inputs[n_carry + n_x:]
    hist = history_nodes(OPS["scan"], inputs, attrs, n_carry + n_y, n_carry)
    return scan_adjoint(body, n_carry, n_x, init, xs, caps, hist, seeds_c, seeds_y,
                        attrs["length"], attrs["reverse"], seeds_h, k)


def replayed(inputs: tuple, attrs: dict) -> tuple:
    """A replayed reverse scan (``checkpoint=k``) as a plain one: (its output of
    ``attrs["index"]``, the positions of ``inputs`` it reads). It reads the full carry
    history of a forward scan without checkpoints (run from the forward init and
    captures, its last inputs), not the checkpoints: the same values, and a graph the
    plain rules differentiate (second order stores every carry, as checkpoint=None)."""
    replay, n_c, n_x = attrs["replay"], attrs["n_carry"], attrs["n_x"]
    fc, fx, n_init = replay["n_carry"], replay["n_x"], replay["n_init"]
    init = inputs[len(inputs) - n_init:]
    caps = inputs[len(inputs) - n_init - replay["n_caps"]:len(inputs) - n_init]
    xs_f = inputs[n_c + fc:n_c + fc + fx]
    body = replay["body"]
    fwd = {"body": body, "n_carry": fc, "n_x": fx, "length": attrs["length"],
           "reverse": replay["reverse"], "checkpoint": None, "replay": None}
    hist = history_nodes(OPS["scan"], tuple(init) + tuple(xs_f) + tuple(caps), fwd,
                         len(body.outputs), fc)
    plain = tuple(inputs[:n_c]) + tuple(hist) + tuple(inputs[n_c + fc:n_c + n_x])
    plain += tuple(attrs["body"].captures)
    node = apply(OPS["scan"], plain, {**attrs, "replay": None})
    return node, [i for i in range(len(inputs)) if not n_c <= i < n_c + fc]


def replayed_vjp(g, inputs: tuple, attrs: dict) -> tuple:
    """The vjp of a replayed reverse scan: ``sg.gradients`` of ``replayed``'s plain scan
    (the checkpoints get none: it does not read them)."""
    node, reads = replayed(inputs, attrs)
    wanted, first = [], {}
    for i in reads:
        if is_floating(inputs[i].dtype) and id(inputs[i]) not in first:
            first[id(inputs[i])] = i
            wanted.append(inputs[i])
    grads = _gradients([node], wanted, [g]) if wanted else []
    out = [None] * len(inputs)
    for t, grad in zip(wanted, grads):
        out[first[id(t)]] = grad
    return tuple(out)


def while_vjp(g, out, inputs: tuple, attrs: dict) -> tuple:
    body, n = attrs["body"], attrs["n_vars"]
    index = attrs["index"]
    init, caps = inputs[:n], inputs[n:]
    n_body = attrs["n_body_caps"]
    hist = history_nodes(OPS["while_loop"], inputs, attrs, n, n)
    seeds = [g if index == j else None for j in range(n)]
    seeds_h = [g if index == n + j else None for j in range(n)]
    grads = scan_adjoint(body, n, 0, init, [], caps[:n_body], hist, seeds, [], None, False,
                         seeds_h)
    return tuple(grads) + (None,) * (len(caps) - n_body)


def cond_vjp(g, out, caps: tuple, attrs: dict) -> tuple:
    """A cond of the two branches' gradients with respect to every capture."""
    index = attrs["index"]
    true_body, false_body = attrs["true_body"], attrs["false_body"]
    floats = [i for i, c in enumerate(caps) if is_floating(c.dtype)]
    if not floats:
        return (None,) * (1 + len(caps))
    branches = []
    wanted = [caps[i] for i in floats]
    for branch in (true_body, false_body):
        since = marker()      # nodes made from here on are the branch gradient's own
        grads = _gradients([branch.outputs[index]], wanted, [g])
        branches.append(Body([], grads, since, outside=[g, *caps], inside=branch.order))
    results = cond_outputs(inputs_pred(out), branches[0], branches[1])
    out_grads = [None] * len(caps)
    for k, i in enumerate(floats):
        out_grads[i] = results[k]
    return (None,) + tuple(out_grads)


def inputs_pred(out):
    return out.inputs[0]
