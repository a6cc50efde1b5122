"""``CompiledFunction.explain()``: the plan as a readable report.

For each unit, in the order the driver runs them: a kernel's ops, loop shape, what it
reads and writes (stored values, sums, scatters); a step's op; a loop nest's kernels.
Then every temporary (a value one unit writes and a later unit reads, not an output) with
its bytes, for every fusion boundary (a kernel reading what another unit computed)
the rule that kept the two apart, and (cpu targets, only when there is one) a section
"loop nests": each pair-shaped kernel kept flat, or pair-shaped value a nest still
stores, with the nest rule that stopped it (``nest.nest_rejections``).

>>> import symgrad as sg
>>> x = sg.placeholder("x", shape=(3, 4))
>>> s = sg.sin(x, name="s")
>>> y = sg.reduce_sum(sg.exp(sg.transpose(s, name="sT")) * 2.0, name="y")
>>> print(sg.function([x], y).explain())
sg.function target='cpu': 2 kernels, 1 step, inputs x float64 (3, 4)
kernel 0  loop (3, 4)  ops: sin
  runs   numba function (its body checks sin/cos ranges (vecmath's fast forms run in numba functions))
  reads  x float64 (3, 4)
  writes s float64 (3, 4) (stored)
step      transpose 'sT' -> (4, 3) (numpy view)
kernel 1  loop (4, 3)  ops: exp, multiply
  runs   numba function (outside the IR writer's subset: a call of exp_f64)
  reads  sT float64 (4, 3)
  writes y float64 () (sum over axes (0, 1))
temporaries: 1, 96 bytes
  s float64 (3, 4): 96 bytes
fusion boundaries:
  step 'sT' -> kernel 1: sT is a transpose step (structural ops run between kernels)
  kernel 0 -> step 'sT': transpose is structural (runs between kernels)
"""

from __future__ import annotations

from collections import Counter
from typing import Optional

from ...shapes import format_shape, is_fully_known
from ..plan.gather import gather_axes
from ..plan.hoist import hoist_lines
from ..codegen.lower import lower_kernel
from ..plan.masks import loop_masks, mask_band, predicate
from ..nest import (Nest, flat_pair_notes, gate_text, nest_factors, nest_gate,
                          nest_masks, nest_rejections, nest_symmetry)
from ..plan.oprules import VIEWS
from ..plan.regions import Kernel, Plan, Step
from ..targets import get as get_target
from ..scalar import SCALAR_KERNEL, SCALAR_OUTPUT, region_of, region_summary
from ..scalar import settings as scalar_settings



def _value(node) -> str:
    return f"{node.name} {node.dtype.name} {format_shape(node.shape)}"


def _bytes(node) -> Optional[int]:
    if not is_fully_known(node.shape):
        return None
    size = 1
    for d in node.shape:
        size *= d
    return size * node.dtype.itemsize


def _key_text(key: tuple) -> str:
    """``(slice(1, None),)`` as ``[1:]``."""
    def one(k) -> str:
        if isinstance(k, slice):
            text = ":".join("" if v is None else str(v) for v in (k.start, k.stop))
            return text + ("" if k.step is None else f":{k.step}")
        return "..." if k is Ellipsis else "None" if k is None else str(k)
    return "[" + ", ".join(one(k) for k in key) + "]"


def _output_text(out, k: Kernel) -> str:
    if out.is_scatter:
        parts = ", ".join(f"{o.source.name} at {_key_text(o.key)}" for o in k.outputs
                          if o.is_scatter and o.node is out.node)
        if gather_axes(k, "r") is not None:       # the template loops over the buffer
            return (f"{_value(out.node)} (gathered: one loop over its elements, each the sum "
                    f"of {parts}; no scatter)")
        return f"{_value(out.node)} (scatter-add of {parts})"
    if out.is_reduction:
        what = "mean" if out.mean else "sum"
        return f"{_value(out.node)} ({what} over axes {tuple(out.axes)})"
    return f"{_value(out.node)} (stored)"


def _kernel_lines(k: Kernel, label: str) -> list:
    ops = Counter(n.op.name for n in k.nodes)
    names = ", ".join(op if c == 1 else f"{op} x{c}" for op, c in sorted(ops.items()))
    lines = [f"{label}  loop {format_shape(k.dims or k.shape)}  ops: {names}"]
    lines += [f"  reads  {_value(i)}" for i in k.inputs]
    seen: set = set()
    for o in k.outputs:
        if id(o.node) not in seen:
            seen.add(id(o.node))
            lines.append(f"  writes {_output_text(o, k)}")
    return lines


