"""Compile the v2 elementwise ops' CUDA kernels (and their njit helpers as device
functions) to PTX with the real numba.cuda compiler: the type check the simulator skips.

Run as a script with NUMBA_ENABLE_CUDASIM=0 (tests/test_v2_elementwise.py does, in a
subprocess); uses tests/cuda_ptx_check.py's checker. Exits 2 when NVVM is unavailable.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests import cuda_ptx_check as base  # noqa: E402

UNARY = ("reciprocal rsqrt cbrt log2 log10 exp2 erfc erfinv lgamma digamma log_sigmoid "
         "softsign elu selu relu6 silu gelu leaky_relu").split()
BINARY = ("logaddexp hypot xlogy xlog1py xdivy div_no_nan mul_no_nan squared_difference "
          "floormod floordiv").split()


def graphs(sg):
    """Every v2 op and its gradient (second order for digamma), float32 and float64, a few
    ops per kernel."""
    out = []
    for dtype in ("float32", "float64"):
        x = sg.placeholder("x", shape=(None,), dtype=dtype)
        y = sg.placeholder("y", shape=(None,), dtype=dtype)
        names = [(n, lambda a, b, n=n: getattr(sg, n)(a)) for n in UNARY]
        names += [(n, lambda a, b, n=n: getattr(sg, n)(a, b)) for n in BINARY]
        names += [("gelu_tanh", lambda a, b: sg.gelu(a, approximate=True)),
                  ("norm", lambda a, b: sg.norm(a)),
                  ("softmax", lambda a, b: sg.softmax(a) + sg.log_softmax(b)),
                  ("logsumexp", lambda a, b: sg.reduce_logsumexp(a) + sg.reduce_std(b))]
        for k in range(0, len(names), 4):
            group = names[k:k + 4]
            zs = [fn(x, y) for _, fn in group]
            loss = sum(sg.reduce_sum(z) for z in zs)
            grads = [g for g in sg.gradients(loss, [x, y]) if g is not None]
            label = "+".join(n for n, _ in group)
            out.append((f"{label}-{dtype}", [x, y], zs + grads))
        second = sg.gradients(sg.gradients(sg.reduce_sum(sg.digamma(x)), x)[0], x)
        out.append((f"polygamma-{dtype}", [x], second))
    return out


def main() -> int:
    return base.main(graphs)


if __name__ == "__main__":
    os.environ["NUMBA_ENABLE_CUDASIM"] = "0"
    sys.exit(main())
