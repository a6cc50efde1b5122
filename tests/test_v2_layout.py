"""TensorFlow's recorded results for the layout ops (tests/conformance/v2, copied from
shared/): sg.evaluate, compiled cpu and parallel, and the tape where the case has
``expected_tape``. Error cases must raise the recorded builtin class."""

from __future__ import annotations

import builtins
import json
from pathlib import Path

import pytest

import symgrad as sg

V2_DIR = Path(__file__).resolve().parent / "conformance" / "v2"
MY_OPS = {"concat", "stack", "unstack", "split", "squeeze", "expand_dims", "broadcast_to",
          "tile", "pad", "reverse", "roll", "tril", "triu", "diag", "diag_part", "trace",
          "T", "ndim", "len", "reshape_method"}


def _my_cases() -> list:
    cases = []
    for path in sorted(V2_DIR.glob("*.json")):
        case = json.loads(path.read_text())
        if {n["op"] for n in case["nodes"]} & MY_OPS:
            cases.append(pytest.param(case, id=case["name"]))
    return cases


def _tuple(value):
    return tuple(value) if isinstance(value, list) else value


def _apply(op, args, attrs):
    from tests.conformance.ops import apply_op
    x = args[0] if args else None
    if op in ("concat", "stack"):
        return getattr(sg, op)(args, axis=attrs.get("axis", 0))
    if op == "unstack":
        return sg.unstack(x, axis=attrs.get("axis", 0))[attrs["index"]]
    if op == "split":
        return sg.split(x, attrs["num_or_size_splits"], axis=attrs.get("axis", 0))[
            attrs["index"]]
    if op == "squeeze":
        return sg.squeeze(x, axis=_tuple(attrs.get("axis")))
    if op == "expand_dims":
        return sg.expand_dims(x, attrs["axis"])
    if op == "broadcast_to":
        return sg.broadcast_to(x, tuple(attrs["shape"]))
    if op == "tile":
        return sg.tile(x, tuple(attrs["multiples"]))
    if op == "pad":
        return sg.pad(x, attrs["paddings"], constant_values=attrs.get("constant_values", 0))
    if op == "reverse":
        return sg.reverse(x, _tuple(attrs["axis"]))
    if op == "roll":
        return sg.roll(x, _tuple(attrs["shift"]), _tuple(attrs["axis"]))
    if op in ("tril", "triu"):
        return getattr(sg, op)(x, k=attrs.get("k", 0))
    if op in ("diag", "diag_part", "trace"):
        return getattr(sg, op)(x)
    if op == "T":
        return x.T
    if op == "ndim":
        return x.ndim
    if op == "len":
        return len(x)
    if op == "reshape_method":
        return x.reshape(*attrs["shape"])
    return apply_op(sg, op, args, attrs)


def _build(case):
    from tests.conformance.arrays import decode_array
    from tests.conformance.loader import gradients_call_args, resolve_ref
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
            values[node_id] = _apply(op, [resolve_ref(r, values) for r in node["inputs"]],
                                     attrs)
    args, kwargs = gradients_call_args(case, values)
    return (lambda: sg.gradients(*args, **kwargs)), feeds


def test_the_cases_are_here():
    assert len(_my_cases()) >= 19


@pytest.mark.parametrize("target", [None, "cpu", "parallel"])
@pytest.mark.parametrize("case", _my_cases())
def test_tensorflow_v2_layout_cases(case, target):
    from tests.conformance.arrays import compare
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
    values = run(grads(), feeds)
    assert len(values) == len(expected["values"])
    for k, (want, got) in enumerate(zip(expected["values"], values)):
        problem = compare(want, got)
        assert problem is None, f"{case['name']} xs[{k}]: {problem}"


@pytest.mark.parametrize("case", _my_cases())
def test_tensorflow_v2_layout_cases_on_the_tape(case, monkeypatch):
    import tests.conformance.tape as tape_harness
    from tests.conformance.arrays import compare
    expected = case.get("expected_tape")
    if expected is None:
        pytest.skip("no expected_tape")
    monkeypatch.setattr(tape_harness, "apply_op", lambda _sg, op, args, attrs:
                        _apply(op, args, attrs))
    if expected["outcome"] == "error":
        with pytest.raises(getattr(builtins, expected["error"])):
            tape_harness.run_tape_nodes(case, sg).gradient()
        return
    result = tape_harness.run_tape_nodes(case, sg).gradient()
    values = result if isinstance(result, list) else [result]
    for k, (want, got) in enumerate(zip(expected["values"], values)):
        problem = compare(want, tape_harness.to_numpy(got))
        assert problem is None, f"{case['name']} (tape) xs[{k}]: {problem}"
