"""Loop nests: which reduce -> elementwise -> broadcast chains become one nest (``match``),
what a nest is (``ir``), the pair rules proved for it (``rules``: constant masks, gates,
symmetry; ``masks``: the mask algebra). The CPU loop writer is ``cpu/nest_loop.py``, the
device tiles ``cuda/tiles.py``; both read these rules.
"""

from .ir import INNER_MAX, NEST_MATH, Nest, NestOutput, nest_inputs, nest_outputs, point_reads
from .match import flat_pair_notes, nest_plan, nest_rejections, unknown_pair_kernels
from .rules import gate_text, nest_factors, nest_gate, nest_masks, nest_symmetry

__all__ = ["INNER_MAX", "NEST_MATH", "Nest", "NestOutput", "nest_inputs", "nest_outputs",
           "point_reads", "flat_pair_notes", "nest_plan", "nest_rejections", "unknown_pair_kernels",
           "gate_text",
           "nest_factors", "nest_gate", "nest_masks", "nest_symmetry"]
