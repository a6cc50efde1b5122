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

from typing import Any, Optional

from ..graph.tensor import Tensor
from ..graph.traversal import placeholders_of, topological_order
from ..outputs import output_list
from .cache import modules as cache
from .cache.key import CODEGEN_VERSION, compile_key
from .cpu.driver import PARALLEL_THRESHOLD, ModuleWriter
from .cpu.eager import compile_module, dispatchers
from ..collector import paused_gc
from .plan.fold import fold_graph
from .plan.hoist import hoist_invariants
from .codegen.lower import lower_kernel
from .nest import Nest, nest_plan
from .plan.oprules import PLACEHOLDER
from .passes import Context, Pass, run_passes
from .printing.printer import MATH_MODES
from .progress import Phases, label, progress_stream
from .plan.regions import Step, build_plan
from .runtime.compiled import CompiledFunction, Fallback, bind_runtime, iteration_shape
from .targets import NAMES as TARGETS, get as get_target
from .cache import warm
from .cache.numba_files import has_cache_file
from ..numba_internals import enabled as internals_enabled
from .scalar import lower_region, region_of, scalar_graph
from .scalar import settings as scalar_settings

__all__ = ["function", "CompiledFunction", "Fallback", "bind_runtime", "iteration_shape",
           "CODEGEN_VERSION", "PIPELINE", "DEVICE_PIPELINE"]


def _as_inputs(inputs: Any, outputs: list) -> tuple:
    """(the placeholders ``inputs``, checked against ``outputs``; the ``topological_order``
    of ``outputs``, which the warm cache reads again)."""
    inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    for k, p in enumerate(inputs):
        if not isinstance(p, Tensor) or p.op is not PLACEHOLDER:
            raise TypeError(f"sg.function: inputs[{k}] must be a placeholder, got "
                            f"{p!r}")
    if len({id(p) for p in inputs}) != len(inputs):
        raise ValueError("sg.function: a placeholder appears twice in inputs")
    names = [p.name for p in inputs]
    order = topological_order([o for o in outputs if o is not None])
    needed = placeholders_of(order)
    given = {id(p) for p in inputs}
    for p in needed:
        if id(p) not in given:
            raise ValueError(f"sg.function: the outputs depend on placeholder '{p.name}', "
                             f"which is not among inputs ({', '.join(names) or 'none'}); "
                             "add it to inputs")
    return inputs, order


# The pipeline: each pass takes the compile's Context, sets what it computes and returns
# what it decided (listed by ``f.explain(passes=True)``, docs/compiler.md).

class _Miss(Exception):
    """The module a warm record names is not in the cache (or does not verify)."""


def _no_build() -> str:
    raise _Miss()


def warm_pass(ctx: Context) -> str:
    """A cache hit without folding: the record under the unfolded graph's key (warm.py)
    and the verified module it names; on a miss the cold pipeline runs."""
    order = ctx.extra.get("order")
    key = ctx.extra["graph key"] = warm.graph_key(ctx.inputs, ctx.outputs, ctx.spec.name,
                                                  ctx.mode, ctx.math, order)
    found = warm.load(key, ctx.inputs, ctx.outputs, order)
    if found is None:
        return f"{key[:16]}: miss, compiling"
    try:
        ctx.module, ctx.source, _ = cache.load_or_build(found[0], _no_build)
    except _Miss:
        return f"{key[:16]}: module {found[0][:16]} not cached, compiling"
    ctx.key, ctx.plan, ctx.built, ctx.extra["warm"] = found[0], found[1], False, True
    ctx.extra["fold settings"] = warm.fold_settings()
    return f"{key[:16]}: hit, module {found[0][:16]} verified; not folded or planned"


def store_pass(ctx: Context) -> str:
    warm.store(ctx.extra["graph key"], ctx.inputs, ctx.outputs, ctx.plan, ctx.key,
               ctx.extra.get("order"))
    return f"warm record {ctx.extra['graph key'][:16]} -> module {ctx.key[:16]}"


def _replan(ctx: Context):
    """The plan of a warm function, made when first asked for (explain, distributed)."""
    again = Context(ctx.inputs, ctx.outputs, ctx.mode, ctx.spec, ctx.math,
                    Phases("replan", stream=None))
    with warm.settings_applied(ctx.extra["fold settings"]):
        run_passes(again, FRONT[:4])
    return again.plan


def fold_pass(ctx: Context) -> str:   # then loop invariants out of broadcast axes (hoist.py)
    ctx.graph, hoisted = hoist_invariants(fold_graph(ctx.outputs, ctx.inputs))
    ctx.graph.hoisted = hoisted
    return f"{len(ctx.graph.order)} nodes after folding" + \
        (f", {len(hoisted)} hoisted out of broadcast axes" if hoisted else "")


