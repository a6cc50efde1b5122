"""``sg.function``: graphs compiled to fused numba kernels.

Where things live (docs/compiler.md has the full map; imports flow one way, top to
bottom, checked by tests/test_compile_structure.py)::

    function.py   sg.function: checks, the passes in order (passes.py), progress.py
    targets/      cpu, parallel, cuda: each target's options and explain lines
    cuda/         the CUDA backend (kernels, driver, device steps, runtime)
    cpu/          the CPU backend: module driver, nest loop writer, workspaces, eager compile
    runtime/      CompiledFunction (compiled.py), shape variants, f.explain()
    loops/        loops that stay loops: a Python loop over the body, or one njit loop
    cache/        module files by key, trust (authenticated files), warm records
    nest/         which chains become loop nests (match), what a nest is (ir), pair rules
    scalar/       small static regions as one straight-line kernel (docs/scalar_code.md)
    codegen/      lower (kernel -> sympy with one cse), templates (point functions), llvm/
    plan/         fold, rewrite, hoist, regions (kernels and steps), scatter, gather, masks
    printing/     scalar sympy -> numba text (printer, powers, rootcmp)
    kernel_lib/   what generated code imports: support, vecmath, threaded_matmul
    linalg/       linear algebra

The plan (for a new target such as CUDA)
----------------------------------------
``Plan.units`` is the execution order, a list of two kinds of unit:

* ``Step(node)``: one structural LNode (matmul, transpose, reshape, getitem, scatter,
  reduce_max, ...) run with numpy between kernels; views where numpy gives them.
* ``Kernel(index, shape, nodes, inputs, outputs)``: one loop nest over the static
  iteration ``shape`` (None = known at call time; the runtime shape is the broadcast of
  the inputs' shapes, see ``runtime.compiled.iteration_shape``). ``nodes`` are the region's
  elementwise LNodes in topological order; ``inputs`` the LNodes it reads (placeholders,
  constants, results of earlier units), each read with numpy broadcasting against
  ``shape`` (``codegen.templates.input_access`` gives the subscript; uniform constants are not
  inputs, they are inlined as numbers). ``outputs`` are ``KernelOutput(node, source,
  axes, mean)``: ``node is source`` means "store the region node ``source``", otherwise
  ``node`` is a fused reduce_sum / reduce_mean / unbroadcast of ``source`` summing over
  iteration ``axes`` (keepdims shape; the driver reshapes and divides for a mean).

``lower_kernel`` turns a kernel into sympy: ``symbols[k]`` for ``inputs[k]``, one
expression per distinct output source, and one ``sympy.cse`` over them
(``replacements``, ``results``). ``codegen.templates.body_source`` prints that as the scalar
function ``_k<i>_point(*inputs) -> tuple`` with ``NumbaPrinter``: a CUDA target can
compile the same text as a device function and wrap it in a grid-stride loop that
reads ``inputs`` with the same subscripts and writes/accumulates ``outputs`` (atomics or
per-block partial sums for reductions).
"""

__all__ = ["CompiledFunction", "function"]


def __getattr__(name: str):
    """``function`` and ``CompiledFunction`` load the compiler (numba among it) on first use,
    so that ``import symgrad`` stays light (issue 29 item 5; tests/test_import_time.py)."""
    if name in __all__:
        from . import function as module
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
