"""A loop body's driver as an njit function, written from its plan (a fused ``sg.while_loop``).

The cpu driver (``driver.py``) of a loop body is Python: it checks its arguments,
allocates result buffers, calls the njit loop kernels (``_k<i>_cpu``) and scalar kernels
(``_s<i>``) and takes views between them. ``NjitDriverWriter`` is the same printer run over
the same plan with the parts numba cannot run left out, so a while loop can call the whole
body from one njit loop (``loops/fused_while.py``). It writes:

- ``sh<i> = (20, 20)`` static loop shapes, result buffers (``np.empty`` / ``np.zeros``)
  and the serial loop kernel ``_k<i>_cpu(...)`` (the module's numba function, also where
  the driver calls its LLVM IR form ``_k<i>_cpu_native``);
- ``v<n> = _s<i>(...)``: a scalar kernel's njit form, when it reads and writes at most
  ``MAX_SCALAR_LINES`` elements;
- views (``getitem``, ``reshape``, ``transpose``, ...) and scalar outputs as the driver
  writes them;
- a structural step only where it is ``sg.linalg.solve`` of one matrix
  (``lapack.solve_``: LAPACK's dgesv, as numpy's solve) or ``sg.gather`` along axis 0 at
  constant indices in range (read from the op records);
- ``return (...)``: a tuple, each value copied unless the body made it.

It writes nothing where the body needs what numba does not run as the driver does: a
parallel launch, a libm retry, a loop nest, a buffer reused from a dead value or kept
between calls (a workspace), a broadcast input, a matmul or any other structural step;
``why`` then says which. Names of the body's module (kernels, constants ``C<n>``) are
prefixed (``prefix``) and bound from the module, so two drivers share one loop module.

>>> import numpy as np, symgrad as sg
>>> x = sg.placeholder("x", shape=(3,))
>>> f = sg.function([x], [sg.exp(x) * 2.0, x[0]])
>>> text, names, why = f.njit_driver("body_", "b")
>>> print(text)
def body_(v0):
    sh0 = (3,)
    o0_0 = np.empty(sh0, np.float64)
    b_k0_cpu(sh0[0], v0, o0_0)
    v3 = o0_0
    v4 = v0[0, ...]
    return (v3, v4.copy(),)
>>> names, why
(['_k0_cpu'], '')
>>> sg.function([x], [sg.sin(x)]).njit_driver("body_", "b")[2]
'kernel 0 retries with libm (a sin/cos argument >= 2**30)'
"""

from __future__ import annotations

import re
from typing import Optional

import numpy as np

from ...shapes import is_fully_known
from ..codegen.lower import lower_kernel
from ..codegen.templates import checks_trig, loop_source
from ..nest import Nest
from ..plan.oprules import STEP_FORMS, S
from ..plan.regions import Kernel, Plan, Step
from ..scalar import STEP_FORMS as SCALAR_STEP_FORMS, lower_region, region_of
from .driver import PARALLEL_THRESHOLD, ModuleWriter

__all__ = ["njit_driver", "NjitDriverWriter", "MAX_SCALAR_LINES"]

MAX_SCALAR_LINES = 256
"""The most element reads and writes a scalar kernel called from a fused loop may have:
the loop calls its njit form (``_s<i>``), whose numba compile grows with them (~1 ms a
line and more: seconds for a 20 x 20 Jacobian), where the driver calls the kernel compiled
whole as LLVM IR (no numba front end). 256 (was 64): ``sg.odeint``'s dopri5 step with its
output rows (21 times x 2 states: 160) fuses; the fused loop is compiled only after the
Python loop has spent ``fused_while.PAYBACK_S``, which bounds what a larger compile costs."""

_ELEMENT = re.compile(r"^    (r\d+_\d+ = a|o\d+\[)", re.MULTILINE)


def _elements(text: str, function: str) -> int:
    """Element reads and writes of ``def <function>(`` in a lowered region's text."""
    body = ("\n" + text).split(f"\ndef {function}(", 1)[-1].split("\n\n", 1)[0]
    return len(_ELEMENT.findall(body))


class Refused(Exception):
    """What numba cannot run as the driver does (the message says what)."""


def _step_form(node, ins: list) -> Optional[str]:
    """The njit form of a structural step (None: numba cannot run it as numpy does):
    ``sg.linalg.solve`` of one matrix; ``sg.gather`` along axis 0 at constant indices in
    range (checked here, as the numpy step checks them every call)."""
    from ...ops.indexing.records import gather
    from ...ops.linalg.records import solve_op
    if node.op is solve_op and len(node.shape) == 2:
        return f"lapack_solve_({ins[0]}, {ins[1]}, {bool(node.attrs['adjoint'])})"
    if node.op is gather and node.attrs["axis"] == 0 and node.inputs[1].is_const:
        indices, n = node.inputs[1].value, node.inputs[0].shape[0]
        if np.ndim(indices) == 1 and np.asarray(indices).dtype.kind in "iu" and \
                isinstance(n, int) and ((0 <= indices) & (indices < n)).all():
            return f"{ins[0]}[{ins[1]}]"
    return None


