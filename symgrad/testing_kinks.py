"""Kinks for ``check_gradients``: inputs at a non-differentiable point of an op, and the
convention (TensorFlow's) that symgrad's gradient takes there.

Finite differences straddle a kink, so there they cannot agree with any one-sided
convention; the report says so instead of a bare MISMATCH. The table is keyed by op
record; each entry gives a test of the op's input values (True where within ``tol`` of a
kink) and the convention.

>>> import numpy as np
>>> import symgrad as sg
>>> x = sg.placeholder("x", shape=(2,))
>>> find_kinks([sg.relu(x, name="kinked")], {x: np.array([0.0, 1.0])}, 1e-6)
["relu 'kinked' input at (0,): x = 0, where TF takes relu'(0) = 0"]
"""

from __future__ import annotations

import numpy as np

from .graph.traversal import topological_order
from .ops.elementwise import records as E
from .ops.reductions import records as R


def _near(values, points, tol: float) -> np.ndarray:
    return np.any([np.abs(values - p) <= tol for p in points], axis=0)


def _at_integers(x, tol: float) -> np.ndarray:
    return np.abs(x - np.round(x)) <= tol


def _tie(x, y, tol: float) -> np.ndarray:
    return np.abs(np.asarray(x, np.float64) - np.asarray(y, np.float64)) <= tol


_BOUNDARY = ("x == y, where the comparison (and any where it drives) switches branch; "
             "TF differentiates the branch selected at the point")

KINKS: dict = {
    E.abs: (lambda x, tol: _near(x, [0.0], tol),
            "x = 0, where TF takes abs'(0) = sign(0) = 0"),
    E.relu: (lambda x, tol: _near(x, [0.0], tol), "x = 0, where TF takes relu'(0) = 0"),
    E.sign: (lambda x, tol: _near(x, [0.0], tol),
             "x = 0, where sign jumps; TF's gradient is zeros"),
    E.relu6: (lambda x, tol: _near(x, [0.0, 6.0], tol),
               "x = 0 or 6, where TF takes relu6' = 0"),
    E.leaky_relu: (lambda x, a, tol: _near(x, [0.0], tol),
                   "x = 0, where TF takes leaky_relu'(0) = alpha"),
    E.maximum: (_tie, "x == y (a tie), where TF gives the whole gradient to x (x >= y)"),
    E.minimum: (_tie, "x == y (a tie), where TF gives the whole gradient to x (x <= y)"),
    E.floor: (lambda x, tol: _at_integers(x, tol),
              "x is an integer, where floor jumps; TF: not differentiable, gradient None"),
    E.ceil: (lambda x, tol: _at_integers(x, tol),
             "x is an integer, where ceil jumps; TF: not differentiable, gradient None"),
    E.round: (lambda x, tol: _at_integers(np.asarray(x) - 0.5, tol),
              "x is a half-integer, where round jumps; TF: not differentiable, gradient None"),
    E.floormod: (lambda x, y, tol: _at_integers(np.asarray(x) / np.asarray(y), tol),
                  "x / y is an integer, where floormod jumps; TF takes the gradients 1 and "
                  "-floor(x / y)"),
    E.floordiv: (lambda x, y, tol: _at_integers(np.asarray(x) / np.asarray(y), tol),
                  "x / y is an integer, where floordiv jumps; TF: not differentiable"),
    **{op: (_tie, _BOUNDARY) for op in (E.less, E.less_equal, E.greater, E.greater_equal,
                                         E.equal, E.not_equal)},
}
"""Elementwise op record -> (kink test of its input values and ``tol``, convention)."""


REDUCTION_KINKS: dict = {
    R.reduce_max: (np.max, "several elements tie for the maximum; TF shares the gradient "
                           "evenly among them"),
    R.reduce_min: (np.min, "several elements tie for the minimum; TF shares the gradient "
                           "evenly among them"),
}
"""Reduction op record -> (its numpy reduction, convention at ties)."""


def find_kinks(outputs: list, feed: dict, tol: float) -> list:
    """One line per op of ``outputs``' graph whose float inputs sit (within ``tol``) at a
    kink: the op, its tensor, the first such index and the convention used there."""
    from .evaluate import evaluate

    nodes = [n for n in topological_order(outputs) if n.op in KINKS or n.op in REDUCTION_KINKS]
    if not nodes:
        return []
    inputs = list({id(i): i for n in nodes for i in n.inputs}.values())
    values = dict(zip(map(id, inputs), evaluate(inputs, feed)))
    lines = []
    for node in nodes:
        args = [values[id(i)] for i in node.inputs]
        if not all(np.asarray(a).dtype.kind == "f" for a in args[:2]):
            continue
        with np.errstate(all="ignore"):
            if node.op in KINKS:
                test, convention = KINKS[node.op]
                mask = np.asarray(test(*args, tol))
            else:
                reduce, convention = REDUCTION_KINKS[node.op]
                x, axes = args[0], node.attrs["axes"]
                top = reduce(x, axis=axes, keepdims=True)
                mask = np.sum(np.abs(x - top) <= tol, axis=axes) > 1
        if np.any(mask):
            where = tuple(int(i) for i in np.argwhere(mask)[0])
            lines.append(f"{node.op.name} '{node.name}' input at {where}: {convention}")
    return lines