def scalar_pass(ctx: Context) -> str:
    """Regions of small static tensors become one scalar kernel each (compile/scalar)."""
    if ctx.spec.device or not scalar_settings.ENABLED:
        return "none: " + (f"target {ctx.spec.name!r} has no scalar kernels"
                           if ctx.spec.device else "turned off")
    ctx.graph, regions = scalar_graph(ctx.graph)
    ctx.extra["scalar regions"] = regions
    limit = "by cost" if scalar_settings.SCALAR_ELEMENTS is None else \
        f"tensors of at most {scalar_settings.SCALAR_ELEMENTS} elements"
    if not regions:
        return f"none ({limit})"
    nodes = sum(len(r.members) for r in regions)
    return (f"{len(regions)} scalar kernel{'s' * (len(regions) != 1)} of {nodes} nodes "
            f"({limit})")


def plan_pass(ctx: Context) -> str:   # cuda runs getitem_grad as steps
    ctx.plan = build_plan(ctx.graph, scatter=ctx.spec.scatter)
    steps = sum(isinstance(u, Step) for u in ctx.plan.units)
    kernels = len(ctx.plan.kernels)
    return (f"{kernels} kernel{'s' * (kernels != 1)}, {steps} step{'s' * (steps != 1)}"
            + ("" if ctx.spec.scatter else "; getitem_grad as steps (no scatter kernels)"))


def nests_pass(ctx: Context) -> str:
    if not ctx.spec.nests:
        return f"none: target {ctx.spec.name!r} has no loop nests"
    ctx.plan = nest_plan(ctx.plan, pair_loops=not ctx.spec.device)
    nests = [u for u in ctx.plan.units if isinstance(u, Nest)]
    return f"{len(nests)} loop nest{'s' * (len(nests) != 1)}" + \
        (f" over kernels {', '.join(str(k.index) for n in nests for k in n.kernels)}"
         if nests else "")


def key_pass(ctx: Context) -> str:
    ctx.key = compile_key(ctx.graph, ctx.spec.name, ctx.mode, ctx.math)
    return f"{ctx.key[:16]} (graph, target {ctx.spec.name!r}, {ctx.mode.value} output, " \
        f"math {ctx.math!r}, versions)"


def module_pass(ctx: Context) -> str:
    """The generated module: the verified cached one, else lowered, printed and written."""
    def build() -> str:
        with ctx.phases.phase("lower and cse"):
            lowered = [lower_kernel(k) for k in ctx.plan.kernels]
            scalars = [lower_region(region_of(u.node)) for u in ctx.plan.units
                       if isinstance(u, Step) and region_of(u.node) is not None]
        with ctx.phases.phase("print"):
            writer = ModuleWriter(ctx.plan, lowered, ctx.spec.name, ctx.key, ctx.math,
                                  scalars)
            writer.single = ctx.mode.single
            return writer.source()

    ctx.module, ctx.source, ctx.built = cache.load_or_build(ctx.key, build)
    lines = ctx.source.count("\n") + 1
    return (f"generated: lowered and printed ({lines} lines)" if ctx.built else
            f"verified cache hit ({lines} lines)")


def bind_pass(ctx: Context) -> str:
    """The runtime names bound into the module, and the CompiledFunction around it."""
    module = ctx.module
    # loops compile their bodies with sg.function on host targets (the device runs them
    # on the host: cuda/steps.py)
    bind_runtime(module, ctx.plan, ctx.inputs, ctx.spec.name,
                 None if ctx.spec.device else function)
    # A class per function whose __call__ is the generated driver itself: no extra frame.
    cls = type("CompiledFunction", (CompiledFunction,), {"__call__": staticmethod(module.run)})
    plan = warm.LazyPlan(lambda: _replan(ctx)) if ctx.extra.get("warm") else ctx.plan
    f = cls(ctx.inputs, ctx.outputs, ctx.spec.name, plan, module, ctx.source, ctx.key,
            ctx.mode)
    cache.attach(module, f)
    f.cache_hit = not ctx.built
    ctx.function = f
    return f"runtime bound; calls run {module.__name__}.run"


def _numba_label(ctx: Context) -> str:
    """"numba load" where numba's cache holds files of the module's functions (none where
    the module was built now, or where its numba compile was interrupted before numba saved
    anything), else "numba compile"; ``numba_pass`` corrects it if numba did otherwise."""
    if ctx.built:
        return "numba compile"
    return "numba load" if any(map(has_cache_file, dispatchers(ctx.module).values())) \
        else "numba compile"


def _counts(dispatcher) -> tuple:
    """(compiles, cache loads) numba has counted for ``dispatcher`` so far (numba internals;
    (0, 0) without them)."""
    if not internals_enabled():
        return 0, 0
    return tuple(sum(getattr(dispatcher, name, {}).values())
                 for name in ("_cache_misses", "_cache_hits"))


