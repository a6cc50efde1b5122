"""TensorFlow's recorded results for the v2 gradient features (tests/conformance/v2, copied
from shared/): hessians, jacobian, batch_jacobian, aggregation_method, prevent_gradient,
custom_gradient and define_op, on sg.evaluate, compiled cpu and parallel, and the tape
where the case has ``expected_tape``. Presets are those of tests/conformance/README.md."""

from __future__ import annotations

import builtins
import json
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

import symgrad as sg
from tests.conformance.arrays import compare, decode_array
from tests.conformance.loader import gradients_call_args, resolve_ref, resolve_refs
from tests.conformance.ops import apply_op

V2_DIR = Path(__file__).resolve().parent / "conformance" / "v2"
MY_OPS = {"hessians", "jacobian", "batch_jacobian", "prevent_gradient", "custom_gradient",
          "define_op"}


def _mine(case: dict) -> bool:
    nodes = case["nodes"]
    return bool({n["op"] for n in nodes} & MY_OPS) or "aggregation_method" in case or any(
        "aggregation_method" in n.get("attrs", {}) for n in nodes)


def _my_cases() -> list:
    cases = []
    for path in sorted(V2_DIR.glob("*.json")):
        case = json.loads(path.read_text())
        if _mine(case):
            marks = [pytest.mark.skip(reason="TF artefact")] if case.get("skip") else []
            cases.append(pytest.param(case, id=case["name"], marks=marks))
    return cases


# --- presets (README "Custom-gradient presets") ---------------------------------------------
@sg.custom_gradient
def log1pexp(x):
    e = sg.exp(x)
    return sg.log(1.0 + e), lambda up: up * (1.0 - 1.0 / (1.0 + e))


@sg.custom_gradient
def sin_grad3cos(x):
    return sg.sin(x), lambda up: 3.0 * up * sg.cos(x)


@sg.custom_gradient
def mul_grad_swap(x, y):
    return x * y, lambda up: (up * y, up)


@sg.custom_gradient
def clip_grad_norm(x):
    return sg.identity(x), lambda up: sg.minimum(sg.maximum(up, -0.5), 0.5)


CUSTOM = {f.__name__: f for f in (log1pexp, sin_grad3cos, mul_grad_swap, clip_grad_norm)}
_g = sp.Function("g")
DEFINED = {
    "gauss_bump": sg.define_op("gauss_bump", lambda x: x * sp.exp(-x**2)),
    "bilinear_sin": sg.define_op("bilinear_sin", lambda x, y: x * y + sp.sin(x)),
    "underivable": sg.define_op("underivable", lambda x: _g(x), numpy=lambda x: np.array(x)),
}


def _apply(op, args, attrs):
    if op == "prevent_gradient":
        return sg.prevent_gradient(args[0], message=attrs.get("message", ""))
    if op == "custom_gradient":
        return CUSTOM[attrs["fn"]](*args)
    if op == "define_op":
        return DEFINED[attrs["formula"]](*args)
    return apply_op(sg, op, args, attrs)


def _aggregation(spec: dict) -> dict:
    name = spec.get("aggregation_method")
    return {} if name is None else {"aggregation_method": getattr(sg.AggregationMethod, name)}


def _batch_jacobian(y, x):
    """TF's definition, symbolically: stack([gradients(y[:, i], x, 'zero')[0]], axis=1)."""
    rows = [sg.gradients(y[:, i], x, unconnected_gradients="zero")[0]
            for i in range(y.shape[1])]
    return sg.stack(rows, axis=1)


def _graph_node(op, attrs, values):
    if op == "gradients":
        args, kwargs = gradients_call_args(attrs, values)
        return sg.gradients(*args, **kwargs, **_aggregation(attrs))[attrs.get("index", 0)]
    if op == "hessians":
        return sg.hessians(resolve_refs(attrs["ys"], values), resolve_refs(attrs["xs"], values),
                           **_aggregation(attrs))[attrs.get("index", 0)]
    if op == "jacobian":
        kwargs = {k: attrs[k] for k in ("unconnected_gradients",) if k in attrs}
        return sg.jacobian(resolve_ref(attrs["ys"], values), resolve_ref(attrs["xs"], values),
                           **kwargs)
    return _batch_jacobian(resolve_ref(attrs["ys"], values), resolve_ref(attrs["xs"], values))


def _build(case):
    values, feeds = {}, {}
    for node in case["nodes"]:
        node_id, op, attrs = node["id"], node["op"], node.get("attrs", {})
        if op == "placeholder":
            values[node_id] = sg.placeholder(node_id, tuple(attrs["shape"]), attrs["dtype"])
            feeds[values[node_id]] = decode_array(case["feeds"][node_id])
        elif op == "constant":
            values[node_id] = sg.constant(decode_array(attrs["value"]),
                                          dtype=attrs["value"]["dtype"])
        elif op in ("gradients", "hessians", "jacobian", "batch_jacobian"):
            values[node_id] = _graph_node(op, attrs, values)
        else:
            values[node_id] = _apply(op, [resolve_ref(r, values) for r in node["inputs"]],
                                     attrs)
    args, kwargs = gradients_call_args(case, values)
    kwargs.update(_aggregation(case))
    return (lambda: sg.gradients(*args, **kwargs)), feeds


def test_the_cases_are_here():
    names = {p.values[0]["name"] for p in _my_cases()}
    assert {"aggregation_add_n", "batch_jacobian_second_order", "custom_two_inputs",
            "define_op_unary_second_order", "hessians_two_xs_index1", "jacobian_matrix_output",
            "prevent_gradient_raises"} <= names


@pytest.mark.parametrize("target", [None, "cpu", "parallel"])
@pytest.mark.parametrize("case", _my_cases())
def test_tensorflow_v2_gradient_cases(case, target):
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
def test_tensorflow_v2_gradient_cases_on_the_tape(case, monkeypatch):
    import tests.conformance.tape as tape_harness
    expected = case.get("expected_tape")
    if expected is None:
        pytest.skip("no expected_tape (graph-only feature)")
    monkeypatch.setattr(tape_harness, "apply_op", lambda _sg, op, args, attrs:
                        _apply(op, args, attrs))
    if expected["outcome"] == "error":
        with pytest.raises(getattr(builtins, expected["error"])):
            tape_harness.run_tape_nodes(case, sg).gradient()
        return
    result = tape_harness.run_tape_nodes(case, sg).gradient()
    values = result if isinstance(result, list) else [result]
    assert len(values) == len(expected["values"])
    for k, (want, got) in enumerate(zip(expected["values"], values)):
        problem = compare(want, tape_harness.to_numpy(got))
        assert problem is None, f"{case['name']} (tape) xs[{k}]: {problem}"
