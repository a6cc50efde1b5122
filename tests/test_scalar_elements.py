"""The scalar pass's element building (compile/scalar/elements.py, issue 29): sums and
products recorded and replayed once per form give the statements of sympy's own forward;
atoms told apart by identity; constants made once per region."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

import symgrad as sg
from symgrad.compile.plan.fold import fold_graph
from symgrad.compile.scalar import elements as E
from symgrad.compile.scalar.graph import scalar_graph


def _region(outputs):
    _, regions = scalar_graph(fold_graph(outputs))
    assert regions, "expected a scalar region"
    return regions[0]


def _layers(n=2):
    x = sg.placeholder("x", (3, 3))
    w = sg.placeholder("w", (3, 3))
    h = x
    for _ in range(n):
        h = sg.roll(sg.tanh(sg.matmul(h, w)), 1, 1)
    loss = sg.reduce_sum(h * h) + sg.reduce_mean(h)
    return [x, w], [loss] + sg.gradients(loss, [x, w])


def test_recorded_sums_make_the_statements_of_sympys_forward(monkeypatch):
    inputs, outputs = _layers()
    region = _region(outputs)
    recorded = E.region_code(region.members, region.inputs, region.outputs)
    rng = np.random.default_rng(0)
    values = [rng.normal(size=(3, 3)), rng.normal(size=(3, 3)) / 3]
    got = sg.function(inputs, outputs)(*values)
    monkeypatch.setattr(E, "_recorded_values", lambda node, args: None)   # sympy's forward
    plain = E.region_code(region.members, region.inputs, region.outputs)
    assert len(recorded[0]) == len(plain[0])
    assert sorted(map(str, (s.template.expr for s in recorded[0]))) == \
        sorted(map(str, (s.template.expr for s in plain[0])))
    want = sg.function(*_layers())(*values)
    for g, v in zip(got, want):
        np.testing.assert_allclose(g, v, rtol=1e-14, atol=1e-15)


def test_matmul_elements_are_one_template_per_form():
    region = _region(_layers(4)[1])
    statements, _, _ = E.region_code(region.members, region.inputs, region.outputs)
    templates = {id(s.template) for s in statements}
    assert 4 * len(templates) < len(statements)


def test_a_rule_numpy_cannot_record_falls_back_to_sympy(monkeypatch):
    def refuse(node, args):
        raise TypeError("not recorded")

    inputs, outputs = _layers(1)
    region = _region(outputs)
    want = E.region_code(region.members, region.inputs, region.outputs)
    monkeypatch.setattr(E, "_numpy_forward", lambda node, args: (
        refuse(node, args) if isinstance(np.asarray(args[0]).flat[0], E._Sum) else
        np.asarray(node.op.numpy(*args, **node.attrs), dtype=object)))
    got = E.region_code(region.members, region.inputs, region.outputs)
    assert len(got[0]) == len(want[0])


@pytest.mark.parametrize("op", ["+", "-", "*", "/"])
def test_recorded_arithmetic_replays_as_sympy(op):
    x, y = E._symbol("x_el", np.dtype("float64")), E._symbol("y_el", np.dtype("float64"))
    f = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
         "/": lambda a, b: a / b}[op]
    value = f(2, f(E._Sum(None, x), E._Sum(None, y)) + E._Sum(None, x) * 0.5)
    slots, atoms = {}, []
    E._form(value, slots, atoms)
    assert atoms == [x, y]
    assert E._replay(value, slots, atoms) == f(2, f(x, y) + x * 0.5)


def test_equal_symbols_share_a_slot_by_identity():
    x = E._symbol("r9_0", np.dtype("float64"))
    pattern, atoms = E._pattern([x, x, sp.Float(1.5)])
    assert pattern == ((0, "f"), (0, "f"), sp.Float(1.5)) and atoms == (x,)
    assert E._kind(E._symbol("r9_1", np.dtype("bool"))) == "b"


def test_layers_agree_with_evaluate():
    inputs, outputs = _layers(3)
    f = sg.function(inputs, outputs)
    rng = np.random.default_rng(1)
    values = [rng.normal(size=(3, 3)), rng.normal(size=(3, 3)) / 3]
    got = f(*values)
    want = [sg.evaluate(o, dict(zip(inputs, values))) for o in outputs]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