def numba_pass(ctx: Context) -> str:
    found = dispatchers(ctx.module).values()
    before = [_counts(d) for d in found]
    runs = compile_module(ctx.module, ctx.inputs,
                          PARALLEL_THRESHOLD if ctx.spec.threads else 0,
                          "ENTRIES_" in ctx.module.__dict__, ctx.built)
    compiled, loaded = (sum(_counts(d)[i] - b[i] for d, b in zip(found, before)) for i in (0, 1))
    if not (compiled or loaded):       # numba's counters unread (SYMGRAD_NUMBA_INTERNALS=0)
        how = "compiled" if ctx.built else "loaded from numba's cache"
        return f"{how} for the signatures of {runs} dry run{'s' * (runs != 1)} of the driver"
    ctx.phases.relabel("numba compile" if compiled else "numba load")
    return (f"{compiled} compiled, {loaded} loaded from numba's cache, for the signatures "
            f"of {runs} dry run{'s' * (runs != 1)} of the driver")


def device_module_pass(ctx: Context) -> str:
    """The device target builds, caches and binds its module itself (numba.cuda is
    imported only there, compile/cuda/runtime.py)."""
    from .cuda.runtime import compile_cuda  # imports numba.cuda: only for device targets
    ctx.function = compile_cuda(ctx.inputs, ctx.outputs, ctx.plan, ctx.key, ctx.mode)
    return f"{ctx.spec.kernels_run}; module key {ctx.function.key[:16]}"


FRONT = [Pass("fold", fold_pass), Pass("scalar", scalar_pass, phase=None), Pass("plan", plan_pass),
         Pass("nests", nests_pass), Pass("key", key_pass, phase=None)]
PIPELINE = FRONT + [
    Pass("module", module_pass, phase="module (cache or build)"),
    Pass("bind", bind_pass, phase=None),
    Pass("numba compile", numba_pass, phase=lambda ctx: _numba_label(ctx)),
]
"""The cpu targets' passes, in order (after ``WARM``'s miss, then ``STORE``)."""
WARM = [Pass("warm key", warm_pass, phase=None)]
"""First for the cpu targets: a hit runs ``WARM_TAIL`` only (no fold, plan or key)."""
WARM_TAIL = PIPELINE[-2:]
STORE = [Pass("warm record", store_pass, phase=None)]
DEVICE_PIPELINE = FRONT + [
    Pass("device module", device_module_pass, phase=lambda ctx: f"{ctx.spec.name} module"),
]
"""The device (cuda) target's passes, in order."""


def function(inputs: Any, outputs: Any, target: str = "cpu",
             math: str = "fast", progress: Optional[bool] = None) -> CompiledFunction:
    """Compile ``outputs`` as functions of the placeholders ``inputs``; every numba function
    the call runs is compiled (or loaded from numba's cache) before this returns.

    ``math="fast"`` (default) computes exp, expm1, log, log1p, sin, cos, tanh, sigmoid and
    softplus in loop kernels with symgrad's vectorisable forms (at most 1-4 ulp, libm's
    special values; docs/vecmath.md); ``math="libm"`` calls libm as numba does. The cuda
    target always uses the device's math library. ``progress``: show the compile's phases
    on stderr, one line per phase (None: when stderr is a terminal and the compile takes over
    2 s, unless ``SYMGRAD_PROGRESS=1`` or ``0`` says always or never). Ctrl-C ends a build
    with one line (a ``KeyboardInterrupt``); the caches stay valid."""
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
    outputs, mode = output_list(outputs, "sg.function")
    inputs, order = _as_inputs(inputs, outputs)
    name = label([p.name for p in inputs]) + \
        ("" if spec is get_target("cpu") else f" target={spec.name!r}")   # the default unnamed
    phases = Phases(name, target=target, **progress_stream(progress))
    ctx = Context(inputs, outputs, mode, spec, math, phases)
    ctx.extra["order"] = order        # the user's graph, walked once (warm.py reads it)
    # Ctrl-C: one line (cache files are written atomically); Python's cycle collector held
    # off: each collection walks every live object (the graph, sympy's terms, the plan), a
    # third of a 100,000-node build (it catches up when the build ends)
    with phases.running(), paused_gc():
        if spec.device:
            run_passes(ctx, DEVICE_PIPELINE)
        else:
            run_passes(ctx, WARM)
            run_passes(ctx, WARM_TAIL if ctx.extra.get("warm") else PIPELINE + STORE)
    f = ctx.function
    f.math, f.compiler, f.passes = math, function, ctx.records
    f._start_specialising(spec.nests)     # unknown lengths: nests per call's lengths
    phases.done()
    return f
