"""``sg.function``: graphs compiled to fused numba kernels.

Pipeline (one module per job)::

    fold.py      fold_graph(outputs, inputs) -> FoldedGraph of LNodes: identities removed,
                 constant subgraphs computed, duplicates merged; uniform constants marked
    hoist.py     hoist_invariants(graph): costly subexpressions of broadcast operands become
                 nodes of the smaller shape (computed once, not once per broadcast row)
    regions.py   build_plan(graph) -> Plan: elementwise regions + the sums they feed
    lower.py     lower_kernel(kernel) -> LoweredKernel: sympy per output, one cse
    printer.py   NumbaPrinter: scalar sympy -> numba source (target independent)
    templates.py the scalar body ``_k<i>_point`` and the cpu / parallel loop nests
    driver.py    the generated module: kernels + ``run(*args)``, the Python driver
    cache.py     module files keyed by a hash, imported via sys.modules (numba cache=True)
    function.py  sg.function: the passes above, in order, each timed (progress.py)
    runtime.py   CompiledFunction, the names bound into a generated module, call shapes
    explain.py   CompiledFunction.explain(): the plan as a readable report
    oprules.py   what the compiler knows about particular ops, keyed by their records
    progress.py  phase timings: logging.getLogger("symgrad") and a terminal progress line
    rewrite.py   graph rewrites during folding (outer products, reuse of computed f(x))
    nest.py      nest_plan(plan) -> Plan: loop nests (reduce -> elementwise -> broadcast)
    scatter.py   fused scatters; gather.py stencil adjoints as gathers; access.py InputAccess
    vecmath.py   vectorisable exp/log/sin/...; support.py scalar njit helpers
    cuda_templates.py, cuda_driver.py, cuda_runtime.py  the cuda target: kernels, the
                 generated driver (a ModuleWriter), the runtime (numba.cuda only there)

The plan (for a new target such as CUDA)
----------------------------------------
``Plan.units`` is the execution order, a list of two kinds of unit:

* ``Step(node)``: one structural LNode (matmul, transpose, reshape, getitem, scatter,
  reduce_max, ...) run with numpy between kernels; views where numpy gives them.
* ``Kernel(index, shape, nodes, inputs, outputs)``: one loop nest over the static
  iteration ``shape`` (None = known at call time; the runtime shape is the broadcast of
  the inputs' shapes, see ``function.iteration_shape``). ``nodes`` are the region's
  elementwise LNodes in topological order; ``inputs`` the LNodes it reads (placeholders,
  constants, results of earlier units), each read with numpy broadcasting against
  ``shape`` (``templates.input_access`` gives the subscript; uniform constants are not
  inputs, they are inlined as numbers). ``outputs`` are ``KernelOutput(node, source,
  axes, mean)``: ``node is source`` means "store the region node ``source``", otherwise
  ``node`` is a fused reduce_sum / reduce_mean / unbroadcast of ``source`` summing over
  iteration ``axes`` (keepdims shape; the driver reshapes and divides for a mean).

``lower_kernel`` turns a kernel into sympy: ``symbols[k]`` for ``inputs[k]``, one
expression per distinct output source, and one ``sympy.cse`` over them
(``replacements``, ``results``). ``templates.body_source`` prints that as the scalar
function ``_k<i>_point(*inputs) -> tuple`` with ``NumbaPrinter``: a CUDA target can
compile the same text as a device function and wrap it in a grid-stride loop that
reads ``inputs`` with the same subscripts and writes/accumulates ``outputs`` (atomics or
per-block partial sums for reductions).
"""

from .function import CompiledFunction, function

__all__ = ["CompiledFunction", "function"]
