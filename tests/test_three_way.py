"""sg.testing: the three-way gradient check, its report, check_vjp, and the examples."""

from __future__ import annotations

import runpy
from pathlib import Path

import numpy as np
import pytest

import symgrad as sg
from symgrad.testing import check_gradients, check_vjp, compare_arrays

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def spring_energy(x, v):
    """A spring-mass chain: kinetic plus potential energy."""
    stretch = x[1:] - x[:-1] - 1.0
    return 0.5 * sg.reduce_sum(v * v) + 2.0 * sg.reduce_sum(stretch * stretch)


def test_report_agrees_and_prints_a_table():
    x, v = np.array([0.0, 1.1, 2.3, 2.9]), np.array([0.1, -0.2, 0.3, 0.0])
    report = check_gradients(spring_energy, x, v, compiled=False)
    assert report.ok and report.assert_ok() is report
    text = str(report)
    for expected in ("spring_energy", "tape vs evaluate", "evaluate vs fd", "tape vs fd",
                     "x: float64(4,)", "result: OK", "connected per engine"):
        assert expected in text
    assert report.connected["x"] == {"evaluate": True, "function": None, "tape": True}


def test_function_engine_used_or_reported():
    report = check_gradients(lambda x: sg.reduce_sum(sg.sin(x) * x), np.array([0.5, 1.0]))
    compiled_rows = [r for r in report.rows if r.pair.startswith("function")]
    if any("sg.function" in note for note in report.notes):
        assert not compiled_rows
    else:
        assert compiled_rows and all(r.ok for r in compiled_rows)


def test_disagreement_raises_assertion_listing_it():
    # A kink: finite differences straddle the jump of where(x > 0, log(x + 1) + 1, x).
    fn = lambda x: sg.reduce_sum(sg.where(x > 0, sg.log(x + 1.0) + 1.0, x))  # noqa: E731
    report = check_gradients(fn, np.array([0.0, 1.0]), compiled=False)
    assert not report.ok
    pairs = {r.pair for r in report.disagreements}
    assert pairs == {"evaluate vs fd", "tape vs fd"}
    with pytest.raises(AssertionError, match=r"2 disagreement\(s\)[\s\S]*evaluate vs fd"):
        report.assert_ok()
    with pytest.raises(AssertionError, match="worst at"):
        check_gradients(fn, np.array([0.0, 1.0]), compiled=False, raise_on_error=True)


def test_unconnected_sources_and_non_scalar_outputs():
    report = check_gradients(lambda x, y: sg.sin(x) * 2.0, np.array([[0.1, 0.2]]),
                             np.array([3.0]), compiled=False)
    assert report.ok
    assert report.connected["y"] == {"evaluate": False, "function": None, "tape": False}


def test_float32_inputs_use_looser_default_tolerances():
    report = check_gradients(lambda x: sg.reduce_sum(sg.exp(x) * x),
                             np.array([0.1, 0.7], np.float32), compiled=False)
    assert report.ok and report.rtol == 2e-3


def test_an_engine_that_raises_is_reported():
    calls = []

    def fn(x):
        calls.append(type(x).__name__)
        if isinstance(x, sg.Variable):
            raise RuntimeError("eager path broken")
        return sg.reduce_sum(x * x)

    report = check_gradients(fn, np.array([1.0, 2.0]), compiled=False)
    assert not report.ok
    assert "eager path broken" in report.disagreements[0].note


def test_compare_arrays_rules():
    assert compare_arrays(None, None, 1e-6, 0)[2]
    assert not compare_arrays(None, np.zeros(2), 1e-6, 0)[2]
    assert compare_arrays(np.array([np.nan, np.inf]), np.array([np.nan, np.inf]), 1e-6, 0)[2]
    assert not compare_arrays(np.array([np.inf]), np.array([-np.inf]), 1e-6, 0)[2]
    assert not compare_arrays(np.zeros(2), np.zeros(3), 1e-6, 0)[2]


@pytest.mark.parametrize("engine", ["tape", "symbolic"])
def test_check_vjp(engine):
    a = np.array([[0.3, -1.2], [2.0, 0.5]])
    lhs, rhs = check_vjp(lambda x, y: sg.tanh(x @ y) * x, a, a.T, engine=engine)
    assert np.isclose(lhs, rhs)


def test_check_vjp_catches_a_wrong_rule():
    from symgrad.ops.elementwise import records as E

    original = E.sin.vjp  # op records are frozen dataclasses: swap the rule, then restore it
    object.__setattr__(E.sin, "vjp", lambda g, out, x: (g * 2.0,))
    try:
        with pytest.raises(AssertionError, match="check_vjp"):
            check_vjp(lambda x: sg.sin(x), np.array([0.1, 0.4]), engine="tape")
        check_vjp(lambda x: sg.sin(x), np.array([0.1, 0.4]), engine="symbolic")
    finally:
        object.__setattr__(E.sin, "vjp", original)


@pytest.mark.parametrize("name", ["compare_symbolic_vs_tape.py", "dense_layer_tape.py"])
def test_examples_run(name, capsys):
    runpy.run_path(str(EXAMPLES / name), run_name="__main__")
    assert capsys.readouterr().out
