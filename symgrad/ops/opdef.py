"""The op record (``OpDef``), the test cases of structural records (``Example``) and the
table of every record by name (``REGISTRY``).

An op record holds everything symgrad knows about one op: its shape rule, numpy
forward, scalar sympy form (elementwise ops), hand-written reverse rule for the tape
and for structural ops, and a test domain. Backends *print* the sympy form; they never
re-implement an op.

Three states of "no derivative": a rule; ``differentiable=False`` (TF's
NotDifferentiable: the gradient is None); no rule at all (LookupError on the path).

>>> from symgrad.ops.opdef import REGISTRY
>>> REGISTRY["sin"].kind, REGISTRY["reduce_sum"].kind
('elementwise', 'structural')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import sympy as sp

REGISTRY: dict = {}


@dataclass(eq=False, frozen=True)
class OpDef:
    """One op. ``kind`` is 'source', 'elementwise' or 'structural'."""

    name: str
    kind: str
    numpy: Optional[Callable] = None
    sympy: Optional[Callable] = None
    vjp: Optional[Callable] = None
    infer: Optional[Callable] = None
    differentiable: bool = True
    grad_mask: Optional[Callable] = None
    # elementwise: ``upstream_product(g, partial, index)`` is the sympy contribution of
    # input ``index`` when it is not ``g * partial`` (TF's mul_no_nan gradients use
    # mul_no_nan, so a zero factor wins over an infinite one); None: ``g * partial``
    upstream_product: Optional[Callable] = None
    # structural: the vjp only moves entries, so it moves a where-mask too (layout ops;
    # not sums, whose vjp would broadcast the mask into every fused loop below them)
    passes_mask: bool = False
    # structural: ``infer`` only moves, keeps or drops dims (no arithmetic on them), so the
    # compiler applies the same rule to symbolic unknown dims (compile/fold.Dims)
    symbolic_dims: bool = False
    dtype_rule: Optional[Callable] = None
    # structural: "module:function" making the compiled driver's callable for a node
    # (``maker(tensor, run_reference) -> callable``); None: the driver runs ``numpy``
    compiled_step: Optional[str] = None
    domain: tuple = (-2.0, 2.0)
    public: bool = True
    # structural: test cases the registry-driven tests run (tests/test_ops_registry.py)
    examples: tuple = field(default=(), repr=False)
    doc: str = field(default="", repr=False)

    def __repr__(self) -> str:
        return f"<op {self.name}>"

    __str__ = lambda self: self.name  # noqa: E731

    def formula(self, symbols: tuple, attrs: dict) -> sp.Expr:
        """The scalar sympy form of an elementwise op over ``symbols``."""
        return self.sympy(*symbols, **attrs)


@dataclass(frozen=True)
class Example:
    """A test case of a structural op: ``sg.<public>(*inputs, **kwargs)`` (the inputs as one
    list when ``listed``) on random inputs of ``shapes``, against ``reference(*arrays)``
    (numpy). ``unknown``: placeholder shapes with None dims for the same inputs (None:
    every dim unknown; ``()``: the op needs static shapes)."""

    shapes: tuple
    kwargs: dict
    reference: Callable
    listed: bool = False
    unknown: Optional[tuple] = None
    public: str = ""


def register(op: OpDef) -> OpDef:
    if op.name in REGISTRY:
        raise RuntimeError(f"op {op.name!r} is registered twice")
    REGISTRY[op.name] = op
    return op


def elementwise(name: str, numpy: Callable, sympy: Callable, **kw: Any) -> OpDef:
    return register(OpDef(name, "elementwise", numpy=numpy, sympy=sympy, **kw))


def structural(name: str, numpy: Callable, infer: Callable, **kw: Any) -> OpDef:
    return register(OpDef(name, "structural", numpy=numpy, infer=infer, **kw))
