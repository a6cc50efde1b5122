"""The loop and branch records: ``scan``, ``while_loop`` and ``cond``.

Each is ONE structural record whose attributes hold traced bodies (``body.Body``). A loop
has several outputs; like ``unstack``, each output is its own node (attribute ``index``)
over the same inputs ``(*init, *xs, *captures)``; the numpy forward runs the loop once
for all of them (``Body.memo``). Besides the final carries and the stacked ys, a loop
has *history* outputs: the carry entering each step, which the reverse loop reads.

Gradients (``adjoint.py``): a scan's is a scan in the other direction over the history,
whose body is ``sg.gradients`` of the forward body with ``grad_ys``; a while loop's is the
same scan over the iterations actually taken (their number is the history's length);
a cond's is a cond of the two branches' gradients, so the branch not taken never runs.

>>> import symgrad as sg
>>> c, ys = sg.scan(lambda c, x: (c + x, c * x), sg.constant(0.0), sg.constant([1.0, 2.0]))
>>> sg.evaluate([c, ys], {})
[array(3.), array([0., 2.])]
"""

from __future__ import annotations

import numpy as np

from ..errors import ShapeError
from ..ops.opdef import structural


def _check_carry(new, old, what: str, t: int) -> np.ndarray:
    new = np.asarray(new)
    if new.shape != np.shape(old):
        raise ShapeError(f"{what}: carry {t} changed shape from {np.shape(old)} to {new.shape} "
                         "during the loop; a carry must keep its shape")
    return new.astype(np.asarray(old).dtype, copy=False)


