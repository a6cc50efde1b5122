"""``sg.ForwardAccumulator``: TensorFlow's ``tf.autodiff.ForwardAccumulator`` on eager values.

While an accumulator is active (``with acc:``), every differentiable eager op with a float
result whose inputs carry tangents computes its output's tangent at once: structural ops
with their rules in ``ops/jvp.py``, elementwise ops with their reverse rule applied to each
input's tangent (an elementwise vjp is ``g * partial``, so ``vjp(t_i)[i] = partial_i t_i``:
the tape's own conventions), any other op by transposing its vjp on a private tape.
Tangents are eager values computed by ops, so tapes record them (backward over forward)
and accumulators entered earlier see them (forward over forward); an accumulator never
sees its own tangent computations nor those of accumulators entered before it.

>>> import symgrad as sg
>>> x = sg.Variable([1.0, 2.0])
>>> with sg.ForwardAccumulator(x, [1.0, 0.0]) as acc:
...     y = sg.reduce_sum(x * x * x)
>>> float(acc.jvp(y))
3.0
>>> acc.jvp(x * 2.0) is None          # computed outside the accumulator
True
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, Optional

import numpy as np

from ..dtypes import is_floating
from ..errors import (DTypeError, EagerMixError, NoGradientError, ShapeError, TapeError,
                      UnconnectedGradientError)
from ..graph.tensor import Tensor
from ..ops.functions import F
from ..ops.jvp import JVP_RULES
from ..ops.registry import OpDef
from . import state
from .eager import EagerTensor, Variable, as_eager
from .seeds import check_eager, policy
from .structure import flatten, unflatten

API = "sg.ForwardAccumulator"


class AccumulatorReentryError(TapeError, ValueError):
    """Entering an accumulator that is already active (TF raises ValueError)."""


def _key(value: Any) -> int:
    return value._id


def _fit(tangent: Any, out: EagerTensor) -> Any:
    if tangent.shape != out.shape:
        tangent = F.broadcast_like(tangent, out)
    if tangent.dtype != out.dtype:
        tangent = F.cast(tangent, out.dtype)
    return tangent


def _elementwise_jvp(op: OpDef, ins: list, out: EagerTensor, inputs: tuple, attrs: dict):
    if op.vjp is None:
        raise NoGradientError(f"{API}: no derivative defined for operation '{op.name}' "
                              f"(at eager tensor '{out.name}')")
    total = None
    for i, t in enumerate(ins):
        if t is None:
            continue
        g = t if t.shape == out.shape else F.broadcast_like(t, out)
        contribution = op.vjp(g, out, *inputs, **attrs)[i]
        if contribution is not None:
            total = contribution if total is None else total + contribution
    return total


def _transposed_jvp(op: OpDef, ins: list, out: EagerTensor, inputs: tuple, attrs: dict):
    """``d/du <vjp(u), t>`` on a private tape (the vjp is linear in the cotangent u)."""
    from .tape import GradientTape

    if op.vjp is None:
        raise NoGradientError(f"{API}: no derivative defined for operation '{op.name}' "
                              f"(at eager tensor '{out.name}')")
    u = EagerTensor(np.zeros(out.shape, out.dtype))
    total = None
    with GradientTape() as tape:
        tape.watch(u)
        grads = op.vjp(u, out, *inputs, **attrs)
        for g, t, inp in zip(grads, ins, inputs):
            if g is None or t is None:
                continue
            if g.shape != inp.shape:
                g = F.unbroadcast(g, inp)
            term = F.reduce_sum(F.cast(g, t.dtype) * t)
            total = term if total is None else total + term
    return None if total is None else tape.gradient(total, u)


def eager_jvp(op: OpDef, ins: list, out: EagerTensor, inputs: tuple, attrs: dict):
    """The tangent of ``out = op(*inputs)`` from the inputs' tangents (None: none)."""
    rule = JVP_RULES.get(op)
    if rule is not None:
        tangent = rule(ins, out, *inputs, **attrs)
    elif op.kind == "elementwise":
        tangent = _elementwise_jvp(op, ins, out, inputs, attrs)
    else:
        tangent = _transposed_jvp(op, ins, out, inputs, attrs)
    return None if tangent is None else _fit(tangent, out)


def _pairs(primals: Any, tangents: Any) -> list:
    """(primal, tangent value) pairs: the same structure on both sides."""
    flat = flatten(primals)
    if len(flat) == 1 and not isinstance(primals, (list, tuple, dict)):
        return [(primals, tangents)]
    values = flatten(tangents) if isinstance(tangents, (list, tuple, dict)) else [tangents]
    if isinstance(tangents, (list, tuple)) and len(tangents) == len(flat) and all(
            not isinstance(t, (list, tuple, dict)) for t in tangents):
        values = list(tangents)  # one array (or a nested list of numbers) per primal
    if len(values) != len(flat):
        raise ValueError(f"{API}: got {len(values)} tangents for {len(flat)} primals; pass "
                         "tangents with the structure of primals")
    return list(zip(flat, values))


