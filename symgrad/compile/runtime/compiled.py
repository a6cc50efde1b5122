"""What a compiled function runs with: ``CompiledFunction`` (the callable and its plan),
the names bound into a generated module (``bind_runtime``), and the call-time shape
rules (``iteration_shape``). Shared by the cpu targets (``function.py``) and the cuda
target (``cuda_runtime.py``)."""

from __future__ import annotations

import html
import importlib
import re
import warnings
from typing import Any, Optional

import numpy as np

from ...errors import (ArgumentError, CompileError, FallbackWarning, FeedError, ShapeError,
                       SymgradError)
from ...evaluate import evaluate, run_node
from ...feeds import bind_keywords, check_feed, function_label
from ...graph.tensor import Tensor
from ...outputs import OutputMode
from ...shapes import format_shape
from .explain import explain
from ..kernel_lib.deferred import numba_imported
from .hooks import DISTRIBUTED
from ..plan.regions import Kernel, Plan, Step
from .variants import pattern, with_fixed_axes
from . import specialise
from ..cpu.native_kernels import paths as scalar_paths
from ..cpu.native_loops import paths as loop_paths
from ..cpu.workspace import Workspaces


class CompiledFunction:
    """A compiled graph: ``f(*arrays)``; ``f.source``, ``f.sympy``, ``f.plan``,
    ``f.explain()``."""

    def __init__(self, inputs, outputs, target, plan, module, source, key,
                 mode: OutputMode):
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.target = target
        self.plan = plan
        self.module = module
        self.source = source
        self.key = key
        self.output_mode = mode if isinstance(mode, OutputMode) else OutputMode.of(mode)
        self._run = module.run
        self._sympy = None
        self.math = "fast"        # set by sg.function: the math mode compiled
        self.compiler = None      # set by sg.function: itself, to compile variants
        self.passes: list = []    # set by sg.function: its PassRecords (compile/passes.py)
        self.label = function_label(self.inputs, self.outputs)
        module.__dict__["label_"] = self.label     # how the driver's errors name this function

    max_specialised = specialise.MAX_SPECIALISED
    """How many per-call variants this function keeps when it specialises (LRU)."""

    def __call__(self, *args):
        return self._run(*args)

    def _start_specialising(self, nests: bool = True, lazy: bool = True) -> None:
        """Specialise per call (``specialise.py``) when the target has loop nests, a
        placeholder has an unknown length and the plan a pair kernel left flat for it;
        decided at the first call for a warm function (its plan is made on first use)."""
        if not nests or not any(None in p.shape for p in self.inputs):
            return
        if lazy and type(self.plan).__name__ == "LazyPlan":
            type(self).__call__ = _deciding_call
        elif specialise.wants_specialising(self.plan):
            self._specialiser = specialise.Specialiser(self)
            self._specialise_state = "on"
            type(self).__call__ = specialise.specialising_call

    def _stop_specialising(self, why: str) -> None:
        self._specialise_state = why
        type(self).__call__ = staticmethod(self.module.run)

    @property
    def specialised(self) -> list:
        """The lengths of the per-call variants kept, most recently used last:
        ``[((input, axis, length), ...), ...]`` (empty when the function does not
        specialise; ``compile/runtime/specialise.py``)."""
        s = self.__dict__.get("_specialiser")
        return list(s.variants) if s is not None else []

    @property
    def workspaces(self) -> Workspaces:
        """The large temporaries kept between calls (``compile/cpu/workspace.py``):
        ``.nbytes()`` held, ``.allocated`` buffers allocated so far, ``.enabled``."""
        return self.module.__dict__["WORKSPACES_"]

    def release_buffers(self) -> int:
        """Frees the temporaries this function keeps between calls (and its variants');
        returns the bytes released. The next call allocates them again."""
        held = self.workspaces.release()
        kept = self.__dict__.get("_specialiser")
        for variant in [*self.__dict__.get("_variants", {}).values(),
                        *(kept.variants.values() if kept is not None else ())]:
            held += variant.release_buffers()
        return held

    def _reference(self, args: tuple):
        """Calls that break an assumption of the plan: dask arrays go to
        symgrad.distributed; length-1 arguments broadcasting against another length run a
        variant compiled for that pattern (``variants.py``); what is left raises a
        ShapeError naming this function (or, if numpy can run it, warns once and runs
        ``sg.evaluate``)."""
        if any(_is_dask(a) for a in args):       # dask arrays: symgrad.distributed
            return DISTRIBUTED["call_dask"](self, args)
        if len(args) != len(self.inputs):
            self._run(*args)
        arrays = [check_feed(p, a, self.label, argument=True) for p, a in zip(self.inputs, args)]
        fixed = pattern(self.inputs, arrays)
        if fixed:
            return self._variant(fixed)(*arrays)
        return self._evaluate(arrays, "the arguments' unknown lengths differ where the plan "
                              "took them as equal")

    def _variant(self, fixed: tuple) -> "CompiledFunction":
        """The function compiled with the axes in ``fixed`` of length 1 (cached)."""
        variants = self.__dict__.setdefault("_variants", {})
        if fixed not in variants:
            inputs, outputs = with_fixed_axes(self.inputs, self.outputs, fixed)
            # sg.function itself, set by function.py (which builds on this module)
            variants[fixed] = self.compiler(inputs, self.output_mode.given(outputs),
                                            target=self.target, math=self.math)
            variants[fixed].label = self.label
            variants[fixed].module.__dict__["label_"] = self.label
        return variants[fixed]

    def _evaluate(self, arrays: list, why: str):
        """The numpy reference interpreter, its errors named after this function."""
        outputs = self.output_mode.given(self.outputs)
        try:
            result = evaluate(outputs, dict(zip(self.inputs, arrays)))
        except SymgradError as exc:
            raise type(exc)(str(exc).replace("sg.evaluate", self.label, 1)) from None
        if not self.__dict__.get("_warned"):
            self._warned = True
            warnings.warn(f"{self.label}: ran this call with the numpy reference interpreter "
                          f"(sg.evaluate), not its compiled kernels, because {why}; the "
                          "values are the same, the speed is not", FallbackWarning,
                          stacklevel=4)
        return result

    def __reduce__(self):
        """Pickles by graph and key, rebuilt once per process (symgrad/distributed)."""
        return DISTRIBUTED["reduce_function"](self)

    @property
    def sympy(self) -> dict:
        """{output name: the sympy formula of one element of that output, in terms of the
        placeholders} (``sg.to_sympy``); an output with no index formula (a matmul, ...)
        maps to the string ``"no formula: ..."`` saying why. None outputs are left out."""
        if self._sympy is None:
            from ...errors import NoFormulaError
            from ...symbolic import formulas
            self._sympy = {}
            for o in self.outputs:
                if o is None:
                    continue
                try:
                    (self._sympy[o.name],) = formulas([o])
                except NoFormulaError as exc:
                    self._sympy[o.name] = "no formula: " + str(exc).removeprefix("sg.to_sympy: ")
        return self._sympy

    def njit_driver(self, name: str, prefix: str) -> tuple:
        """Its driver as ``def <name>(v0, ...)`` that numba compiles, written from its plan
        (``cpu/njit_driver.py``): (text, names bound from its module, "") or
        (None, [], why). A fused while loop calls its cond and body this way."""
        from ..cpu.njit_driver import njit_driver
        return njit_driver(self.plan, self.math, self.target, self._single, name, prefix)

    @property
    def _single(self) -> bool:
        """Whether one output was given (``output_mode`` is ``OutputMode.SINGLE``)."""
        return self.output_mode.single

    def explain(self, passes: bool = False) -> str:
        """A readable report of the plan: each kernel or step with its ops, loop shape,
        reads and writes; every temporary with its bytes; the rule behind each fusion
        boundary (see ``compile/runtime/explain.py`` and docs/compiler.md). ``passes=True`` adds
        the compile's passes in order, with their seconds and what each decided."""
        text = explain(self.plan, self.target, self.inputs,
                       getattr(self.module, "REUSED", None),
                       {**scalar_paths(self.module), **loop_paths(self.module)})
        extra = specialise.describe(self)
        if extra:
            text += "\n" + extra
        if passes:
            from ..passes import pass_lines
            text += "\n" + "\n".join(pass_lines(self.passes))
        return text

    def _repr_pretty_(self, printer, cycle: bool) -> None:
        printer.text(repr(self) if cycle else repr(self) + "\n" + self.explain())

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(repr(self))}\n{html.escape(self.explain())}</pre>"

    def __repr__(self) -> str:
        ins = ", ".join(f"{p.name}: {p.dtype.name}{format_shape(p.shape)}" for p in self.inputs)
        outs = ", ".join("None" if o is None else repr(o.name) for o in self.outputs)
        return (f"<sg.function target={self.target!r} inputs=({ins}) outputs=[{outs}] "
                f"kernels={len(self.plan.kernels)}>")

    def _compile_error(self, exc: Exception) -> CompileError:
        lines = self.source.splitlines()
        shown = []
        for match in re.finditer(r"symgrad_gen_\w+\.py\", line (\d+)", str(exc)):
            n = int(match.group(1))
            if 0 < n <= len(lines):
                kernel = next((lines[k] for k in range(n - 1, -1, -1)
                               if lines[k].startswith("# kernel")), "")
                shown.append(f"  line {n}: {lines[n - 1].strip()}\n  in {kernel[2:]}")
        where = "\n".join(dict.fromkeys(shown)) or "  (no generated line was named)"
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return CompileError(f"sg.function: numba could not compile the generated code:\n"
                            f"{where}\n  numba: {first}\n  module: {self.module.__file__}")


