"""Load TensorFlow conformance cases and build them through symgrad's public API.

Every rule here is a rule of ``tests/conformance/README.md``; read it first.

>>> cases = load_cases()
>>> len(cases) > 0 and all(case["format"] == FORMAT for case in cases)
True
>>> describe_ref({"literal": 3.0}), describe_ref("x")
('literal 3.0', "'x'")
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from tests.conformance.arrays import (
    DEFAULT_ATOL,
    DEFAULT_RTOL,
    compare,
    decode_array,
    describe,
    is_array_object,
)
from tests.conformance.ops import apply_op

__all__ = [
    "FORMAT", "CASES_DIR", "BuiltCase", "load_cases", "case_params", "build_case", "compare",
    "decode_array", "describe", "tolerances", "gradients_call_args", "resolve_ref",
    "resolve_refs", "resolve_grad_ys", "is_list_ref", "describe_ref", "import_symgrad",
    "GRAPH_GRADIENT_OPS", "aggregation_kwargs",
]

FORMAT = "symgrad-oracle/1"
CASES_DIR = Path(__file__).resolve().parent / "semantics"


def load_cases(directory: Path | str = CASES_DIR) -> list[dict]:
    """All cases of ``directory`` (``*.json``), sorted by file name."""
    cases = []
    for path in sorted(Path(directory).glob("*.json")):
        with open(path, encoding="utf-8") as handle:
            case = json.load(handle)
        if case.get("format") != FORMAT:
            raise ValueError(f"{path}: format {case.get('format')!r}, expected {FORMAT!r}")
        cases.append(case)
    return cases


def case_params(cases: list[dict]) -> list[Any]:
    """One pytest param per case, id = case name; cases with ``skip`` are skipped."""
    params = []
    for case in cases:
        reason = case.get("note") or str(case.get("skip"))
        marks = [pytest.mark.skip(reason=reason)] if case.get("skip") else []
        params.append(pytest.param(case, id=case["name"], marks=marks))
    return params


def tolerances(case: dict) -> tuple[float, float]:
    """The case's ``(rtol, atol)``, defaulting to the README's 1e-6 and 1e-9."""
    return float(case.get("rtol", DEFAULT_RTOL)), float(case.get("atol", DEFAULT_ATOL))


def import_symgrad() -> Any:
    """Import symgrad lazily, so the harness itself imports without the core."""
    import symgrad

    return symgrad


# --- references ---------------------------------------------------------------------------

def is_list_ref(spec: Any) -> bool:
    """True when ``ys``/``xs``/``stop_gradients`` is a list of references, not a single one."""
    return isinstance(spec, list)


def resolve_ref(ref: Any, values: dict[str, Any]) -> Any:
    """A node id gives that node's value; ``{"literal": v}`` gives ``v`` as it is."""
    if isinstance(ref, dict) and "literal" in ref:
        return ref["literal"]
    if isinstance(ref, str):
        return values[ref]
    raise ValueError(f"conformance harness: bad reference {ref!r}")


def resolve_refs(spec: Any, values: dict[str, Any]) -> Any:
    """One reference -> one value; a list of references -> a list of values."""
    if is_list_ref(spec):
        return [resolve_ref(ref, values) for ref in spec]
    return resolve_ref(spec, values)


def resolve_grad_ys(spec: Any, values: dict[str, Any]) -> Any:
    """``grad_ys`` (a list or a single entry): None, node id, array object or literal."""
    if is_list_ref(spec):
        return [_resolve_grad_y(entry, values) for entry in spec]
    return _resolve_grad_y(spec, values)


def _resolve_grad_y(entry: Any, values: dict[str, Any]) -> Any:
    """One grad_ys entry: an array object becomes a numpy array of its own dtype."""
    if entry is None:
        return None
    if is_array_object(entry):
        return decode_array(entry)
    return resolve_ref(entry, values)


def describe_ref(ref: Any) -> str:
    """Readable name of a reference, for messages."""
    if isinstance(ref, dict) and "literal" in ref:
        return f"literal {ref['literal']!r}"
    return repr(ref)


def gradients_call_args(spec: dict, values: dict[str, Any]) -> tuple[tuple, dict]:
    """Positional and keyword arguments of ``sg.gradients`` for a call spec.

    ``spec`` is the case itself (top-level call) or a ``gradients`` node's attrs.
    ``grad_ys``/``stop_gradients`` are passed only when present and not null;
    ``unconnected_gradients`` only when present.
    """
    args = (resolve_refs(spec["ys"], values), resolve_refs(spec["xs"], values))
    kwargs: dict[str, Any] = {}
    if spec.get("grad_ys") is not None:
        kwargs["grad_ys"] = resolve_grad_ys(spec["grad_ys"], values)
    if spec.get("stop_gradients") is not None:
        kwargs["stop_gradients"] = resolve_refs(spec["stop_gradients"], values)
    if "unconnected_gradients" in spec:
        kwargs["unconnected_gradients"] = spec["unconnected_gradients"]
    return args, kwargs


