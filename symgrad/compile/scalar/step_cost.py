"""The element work of the numpy steps a region's loop form runs (the cost model's loop
side, ``cost.Estimate.loop_ns``), by the steps' element rules.

A structural step between loop kernels is one driver call (``settings.DISPATCH_NS``) and,
for the index ops with constant indices, per-element work that dominates once the arrays
grow: ``gather_grad`` scatters with ``np.add.at`` along an axis (``SCATTER_ELEMENT_NS``
per element of its gradient input: ~9-12 ns measured for (n, 2n) rows, n = 50 to 200, the
mass-action Jacobian's two scatters are 40,000 elements at 100 species), a gather and the
segment sums (fancy indexing, the compiled one-pass scatter loop) ``MOVE_ELEMENT_NS`` per
element moved (~1.5-2.5 ns). A rule declares its step's work as ``rule.step_elements(node)
-> (elements, scatters)`` (``gather_elements.py``); other steps (views, stacks, copies)
cost their call only.

>>> import numpy as np, symgrad as sg
>>> from symgrad.compile.plan.fold import fold_graph
>>> x = sg.placeholder("x", shape=(100,))
>>> idx = np.arange(200) % 100
>>> g = fold_graph(sg.gradients(sg.reduce_sum(sg.gather(x, idx) ** 2), [x]))
>>> [(n.op.name, step_ns(n)) for n in g.order if step_ns(n)]
[('gather', 400.0), ('gather_grad', 2000.0)]
"""

from __future__ import annotations

from ..plan.fold import LNode
from . import settings
from .elements import ELEMENT_RULES

__all__ = ["step_ns", "steps_ns"]


def step_ns(node: LNode) -> float:
    """Nanoseconds of per-element work ``node``'s numpy step does beyond its call (0 for a
    node whose rule declares none)."""
    counted = getattr(ELEMENT_RULES.get(node.op), "step_elements", None)
    if counted is None:
        return 0.0
    elements, scatters = counted(node)
    return float(elements) * (settings.SCATTER_ELEMENT_NS if scatters else
                              settings.MOVE_ELEMENT_NS)


def steps_ns(members) -> float:
    """The per-element work of the steps of a region's loop form."""
    return sum(map(step_ns, members))
