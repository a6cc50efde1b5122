"""Run the v2 TensorFlow cases (``tests/conformance/v2``) on every engine.

A v2 test file picks its cases (``v2_cases(select)``) and calls ``check_graph_case``
(``sg.evaluate`` or ``sg.function(..., target=...)``, against ``expected``) and
``check_tape_case`` (``sg.GradientTape``, against ``expected_tape``; skipped when the
case has none). Nodes are built by ``loader.build_case`` and ``tape.run_tape_nodes``
with ``ops.apply_op``; an error outcome must raise the recorded builtin class anywhere
from building the graph to running it.

>>> [case.values[0]["name"] for case in v2_cases(uses_ops({"tril"}))]
['tril_k_neg1_batched']
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable

import pytest

from tests.conformance.checks import check_values, expect_error
from tests.conformance.loader import BuiltCase, build_case, case_params, import_symgrad, load_cases
from tests.conformance.tape import gradient_values, run_tape_nodes

V2_DIR = Path(__file__).resolve().parent / "v2"
TARGETS = (None, "cpu", "parallel", "cuda")  # None: sg.evaluate; cuda: the simulator in CI


def v2_cases(select: Callable[[dict], bool]) -> list[Any]:
    """The v2 cases that ``select`` keeps, as pytest params (``skip`` cases skipped)."""
    return case_params([case for case in load_cases(V2_DIR) if select(case)])


def uses_ops(ops: Iterable[str]) -> Callable[[dict], bool]:
    """A selector: cases with a node whose op is one of ``ops``."""
    wanted = frozenset(ops)
    return lambda case: bool({node["op"] for node in case["nodes"]} & wanted)


def _run(sg: Any, built: BuiltCase, outputs: list[Any], target: str | None) -> list[Any]:
    """``outputs`` evaluated by ``sg.evaluate`` (target None) or compiled for ``target``."""
    if target is None:
        return sg.evaluate(outputs, built.feed_dict)
    return sg.function(built.placeholders, outputs, target=target)(*built.feeds)


def check_graph_case(case: dict, target: str | None) -> None:
    """``sg.gradients`` of the case, evaluated or compiled, gives ``expected``."""
    sg = import_symgrad()
    path = target or "evaluate"
    expected = case["expected"]

    def gradients() -> tuple[BuiltCase, list[Any]]:
        built = build_case(case, sg)
        return built, _run(sg, built, built.call_gradients(), target)

    if expected["outcome"] == "error":
        expect_error(case, expected, gradients, path)
        return
    built, values = gradients()
    check_values(case, expected, list(values),
                 lambda: _run(sg, built, built.ys_list, target), path)


def check_tape_case(case: dict, skip_reason: str = "no expected_tape") -> None:
    """The eager tape gives ``expected_tape``; skipped when the case has none."""
    expected = case.get("expected_tape")
    if expected is None:
        pytest.skip(skip_reason)
    sg = import_symgrad()
    if expected["outcome"] == "error":
        expect_error(case, expected, lambda: run_tape_nodes(case, sg).gradient(), "tape")
        return
    run = run_tape_nodes(case, sg)
    check_values(case, expected, gradient_values(case, run.gradient()), run.forward, "tape")
