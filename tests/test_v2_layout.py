"""TensorFlow's recorded results for the layout ops (tests/conformance/v2, copied from
shared/): sg.evaluate, compiled cpu and parallel, and the tape where the case has
``expected_tape``. Error cases must raise the recorded builtin class. The harness is
tests/conformance/v2.py; the op mapping is tests/conformance/ops.py."""

from __future__ import annotations

import pytest

from tests.conformance.ops import V2_LAYOUT
from tests.conformance.v2 import TARGETS, check_graph_case, check_tape_case, uses_ops, v2_cases

CASES = v2_cases(uses_ops(V2_LAYOUT))


def test_the_cases_are_here():
    assert len(CASES) >= 19


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", CASES)
def test_tensorflow_v2_layout_cases(case, target):
    check_graph_case(case, target)


@pytest.mark.parametrize("case", CASES)
def test_tensorflow_v2_layout_cases_on_the_tape(case):
    check_tape_case(case)