def _step_line(step: Step, target: str) -> str:
    node = step.node
    how = get_target(target).step_place(node)
    return (f"step      {node.op.name} '{node.name}' -> {format_shape(node.shape)} ({how})")


def _units(plan: Plan, target: str, paths: Optional[dict] = None) -> list:
    lines = []
    place = get_target(target).kernel_place          # device targets: "device kernel"
    where = f"  ({place})" if place else ""
    for unit in plan.units:
        if isinstance(unit, Kernel):
            first, *rest = _kernel_lines(unit, f"kernel {unit.index}")
            path = (paths or {}).get(("kernel", unit.index))
            lines += [first + where, *([f"  runs   {path}"] if path else []), *rest]
        elif isinstance(unit, Nest):
            lines.append(f"nest {unit.index}  one loop over {format_shape(unit.outer.shape)} "
                         f"for kernels {', '.join(str(k.index) for k in unit.kernels)}"
                         + (f"  (one {place})" if place else ""))
            for k in unit.kernels:
                lines += ["  " + line for line in _kernel_lines(k, f"kernel {k.index}")]
        elif region_of(unit.node) is not None:
            lines += _scalar_lines(region_of(unit.node),
                                   getattr(plan.graph, "scalar_choices", ()),
                                   (paths or {}).get(unit.node.index))
        elif unit.node.op is not SCALAR_OUTPUT:     # named by its scalar kernel's lines
            lines.append(_step_line(unit, target))
    return lines


def _scalar_lines(region, choices, path: Optional[str] = None) -> list:
    limit = scalar_settings.SCALAR_ELEMENTS
    why = "" if limit is None else f" (tensors of at most {limit} elements)"
    lines = [f"scalar kernel {region.number}  per element, straight-line{why}  "
             f"{region_summary(region)}"]
    lines += [f"  cost: {c.text()}" for c in choices
              if c.chosen and c.members[0] is region.members[0]]
    if path:
        lines.append(f"  runs   {path}")
    lines += [f"  reads  {_value(i)}" for i in region.node.inputs]
    lines += [f"  writes {_value(o)}" for o in region.results]
    return lines


def _not_scalar_lines(plan: Plan) -> list:
    """Regions the cost model did not make one scalar kernel (``scalar/cost.py``; their
    lighter nodes may be in a smaller one), with its numbers."""
    lines = [f"  {len(c.members)} nodes from {c.members[0].name!r}: {c.text()}"
             for c in getattr(plan.graph, "scalar_choices", ()) if not c.chosen]
    return ["not one scalar kernel, by the scalar cost model:"] + lines if lines else []


def _scalar_source(node) -> Optional[str]:
    """``scalar kernel <n>`` for a value a scalar kernel writes."""
    if node.op is SCALAR_OUTPUT:
        return f"scalar kernel {region_of(node.inputs[0]).number}"
    return None


def _producers(plan: Plan) -> dict:
    """id(node) -> the unit that computes it."""
    out: dict = {}
    for unit in plan.units:
        if isinstance(unit, Step):
            out[id(unit.node)] = unit
            continue
        for k in (unit.kernels if isinstance(unit, Nest) else [unit]):
            for n in k.nodes:
                out[id(n)] = k
            for o in k.outputs:
                out[id(o.node)] = k
    return out


def _rule(node, producer, consumer: Kernel) -> str:
    """Why ``consumer`` reads ``node`` from memory instead of computing it in its loop."""
    if isinstance(producer, Step) and _scalar_source(node):
        return f"{node.name} is written by {_scalar_source(node)} (its own straight-line code)"
    if isinstance(producer, Step):
        return (f"{node.name} is a {node.op.name} step (structural ops run between kernels)")
    out = next((o for o in producer.outputs if o.node is node), None)
    if out is not None and out.is_scatter:
        what = "gathered" if gather_axes(producer, "r") is not None else "scatter"
        return f"{node.name} is a {what} buffer, complete only after kernel {producer.index}"
    if out is not None and out.is_reduction:
        return (f"{node.name} is a reduction, complete only after kernel {producer.index}'s "
                "loop")
    if producer.dims != consumer.dims:
        return (f"loop shapes differ: kernel {producer.index} {format_shape(producer.dims)} "
                f"vs kernel {consumer.index} {format_shape(consumer.dims)}")
    return (f"same loop shape, but kernel {consumer.index} also depends on kernel "
            f"{producer.index} through another unit (one loop would form a cycle)")


