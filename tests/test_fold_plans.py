"""The folded graph and the scalar regions chosen for a few programs of issue 29's kinds are
pinned: a change to fold, fold_selects, reuse_values, the region choice or the element
building that is meant as a speed-up must give the same plans (``FoldedGraph.canonical``:
ops, inputs, shapes, dtypes, attributes, constants' digests; the regions by node index;
the region's statements).

``tests/golden/fold_plans.json`` holds their sha256 digests; a deliberate change of the
plans rewrites it with ``SYMGRAD_UPDATE_GOLDEN=1``.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

import symgrad as sg
from symgrad.compile.plan.fold import fold_graph
from symgrad.compile.plan.hoist import hoist_invariants
from symgrad.compile.scalar.elements import region_code
from symgrad.compile.scalar.graph import scalar_graph

GOLDEN = Path(__file__).parent / "golden" / "fold_plans.json"
H = 0.01


def _lv(p, u):
    x, y = u[0], u[1]
    return sg.stack([p[0] * x - p[1] * x * y, p[3] * x * y - p[2] * y])


def _rk4_unrolled(steps: int = 12):
    """Case (d) in small: RK4 Lotka-Volterra unrolled by a Python for, value + gradient."""
    p = sg.placeholder("p", (4,))
    u = sg.constant([1.0, 1.0])
    for _ in range(steps):
        k1 = _lv(p, u)
        k2 = _lv(p, u + H / 2 * k1)
        k3 = _lv(p, u + H / 2 * k2)
        k4 = _lv(p, u + H * k3)
        u = u + H / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    loss = sg.reduce_sum(u * u)
    return [p], [loss, sg.gradients(loss, [p])[0]]


def _layers(n: int = 3):
    """Case (f) in small: layers of roll(tanh(h @ W), 1, axis=1), gradients in x and W."""
    x = sg.placeholder("x", (8, 8))
    w = sg.placeholder("w", (8, 8))
    h = x
    for _ in range(n):
        h = sg.roll(sg.tanh(h @ w), 1, axis=1)
    loss = sg.reduce_sum(h * h)
    return [x, w], [loss] + sg.gradients(loss, [x, w])


def _reuse():
    """Gradients that read computed sigmoid / exp / tanh values back (``reuse_values``)."""
    x = sg.placeholder("x", (None,))
    y = sg.placeholder("y", (None,))
    loss = sg.reduce_sum(sg.sigmoid(x) * sg.exp(y) + sg.tanh(x * y) + sg.log1p(x * x))
    return [x, y], [loss] + sg.gradients(loss, [x, y])


def _columns():
    """Columns stacked and read back along an unknown batch (``fold_selects``)."""
    y0 = sg.placeholder("y", (None, 2))
    y = y0
    for _ in range(6):
        y = y + 0.1 * sg.stack([y[:, 1], -sg.sin(y[:, 0])], axis=1)
    loss = sg.reduce_sum(y * y)
    return [y0], [loss] + sg.gradients(loss, [y0])


CASES = {"rk4_unrolled": _rk4_unrolled, "layers": _layers, "reuse": _reuse,
         "columns": _columns}


def _digest(build) -> str:
    inputs, outputs = build()
    graph, _ = hoist_invariants(fold_graph(outputs, inputs))
    parts = [graph.canonical()]
    scalar, regions = scalar_graph(graph)
    for r in regions:
        statements, _, results = region_code(r.members, r.inputs, r.outputs)
        parts.append(f"region {[m.index for m in r.members]} {len(statements)} statements: " +
                     ";".join(f"{s.template.expr}({len(s.args)})" for s in statements) +
                     f" results {[a.shape for a in results]}")
    parts.append(scalar.canonical() if regions else "")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


@pytest.mark.parametrize("name", sorted(CASES))
def test_plans_are_pinned(name):
    got = _digest(CASES[name])
    pinned = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
    if os.environ.get("SYMGRAD_UPDATE_GOLDEN") or name not in pinned:
        pinned[name] = got
        GOLDEN.write_text(json.dumps(pinned, indent=1, sort_keys=True) + "\n")
    assert got == pinned[name], f"the plans of {name!r} changed"


def test_digest_sees_a_change():
    """The digest is not blind: one more step is another plan."""
    assert _digest(lambda: _rk4_unrolled(3)) != _digest(lambda: _rk4_unrolled(4))


def test_scalar_graph_keeps_the_original_text_and_digests_its_regions(monkeypatch):
    """A ScalarGraph's canonical text is the original graph's, as it was before the regions
    replaced its nodes, and the regions; its digest (the compile key's) changes with them."""
    from symgrad.compile.scalar import settings
    inputs, outputs = _rk4_unrolled(3)
    graph = fold_graph(outputs, inputs)
    text, digest = graph.canonical(), graph.digest()
    scalar, regions = scalar_graph(graph)
    assert regions and scalar.canonical().startswith(text + "\nscalar 0: ")
    inputs, outputs = _rk4_unrolled(3)
    monkeypatch.setattr(settings, "SCALAR_ELEMENTS", 0)       # no regions at all
    plain, none = scalar_graph(fold_graph(outputs, inputs))
    assert not none and plain.digest() == digest != scalar.digest()
