"""Introspection never misleads (issue 20, item 1): ``sg.to_sympy`` / ``f.sympy`` give the
whole formula of one element in the placeholders, ``explain`` names what the generated
code does, and ``check_gradients`` names kinks and TensorFlow's convention there."""

import numpy as np
import pytest
import sympy as sp

import symgrad as sg
from symgrad.errors import NoFormulaError
from symgrad.testing import check_gradients


def _element(expr, values: dict, index: dict) -> float:
    """``expr`` at index ``index`` ({'i': 2}) with arrays ``values`` ({'x': array})."""
    subs = {s: index[s.name] for s in expr.free_symbols if s.name in index}
    subs.update({s: values[s.name[:-len(".shape[0]")]].shape[0]
                 for s in expr.free_symbols if s.name.endswith(".shape[0]")})
    expr = expr.subs(subs).doit()
    expr = expr.replace(lambda e: isinstance(e, sp.Indexed),
                        lambda e: sp.Float(values[str(e.base)][tuple(int(i) for i in e.indices)]))
    return float(expr)


@pytest.fixture(scope="module")
def stencil():
    x = sg.placeholder("x", shape=(None,))
    y = sg.reduce_sum(x[1:] * x[:-1] ** 3)
    (g,) = sg.gradients(y, x)
    return x, y, g, sg.function([x], [y, g])


def test_to_sympy_of_a_stencil_gradient_has_both_terms(stencil):
    x, y, g, _ = stencil
    formula = sg.to_sympy(g)
    assert len(formula.atoms(sp.Piecewise)) == 2          # x[1:] and x[:-1] both contribute
    assert {str(s) for s in formula.atoms(sp.Symbol)} <= {"i", "x", "x.shape[0]"}  # no nodes
    xv = np.array([0.5, -1.0, 2.0, 1.5, 3.0])
    expected = sg.evaluate(g, {x: xv})
    got = [_element(formula, {"x": xv}, {"i": i}) for i in range(5)]
    np.testing.assert_allclose(got, expected)
    total = sg.to_sympy(y)
    assert isinstance(total, sp.Sum)
    assert np.isclose(_element(total, {"x": xv}, {}), sg.evaluate(y, {x: xv}))


def test_compiled_sympy_gives_each_outputs_full_formula(stencil):
    x, y, g, f = stencil
    formulas = f.sympy
    assert isinstance(formulas, dict) and list(formulas) == [y.name, g.name]
    assert formulas[g.name] == sg.to_sympy(g)
    assert len(formulas[g.name].atoms(sp.Piecewise)) == 2


def test_elementwise_formulas_keep_plain_symbols():
    a = sg.placeholder("a", shape=(None, 3))
    b = sg.placeholder("b", shape=(3,))
    assert str(sg.to_sympy(sg.sin(a) * b)) == "b*sin(a)"
    z = sg.placeholder("z")
    assert str(sg.to_sympy(sg.gradients(sg.sin(z) * z, z)[0])) == "z*cos(z) + sin(z)"
    db = sg.gradients(sg.reduce_sum(sg.sin(a) * b), b)[0]
    assert str(sg.to_sympy(db)) == "Sum(sin(a[r0, i]), (r0, 0, a.shape[0] - 1))"


def test_an_output_without_a_formula_says_so():
    a = sg.placeholder("a", shape=(2, 3))
    w = sg.placeholder("w", shape=(3, 4))
    m = sg.matmul(a, w, name="m")
    with pytest.raises(NoFormulaError, match=r"sg.to_sympy: tensor 'm' \(op matmul\) is not "
                                             r"elementwise"):
        sg.to_sympy(sg.sin(m))
    assert issubclass(NoFormulaError, ValueError)
    f = sg.function([a, w], [m, sg.sin(a)])
    assert f.sympy["m"].startswith("no formula: tensor 'm' (op matmul)")
    assert str(f.sympy[f.outputs[1].name]) == "sin(a)"


def test_explain_says_gathered_when_the_kernel_gathers(stencil):
    text = stencil[3].explain()
    assert "gathered" in text and "scatter-add" not in text
    assert "[1:]" in text and "[:-1]" in text
    z = sg.placeholder("z", shape=(4, 3))
    strided = sg.function([z], sg.gradients(sg.reduce_sum(sg.sin(z[::2, 1])), z))
    assert "scatter-add of" in strided.explain() and "[::2, 1]" in strided.explain()


@pytest.mark.parametrize("fn, arrays, op, convention", [
    (lambda x: sg.reduce_sum(sg.relu(x) * x + sg.relu(x)), [np.array([0.0, 1.0])], "relu",
     "relu'(0) = 0"),
    (lambda x, y: sg.reduce_sum(sg.maximum(x, y)), [np.array([1.0, 2.0]), np.array([1.0, 0.0])],
     "maximum", "whole gradient to x"),
    (lambda x: sg.reduce_sum(sg.where(x > 0, x * x + 1.0, x)), [np.array([0.0, 2.0])],
     "greater", "branch selected"),
    (lambda x: sg.reduce_sum(sg.floor(x) * x), [np.array([1.0, 2.5])], "floor", "integer"),
])
def test_check_gradients_names_a_kink_and_the_convention(fn, arrays, op, convention):
    report = check_gradients(fn, *arrays, compiled=False)
    assert not report.ok                                   # finite differences straddle it
    assert any(line.startswith(op) and convention in line for line in report.kinks)
    text = str(report)
    assert "MISMATCH at a kink" in text and "TensorFlow's convention" in text
    assert all(r.kink for r in report.disagreements)       # only the fd rows disagree
    with pytest.raises(AssertionError, match=f"kink: {op}"):
        report.assert_ok()


def test_no_kink_is_reported_away_from_kinks():
    report = check_gradients(lambda x: sg.reduce_sum(sg.relu(x) * sg.abs(x)),
                             np.array([0.5, -1.0]), compiled=False)
    assert report.ok and report.kinks == []
