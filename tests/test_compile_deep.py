"""Deep shared graphs compile in time linear in their size (sympy never sees one giant
composed expression: large region nodes are bound to intermediates)."""

from __future__ import annotations

import numpy as np

import symgrad as sg
from symgrad.compile.plan.fold import fold_graph
from symgrad.compile.codegen.lower import lower_kernel
from symgrad.compile.plan.regions import build_plan


def chain(levels: int):
    x = sg.placeholder("x", shape=(None,))
    e = x
    for _ in range(levels):
        e = sg.sin(e) * e + sg.tanh(x * e)
    return x, e


def test_lowering_binds_large_nodes_so_expressions_stay_small():
    x, e = chain(80)
    y = sg.reduce_sum(e)
    plan = build_plan(fold_graph([y] + sg.gradients(y, x)))
    for kernel in plan.kernels:
        lowered = lower_kernel(kernel)
        assert all(sp_size(expr) < 400 for _, expr in lowered.replacements)


def sp_size(expr) -> int:
    return sum(1 for _ in __import__("sympy").preorder_traversal(expr))


def test_deep_chain_value_and_gradient_compile_and_agree():
    x, e = chain(40)
    y = sg.reduce_sum(e)
    outputs = [y] + sg.gradients(y, x)
    f = sg.function([x], outputs)
    value = np.linspace(-0.5, 0.5, 7)
    for got, want in zip(f(value), sg.evaluate(outputs, {x: value})):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
