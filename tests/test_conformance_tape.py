"""TensorFlow conformance of the eager ``sg.GradientTape`` (the cases' ``expected_tape``).

The case is mapped to tapes exactly as ``tests/conformance/README.md`` says (section
*The eager tape*); see ``tests/conformance/tape.py``. Cases without ``expected_tape``
are not collected.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conformance.checks import check_values, expect_error
from tests.conformance.loader import case_params, import_symgrad, load_cases
from tests.conformance.tape import TapeRun, gradient_values, run_tape_nodes

TAPE_CASES = [case for case in load_cases() if "expected_tape" in case]
PATH = "tape"


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


@pytest.mark.parametrize("case", case_params(TAPE_CASES))
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
    values = gradient_values(case, run.gradient(), PATH)
    check_values(case, expected, values, run.forward, PATH)
