"""An ``sg.while_loop`` whose cond and body drivers run under numba is one njit loop.

``cpu.while_step`` compiles the cond and the body with ``sg.function`` (their numba
compile deferred). Where each driver is made only of what numba runs (static buffers,
serial loop kernels, scalar kernels, views, ``sg.linalg.solve``: each compiled function
writes its driver's njit form from its plan, ``cpu/njit_driver.py``), the loop
module (text: ``c<j>`` loop variables, ``p<j>`` body captures, ``q<j>`` cond captures,
``h<j>`` the carry history) holds both drivers as njit functions and ``loop_``, which runs
``while n < maximum_iterations and cond(c): h[n] = c; c = body(c)`` in one njit call:
TF's semantics, the Python loop's (``records.run_while``) results, the history included
(the gradient of a while loop reads it). The history is written into arrays of a capacity
the caller gives; where they fill, ``loop_`` returns and is called again with larger
ones (``run_fused_while``), so no step is taken twice. Otherwise the Python loop over the
compiled bodies runs and ``FusedWhile.reason`` says why (``f.explain()``).

A warm build reads neither plan: the loop module's key is kept beside the body's module
(``warm.remember``, sealed) and loaded from the cache by it.

``fused.ENABLED = False`` turns this off with the fused scan.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from .fused import _copy
from .loop_module import build, recall, remember

__all__ = ["FusedWhile", "fused_while", "run_fused_while", "compile_now"]

FIRST_CAPACITY = 8
PAYBACK_S = 0.5
"""Seconds a while loop runs as a Python loop before its fused loop is compiled (about
what that compile costs: the rent-or-buy rule, never more than twice the best choice's
time). A build never compiles it (a warm cache loads it); 0 fuses on the first call."""
"""Iterations the history arrays hold at first (then x4 each time they fill)."""


class FusedWhile:
    """The fused loop of one while loop (``loop`` None where it cannot be: ``reason``)."""

    def __init__(self, loop=None, reason: str = "", variables: tuple = (),
                 body_caps: tuple = (), cond_caps: tuple = ()):
        self.loop, self.reason = loop, reason
        self.variables = variables      # (shape, dtype) of each loop variable
        self.body_caps, self.cond_caps = body_caps, cond_caps

    def __repr__(self) -> str:
        return f"FusedWhile({'fused' if self.loop else 'python loop: ' + self.reason})"


def _spec(tensors) -> tuple:
    return tuple((tuple(t.shape), np.dtype(t.dtype)) for t in tensors)


def _source(module_b: str, module_c: str, body_fn: str, cond_fn: str, names_b: list,
            names_c: list, variables: tuple, n_body_caps: int, n_cond_caps: int) -> str:
    n = len(variables)
    cs = [f"c{j}" for j in range(n)]
    ps = [f"p{j}" for j in range(n_body_caps)]
    qs = [f"q{j}" for j in range(n_cond_caps)]
    hs = [f"h{j}" for j in range(n)]
    carries = "".join(c + ", " for c in cs)
    lines = ["import sys", "", "import numba", "import numpy as np", "",
             f"B_ = sys.modules[{module_b!r}]", f"Q_ = sys.modules[{module_c!r}]"]
    lines += [f"b{x} = B_.{x}" for x in names_b if x != "lapack_solve_"]
    lines += [f"q{x} = Q_.{x}" for x in names_c if x != "lapack_solve_"]
    if "lapack_solve_" in names_b + names_c:
        lines.append("from symgrad.compile.loops.lapack import solve_ as lapack_solve_")
    jit = "@numba.njit(cache=NUMBA_CACHE, error_model='numpy')"
    lines += ["", "", jit, body_fn, "", "", jit, cond_fn, "", "", jit,
              f"def loop_(limit, n, {', '.join(cs + ps + qs + hs)}):",
              "    capacity = h0.shape[0]",
              "    while n < limit:",
              f"        go = cond_({', '.join(cs + qs)})[0]",
              "        if not go[()]:",
              f"            return n, True, {carries}",
              "        if n >= capacity:",
              f"            return n, False, {carries}"]
    for j, (shape, _) in enumerate(variables):
        lines += _copy(f"h{j}", "n", f"c{j}", shape, "        ")
    lines += [f"        {carries}= body_({', '.join(cs + ps)})",
              "        n += 1",
              f"    return n, True, {carries}"]
    return "\n".join(lines) + "\n"


def fused_while(body, cond, run_body, run_cond, n_vars: int, n_body_caps: int,
                cond_pos: tuple, build_new: bool = True) -> Optional[FusedWhile]:
    """The fused loop of a while loop whose body and cond compiled as ``run_body`` and
    ``run_cond`` (``cpu.compiled_body``), cached on the body's function. ``build_new``
    False: only a loop already made or in the warm cache (None where there is none)."""
    fb = getattr(run_body, "function_", None)
    fc = getattr(run_cond, "function_", None)
    if fb is None or fc is None:
        return FusedWhile(reason="the body is not a compiled function")
    held = getattr(fb, "fused_while_", None)
    if held is not None and held[0] is fc:
        return held[1]
    made = _make(body, cond, fb, fc, n_vars, n_body_caps, build_new)
    if made is not None:
        fb.fused_while_ = (fc, made)
    return made


def _make(body, cond, fb, fc, n_vars: int, n_body_caps: int,
          build_new: bool = True) -> Optional[FusedWhile]:
    tensors = list(body.inputs) + list(body.captures) + list(cond.captures) + \
        list(body.outputs)
    if not all(all(isinstance(d, int) for d in t.shape) for t in tensors):
        return FusedWhile(reason="a loop value has an unknown length")
    for j in range(n_vars):
        i, o = body.inputs[j], body.outputs[j]
        if tuple(i.shape) != tuple(o.shape) or i.dtype != o.dtype:
            return FusedWhile(reason=f"loop variable {j} changes shape or dtype")
    if tuple(cond.outputs[0].shape) != () or cond.outputs[0].dtype.kind != "b":
        return FusedWhile(reason="the cond is not a scalar bool")
    spec = (_spec(body.inputs[:n_vars]), _spec(body.captures), _spec(cond.captures))
    made = lambda loop: FusedWhile(loop, "", *spec)   # noqa: E731
    parts = f"{fb.key}|{fc.key}|{n_vars}|{spec!r}" if fb.key and fc.key else None
    loop_module, _ = recall("fused while", parts)
    if loop_module is not None:   # a warm build: the loop module without the plans
        loop_module.BODY_FUNCTIONS_ = (fb, fc)
        return made(loop_module.loop_)
    if not build_new:
        return None
    texts = []
    for f, name, prefix in ((fb, "body_", "b"), (fc, "cond_", "q")):
        try:
            text, names, why = f.njit_driver(name, prefix)     # from its plan
        except Exception as exc:                 # noqa: BLE001 (a plan we cannot read)
            return FusedWhile(reason=f"the body's plan cannot be read ({type(exc).__name__})")
        if text is None:
            return FusedWhile(reason=f"{'cond' if prefix == 'q' else 'body'}: {why}")
        texts.append((text, names))
    text = _source(fb.module.__name__, fc.module.__name__, texts[0][0], texts[1][0],
                   texts[0][1], texts[1][1], spec[0], len(body.captures),
                   len(cond.captures))
    try:
        loop_module, key = build("fused while", text)
    except Exception as exc:                     # noqa: BLE001 (the Python loop still runs)
        return FusedWhile(reason=f"the loop module did not load ({type(exc).__name__})")
    loop_module.BODY_FUNCTIONS_ = (fb, fc)  # the bodies' modules stay loaded with the loop
    remember("fused while", parts, {"loop": key})
    return made(loop_module.loop_)


def _take(values, spec) -> Optional[list]:
    out = []
    for a, (shape, dtype) in zip(values, spec):
        a = np.asarray(a)
        if a.shape != shape:
            return None
        out.append(np.require(a, dtype, ("C", "W")))   # one numba type: writeable, C
    return out


def run_fused_while(fused: FusedWhile, args: tuple, n_vars: int, n_body_caps: int,
                    cond_pos: tuple, maximum_iterations) -> Optional[list]:
    """``run_while``'s results (final variables, then their histories) through the fused
    loop; None: take the Python loop (it raises the errors symgrad names)."""
    caps = args[n_vars:]
    carries = _take(args[:n_vars], fused.variables)
    body_caps = _take(caps[:n_body_caps], fused.body_caps)
    cond_caps = _take([caps[p] for p in cond_pos], fused.cond_caps)
    if carries is None or body_caps is None or cond_caps is None or fused.loop is None:
        return None
    limit = (1 << 62) if maximum_iterations is None else max(int(maximum_iterations), 0)
    capacity = min(limit, FIRST_CAPACITY)
    hist = [np.empty((capacity,) + s, d) for s, d in fused.variables]
    n = 0
    from numba.core.errors import NumbaError   # the fused loop is numba's: numba is imported

    while True:
        try:
            n, done, *carries = fused.loop(limit, n, *carries, *body_caps, *cond_caps, *hist)
        except NumbaError as exc:        # numba could not compile it: the Python loop runs
            fused.loop = None
            fused.reason = f"numba could not compile the fused loop ({type(exc).__name__})"
            return None
        except Exception:  # noqa: BLE001 - a singular solve...: the Python loop names it
            return None
        if done:
            break
        capacity = min(limit, 4 * capacity)
        grown = [np.empty((capacity,) + s, d) for s, d in fused.variables]
        for g, h in zip(grown, hist):
            g[:n] = h[:n]
        hist = grown
    return [np.asarray(c) for c in carries] + [h[:n] for h in hist]


def compile_now(fused: FusedWhile, n_vars: int, n_body_caps: int, cond_pos: tuple) -> None:
    """Compile the loop (zero iterations on dummy arrays) during ``sg.function``'s dry run."""
    if fused.loop is None:
        return
    dummy = [np.zeros(s, d) for s, d in fused.variables + fused.body_caps]
    cond = [np.zeros(s, d) for s, d in fused.cond_caps]
    by_position = dummy[n_vars:]      # the cond's captures at the positions cond_pos names
    for p, c in zip(cond_pos, cond):
        while len(by_position) <= p:
            by_position.append(None)
        by_position[p] = c
    run_fused_while(fused, tuple(dummy[:n_vars] + by_position), n_vars, n_body_caps,
                    cond_pos, 0)
