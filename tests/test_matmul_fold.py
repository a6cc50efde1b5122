"""A product of two constants is folded by what it costs (multiply-adds at build time,
the bytes a kernel then reads), not by its inputs' sizes: a Newton body's Jacobian sweep
of ``L @ x`` (L a constant 100 x 100) multiplies L by the identity once, at build time."""

import numpy as np

import symgrad as sg
from symgrad.compile.plan import fold
from symgrad.compile.plan.fold import fold_graph


def _ops(graph) -> list:
    return [n.op.name for n in graph.order]


def test_product_of_two_100x100_constants_is_folded_bit_equal():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((100, 100)), rng.standard_normal((100, 100))
    g = fold_graph([sg.constant(a) @ sg.constant(b)])
    assert _ops(g) == ["constant"]
    assert np.array_equal(g.outputs[0].value, a @ b)


def test_product_past_the_work_limit_is_kept(monkeypatch):
    monkeypatch.setattr(fold, "FOLD_WORK", 100 * 100 * 100 - 1)
    g = fold_graph([sg.constant(np.ones((100, 100))) @ sg.constant(np.ones((100, 100)))])
    assert "matmul" in _ops(g)
    monkeypatch.setattr(fold, "FOLD_WORK", 100 * 100 * 100)
    g = fold_graph([sg.constant(np.ones((100, 100))) @ sg.constant(np.ones((100, 100)))])
    assert _ops(g) == ["constant"]


def test_product_larger_than_its_inputs_is_not_folded():
    col = np.arange(8000.0).reshape(200, 40)
    row = np.ones((40, 200))                 # 40,000 elements from 16,000
    g = fold_graph([sg.constant(col) @ sg.constant(row)])
    assert "matmul" in _ops(g)
    small = fold_graph([sg.constant(col[:50]) @ sg.constant(row[:, :50])])  # 2,500
    assert _ops(small) == ["constant"]


def test_jacobian_sweep_of_constant_matrix_multiplies_no_constants_at_run_time():
    rng = np.random.default_rng(1)
    L = rng.standard_normal((100, 100))
    x = sg.placeholder("x", shape=(100,))
    jac = sg.jacobian(sg.constant(L) @ x + sg.sin(x), x)
    g = fold_graph([jac], [x])
    assert not [n for n in g.order if n.op.name == "matmul" and
                all(i.is_const for i in n.inputs)]
    x0 = rng.standard_normal(100)
    got = sg.function([x], [jac])(x0)
    got = got[0] if isinstance(got, (list, tuple)) else got
    np.testing.assert_allclose(got, L + np.diag(np.cos(x0)), rtol=1e-12, atol=1e-12)
