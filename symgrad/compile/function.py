"""``sg.function``: compile a graph to a callable that runs fused numba kernels.

>>> import numpy as np, symgrad as sg
>>> x = sg.placeholder("x", shape=(3,))
>>> y = sg.reduce_sum(sg.sin(x) * x)
>>> f = sg.function([x], [y, sg.gradients(y, x)[0]])
>>> value, grad = f(np.array([0.0, 1.0, 2.0]))
>>> value.shape, grad.round(4)
((), array([0.    , 1.3818, 0.077 ]))
"""

from __future__ import annotations

import hashlib
from typing import Any, Optional

from ..evaluate import output_list
from ..graph.tensor import Tensor
from ..graph.traversal import placeholders_of, topological_order
from . import cache
from .driver import PARALLEL_THRESHOLD, ModuleWriter
from .eager import compile_module
from .fold import fold_graph
from .lower import lower_kernel
from .nest import nest_plan
from .oprules import PLACEHOLDER
from .printer import MATH_MODES
from .progress import Phases, progress_stream
from .regions import build_plan
from .runtime import CompiledFunction, Fallback, bind_runtime, iteration_shape
from .targets import NAMES as TARGETS, get as get_target

__all__ = ["function", "CompiledFunction", "Fallback", "bind_runtime", "iteration_shape"]

CODEGEN_VERSION = "2"


def _as_inputs(inputs: Any, outputs: list) -> list:
    inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    for k, p in enumerate(inputs):
        if not isinstance(p, Tensor) or p.op is not PLACEHOLDER:
            raise TypeError(f"sg.function: inputs[{k}] must be a placeholder, got "
                            f"{p!r}")
    if len({id(p) for p in inputs}) != len(inputs):
        raise ValueError("sg.function: a placeholder appears twice in inputs")
    names = [p.name for p in inputs]
    needed = placeholders_of(topological_order([o for o in outputs if o is not None]))
    given = {id(p) for p in inputs}
    for p in needed:
        if id(p) not in given:
            raise ValueError(f"sg.function: the outputs depend on placeholder '{p.name}', "
                             f"which is not among inputs ({', '.join(names) or 'none'}); "
                             "add it to inputs")
    return inputs


def function(inputs: Any, outputs: Any, target: str = "cpu",
             math: str = "fast", progress: Optional[bool] = None) -> CompiledFunction:
    """Compile ``outputs`` as functions of the placeholders ``inputs``; every numba function
    the call runs is compiled (or loaded from numba's cache) before this returns.

    ``math="fast"`` (default) computes exp, expm1, log, log1p, sin, cos, tanh, sigmoid and
    softplus in loop kernels with symgrad's vectorisable forms (at most 1-4 ulp, libm's
    special values; docs/vecmath.md); ``math="libm"`` calls libm as numba does. The cuda
    target always uses the device's math library. ``progress``: show the compile's phases
    on stderr (None: when stderr is a terminal and the compile takes over 2 s)."""
    spec = get_target(target)
    if progress not in (None, True, False):
        raise ValueError(f"sg.function: progress must be None, True or False, got {progress!r}")
    if math not in MATH_MODES:
        raise ValueError(f"sg.function: unknown math {math!r}; use one of {MATH_MODES}")
    math = spec.math(math)
    from ..sparse.tensor import sparse_function   # sg.SparseTensor outputs: csr_array results
    sparse = sparse_function(function, inputs, outputs, target=target, math=math)
    if sparse is not None:
        return sparse
    outputs, single = output_list(outputs, "sg.function")
    inputs = _as_inputs(inputs, outputs)
    phases = Phases(f"f({', '.join(p.name for p in inputs)}) target={target!r}",
                    **progress_stream(progress))
    with phases.phase("fold"):
        graph = fold_graph(outputs, inputs)
    with phases.phase("plan"):   # cuda runs getitem_grad as steps and has no loop nests
        plan = build_plan(graph, scatter=spec.scatter)
        if spec.nests:
            plan = nest_plan(plan)
    text = "\n".join([graph.canonical(), target, str(single), math, cache.versions(),
                      CODEGEN_VERSION])
    key = hashlib.sha256(text.encode()).hexdigest()
    if spec.device:   # numba.cuda is imported only here (compile/targets/cuda.py)
        with phases.phase(f"{spec.name} module"):
            f = spec.compile(inputs, outputs, plan, key, single)
        f.math, f.compiler = math, function
        phases.done()
        return f

    def build() -> str:
        with phases.phase("lower and cse"):
            lowered = [lower_kernel(k) for k in plan.kernels]
        with phases.phase("print"):
            writer = ModuleWriter(plan, lowered, target, key, math)
            writer.single = single
            return writer.source()

    with phases.phase("module (cache or build)"):
        module, source, built = cache.load_or_build(key, build)
    bind_runtime(module, plan, inputs)
    # A class per function whose __call__ is the generated driver itself: no extra frame.
    cls = type("CompiledFunction", (CompiledFunction,), {"__call__": staticmethod(module.run)})
    f = cls(inputs, outputs, target, plan, module, source, key, single)
    module.__dict__.update(reference_=f._reference, compile_error_=f._compile_error)
    f.cache_hit, f.math, f.compiler = not built, math, function
    with phases.phase("numba compile" if built else "numba load"):
        compile_module(module, inputs, PARALLEL_THRESHOLD if spec.threads else 0,
                       "ENTRIES_" in module.__dict__)
    phases.done()
    return f