def _deciding_call(f, *args, **kwargs):
    """The first call of a warm function with unknown lengths: decide, then call."""
    type(f).__call__ = staticmethod(f.module.run)
    f._start_specialising(lazy=False)
    return f(*args, **kwargs)


def _numba_errors() -> tuple:
    """(numba's NumbaError,), or a class nothing raises while numba is not imported (a
    deferred module binds numba's when it imports numba: ``deferred.materialize``)."""
    if not numba_imported():
        return (_NoNumbaError,)
    from numba.core.errors import NumbaError
    return (NumbaError,)


class _NoNumbaError(Exception):
    """Never raised: the driver's ``except NumbaError_`` before numba is imported."""


def _threads(module) -> Optional[int]:
    """numba's thread count for the driver's parallel chunks; None (bound by
    ``deferred.materialize``) in a module that has none while numba is not imported."""
    if numba_imported() or "NTHREADS" in getattr(module, "__symgrad_source__", "NTHREADS"):
        import numba

        return numba.get_num_threads()
    return None


def bind_runtime(module, plan: Plan, inputs: list, target: Optional[str] = None,
                 compiler: Any = None) -> None:
    """Bind what the generated driver uses but cannot print. A step whose record names a
    ``compiled_step`` (loops) runs that on the cpu targets, with ``compiler``
    (``sg.function``, passed down by the entry) to compile its body; else its numpy forward."""
    names = ", ".join(p.name for p in inputs)
    context = f"f({names})"
    ns = module.__dict__
    ns["NTHREADS"] = _threads(module)
    for k, p in enumerate(plan.graph.placeholders):
        ns[f"D{k}"] = p.dtype
    for node in plan.graph.order:
        if node.is_const:
            ns[f"C{node.index}"] = node.value
    for unit in plan.units:
        if isinstance(unit, Step):
            ns[f"S{unit.node.index}"] = _step(unit.node.tensor, lambda: ns.get("label_", context),
                                              target, compiler)
    placeholders = plan.graph.placeholders

    def label() -> str:              # set by CompiledFunction: names its outputs too
        return ns.get("label_", context)

    def check_(k: int, value: Any) -> np.ndarray:
        if _is_dask(value):      # run again by reference_, which hands it to dask
            raise Fallback()
        try:
            return check_feed(placeholders[k].tensor, value, label(), argument=True)
        except (FeedError, ArgumentError) as exc:
            raise type(exc)(str(exc)) from None

    def arity_(args: tuple) -> None:
        raise ArgumentError(f"{label()}: takes {len(placeholders)} arguments "
                            f"({names or 'none'}), got {len(args)}")

    kernels = {k.index: k for k in plan.kernels}

    def bshape_(index: int, *shapes) -> tuple:
        kernel = kernels[index]
        return iteration_shape(kernel, shapes, label())

    def broadcast_(value, shape: tuple, index: int, j: int):
        """``np.broadcast_to`` of input ``j`` of kernel ``index``; a ShapeError naming it
        where this call's lengths do not fit a length the plan fixed (a constant's)."""
        try:
            return np.broadcast_to(value, shape)
        except ValueError:
            name = kernels[index].inputs[j].name
            raise ShapeError(f"{label()}: '{name}' has shape {tuple(value.shape)} in this "
                             f"call, which does not broadcast to {tuple(shape)}, a shape the "
                             "graph fixed (a constant or a known length); check the "
                             "arguments' lengths") from None

    def bind_(args: tuple, kwargs: dict) -> tuple:
        return bind_keywords([p.tensor for p in placeholders], args, kwargs, label())

    pool = ns.get("WORKSPACES_") or Workspaces()   # one per module: its kept temporaries
    ns.update(scalars_=scalars_, F64_=np.float64, broadcast_=broadcast_, check_=check_,
              arity_=arity_, bshape_=bshape_, fallback_=fallback_, bind_=bind_,
              Fallback_=Fallback, NumbaError_=_numba_errors()[0], WORKSPACES_=pool,
              take_=pool.take, give_=pool.give)


