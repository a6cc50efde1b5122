"""Apply one conformance node op to already-built operands, through symgrad's public API.

The same function serves the symbolic graph (operands are ``sg.Tensor``) and the
eager tape (operands are ``sg.Variable`` or eager values): only the leaves differ.
The table follows ``tests/conformance/README.md`` (section *Nodes*).
"""

from __future__ import annotations

import operator
from typing import Any, Callable

from tests.conformance.arrays import decode_array

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
    if isinstance(item, dict) and "array" in item:  # v2: integer-array indexing
        return decode_array(item["array"])
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


# v2 layout, indexing/scan/contraction and gradient-feature ops ---------------------------
_apply_op_v2_elementwise = apply_op
V2_LAYOUT = frozenset("concat stack unstack split squeeze expand_dims broadcast_to tile pad "
                      "reverse roll tril triu diag diag_part trace T ndim len "
                      "reshape_method".split())
V2_INDEXING = frozenset("gather cumsum cumprod einsum tensordot argmax argmin one_hot".split())
V2_GRADIENT_OPS = frozenset({"prevent_gradient", "custom_gradient", "define_op"})


def _tuple(value: Any) -> Any:
    """A JSON list as a tuple (axis/shift lists); anything else as it is."""
    return tuple(value) if isinstance(value, list) else value


def _apply_layout(sg: Any, op: str, args: list[Any], attrs: dict) -> Any:
    """A layout op (``V2_LAYOUT``); concat and stack take all the operands."""
    x = args[0] if args else None
    simple = {
        "unstack": lambda: sg.unstack(x, axis=attrs.get("axis", 0))[attrs["index"]],
        "split": lambda: sg.split(x, attrs["num_or_size_splits"],
                                  axis=attrs.get("axis", 0))[attrs["index"]],
        "squeeze": lambda: sg.squeeze(x, axis=_tuple(attrs.get("axis"))),
        "expand_dims": lambda: sg.expand_dims(x, attrs["axis"]),
        "broadcast_to": lambda: sg.broadcast_to(x, tuple(attrs["shape"])),
        "tile": lambda: sg.tile(x, tuple(attrs["multiples"])),
        "pad": lambda: sg.pad(x, attrs["paddings"],
                              constant_values=attrs.get("constant_values", 0)),
        "reverse": lambda: sg.reverse(x, _tuple(attrs["axis"])),
        "roll": lambda: sg.roll(x, _tuple(attrs["shift"]), _tuple(attrs["axis"])),
        "T": lambda: x.T,
        "ndim": lambda: x.ndim,
        "len": lambda: len(x),
        "reshape_method": lambda: x.reshape(*attrs["shape"]),
    }
    if op in simple:
        return simple[op]()
    if op in ("concat", "stack"):
        return getattr(sg, op)(args, axis=attrs.get("axis", 0))
    if op in ("tril", "triu"):
        return getattr(sg, op)(x, k=attrs.get("k", 0))
    return getattr(sg, op)(x)  # diag, diag_part, trace


def _apply_indexing(sg: Any, op: str, args: list[Any], attrs: dict) -> Any:
    """An index, scan or contraction op (``V2_INDEXING``)."""
    if op == "gather":
        indices = args[1] if len(args) > 1 else decode_array(attrs["indices"])
        return sg.gather(args[0], indices, axis=attrs.get("axis", 0))
    if op in ("cumsum", "cumprod"):
        return getattr(sg, op)(args[0], axis=attrs.get("axis", 0),
                               exclusive=attrs.get("exclusive", False),
                               reverse=attrs.get("reverse", False))
    if op == "einsum":
        return sg.einsum(attrs["subscripts"], *args)
    if op == "tensordot":
        return sg.tensordot(args[0], args[1], attrs["axes"])
    if op in ("argmax", "argmin"):
        return getattr(sg, op)(args[0], attrs.get("axis"))
    return sg.one_hot(args[0], attrs["depth"], dtype=attrs.get("dtype", "float64"))


def _apply_gradient_op(sg: Any, op: str, args: list[Any], attrs: dict) -> Any:
    """prevent_gradient, or a preset custom_gradient / define_op (``presets.py``)."""
    if op == "prevent_gradient":
        return sg.prevent_gradient(args[0], message=attrs.get("message", ""))
    from tests.conformance import presets  # lazily: the presets need symgrad

    if op == "custom_gradient":
        return presets.CUSTOM[attrs["fn"]](*args)
    return presets.DEFINED[attrs["formula"]](*args)


def apply_op(sg: Any, op: str, args: list[Any], attrs: dict) -> Any:  # noqa: F811
    """``apply_op`` with the v2 layout, indexing and gradient-feature ops too."""
    if op in V2_LAYOUT:
        return _apply_layout(sg, op, args, attrs)
    if op in V2_INDEXING:
        return _apply_indexing(sg, op, args, attrs)
    if op in V2_GRADIENT_OPS:
        return _apply_gradient_op(sg, op, args, attrs)
    return _apply_op_v2_elementwise(sg, op, args, attrs)
