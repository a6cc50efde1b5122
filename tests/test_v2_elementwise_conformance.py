"""TensorFlow's recorded results for the v2 elementwise ops, reductions and normalisers
(tests/conformance/v2, copied from TF 2.21 runs): sg.evaluate, compiled cpu and
parallel, and the tape where the case has ``expected_tape``. A case marked ``skip`` (a
TF artefact that API.md replaces by the mathematical value, tested in
tests/test_v2_elementwise.py: softsign's second order) is skipped. The harness is
tests/conformance/v2.py."""

from __future__ import annotations

import pytest

from tests.conformance.ops import V2_BINARY, V2_REDUCTIONS, V2_UNARY
from tests.conformance.v2 import TARGETS, check_graph_case, check_tape_case, uses_ops, v2_cases

MY_OPS = V2_UNARY | V2_BINARY | V2_REDUCTIONS | {"floormod", "gelu", "leaky_relu", "softmax",
                                                 "log_softmax", "clip_by_value"}
CASES = v2_cases(uses_ops(MY_OPS))


def test_the_cases_are_here():
    assert len(CASES) >= 30


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", CASES)
def test_tensorflow_v2_elementwise_cases(case, target):
    check_graph_case(case, target)


@pytest.mark.parametrize("case", CASES)
def test_tensorflow_v2_elementwise_cases_on_the_tape(case):
    check_tape_case(case)
