"""Run a conformance case eagerly with ``sg.GradientTape``, mapped as the README says.

Section *The eager tape* of ``tests/conformance/README.md``:

* placeholders and constants become ``sg.Variable(value)``; every op computes eagerly;
* one non-persistent tape for the top-level call (outermost) and one per ``gradients``
  node, all entered before the first node, the first ``gradients`` node's tape innermost;
  a node's tape is exited just before that node, whose value is
  ``tape.gradient(ys, xs, output_gradients=grad_ys, ...)[index]``;
* right after a node is computed every open tape watches it if it is a float
  placeholder or an x of any gradient call of the case;
* the top-level ``tape.gradient(...)`` is made after the outermost tape has exited.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from tests.conformance.arrays import decode_array
from tests.conformance.loader import is_list_ref, resolve_grad_ys, resolve_ref, resolve_refs
from tests.conformance.ops import apply_op

FLOAT_DTYPES = frozenset({"float16", "float32", "float64"})
# node ops that own a nested tape (README, "Tape mode for v2": batch_jacobian too)
NESTED_TAPE_OPS = frozenset({"gradients", "batch_jacobian"})


@dataclass
class TapeRun:
    """The eager values of a case's nodes and the exited top-level tape."""

    case: dict
    values: dict[str, Any]
    tape: Any

    def gradient(self) -> Any:
        """The top-level ``tape.gradient(ys, xs, output_gradients=..., ...)`` call."""
        args, kwargs = tape_gradient_args(self.case, self.values)
        return self.tape.gradient(*args, **kwargs)

    def forward(self) -> list[Any]:
        """The ys' eager values as numpy arrays (for the forward diagnostic)."""
        ys = self.case["ys"] if is_list_ref(self.case["ys"]) else [self.case["ys"]]
        return [to_numpy(resolve_ref(ref, self.values)) for ref in ys]


def tape_gradient_args(spec: dict, values: dict[str, Any]) -> tuple[tuple, dict]:
    """Arguments of ``tape.gradient`` for a call spec (the case or a gradients node's attrs)."""
    if spec.get("stop_gradients") is not None:
        raise ValueError("conformance harness: stop_gradients has no tape equivalent")
    args = (resolve_refs(spec["ys"], values), resolve_refs(spec["xs"], values))
    kwargs: dict[str, Any] = {}
    if spec.get("grad_ys") is not None:
        kwargs["output_gradients"] = resolve_grad_ys(spec["grad_ys"], values)
    if "unconnected_gradients" in spec:
        kwargs["unconnected_gradients"] = spec["unconnected_gradients"]
    return args, kwargs


def watched_ids(case: dict) -> set[str]:
    """Ids watched by every open tape: float placeholders and the xs of every call."""
    ids = {node["id"] for node in case["nodes"]
           if node["op"] == "placeholder" and node["attrs"]["dtype"] in FLOAT_DTYPES}
    specs = [case] + [node["attrs"] for node in case["nodes"] if node["op"] in NESTED_TAPE_OPS]
    for spec in specs:
        xs = spec["xs"] if is_list_ref(spec["xs"]) else [spec["xs"]]
        ids.update(ref for ref in xs if isinstance(ref, str))
    return ids


def run_tape_nodes(case: dict, sg: Any) -> TapeRun:
    """Compute every node eagerly under the case's tapes (errors here are phase 'graph')."""
    gradient_nodes = [node["id"] for node in case["nodes"] if node["op"] in NESTED_TAPE_OPS]
    open_tapes: list[Any] = []  # outermost first
    for _ in range(len(gradient_nodes) + 1):  # the top-level tape, then the last node's ...
        open_tapes.append(sg.GradientTape().__enter__())
    top = open_tapes[0]
    watch = watched_ids(case)
    values: dict[str, Any] = {}
    try:
        for node in case["nodes"]:
            if node["op"] in NESTED_TAPE_OPS:
                inner = open_tapes.pop()
                inner.__exit__(None, None, None)
                values[node["id"]] = _node_gradient(inner, node, values)
            else:
                values[node["id"]] = _eager_value(sg, case, node, values)
            if node["id"] in watch:
                for tape in open_tapes:
                    tape.watch(values[node["id"]])
        open_tapes.pop().__exit__(None, None, None)
    except BaseException as exc:
        _exit_all(open_tapes, exc)
        raise
    return TapeRun(case=case, values=values, tape=top)


def _node_gradient(tape: Any, node: dict, values: dict[str, Any]) -> Any:
    """``tape.gradient(...)[index]``; a single x gives a single gradient (index 0).
    A ``batch_jacobian`` node: ``tape.batch_jacobian(target, source)``."""
    attrs = node["attrs"]
    if node["op"] == "batch_jacobian":
        return tape.batch_jacobian(resolve_ref(attrs["ys"], values),
                                   resolve_ref(attrs["xs"], values))
    args, kwargs = tape_gradient_args(attrs, values)
    result = tape.gradient(*args, **kwargs)
    return result[attrs.get("index", 0)] if is_list_ref(attrs["xs"]) else result


def _eager_value(sg: Any, case: dict, node: dict, values: dict[str, Any]) -> Any:
    """One non-gradients node, computed eagerly; leaves become ``sg.Variable``."""
    attrs = node.get("attrs", {})
    if node["op"] == "placeholder":
        return sg.Variable(decode_array(case["feeds"][node["id"]]))
    if node["op"] == "constant":
        return sg.Variable(decode_array(attrs["value"]))
    operands = [resolve_ref(ref, values) for ref in node["inputs"]]
    return apply_op(sg, node["op"], operands, attrs)


def _exit_all(open_tapes: list[Any], exc: BaseException) -> None:
    """Exit the tapes still open, innermost first, after ``exc`` interrupted the nodes."""
    while open_tapes:
        try:
            open_tapes.pop().__exit__(type(exc), exc, exc.__traceback__)
        except Exception:  # noqa: BLE001 - the original error is the one to report
            pass


def to_numpy(value: Any) -> Any:
    """An eager result as a numpy value (``None`` and raw literals pass through)."""
    if value is None or isinstance(value, (np.ndarray, np.generic)):
        return value
    if hasattr(value, "numpy") and callable(value.numpy):
        return value.numpy()
    if hasattr(value, "value"):
        return np.asarray(value.value)
    if isinstance(value, (bool, int, float, list, tuple)):
        return value
    return np.asarray(value)


def gradient_values(case: dict, result: Any, path: str = "tape") -> list[Any]:
    """The top-level tape result as a list of numpy values, checking its structure.

    A single x must give a single gradient, a list of xs a list (README, tape section).
    """
    if is_list_ref(case["xs"]):
        if not isinstance(result, (list, tuple)):
            pytest.fail(f"[{path}] case {case['name']}: tape.gradient with a list of sources "
                        f"returned {type(result).__name__}, not a list")
        return [to_numpy(value) for value in result]
    if isinstance(result, (list, tuple)):
        pytest.fail(f"[{path}] case {case['name']}: tape.gradient with a single source "
                    f"returned a {type(result).__name__}, not a single gradient")
    return [to_numpy(result)]