def _tangent(primal: Any, k: int, value: Any) -> EagerTensor:
    check_eager(primal, f"{API}: primals[{k}]")
    if not is_floating(primal.dtype):
        raise DTypeError(f"{API}: primals[{k}] '{primal.name}' has dtype "
                         f"{primal.dtype.name}; forward mode watches float primals only")
    if isinstance(value, (EagerTensor, Variable)):
        tangent = as_eager(value)
        if not is_floating(tangent.dtype):
            raise DTypeError(f"{API}: tangents[{k}] has dtype {tangent.dtype.name}; pass a "
                             f"{primal.dtype.name} tangent")
        if tangent.dtype != primal.dtype:  # as sg.jvp: a float tangent takes the primal's
            tangent = F.cast(tangent, primal.dtype)
    else:
        if isinstance(value, Tensor):
            raise EagerMixError(f"{API}: tangents[{k}] is the symbolic Tensor "
                                f"'{value.name}'; pass an eager value or an array")
        try:
            tangent = EagerTensor(np.array(value, dtype=primal.dtype))
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{API}: tangents[{k}] cannot be converted to "
                            f"{primal.dtype.name}: {exc}") from exc
    if tangent.shape != primal.shape:
        raise ShapeError(f"{API}: tangents[{k}] has shape {tangent.shape} but primals[{k}] "
                         f"'{primal.name}' has shape {primal.shape}; a tangent must have "
                         "exactly its primal's shape")
    return tangent


class ForwardAccumulator:
    """Computes Jacobian-vector products as eager ops run (TF's ForwardAccumulator).

    ``primals``: Variables or eager tensors (a nested structure); ``tangents``: one value
    of exactly each primal's shape (ValueError otherwise; a non-float primal is a
    TypeError). Reads of a watched Variable carry its tangent.
    """

    def __init__(self, primals: Any, tangents: Any):
        self._recording = False
        self._entered = 0
        self._tangents: dict = {}
        for k, (primal, value) in enumerate(_pairs(primals, tangents)):
            tangent = _tangent(primal, k, value)
            if _key(primal) in self._tangents:
                raise ValueError(f"{API}: primals[{k}] '{primal.name}' was specified as a "
                                 "primal multiple times (TF: this may indicate an error); "
                                 "pass it once with the sum of its tangents")
            self._tangents[_key(primal)] = tangent

    def _watch(self, primal: Any, tangent: Any) -> None:
        """Add ``tangent`` to ``primal``'s (TF's private ``_watch``: watching again adds)."""
        value = _tangent(primal, 0, tangent)
        previous = self._tangents.get(_key(primal))
        self._tangents[_key(primal)] = value if previous is None else previous + value

    def __enter__(self) -> "ForwardAccumulator":
        if any(a is self for a in state.accumulators()):
            raise AccumulatorReentryError(f"{API}: this accumulator is already active (it is "
                                          "already recording); enter it once")
        state.accumulators().append(self)
        self._recording = True
        self._entered = state.stamp()
        return self

    def __exit__(self, *exc: Any) -> None:
        stack = state.accumulators()
        stack[:] = [a for a in stack if a is not self]
        self._recording = False

    def _lookup(self, value: EagerTensor) -> Optional[EagerTensor]:
        tangent = self._tangents.get(value._id)
        variable = getattr(value, "_variable", None)
        if tangent is None and variable is not None:
            tangent = self._tangents.get(variable._id)
        return tangent

    @contextlib.contextmanager
    def _hidden(self) -> Iterator[None]:
        """This accumulator, those entered after it and the tapes entered after it do not see
        the ops inside (TF: a tape inside the accumulator does not record its tangents)."""
        stack = state.accumulators()
        start = next(k for k, a in enumerate(stack) if a is self)
        hidden = [a for a in stack[start:] if a._recording]
        hidden += state.tapes_entered_after(self._entered)
        for a in hidden:
            a._recording = False
        try:
            yield
        finally:
            for a in hidden:
                a._recording = True

    def _accumulate(self, op: OpDef, inputs: tuple, attrs: dict, out: EagerTensor) -> None:
        """Called by the eager apply for every differentiable op with a float result."""
        ins = [self._lookup(t) if is_floating(t.dtype) else None for t in inputs]
        if all(t is None for t in ins):
            return
        with self._hidden():
            tangent = eager_jvp(op, ins, out, inputs, attrs)
        if tangent is not None:
            self._tangents[out._id] = tangent

    def jvp(self, primals: Any, unconnected_gradients: Any = "none") -> Any:
        """The tangent of each computed value (nested like ``primals``): None for a value
        no watched primal reaches, or one computed outside the accumulator (zeros with
        'zero'; 'raise' is symgrad's extension)."""
        rule = policy(unconnected_gradients)
        flat = flatten(primals)
        results = []
        for k, value in enumerate(flat):
            check_eager(value, f"{API}.jvp: primals[{k}]")
            results.append(self._result(value, k, rule))
        return unflatten(primals, results)

    def _result(self, value: Any, k: int, rule: str) -> Any:
        if isinstance(value, Variable):
            tangent = self._tangents.get(value._id)
        else:
            tangent = self._lookup(value)
        if tangent is not None:
            return tangent
        if rule == "zero":
            return EagerTensor(np.zeros(value.shape, value.dtype))
        if rule == "raise":
            raise UnconnectedGradientError(f"{API}.jvp: primals[{k}] '{value.name}' was not "
                                           "computed from a watched primal inside the "
                                           "accumulator")
        return None
