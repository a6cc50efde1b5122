"""numpy functions on symbolic Tensors: ``np.sin(x)``, ``np.exp(x) * 2``, ``np.sum(x)`` build
the symgrad op of the same meaning (``Tensor.__array_ufunc__`` / ``__array_function__``).

Two tables keyed by numpy's own ufunc and function objects map them to symgrad functions.
Anything else raises a TypeError naming the symgrad function to use, or saying there is
none; so do numpy options symgrad has no meaning for (``out=``, ``where=``, ``dtype=``).
Eager values (``sg.Variable``, eager tensors) are not covered: numpy converts them to
arrays, as TensorFlow's eager tensors are (the result is an ndarray no tape records).

>>> import numpy as np
>>> import symgrad as sg
>>> x = sg.placeholder("x", shape=(3,))
>>> np.sin(x).op.name, (np.exp(x) * 2).op.name, np.sum(x).op.name
('sin', 'multiply', 'reduce_sum')
>>> np.isnan(x)  # doctest: +ELLIPSIS
Traceback (most recent call last):
    ...
TypeError: numpy.isnan on a symgrad Tensor: symgrad has no isnan op; compare x != x ...
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .graph.tensor import Tensor


def _sg():
    import symgrad
    return symgrad


UFUNCS: dict = {
    np.add: "add", np.subtract: "subtract", np.multiply: "multiply", np.divide: "divide",
    np.power: "pow", np.float_power: "pow", np.negative: "negative", np.positive: "identity",
    np.absolute: "abs", np.fabs: "abs", np.sign: "sign", np.sin: "sin", np.cos: "cos",
    np.tan: "tan", np.arcsin: "arcsin", np.arccos: "arccos", np.arctan: "arctan",
    np.sinh: "sinh", np.cosh: "cosh", np.tanh: "tanh", np.arcsinh: "arcsinh",
    np.arccosh: "arccosh", np.arctanh: "arctanh", np.exp: "exp", np.exp2: "exp2",
    np.expm1: "expm1", np.log: "log", np.log2: "log2", np.log10: "log10", np.log1p: "log1p",
    np.sqrt: "sqrt", np.cbrt: "cbrt", np.square: "square", np.reciprocal: "reciprocal",
    np.floor: "floor", np.ceil: "ceil", np.rint: "round", np.maximum: "maximum",
    np.minimum: "minimum", np.arctan2: "arctan2", np.hypot: "hypot",
    np.logaddexp: "logaddexp", np.floor_divide: "floordiv", np.remainder: "floormod",
    np.less: "less", np.less_equal: "less_equal", np.greater: "greater",
    np.greater_equal: "greater_equal", np.equal: "equal", np.not_equal: "not_equal",
    np.logical_and: "logical_and", np.logical_or: "logical_or",
    np.logical_not: "logical_not", np.matmul: "matmul",
}
"""numpy ufunc -> the name of the public symgrad function of the same meaning."""

UFUNC_REDUCE: dict = {np.add: "reduce_sum", np.multiply: "reduce_prod",
                      np.maximum: "reduce_max", np.minimum: "reduce_min",
                      np.logical_and: "reduce_all", np.logical_or: "reduce_any"}
"""``ufunc.reduce`` (numpy's default axis is 0) -> the symgrad reduction."""

UFUNC_ACCUMULATE: dict = {np.add: "cumsum", np.multiply: "cumprod"}

HINTS: dict = {
    np.isnan: "symgrad has no isnan op; compare x != x (NaN is the only value unequal to itself)",
    np.fmax: "use sg.maximum (it propagates NaN, as np.maximum does)",
    np.fmin: "use sg.minimum (it propagates NaN, as np.minimum does)",
    np.fmod: "use sg.floormod (the sign of y, as np.remainder) or write x - y * trunc(x / y)",
    np.trunc: "symgrad has no trunc op; use sg.where(x < 0, sg.ceil(x), sg.floor(x))",
    np.logical_xor: "use sg.not_equal on bool Tensors",
    np.sort: "symgrad has no sort op",
    np.outer: "use sg.expand_dims(a, -1) * b, or sg.tensordot(a, b, 0)",
}
"""numpy ufuncs and functions symgrad lacks -> what to use instead."""


def _no_value(value: Any) -> bool:
    return value is np._NoValue


def _reduction(name: str, numpy_name: str) -> Callable:
    def run(a, axis=None, dtype=None, out=None, keepdims=False, **rest):
        _refuse(numpy_name, dtype=dtype, out=out, **rest)
        axis = tuple(axis) if isinstance(axis, list) else axis
        return getattr(_sg(), name)(a, axis=axis, keepdims=bool(keepdims))
    return run


def _refuse(name: str, **options) -> None:
    """TypeError for numpy options (out=, dtype=, where=, ...) given a value."""
    given = [k for k, v in options.items() if v is not None and not _no_value(v)
             and not (k == "keepdims" and v is False)]
    if given:
        raise TypeError(f"numpy.{name} on a symgrad Tensor: the option(s) "
                        f"{', '.join(given)} have no symgrad meaning (Tensors are immutable "
                        "and keep their dtype; cast with sg.cast)")


def _clip(a, a_min=np._NoValue, a_max=np._NoValue, out=None, **rest):
    _refuse("clip", out=out, **{k: v for k, v in rest.items() if k not in ("min", "max")})
    low = rest.get("min", a_min)
    high = rest.get("max", a_max)
    low = None if _no_value(low) else low
    high = None if _no_value(high) else high
    sg = _sg()
    if low is not None and high is not None:
        return sg.clip_by_value(a, low, high)
    if low is not None:
        return sg.maximum(a, low)
    if high is not None:
        return sg.minimum(a, high)
    raise TypeError("numpy.clip on a symgrad Tensor: give a_min or a_max")


def _scan(name: str) -> Callable:
    def run(a, axis=None, dtype=None, out=None):
        _refuse(name, dtype=dtype, out=out)
        sg = _sg()
        if axis is None:
            return getattr(sg, name)(sg.reshape(a, (-1,)), axis=0)
        return getattr(sg, name)(a, axis=axis)
    return run


def _where(condition, *xy):
    if len(xy) != 2:
        raise TypeError("numpy.where on a symgrad Tensor: give all three arguments "
                        "(np.where(cond, x, y) is sg.where); the one-argument form has no "
                        "symgrad op (its shape depends on the values)")
    return _sg().where(condition, *xy)


def _join(name: str) -> Callable:
    def run(arrays, axis=0, out=None, **rest):
        _refuse(name, out=out, **{k: v for k, v in rest.items() if k != "casting"})
        if axis is None:
            raise TypeError(f"numpy.{name} on symgrad Tensors: axis=None (flatten first) has "
                            "no symgrad op; reshape each with sg.reshape(t, (-1,))")
        fn = _sg().concat if name == "concatenate" else _sg().stack
        return fn(list(arrays), axis=axis)
    return run


def _dot(a, b, out=None):
    _refuse("dot", out=out)
    sg = _sg()
    if 0 in (np.ndim(a), np.ndim(b)):
        return sg.multiply(a, b)
    if np.ndim(a) > 2 or np.ndim(b) > 2:
        raise TypeError("numpy.dot on symgrad Tensors of rank > 2: use sg.tensordot(a, b, "
                        "[[-1], [-2]]) (np.dot's axes) or sg.matmul (batched)")
    return sg.matmul(a, b)


def _reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    if order != "C":
        raise TypeError("numpy.reshape on a symgrad Tensor: only order='C'")
    shape = newshape if shape is None else shape
    return _sg().reshape(a, (shape,) if isinstance(shape, int) else tuple(shape))


def _einsum(subscripts, *operands, out=None, optimize=False, **rest):
    _refuse("einsum", out=out, **rest)
    return _sg().einsum(subscripts, *operands)


def _std_var(name: str) -> Callable:
    def run(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **rest):
        _refuse(name, dtype=dtype, out=out, **rest)
        if ddof != 0:
            raise TypeError(f"numpy.{name} on a symgrad Tensor: only ddof=0 (TF's reduce_"
                            f"{'std' if name == 'std' else 'variance'})")
        fn = _sg().reduce_std if name == "std" else _sg().reduce_variance
        return fn(a, axis=axis, keepdims=bool(keepdims))
    return run


def _arg(name: str) -> Callable:
    def run(a, axis=None, out=None, **rest):
        _refuse(name, out=out, **rest)
        if axis is None and np.ndim(a) != 1:
            raise TypeError(f"numpy.{name} on a symgrad Tensor of rank {np.ndim(a)} with "
                            "axis=None (numpy flattens; TF takes axis 0): give the axis")
        return getattr(_sg(), name)(a, axis=0 if axis is None else axis)
    return run


FUNCTIONS: dict = {
    np.sum: _reduction("reduce_sum", "sum"), np.mean: _reduction("reduce_mean", "mean"),
    np.max: _reduction("reduce_max", "max"), np.amax: _reduction("reduce_max", "amax"),
    np.min: _reduction("reduce_min", "min"), np.amin: _reduction("reduce_min", "amin"),
    np.prod: _reduction("reduce_prod", "prod"), np.std: _std_var("std"), np.var: _std_var("var"),
    np.all: _reduction("reduce_all", "all"), np.any: _reduction("reduce_any", "any"),
    np.dot: _dot, np.transpose: lambda a, axes=None: _sg().transpose(a, axes),
    np.reshape: _reshape, np.where: _where,
    np.concatenate: _join("concatenate"), np.stack: _join("stack"), np.clip: _clip,
    np.cumsum: _scan("cumsum"), np.cumprod: _scan("cumprod"),
    np.tensordot: lambda a, b, axes=2: _sg().tensordot(a, b, axes), np.einsum: _einsum,
    np.expand_dims: lambda a, axis: _sg().expand_dims(a, axis),
    np.squeeze: lambda a, axis=None: _sg().squeeze(a, axis),
    np.tile: lambda a, reps: _sg().tile(a, (reps,) if isinstance(reps, int) else reps),
    np.flip: lambda m, axis=None: _sg().reverse(
        m, tuple(range(np.ndim(m))) if axis is None else axis),
    np.roll: lambda a, shift, axis=None: _sg().roll(a, shift, axis) if axis is not None
    else _sg().reshape(_sg().roll(_sg().reshape(a, (-1,)), shift, 0), a.shape),
    np.broadcast_to: lambda array, shape, subok=False: _sg().broadcast_to(array, shape),
    np.trace: lambda a: _sg().trace(a), np.diag: lambda v: _sg().diag(v),
    np.tril: lambda m, k=0: _sg().tril(m, k), np.triu: lambda m, k=0: _sg().triu(m, k),
    np.argmax: _arg("argmax"), np.argmin: _arg("argmin"),
    np.shape: lambda a: a.shape, np.ndim: lambda a: len(a.shape),
}
"""numpy function (``__array_function__``) -> a function of numpy's signature that builds
the symgrad op."""


def apply_ufunc(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    """``Tensor.__array_ufunc__``: the symgrad op of ``ufunc`` (see the module docstring)."""
    where = f"numpy.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
    if method == "__call__":
        name = UFUNCS.get(ufunc)
        if name is None:
            raise TypeError(f"{where} on a symgrad Tensor: {_missing(ufunc)}")
        _refuse(ufunc.__name__, **kwargs)
        return getattr(_sg(), name)(*inputs)
    table = {"reduce": UFUNC_REDUCE, "accumulate": UFUNC_ACCUMULATE}.get(method, {})
    name = table.get(ufunc)
    if name is None:
        raise TypeError(f"{where} on a symgrad Tensor: symgrad has no op for it")
    axis = kwargs.pop("axis", 0)
    keepdims = kwargs.pop("keepdims", False)
    _refuse(f"{ufunc.__name__}.{method}", **kwargs)
    if method == "reduce":
        return getattr(_sg(), name)(inputs[0], axis=axis, keepdims=keepdims)
    return getattr(_sg(), name)(inputs[0], axis=axis)


def apply_function(func: Callable, args: tuple, kwargs: dict) -> Any:
    """``Tensor.__array_function__``: the symgrad op of ``func``, or a TypeError."""
    run = FUNCTIONS.get(func)
    if run is None:
        module = getattr(func, "__module__", None) or "numpy"
        raise TypeError(f"{module}.{getattr(func, '__name__', func)} on a symgrad Tensor: "
                        f"{_missing(func)}")
    return run(*args, **kwargs)


def _missing(func: Any) -> str:
    name = getattr(func, "__name__", str(func))
    if func in HINTS:
        return HINTS[func]
    if hasattr(_sg(), name):
        return f"use sg.{name}"
    return (f"symgrad has no {name} op (the numpy functions symgrad maps are listed in "
            "docs/inputs.md)")


# --- numpy functions on symbolic Tensors build symgrad ops (installed on the class) ----------
def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    return apply_ufunc(ufunc, method, inputs, kwargs)


def _array_function(self, func, types, args, kwargs):
    return apply_function(func, args, kwargs)


Tensor.__array_ufunc__ = _array_ufunc
Tensor.__array_function__ = _array_function
