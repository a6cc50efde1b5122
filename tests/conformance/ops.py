"""Apply one conformance node op to already-built operands, through symgrad's public API.

The same function serves the symbolic graph (operands are ``sg.Tensor``) and the
eager tape (operands are ``sg.Variable`` or eager values): only the leaves differ.
The table follows ``tests/conformance/README.md`` (section *Nodes*).
"""

from __future__ import annotations

import operator
from typing import Any, Callable

BINARY_OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "div": operator.truediv,
    "less": operator.lt,
    "less_equal": operator.le,
    "greater": operator.gt,
    "greater_equal": operator.ge,
}

UNARY_FUNCTIONS = frozenset(
    "sin cos tan arcsin arccos arctan sinh cosh tanh arcsinh arccosh arctanh exp expm1 "
    "log log1p sqrt square abs sign sigmoid softplus relu erf floor ceil round identity "
    "stop_gradient".split()
)
BINARY_FUNCTIONS = frozenset({"maximum", "minimum", "arctan2"})
REDUCTIONS = frozenset({"reduce_sum", "reduce_mean", "reduce_prod", "reduce_max", "reduce_min"})


def apply_op(sg: Any, op: str, args: list[Any], attrs: dict) -> Any:
    """Return the result of node op ``op`` on ``args`` (operands already resolved)."""
    if op in BINARY_OPERATORS:
        return BINARY_OPERATORS[op](args[0], args[1])
    if op == "neg":
        return -args[0]
    if op in UNARY_FUNCTIONS:
        return getattr(sg, op)(args[0])
    if op in BINARY_FUNCTIONS:
        return getattr(sg, op)(args[0], args[1])
    if op == "pow":
        return args[0] ** args[1] if attrs.get("operator") else sg.pow(args[0], args[1])
    if op == "matmul":
        return args[0] @ args[1] if attrs.get("operator") else sg.matmul(args[0], args[1])
    if op == "where":
        return sg.where(args[0], args[1], args[2])
    if op in REDUCTIONS:
        return getattr(sg, op)(args[0], axis=decode_axis(attrs.get("axis")),
                               keepdims=bool(attrs.get("keepdims", False)))
    if op == "transpose":
        perm = attrs.get("perm")
        return sg.transpose(args[0], perm=None if perm is None else tuple(perm))
    if op == "reshape":
        return sg.reshape(args[0], tuple(attrs["shape"]))
    if op == "cast":
        return sg.cast(args[0], attrs["dtype"])
    if op == "getitem":
        return args[0][decode_key(attrs["key"])]
    raise ValueError(f"conformance harness: unknown op {op!r}")


def decode_axis(axis: Any) -> int | tuple[int, ...] | None:
    """``axis`` attribute: absent/null -> None, int -> int, list -> tuple."""
    if isinstance(axis, list):
        return tuple(axis)
    return axis


def decode_key(items: list) -> Any:
    """``key`` attribute of getitem: one item -> that item, several -> a tuple."""
    decoded = [_decode_key_item(item) for item in items]
    return decoded[0] if len(decoded) == 1 else tuple(decoded)


def _decode_key_item(item: Any) -> Any:
    """An int stays an int, ``{"slice": [a, b, c]}`` becomes ``slice(a, b, c)``.

    ``null`` (new axis) and ``"..."`` (Ellipsis) are accepted too, as API.md allows them.
    """
    if isinstance(item, dict) and "slice" in item:
        return slice(*item["slice"])
    if item == "...":
        return Ellipsis
    return item


# v2 elementwise: the new elementwise ops, reductions and normalisers by name
V2_UNARY = frozenset(
    "reciprocal rsqrt cbrt log2 log10 exp2 erfc erfinv lgamma digamma log_sigmoid softsign "
    "elu selu relu6 silu".split()
)
V2_BINARY = frozenset("logaddexp hypot xlogy xlog1py xdivy div_no_nan mul_no_nan "
                      "squared_difference floordiv".split())
V2_REDUCTIONS = frozenset({"reduce_logsumexp", "reduce_variance", "reduce_std", "norm"})
_apply_op_v1 = apply_op


def apply_op(sg: Any, op: str, args: list[Any], attrs: dict) -> Any:  # noqa: F811
    """``apply_op`` with the v2 elementwise ops (the v1 table above is unchanged)."""
    if op in V2_UNARY:
        return getattr(sg, op)(args[0])
    if op in V2_BINARY:
        return getattr(sg, op)(args[0], args[1])
    if op == "floormod":
        return args[0] % args[1] if attrs.get("operator") else sg.floormod(args[0], args[1])
    if op == "gelu":
        return sg.gelu(args[0], approximate=bool(attrs.get("approximate", False)))
    if op == "leaky_relu":
        return sg.leaky_relu(args[0], **({"alpha": attrs["alpha"]} if "alpha" in attrs else {}))
    if op in V2_REDUCTIONS:
        return getattr(sg, op)(args[0], axis=decode_axis(attrs.get("axis")),
                               keepdims=bool(attrs.get("keepdims", False)))
    if op in ("softmax", "log_softmax"):
        return getattr(sg, op)(args[0], axis=attrs.get("axis", -1))
    if op == "clip_by_value":
        return sg.clip_by_value(args[0], args[1], args[2])
    return _apply_op_v1(sg, op, args, attrs)