# --- building the symbolic graph -----------------------------------------------------------

@dataclass
class BuiltCase:
    """A case's graph built with symgrad, ready for the top-level gradients call.

    ``call_gradients()`` performs ``sg.gradients(ys, xs, ...)`` exactly as the case
    says; it is not called by ``build_case`` so that error cases can wrap it in
    ``pytest.raises``.
    """

    case: dict
    tensors: dict[str, Any]
    placeholders: list[Any]
    feeds: list[np.ndarray]
    ys: Any
    xs: Any
    call_gradients: Callable[[], Any]
    placeholder_ids: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        """The case name."""
        return self.case["name"]

    @property
    def feed_dict(self) -> dict[Any, np.ndarray]:
        """``{placeholder_tensor: array}`` for ``sg.evaluate``."""
        return dict(zip(self.placeholders, self.feeds))

    @property
    def ys_list(self) -> list[Any]:
        """The ys as a list (a single y becomes a one-element list)."""
        return list(self.ys) if is_list_ref(self.case["ys"]) else [self.ys]

    @property
    def xs_refs(self) -> list[Any]:
        """The xs references as a list (for naming xs in messages)."""
        xs = self.case["xs"]
        return list(xs) if is_list_ref(xs) else [xs]


def build_case(case: dict, sg: Any = None) -> BuiltCase:
    """Build ``case``'s nodes with symgrad's public API (raises what the API raises)."""
    sg = import_symgrad() if sg is None else sg
    values: dict[str, Any] = {}
    placeholders, feeds, placeholder_ids = [], [], []
    for node in case["nodes"]:
        node_id, op, attrs = node["id"], node["op"], node.get("attrs", {})
        if op == "placeholder":
            values[node_id] = _placeholder(sg, node_id, attrs)
            placeholders.append(values[node_id])
            placeholder_ids.append(node_id)
            feeds.append(_feed(case, node_id))
        elif op == "constant":
            value = attrs["value"]
            values[node_id] = sg.constant(decode_array(value), dtype=value["dtype"])
        elif op in GRAPH_GRADIENT_OPS:
            values[node_id] = _gradient_node(sg, op, attrs, values)
        else:
            operands = [resolve_ref(ref, values) for ref in node["inputs"]]
            values[node_id] = apply_op(sg, op, operands, attrs)
    args, kwargs = gradients_call_args(case, values)
    kwargs.update(aggregation_kwargs(sg, case))
    return BuiltCase(
        case=case, tensors=values, placeholders=placeholders, feeds=feeds,
        ys=args[0], xs=args[1], call_gradients=lambda: sg.gradients(*args, **kwargs),
        placeholder_ids=placeholder_ids,
    )


GRAPH_GRADIENT_OPS = frozenset({"gradients", "hessians", "jacobian", "batch_jacobian"})


def aggregation_kwargs(sg: Any, spec: dict) -> dict[str, Any]:
    """``{"aggregation_method": sg.AggregationMethod.<name>}`` when ``spec`` names one."""
    name = spec.get("aggregation_method")
    return {} if name is None else {"aggregation_method": getattr(sg.AggregationMethod, name)}


def _gradient_node(sg: Any, op: str, attrs: dict, values: dict[str, Any]) -> Any:
    """A gradients, hessians, jacobian or batch_jacobian node (v2 adds the last three)."""
    if op == "gradients":
        args, kwargs = gradients_call_args(attrs, values)
        kwargs.update(aggregation_kwargs(sg, attrs))
        return sg.gradients(*args, **kwargs)[attrs.get("index", 0)]
    if op == "hessians":
        return sg.hessians(resolve_refs(attrs["ys"], values), resolve_refs(attrs["xs"], values),
                           **aggregation_kwargs(sg, attrs))[attrs.get("index", 0)]
    y, x = resolve_ref(attrs["ys"], values), resolve_ref(attrs["xs"], values)
    if op == "jacobian":
        kwargs = {k: attrs[k] for k in ("unconnected_gradients",) if k in attrs}
        return sg.jacobian(y, x, **kwargs)
    # batch_jacobian by TF's definition: stack([gradients(y[:, i], x, "zero")[0]], axis=1)
    rows = [sg.gradients(y[:, i], x, unconnected_gradients="zero")[0]
            for i in range(y.shape[1])]
    return sg.stack(rows, axis=1)


def _placeholder(sg: Any, node_id: str, attrs: dict) -> Any:
    """``sg.placeholder(id, shape=tuple(shape), dtype=dtype)``; null dims become None."""
    return sg.placeholder(node_id, shape=tuple(attrs["shape"]), dtype=attrs["dtype"])


def _feed(case: dict, node_id: str) -> np.ndarray:
    """The decoded feed of placeholder ``node_id``."""
    try:
        return decode_array(case["feeds"][node_id])
    except KeyError:
        raise ValueError(f"case {case['name']}: placeholder {node_id!r} has no feed") from None
