"""TensorFlow conformance of the eager ``sg.GradientTape`` (the cases' ``expected_tape``).

The case is mapped to tapes exactly as ``tests/conformance/README.md`` says (section
*The eager tape*); see ``tests/conformance/tape.py``. Cases without ``expected_tape``
are not collected.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conformance.checks import check_values, expect_error
from tests.conformance.loader import import_symgrad, is_list_ref, load_cases
from tests.conformance.tape import TapeRun, run_tape_nodes, to_numpy

TAPE_CASES = [case for case in load_cases() if "expected_tape" in case]
PATH = "tape"


def _params(cases: list[dict]) -> list[Any]:
    """One pytest param per case, id = case name; cases with ``skip`` are skipped."""
    params = []
    for case in cases:
        marks = [pytest.mark.skip(reason=str(case["skip"]))] if case.get("skip") else []
        params.append(pytest.param(case, id=case["name"], marks=marks))
    return params


@pytest.fixture(scope="module")
def sg() -> Any:
    """symgrad, skipping the module's tests while the tape is not available."""
    module = import_symgrad()
    if not (hasattr(module, "GradientTape") and hasattr(module, "Variable")):
        pytest.skip("sg.GradientTape / sg.Variable are not available yet")
    try:
        module.GradientTape()
    except NotImplementedError as exc:
        pytest.skip(f"sg.GradientTape is not implemented: {exc}")
    return module


def _as_value_list(case: dict, result: Any) -> list[Any]:
    """The top-level result as a list of numpy values, checking its structure.

    A single x must give a single gradient, a list of xs a list (README, tape section).
    """
    if is_list_ref(case["xs"]):
        if not isinstance(result, (list, tuple)):
            pytest.fail(f"[{PATH}] case {case['name']}: tape.gradient with a list of sources "
                        f"returned {type(result).__name__}, not a list")
        return [to_numpy(value) for value in result]
    if isinstance(result, (list, tuple)):
        pytest.fail(f"[{PATH}] case {case['name']}: tape.gradient with a single source "
                    f"returned a {type(result).__name__}, not a single gradient")
    return [to_numpy(result)]


@pytest.mark.parametrize("case", _params(TAPE_CASES))
def test_tape(case: dict, sg: Any) -> None:
    """The eager tape gives the case's ``expected_tape``."""
    expected = case["expected_tape"]
    if expected["outcome"] == "error" and expected["phase"] == "graph":
        expect_error(case, expected, lambda: run_tape_nodes(case, sg), PATH)
        return
    run: TapeRun = run_tape_nodes(case, sg)
    if expected["outcome"] == "error":
        expect_error(case, expected, run.gradient, PATH)
        return
    values = _as_value_list(case, run.gradient())
    check_values(case, expected, values, run.forward, PATH)
