"""TensorFlow's recorded results for the v2 elementwise ops, reductions and normalisers
(tests/conformance/v2, copied from TF 2.21 runs): sg.evaluate, compiled cpu and
parallel, and the tape where the case has ``expected_tape``."""

from __future__ import annotations

import builtins
import json
from pathlib import Path

import pytest

import symgrad as sg
from tests.conformance.ops import V2_BINARY, V2_REDUCTIONS, V2_UNARY

V2_DIR = Path(__file__).resolve().parent / "conformance" / "v2"
MY_OPS = V2_UNARY | V2_BINARY | V2_REDUCTIONS | {"floormod", "gelu", "leaky_relu", "softmax",
                                                 "log_softmax", "clip_by_value"}


def _my_cases() -> list:
    cases = []
    for path in sorted(V2_DIR.glob("*.json")):
        case = json.loads(path.read_text())
        if {n["op"] for n in case["nodes"]} & MY_OPS:
            # a TF artefact that API.md replaces by the mathematical value (tested in
            # tests/test_v2_elementwise.py): softsign's second order
            marks = [pytest.mark.skip(reason=case.get("note", ""))] if case.get("skip") else []
            cases.append(pytest.param(case, id=case["name"], marks=marks))
    return cases


def _build(case):
    from tests.conformance.arrays import decode_array
    from tests.conformance.loader import gradients_call_args, resolve_ref
    from tests.conformance.ops import apply_op
    values, feeds = {}, {}
    for node in case["nodes"]:
        node_id, op, attrs = node["id"], node["op"], node.get("attrs", {})
        if op == "placeholder":
            values[node_id] = sg.placeholder(node_id, tuple(attrs["shape"]), attrs["dtype"])
            feeds[values[node_id]] = decode_array(case["feeds"][node_id])
        elif op == "constant":
            values[node_id] = sg.constant(decode_array(attrs["value"]),
                                          dtype=attrs["value"]["dtype"])
        elif op == "gradients":
            args, kwargs = gradients_call_args(attrs, values)
            values[node_id] = sg.gradients(*args, **kwargs)[attrs.get("index", 0)]
        else:
            values[node_id] = apply_op(sg, op, [resolve_ref(r, values) for r in node["inputs"]],
                                       attrs)
    args, kwargs = gradients_call_args(case, values)
    return (lambda: sg.gradients(*args, **kwargs)), feeds


def _compare(case, expected, values, engine):
    from tests.conformance.arrays import compare
    assert len(values) == len(expected["values"])
    for k, (want, got) in enumerate(zip(expected["values"], values)):
        problem = compare(want, got, rtol=max(case.get("rtol", 0.0), 1e-6))
        assert problem is None, f"{case['name']} ({engine}) xs[{k}]: {problem}"


def test_the_cases_are_here():
    assert len(_my_cases()) >= 30


@pytest.mark.parametrize("target", [None, "cpu", "parallel"])
@pytest.mark.parametrize("case", _my_cases())
def test_tensorflow_v2_elementwise_cases(case, target):
    expected = case["expected"]

    def run(outputs, feeds):
        if target is None:
            return sg.evaluate(outputs, feeds)
        return sg.function(list(feeds), outputs, target=target)(*feeds.values())

    if expected["outcome"] == "error":
        with pytest.raises(getattr(builtins, expected["error"])):
            grads, feeds = _build(case)
            run(grads(), feeds)
        return
    grads, feeds = _build(case)
    _compare(case, expected, run(grads(), feeds), target or "evaluate")


@pytest.mark.parametrize("case", _my_cases())
def test_tensorflow_v2_elementwise_cases_on_the_tape(case):
    import tests.conformance.tape as tape_harness
    expected = case.get("expected_tape")
    if expected is None:
        pytest.skip("no expected_tape")
    if expected["outcome"] == "error":
        with pytest.raises(getattr(builtins, expected["error"])):
            tape_harness.run_tape_nodes(case, sg).gradient()
        return
    result = tape_harness.run_tape_nodes(case, sg).gradient()
    values = result if isinstance(result, list) else [result]
    _compare(case, expected, [tape_harness.to_numpy(v) for v in values], "tape")