def run_scan(body, args: tuple, n_carry: int, n_x: int, length, reverse: bool, run=None,
             checkpoint=None, replay=None, run_replay=None):
    """Final carries + stacked ys + carry history (the carry entering every ``checkpoint``-th
    step, in step order; every step in xs order without checkpoints). ``replay``: the
    first xs are a checkpointed forward scan's history, replayed per segment (reverse mode)."""
    run = run or body.run
    carries = [np.asarray(a) for a in args[:n_carry]]
    xs = [np.asarray(a) for a in args[n_carry:n_carry + n_x]]
    caps = args[n_carry + n_x:]
    skip = replay["n_carry"] if replay else 0
    per_step = xs[skip:]
    lengths = {x.shape[0] for x in per_step}
    if len(lengths) > 1:
        raise ShapeError(f"sg.scan: xs have different lengths {sorted(lengths)} along axis 0")
    steps = per_step[0].shape[0] if per_step else int(length)
    replayer = None
    if replay:       # the last inputs: the forward scan's captures, then its init (unread)
        n_fwd, n_init = replay["n_caps"], replay.get("n_init", 0)
        end = len(caps) - n_init
        replayer = Replay(replay, xs[:skip], xs[skip:skip + replay["n_x"]],
                          caps[end - n_fwd:end], steps, run_replay)
        caps = caps[:end - n_fwd]
    k = checkpoint or 1
    n_y = len(body.outputs) - n_carry
    hist = [np.empty(((steps + k - 1) // k,) + c.shape, c.dtype) for c in carries]
    ys = [None] * n_y
    for s, t in enumerate(range(steps - 1, -1, -1) if reverse else range(steps)):
        if s % k == 0:
            for h, c in zip(hist, carries):
                h[s // k if k > 1 else t] = c
        step_x = [x[t] for x in per_step]
        if replayer is not None:
            step_x = replayer.carries_at(t) + step_x
        outs = run(carries + step_x, caps)
        carries = [_check_carry(o, c, "sg.scan", j) for j, (o, c) in
                   enumerate(zip(outs[:n_carry], carries))]
        for j, y in enumerate(outs[n_carry:]):
            if ys[j] is None:
                ys[j] = np.empty((steps,) + np.shape(y), body.outputs[n_carry + j].dtype)
            ys[j][t] = y
    for j in range(n_y):
        if ys[j] is None:
            o = body.outputs[n_carry + j]
            ys[j] = np.zeros((0,) + tuple(d or 0 for d in o.shape), o.dtype)
    return carries + ys + hist


class Replay:
    """The carries of a checkpointed forward scan, recomputed one segment of ``k`` steps at
    a time from its stored checkpoints (so only one segment is held at once)."""

    def __init__(self, replay: dict, checkpoints: list, xs: list, caps: tuple, steps: int,
                 run=None):
        self.body, self.k, self.reverse = replay["body"], replay["k"], replay["reverse"]
        self.n = replay["n_carry"]
        self.checkpoints, self.xs, self.caps, self.steps = checkpoints, xs, caps, steps
        self.run = run or self.body.run
        self.segment, self.values = None, []

    def carries_at(self, t: int) -> list:
        s = self.steps - 1 - t if self.reverse else t       # the forward step of xs index t
        m = s // self.k
        if m != self.segment:
            carries = [c[m] for c in self.checkpoints]
            self.values = []
            for s2 in range(m * self.k, min((m + 1) * self.k, self.steps)):
                self.values.append(carries)
                t2 = self.steps - 1 - s2 if self.reverse else s2
                outs = self.run(carries + [x[t2] for x in self.xs], self.caps)
                carries = [np.asarray(o, dtype=c.dtype) for o, c in zip(outs[:self.n], carries)]
            self.segment = m
        return list(self.values[s - m * self.k])


def _scan_numpy(*args, body, n_carry, n_x, length, reverse, checkpoint, replay, index):
    key = ("scan", n_carry, n_x, length, reverse, checkpoint, repr(replay))
    results = body.memo(args, key, lambda: run_scan(body, args, n_carry, n_x, length, reverse,
                                                    checkpoint=checkpoint, replay=replay))
    return np.array(results[index], copy=True)


def scan_layout(body, n_carry: int, steps, checkpoint=None) -> list:
    """(shape, dtype) of every output: carries, ys, histories."""
    k = checkpoint or 1
    carries = [(t.shape, t.dtype) for t in body.inputs[:n_carry]]
    ys = [((steps,) + o.shape, o.dtype) for o in body.outputs[n_carry:]]
    kept = steps if k == 1 or steps is None else (steps + k - 1) // k
    hist = [((kept,) + s, d) for s, d in carries]
    return carries + ys + hist


def _scan_infer(*inputs, body, n_carry, n_x, length, reverse, checkpoint, replay, index):
    skip = replay["n_carry"] if replay else 0
    steps = inputs[n_carry + skip].shape[0] if n_x > skip else length
    return scan_layout(body, n_carry, steps, checkpoint)[index]


def _scan_vjp(g, out, *inputs, **attrs):
    from .adjoint import scan_vjp
    return scan_vjp(g, out, inputs, attrs)


SCAN = structural(
    "scan", _scan_numpy, _scan_infer, vjp=_scan_vjp, public=False,
    compiled_step="symgrad.compile.loops.cpu:scan_step",
    doc="one output of sg.scan (attrs: the traced body, index of the output)")


# --- while_loop -------------------------------------------------------------------------------
def run_while(cond, body, args: tuple, n_vars: int, n_body_caps: int, cond_pos: tuple,
              maximum_iterations, run=None, run_cond=None):
    """Final loop variables + the carry history of the iterations taken."""
    run, run_cond = run or body.run, run_cond or cond.run
    values = [np.asarray(a) for a in args[:n_vars]]
    caps = args[n_vars:]
    body_caps = caps[:n_body_caps]
    cond_caps = [caps[p] for p in cond_pos]
    hist: list = [[] for _ in values]
    limit = np.inf if maximum_iterations is None else int(maximum_iterations)
    steps = 0
    while steps < limit:
        (go,) = run_cond(values, cond_caps)
        if not bool(go):
            break
        for h, v in zip(hist, values):
            h.append(v)
        outs = run(values, body_caps)
        values = [_check_carry(o, v, "sg.while_loop", j) for j, (o, v) in
                  enumerate(zip(outs, values))]
        steps += 1
    stacked = [np.array(h, dtype=v.dtype).reshape((len(h),) + v.shape)
               for h, v in zip(hist, values)]
    return values + stacked


def _while_numpy(*args, cond, body, n_vars, n_body_caps, cond_pos, maximum_iterations, index):
    key = ("while", n_vars, maximum_iterations)
    results = body.memo(args, key, lambda: run_while(cond, body, args, n_vars, n_body_caps,
                                                     cond_pos, maximum_iterations))
    return np.array(results[index], copy=True)


def _while_infer(*inputs, cond, body, n_vars, n_body_caps, cond_pos, maximum_iterations,
                 index):
    var = inputs[index % n_vars]
    if index < n_vars:
        return var.shape, var.dtype
    return (None,) + var.shape, var.dtype


def _while_vjp(g, out, *inputs, **attrs):
    from .adjoint import while_vjp
    return while_vjp(g, out, inputs, attrs)


WHILE = structural(
    "while_loop", _while_numpy, _while_infer, vjp=_while_vjp, public=False,
    compiled_step="symgrad.compile.loops.cpu:while_step",
    doc="one output of sg.while_loop: a final loop variable, or the carry history")


# --- cond ---------------------------------------------------------------------------------------
def _cond_numpy(pred, *caps, true_body, false_body, false_pos, index):
    if bool(np.asarray(pred)):
        return true_body.run([], caps[:len(true_body.captures)])[index]
    return false_body.run([], [caps[p] for p in false_pos])[index]


def _cond_infer(pred, *caps, true_body, false_body, false_pos, index):
    o = true_body.outputs[index]
    return o.shape, o.dtype


def _cond_vjp(g, out, pred, *caps, **attrs):
    from .adjoint import cond_vjp
    return cond_vjp(g, out, caps, attrs)


COND = structural(
    "cond", _cond_numpy, _cond_infer, vjp=_cond_vjp, public=False,
    doc="one output of sg.cond: only the branch the predicate picks runs")


from . import adjoint  # noqa: E402  (the reverse loops build these records)
adjoint.OPS.update(scan=SCAN, while_loop=WHILE, cond=COND)