def _boundaries(plan: Plan, producers: dict) -> list:
    lines = []
    for k in plan.kernels:
        for i in k.inputs:
            producer = producers.get(id(i))
            if producer is None or producer is k:
                continue
            where = _scalar_source(i) or (f"step '{i.name}'" if isinstance(producer, Step)
                                          else f"kernel {producer.index}")
            lines.append(f"  {where} -> kernel {k.index}: {_rule(i, producer, k)}")
    for unit in plan.units:
        if not isinstance(unit, Step):
            continue
        region = region_of(unit.node)
        for i in unit.node.inputs:
            producer = producers.get(id(i))
            if isinstance(producer, Kernel) and region is not None:
                lines.append(f"  kernel {producer.index} -> scalar kernel {region.number}: "
                             f"{i.name} is not a small static tensor of the region")
            elif isinstance(producer, Kernel):
                lines.append(f"  kernel {producer.index} -> step '{unit.node.name}': "
                             f"{unit.node.op.name} is structural (runs between kernels)")
    return lines


def _stored(plan: Plan) -> list:
    """The kernel outputs written to arrays: a loop nest keeps its per-pair values (its pre
    kernels' sums, the outer values it does not store) in registers."""
    out = []
    for unit in plan.units:
        if isinstance(unit, Nest):
            out += [o for k in unit.kernels for _, o in unit.written(k)]
        elif isinstance(unit, Kernel):
            out += unit.outputs
    return out


def _temporaries(plan: Plan) -> list:
    """Values a unit writes to an array that are not outputs: (node, bytes or None)."""
    wanted = {id(o) for o in plan.outputs if o is not None}
    temps, seen = [], set()
    for o in _stored(plan):
        if id(o.node) not in wanted and id(o.node) not in seen:
            seen.add(id(o.node))
            temps.append((o.node, _bytes(o.node)))
    for unit in plan.units:
        if isinstance(unit, Step) and id(unit.node) not in wanted and \
                unit.node.op not in VIEWS and unit.node.op is not SCALAR_KERNEL:
            temps.append((unit.node, _bytes(unit.node)))
    return temps


def _reuse_lines(plan: Plan, reused: dict, temps: list) -> tuple:
    """(bytes of temporaries not allocated, lines naming each output stored into the dead
    buffer of an input, see ``reuse.py``)."""
    nodes = {n.index: n for n in plan.graph.order}
    for k in plan.kernels:
        nodes.update({o.node.index: o.node for o in k.outputs})
    temp_bytes = {n.index: b for n, b in temps}
    saved, lines = 0, []
    for out, dead in sorted(reused.items()):
        size = _bytes(nodes[dead])
        if out in temp_bytes:
            saved += temp_bytes[out] or 0
        lines.append(f"  {nodes[out].name} is stored into the dead buffer of "
                     f"{nodes[dead].name} ({size} bytes not allocated)")
    return saved, lines


def explain(plan: Plan, target: str, inputs: list, reused: Optional[dict] = None,
            paths: Optional[dict] = None) -> str:
    """The report of ``plan`` (see the module docstring); ``reused``: {output node index:
    input node index} for outputs the driver stores into a dead input's buffer; ``paths``:
    {scalar kernel node index: how it runs} (``cpu/native_kernels.paths``)."""
    kernels = len(plan.kernels)
    scalars = sum(isinstance(u, Step) and u.node.op is SCALAR_KERNEL for u in plan.units)
    steps = sum(isinstance(u, Step) and u.node.op not in (SCALAR_KERNEL, SCALAR_OUTPUT)
                for u in plan.units)
    ins = ", ".join(f"{p.name} {p.dtype.name} {format_shape(p.shape)}" for p in inputs)
    head = (f"sg.function target={target!r}: {kernels} kernel{'s' * (kernels != 1)}, "
            + (f"{scalars} scalar kernel{'s' * (scalars != 1)}, " if scalars else "")
            + f"{steps} step{'s' * (steps != 1)}, inputs {ins or 'none'}")
    spec = get_target(target)
    lines = [head] + ([f"kernels run as {spec.kernels_run}"] if spec.device else []) + \
        ([f"on the host: {spec.host_runs}"] if spec.host_runs else []) + \
        _units(plan, target, paths)
    temps = _temporaries(plan)
    known = sum(b for _, b in temps if b is not None)
    saved, reuse = _reuse_lines(plan, reused or {}, temps)
    lines.append(f"temporaries: {len(temps)}, {known} bytes"
                 + (" + unknown lengths" if any(b is None for _, b in temps) else "")
                 + (f", {known - saved} allocated" if reuse else ""))
    lines += [f"  {_value(n)}: {'?' if b is None else b} bytes" for n, b in temps]
    if reuse:
        lines.append("buffers reused:")
        lines += reuse
    lines += _not_scalar_lines(plan)
    bounds = _boundaries(plan, _producers(plan))
    lines.append("fusion boundaries:" + ("" if bounds else " none"))
    lines += bounds
    nesting = get_target(target).nests        # cuda has no nests
    rejections = nest_rejections(plan) if nesting else []
    nests = [u for u in plan.units if isinstance(u, Nest)] if nesting else []
    if rejections or nests:
        lines.append("loop nests:")
        lines += [f"  {r}" for r in rejections]
        lines += _nest_lines(nests) if get_target(target).pair_rules else \
            get_target(target).nest_lines(nests)   # a device target's own nest kernels
    hoisted = getattr(plan.graph, "hoisted", [])
    if hoisted:
        lines.append("hoisted out of broadcast axes (computed once per element of the "
                     "smaller shape):")
        lines += hoist_lines(hoisted)
    flat = flat_pair_notes(plan) if nesting else []
    if flat:
        lines.append("flat pair loops:")
        lines += [f"  {f}" for f in flat]
    masks = [] if get_target(target).device else _flat_mask_lines(plan)   # host loop templates
    if masks:
        lines.append("constant masks read as index predicates:")
        lines += masks
    return "\n".join(lines)


