"""The fold pass is linear in the graph: each distinct node formula is built once
(symgrad's own memo, not sympy's 1,000-entry cache), so a chain k times longer builds no
more sympy trees and asks for the same number of formulas per node."""

import numpy as np
import pytest

import symgrad as sg
from symgrad.compile.plan import rewrite
from symgrad.compile.plan.fold import fold_graph
from symgrad.compile.plan.hoist import hoist_invariants


def _deep(levels: int):
    x = sg.placeholder("x", shape=(None,))
    e = x
    for _ in range(levels):
        e = sg.sin(e) * 0.5 + x
    y = sg.reduce_sum(e)
    return [y] + sg.gradients(y, x), x


def _wide(terms: int):
    x = sg.placeholder("x", shape=(None,))
    y = sg.reduce_sum(sum(sg.sin(x * float(k)) * float(k - 1) for k in range(1, terms + 1)))
    return [y] + sg.gradients(y, x), x


def _counts(outputs, x):
    rewrite._FORMULAS.clear()
    rewrite._DERIVED.clear()
    before = dict(rewrite.STATS)
    graph, _ = hoist_invariants(fold_graph(outputs, [x]))
    built = rewrite.STATS["formulas"] - before["formulas"]
    asked = built + rewrite.STATS["memo hits"] - before["memo hits"]
    return len(graph.order), built, asked


def test_deep_chain_builds_a_constant_number_of_formulas():
    small, large = _counts(*_deep(60)), _counts(*_deep(240))
    assert large[0] > 3.5 * small[0]
    assert large[1] <= small[1] + 4 and large[1] < 40   # distinct formulas: the same few
    assert large[2] / large[0] == pytest.approx(small[2] / small[0], rel=0.05)


def test_wide_sum_builds_at_most_one_formula_per_node():
    for terms in (40, 160):
        nodes, built, asked = _counts(*_wide(terms))
        assert built <= 1.05 * nodes
        assert asked <= 3 * nodes


def test_only_ops_that_call_a_function_have_their_patterns_built():
    x = sg.placeholder("x", shape=(3,))
    g = fold_graph([x * 2.0, sg.sin(x) * 3.0], [x])
    mul, sin = g.outputs[0], g.outputs[1].inputs[0]
    assert not rewrite._may_be_expensive(mul) and rewrite._may_be_expensive(sin)


def test_memo_keeps_dtypes_and_constants_apart():
    x = sg.placeholder("x", shape=(3,))
    i = sg.placeholder("i", shape=(3,), dtype=np.int64)
    outs = [x * 2.0, x * 3.0, x * -0.0, x * 0.0, sg.cast(i, np.float64) * 2.0]
    g = fold_graph(outs, [x, i])
    symbols = [rewrite._slot(0), rewrite._slot(1)]
    forms = [rewrite._formula(o, symbols) for o in g.outputs[:2]]
    assert forms[0] != forms[1]
    assert rewrite._formula_key(g.outputs[0], symbols) != \
        rewrite._formula_key(g.outputs[2], symbols)
    assert rewrite._formula_key(g.outputs[2], symbols) != \
        rewrite._formula_key(g.outputs[3], symbols)
    f = sg.function([x], [x * 2.0, x * 3.0])
    np.testing.assert_allclose(f(np.arange(3.0)), [[0, 2, 4], [0, 3, 6]])