_F64 = np.dtype(np.float64)


def scalars_(*values) -> Any:
    """The values of all-scalar float64 arguments (Python floats, numpy float64 scalars,
    0-d float64 arrays) for a driver's fast path, or None where one is anything else (the
    driver then checks each argument as usual)."""
    out = []
    for v in values:
        t = type(v)
        if t is float or t is np.float64:
            out.append(v)
        elif t is np.ndarray and v.dtype is _F64 and v.shape == ():
            out.append(float(v))
        else:
            return None
    return out


class Fallback(Exception):
    """Raised by the driver when a call breaks an assumption of the plan (two unknown
    lengths that the plan took as equal are not): the call runs the reference path."""


def iteration_shape(kernel: Kernel, shapes: tuple, context: str) -> tuple:
    """The runtime iteration shape of a kernel, or a ShapeError naming its inputs.

    Inputs read directly along a symbolic axis must have exactly its length (a length 1
    that would broadcast raises Fallback); other unknown lengths broadcast as numpy does.
    """
    it = kernel.dims
    rank = len(it)
    out = [d if not isinstance(d, str) else None for d in it]
    for node, shape in zip(kernel.inputs, shapes):
        lead = rank - len(shape)
        for p, a in enumerate(shape):
            j = lead + p
            d = node.dims[p]
            direct = isinstance(d, str) and d == it[j]
            if not direct and a == 1:
                continue
            if out[j] is None:
                out[j] = a
            elif out[j] != a:
                if direct and (a == 1 or out[j] == 1):
                    raise Fallback()
                described = ", ".join(f"'{i.name}' {tuple(s)}" for i, s in
                                      zip(kernel.inputs, shapes))
                raise ShapeError(f"{context}: the arguments give shapes that cannot be broadcast"
                                 f" together: {described}")
    return tuple(1 if d is None else d for d in out)


def _is_dask(value: Any) -> bool:
    """A dask collection (checked without importing dask)."""
    return hasattr(type(value), "__dask_graph__")


def fallback_() -> None:
    raise Fallback()


def _step(tensor: Tensor, label, target: Optional[str] = None, compiler: Any = None):
    maker = tensor.op.compiled_step
    if maker is not None and compiler is not None:     # host targets pass a compiler
        module, _, name = maker.partition(":")
        return getattr(importlib.import_module(module), name)(tensor, target, compiler)

    def run(*args):
        try:
            return run_node(tensor, list(args))
        except SymgradError as exc:     # name the compiled function, not sg.evaluate
            raise type(exc)(str(exc).replace("sg.evaluate", label(), 1)) from None
    run.static_ = (tuple(tensor.shape), tensor.dtype)   # the eager dry run's phantom result
    return run
