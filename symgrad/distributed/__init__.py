"""Compiled functions on dask arrays: chunk by chunk, combined exactly (docs/dask.md).

Calling a compiled function with dask arrays returns dask arrays, lazily. The batch axis
(the leading None dim of a placeholder) is split into the chunks of the arguments; each
output either keeps it (chunked like the inputs) or combines the rows (a tree reduction
of per-chunk partials). ``import symgrad`` never imports dask; this package imports it
only when a call with dask arrays reaches ``call_dask``.

>>> import numpy as np, symgrad as sg
>>> import dask.array as da
>>> x = sg.placeholder("x", shape=(None,))
>>> loss = sg.reduce_mean(sg.square(x))
>>> f = sg.function([x], [loss, sg.gradients(loss, x)[0]])
>>> value, grad = f(da.arange(6.0, chunks=4))
>>> value.chunks, grad.chunks
((), ((4, 2),))
>>> round(float(value.compute()), 4), grad.compute().round(3).tolist()
(9.1667, [0.0, 0.333, 0.667, 1.0, 1.333, 1.667])
"""

from __future__ import annotations

from typing import Any


def call_dask(f: Any, args: tuple) -> Any:
    """``f(*args)`` where some arguments are dask arrays: dask arrays out, nothing computed."""
    from ..extras import require
    require("dask.array", extra="dask", why="sg.function calls on dask arrays")
    from ..compile.targets import get as get_target
    from .analysis import analyse
    from .execute import Runner
    from .inputs import prepare
    from .rounds import chunk_plan

    if not get_target(f.target).distributable:
        raise ValueError(f"sg.function: dask arrays need target 'cpu' or 'parallel', this "
                         f"function was compiled for {f.target!r}")
    arrays, rows = prepare(f.inputs, list(args))
    from .specialize import needs_specializing, specialize

    shapes = tuple(a.shape[1:] if p.shape[:1] == (None,) else a.shape
                   for p, a in zip(f.inputs, arrays))
    key = shapes if needs_specializing(f.inputs) else None
    plans = f.__dict__.setdefault("_dask_plans", {})   # built at the first call, then reused
    plan = plans.get(key)
    if plan is None:
        inputs, outputs = f.inputs, f.outputs
        if key is not None:
            inputs, outputs = specialize(inputs, outputs, [a.shape for a in arrays])
        plan = plans[key] = chunk_plan(analyse(inputs, outputs), f.target, math_of(f))
    f._dask_plan = plan
    context = f"f({', '.join(p.name for p in f.inputs)})"
    results = Runner(plan, arrays, rows, context).outputs()
    return f.output_mode.pack(results)


def math_of(f: Any) -> str:
    """The math mode ``f`` was compiled with: ``sg.function`` sets it on every function."""
    return f.math


from ..compile.runtime.hooks import DISTRIBUTED  # noqa: E402
from .pickling import reduce_function  # noqa: E402

DISTRIBUTED.update(call_dask=call_dask, reduce_function=reduce_function)