def _nest_lines(nests: list) -> list:
    """Per nest: which pairs its loop visits (``nest.nest_masks``), and each constant mask
    it reads as an index predicate."""
    lines = []
    for n in nests:
        lowered = {k.index: lower_kernel(k) for k in n.kernels}
        bands, skip = nest_masks(n, lowered)
        shape = format_shape(n.outer.shape)
        if skip is None and nest_symmetry(n, lowered):
            lines.append(f"  nest {n.index} visits only the (i0, i1) of {shape} with i0 <= i1: "
                         "the sum is symmetric in the pair (docs/pair_sums.md), so each "
                         "off-diagonal pair adds twice to its sums and into both rows")
        elif skip is None:
            lines.append(f"  nest {n.index} visits every (i0, i1) of {shape}: no rule visits "
                         "only i0 < i1 of a sum symmetric in the pair, so such a sum costs "
                         "about twice a hand loop over i0 < i1")
        else:
            lines.append(f"  nest {n.index} visits only the (i0, i1) of {shape} with "
                         f"{predicate(bands[skip][0], 'i0', 'i1')}: the constant mask "
                         f"{_name(n.outer, skip)!r} drops the others, which add exactly 0")
        gate = nest_gate(n, lowered)
        if gate is not None:
            lines.append(f"  nest {n.index} skips the pairs where {gate_text(n, gate)} is False "
                         "(a where() cutoff; they add exactly 0): they cost the pre sums and "
                         "that test only")
        for x, (r, c) in nest_factors(n).items():
            lines.append(f"  nest {n.index} reads the constant {_name(n.outer, x)!r} as its "
                         f"column {c} times its row {r} (an outer product; no (N, N) read)")
        for x, (b, _, _) in bands.items():
            lines.append(f"  nest {n.index} reads the constant {_name(n.outer, x)!r} as "
                         f"{predicate(b, 'i0', 'i1')} (no (N, N) read)")
    return lines


def _name(kernel: Kernel, x: int) -> str:
    return next(i.name for i in kernel.inputs if id(i) == x)


def _flat_mask_lines(plan: Plan) -> list:
    """Flat rank-2 kernels reading a constant mask as an index predicate
    (``masks.loop_masks``), and the pairs they visit."""
    from ..codegen.templates import input_access, output_accesses
    lines = []
    for k in plan.units:
        if not isinstance(k, Kernel) or k.rank != 2:
            continue
        subs = [input_access(i.dims, k.dims).index for i in k.inputs]
        if not any(mask_band(i, sub) for i, sub in zip(k.inputs, subs)):
            continue
        outs = output_accesses(k.outputs, 2, False)
        found, kept = loop_masks(lower_kernel(k), subs, all(o.mode != "store" for o in outs))
        for j in found:
            b = mask_band(k.inputs[j], subs[j])[0]
            lines.append(f"  kernel {k.index} reads {k.inputs[j].name!r} as "
                         f"{predicate(b, 'i0', 'i1')}")
        if kept is not None:
            lines.append(f"  kernel {k.index} visits only the (i0, i1) with "
                         f"{predicate(kept, 'i0', 'i1')} (the pairs its mask drops add 0)")
    return lines