class NjitDriverWriter(ModuleWriter):
    """The driver of ``plan`` as ``def <name>(v0, ...)`` that numba compiles."""

    def __init__(self, plan: Plan, lowered: list, target: str, math: str, scalars: tuple,
                 prefix: str):
        super().__init__(plan, lowered, target, "", math, scalars)
        self.prefix = prefix
        self.names: list = []

    def bound(self, name: str) -> str:
        """``name`` of the body's module, prefixed (and bound into the loop module)."""
        if name not in self.names:
            self.names.append(name)
        return self.prefix + name

    def value_of(self, node) -> str:
        return self.bound(f"C{node.index}") if node.is_const else f"v{node.index}"

    def function(self, name: str) -> str:
        g = self.plan.graph
        if self.single:
            raise Refused("the body returns one value, not a list")
        self.lines = [f"def {name}({', '.join(f'v{p.index}' for p in g.placeholders)}):"]
        for unit in self.plan.units:
            if isinstance(unit, Kernel):
                self.kernel_call(unit, True)
            elif isinstance(unit, Nest):
                raise Refused(f"the body has a loop nest (kernels "
                              f"{', '.join(str(k.index) for k in unit.kernels)})")
            else:
                self.step(unit)
        self.emit(f"return {self.returned()}")
        if any("lapack_solve_(" in line for line in self.lines):
            self.names.append("lapack_solve_")
        return "\n".join(self.lines)

    # --- the units ----------------------------------------------------------------------
    def kernel_call(self, k: Kernel, need_shape: bool) -> None:
        i, lk = k.index, self.lowered[k.index]
        if not is_fully_known(k.shape):
            raise Refused(f"kernel {i} has an unknown length")
        if self.parallel and k.rank and not k.serial_only and \
                int(np.prod(k.shape)) >= PARALLEL_THRESHOLD:
            raise Refused(f"kernel {i} runs in parallel ({int(np.prod(k.shape))} elements)")
        if checks_trig(lk, self.math):
            raise Refused(f"kernel {i} retries with libm (a sin/cos argument >= 2**30)")
        if any(key[0] == i for key in self.reuse):
            raise Refused(f"kernel {i} stores into the buffer of a dead value")
        _, _, ins, _ = loop_source(lk, "x", "p", False)
        if any(acc.broadcast for acc in ins):
            raise Refused(f"kernel {i} broadcasts an input")
        self.bound(f"_k{i}_cpu")                 # named first, as it reads in the call
        super().kernel_call(k, need_shape)
        self.lines = [line for line in self.lines if not line.lstrip().startswith("#")]

    def launch(self, k: Kernel, outs: list, dims: list, args: list, parallel: bool,
               depth: int) -> None:
        i = k.index
        for line in self.allocations(k, outs):
            self.emit(line, depth)
        names = [f"o{i}_{j}" for j, acc in enumerate(outs) if acc.is_param]
        self.emit(f"{self.bound(f'_k{i}_cpu')}({', '.join(dims + args + names)})", depth)

    def alloc(self, k: Kernel, j: int, fill: str, shape: str, node) -> str:
        line = super().alloc(k, j, fill, shape, node)
        if line.startswith("ws_."):
            raise Refused(f"kernel {k.index} keeps a buffer between calls (a workspace)")
        return line

    def step(self, step: Step) -> None:
        node = step.node
        scalar = self.scalars.get(id(node))
        if scalar is not None:
            self.bound(f"_s{node.index}")
        ins = [self.value_of(i) for i in node.inputs]
        if self.workspace is not None and self.workspace.step(step, ins, self.parallel):
            raise Refused(f"step v{node.index} writes into a buffer kept between calls "
                          "(a workspace)")
        if scalar is not None:
            elements = _elements(scalar.text, f"_s{node.index}")
            if elements > MAX_SCALAR_LINES:
                raise Refused(f"scalar kernel _s{node.index} reads and writes {elements} "
                              f"elements (numba would compile its njit form; at most "
                              f"MAX_SCALAR_LINES={MAX_SCALAR_LINES})")
            line = f"{self.bound(f'_s{node.index}')}({', '.join(ins)})"
        elif node.op in SCALAR_STEP_FORMS:
            line = SCALAR_STEP_FORMS[node.op](node, ins)
        elif node.op in STEP_FORMS and node.op is not S.matmul:
            line = STEP_FORMS[node.op](node, ins)
        else:
            line = _step_form(node, ins)
        if node.op is S.matmul:
            raise Refused(f"the body has a matmul step (numba has no np.matmul): "
                          f"v{node.index} = {STEP_FORMS[S.matmul](node, ins)}")
        if line is None:
            raise Refused(f"the body has a {node.op.name} step (numpy), not a kernel")
        self.emit(f"v{node.index} = {line}")

    def returned(self) -> str:
        fresh, seen, items = self.fresh_values(), set(), []
        for o in self.plan.outputs:
            if o is None:
                raise Refused("the body returns None")
            v = self.value_of(o)
            items.append(v if o.index in fresh and o.index not in seen else f"{v}.copy()")
            seen.add(o.index)
        return "(" + "".join(v + ", " for v in items).rstrip(" ") + ")"


def njit_driver(plan: Plan, math: str, target: str, single: bool, name: str,
                prefix: str) -> tuple:
    """(text of ``def <name>(v0, ...)``, names bound from the body's module, "") or
    (None, [], why). Lowers ``plan``'s kernels and scalar regions again (the module was
    written from the same plan; a loop body's take some milliseconds)."""
    lowered = [lower_kernel(k) for k in plan.kernels]
    scalars = tuple(lower_region(region_of(u.node)) for u in plan.units
                    if isinstance(u, Step) and region_of(u.node) is not None)
    writer = NjitDriverWriter(plan, lowered, target, math, scalars, prefix)
    writer.single = single
    try:
        return writer.function(name), writer.names, ""
    except Refused as exc:
        return None, [], str(exc)
