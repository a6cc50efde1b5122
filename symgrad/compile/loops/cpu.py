"""Compiled loops on the cpu targets: the body is compiled ONCE, the loop runs over it.

The loop record names ``scan_step`` / ``while_step`` (``OpDef.compiled_step``); the
generated driver calls the callable they return where it would call the numpy forward.
The body graph is cloned with its captures as placeholders and compiled with
``sg.function`` (same target, passed down by the entry) the first time the loop runs, so
compile time does not depend on the trip count. A scan whose body compiled to one scalar
kernel runs as one njit loop (``fused.py``); otherwise every step calls that compiled
function from a Python loop (``records.run_scan`` / ``run_while``). A while loop whose
cond and body drivers numba can run (``cpu/njit_driver.py``) runs as one njit loop
(``fused_while.py``). A body that may be fused is compiled with its numba compile
deferred (``state.deferring``): the fused loop compiles only what it calls, and the body's
own driver compiles (``finish``) only when the Python loop is what runs.
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

from ...graph.tensor import Tensor
from ...control.body import Body, stand_in
from ...control.records import run_scan, run_while
from . import fused, fused_while
from .state import deferring, is_dry_run

__all__ = ["compiled_body", "finish", "loop_place", "scan_step", "while_step"]


def _clone(body: Body) -> tuple:
    """(placeholders for inputs then captures, outputs) of a copy of the body graph."""
    caps = [stand_in(c, "capture") for c in body.captures]
    new = {id(t): t for t in body.inputs}
    new.update((id(c), p) for c, p in zip(body.captures, caps))
    for node in body.order:
        if id(node) in new:
            continue
        new[id(node)] = Tensor(node.op, tuple(new[id(i)] for i in node.inputs), node.attrs,
                               node.shape, node.dtype, node.name)
    return list(body.inputs) + caps, [new[id(o)] for o in body.outputs]


def compiled_body(body: Body, target: str, function: Callable, defer: bool = False) -> Callable:
    """``run(inputs, captures) -> list`` of the body compiled by ``function`` (sg.function)
    for ``target``, once (cached on the body). ``defer``: leave the body driver's numba
    compile for later (a scan that may be fused calls only the kernel's ``_into`` form;
    ``finish`` compiles the rest when the driver is what runs); without it a deferred
    compile is done now."""
    cache = body.compiled if isinstance(body.compiled, dict) else {}
    body.compiled = cache
    if target not in cache:
        inputs, outputs = _clone(body)
        if defer:
            with deferring():
                f = function(inputs, outputs, target=target)
        else:
            f = function(inputs, outputs, target=target)

        def run(values, caps, f=f):
            return f(*values, *caps)
        run.function_ = f
        cache[target] = run
    if not defer:
        finish(cache[target])
    return cache[target]


def finish(run: Callable) -> None:
    """Compile what ``compiled_body(..., defer=True)`` left (the body's driver runs)."""
    module = getattr(getattr(run, "function_", None), "module", None)
    later = getattr(module, "COMPILE_LATER_", None)
    if later is not None:
        del module.COMPILE_LATER_
        later()


def _dry_value(tensor: Tensor) -> np.ndarray:
    """A stand-in result for a dry run (unknown dims: 1, a history's length: 0)."""
    shape = tuple(1 if d is None else d for d in tensor.shape)
    if tensor.shape and tensor.shape[0] is None:
        shape = (0,) + shape[1:]
    return np.zeros(shape, tensor.dtype)


def loop_place(node, target: str) -> str:
    """How a scan or while step runs, for ``f.explain()`` ("" for any other step): one
    fused njit loop, or the Python loop over the compiled body and why."""
    tensor = getattr(node, "tensor", None)
    step = getattr(getattr(tensor, "op", None), "compiled_step", None)
    if step == "symgrad.compile.loops.cpu:while_step":
        return _while_place(tensor, target)
    if tensor is None or tensor.op.compiled_step != "symgrad.compile.loops.cpu:scan_step":
        return ""
    a = tensor.attrs
    if a["replay"] is not None:
        return "Python loop over the compiled body (replays checkpointed segments)"
    if not fused.ENABLED:
        return "Python loop over the compiled body (fused loops off)"
    run = (a["body"].compiled or {}).get(target)
    held = getattr(getattr(run, "function_", None), "fused_scan_", None)
    if held is None:
        return "Python loop over the compiled body"
    if held[1].loop is not None:
        return "one njit loop over the body's scalar kernel"
    return f"Python loop over the compiled body: {held[1].reason}"


def _while_place(tensor: Tensor, target: str) -> str:
    if not fused.ENABLED:
        return "Python loop over the compiled body (fused loops off)"
    run = (tensor.attrs["body"].compiled or {}).get(target)
    held = getattr(getattr(run, "function_", None), "fused_while_", None)
    if held is None:
        return ("Python loop over the compiled body (fused after "
                f"{fused_while.PAYBACK_S:g} s of Python loop)")
    if held[1].loop is not None:
        return "one njit loop over the cond's and body's drivers"
    return f"Python loop over the compiled body: {held[1].reason}"


def scan_step(tensor: Tensor, target: str, function: Callable) -> Callable:
    a = tensor.attrs
    body = a["body"]
    may_fuse = a["replay"] is None

    def fused_loop():
        """The body's fused loop, or None (the Python loop runs: its driver compiled)."""
        run = compiled_body(body, target, function, defer=may_fuse and fused.ENABLED)
        if may_fuse and fused.ENABLED:
            loop = fused.fused_scan(body, run, a["n_carry"], a["n_x"])
            if is_dry_run():
                fused.compile_now(loop, a["n_carry"], a["n_x"])
            if loop.loop is not None:
                return loop
        finish(run)
        return None

    def step(*args):
        replay = a["replay"]
        if is_dry_run():
            fused_loop()
            if replay:
                compiled_body(replay["body"], target, function)
            return _dry_value(tensor)
        key = ("scan", a["n_carry"], a["n_x"], a["length"], a["reverse"], a["checkpoint"],
               repr(replay))

        def compute():
            loop = fused_loop()
            if loop is not None:
                done = fused.run_fused(loop, args, a["n_carry"], a["n_x"], a["length"],
                                       a["reverse"], a["checkpoint"])
                if done is not None:
                    return done
            run = compiled_body(body, target, function)
            run_replay = compiled_body(replay["body"], target, function) if replay else None
            return run_scan(body, args, a["n_carry"], a["n_x"], a["length"], a["reverse"],
                            run=run, checkpoint=a["checkpoint"], replay=replay,
                            run_replay=run_replay)
        results = body.memo(args, key, compute)
        return np.array(results[a["index"]], copy=True)
    return step


def while_step(tensor: Tensor, target: str, function: Callable) -> Callable:
    a = tensor.attrs
    body, cond = a["body"], a["cond"]
    n_vars, n_caps, cond_pos = a["n_vars"], a["n_body_caps"], a["cond_pos"]

    spent = [0.0]    # seconds this loop has run as a Python loop, toward the payback

    def fused_loop(build: bool):
        """The fused while loop, or None (the Python loop runs: the drivers compiled).

        A fused loop costs a numba compile of its own, so it is built when the Python
        loop has spent ``fused_while.PAYBACK_S`` running (a warm cache loads it at once):
        a build is never slower for it, and a loop that runs long is fused."""
        run = compiled_body(body, target, function)
        run_cond = compiled_body(cond, target, function)
        if not fused.ENABLED:
            return None
        new = not build and spent[0] >= fused_while.PAYBACK_S
        loop = fused_while.fused_while(body, cond, run, run_cond, n_vars, n_caps, cond_pos,
                                       build_new=new)
        if loop is None:
            return None
        if is_dry_run() or new:
            fused_while.compile_now(loop, n_vars, n_caps, cond_pos)
        return loop if loop.loop is not None else None

    def step(*args):
        if is_dry_run():
            fused_loop(build=True)
            return _dry_value(tensor)
        key = ("while", n_vars, a["maximum_iterations"])

        def compute():
            loop = fused_loop(build=False)
            if loop is not None:
                done = fused_while.run_fused_while(loop, args, n_vars, n_caps, cond_pos,
                                                   a["maximum_iterations"])
                if done is not None:
                    return done
            start = time.perf_counter()
            try:
                return run_while(cond, body, args, n_vars, n_caps, cond_pos,
                                 a["maximum_iterations"],
                                 run=compiled_body(body, target, function),
                                 run_cond=compiled_body(cond, target, function))
            finally:
                spent[0] += time.perf_counter() - start
        results = body.memo(args, key, compute)
        return np.array(results[a["index"]], copy=True)
    return step
