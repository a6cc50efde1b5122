"""TensorFlow's recorded results for the v2 gradient features (tests/conformance/v2, copied
from shared/): hessians, jacobian, batch_jacobian, aggregation_method, prevent_gradient,
custom_gradient and define_op, on sg.evaluate, compiled cpu and parallel, and the tape
where the case has ``expected_tape``. Presets are those of tests/conformance/presets.py;
the harness is tests/conformance/v2.py."""

from __future__ import annotations

import pytest

from tests.conformance.ops import V2_GRADIENT_OPS
from tests.conformance.v2 import TARGETS, check_graph_case, check_tape_case, uses_ops, v2_cases

MY_OPS = V2_GRADIENT_OPS | {"hessians", "jacobian", "batch_jacobian"}


def _mine(case: dict) -> bool:
    nodes = case["nodes"]
    return uses_ops(MY_OPS)(case) or "aggregation_method" in case or any(
        "aggregation_method" in n.get("attrs", {}) for n in nodes)


CASES = v2_cases(_mine)


def test_the_cases_are_here():
    names = {p.values[0]["name"] for p in CASES}
    assert {"aggregation_add_n", "batch_jacobian_second_order", "custom_two_inputs",
            "define_op_unary_second_order", "hessians_two_xs_index1", "jacobian_matrix_output",
            "prevent_gradient_raises"} <= names


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", CASES)
def test_tensorflow_v2_gradient_cases(case, target):
    check_graph_case(case, target)


@pytest.mark.parametrize("case", CASES)
def test_tensorflow_v2_gradient_cases_on_the_tape(case):
    check_tape_case(case, "no expected_tape (graph-only feature)")
