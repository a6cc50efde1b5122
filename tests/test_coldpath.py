"""The cold and warm paths of sg.function (issue 19): folds of uniform constants, the
compile key, numba's first compile without scipy.linalg, the scalar fast path."""

import os
import subprocess
import sys

import numpy as np
import pytest
import sympy as sp

import symgrad as sg
from symgrad.compile.cache.key import compile_key
from symgrad.compile.plan.fold import _expr_text, fold_graph
from symgrad.outputs import OutputMode

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _key(outputs, inputs):
    return compile_key(fold_graph(outputs, inputs), "cpu", OutputMode.LIST, "fast")


def test_uniform_folds_are_computed_on_the_scalar_and_broadcast():
    """An elementwise node of uniform constants (-ones, a gradient seed's arithmetic)
    folds to a broadcast of one number, never an array of the full shape; an expr of
    uniform constants folds to the value sg.evaluate computes."""
    n = 100_000
    x = sg.placeholder("x", shape=(n,))
    ones = sg.constant(np.ones(n))
    squashed = sg.sigmoid(ones * 0.5) * 3.0
    graph = fold_graph([x * -ones, x + squashed], [x])
    negated, folded = graph.outputs[0].inputs[1], graph.outputs[1].inputs[1]
    assert negated.is_const and negated.uniform == -1.0 and negated.value.strides == (0,)
    want = sg.evaluate(squashed, {x: np.zeros(n)})
    assert folded.is_const and folded.value.strides == (0,)
    assert folded.uniform == pytest.approx(float(want[0]), rel=1e-15)
    seeds = fold_graph(sg.gradients(sg.reduce_sum(sg.sin(x) * 2.0), x), [x])
    assert all(c.value.strides == (0,) for c in seeds.order if c.is_const and c.value.ndim)


def test_keys_distinguish_constants_and_formulas():
    x = sg.placeholder("x", shape=(4,))
    ones = sg.constant(np.ones(4))
    keys = {
        _key([x * ones * 2.0], [x]),
        _key([x * ones * 3.0], [x]),
        _key([x * sg.constant(np.array([2.0, 2.0, 2.0, 3.0]))], [x]),
        _key([x * sg.constant(np.array([-0.0, -0.0, -0.0, -0.0])) + 1.0], [x]),
        _key([x * sg.constant(np.array([0.0, 0.0, 0.0, 0.0])) + 1.0], [x]),
        _key([sg.sin(x) * 2.0], [x]),
        _key([sg.cos(x) * 2.0], [x]),
    }
    assert len(keys) == 7
    assert _key([x * ones * 2.0], [x]) == _key([x * sg.constant(np.ones(4)) * 2.0], [x])


def test_expr_text_names_numbers_and_symbols_exactly():
    a, b = sp.Symbol("a", real=True), sp.Symbol("a")
    texts = {_expr_text(e, {}) for e in (a + 2, a + sp.Float(2.0), b + 2, a * 2, a - 2)}
    assert len(texts) == 5


_FRESH = """
import sys, numpy as np, numba
from symgrad.compile.cpu.numba_startup import defer_blas_check
defer_blas_check()
assert "numba.np.arraymath" in sys.modules and "scipy.linalg" not in sys.modules
assert numba.njit(lambda v: v.sum())(np.ones(3)) == 3.0
assert "scipy.linalg" not in sys.modules
assert numba.njit(lambda a, b: np.dot(a, b))(np.ones((2, 2)), np.ones((2, 2)))[0, 0] == 2.0
assert "scipy.linalg" in sys.modules   # the real check, at the first BLAS use
print("ok")
"""


def test_numbas_first_compile_defers_scipy_linalg_to_the_first_blas_use():
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-c", _FRESH], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


@pytest.fixture(scope="module")
def scalar_function():
    a, b, c = (sg.placeholder(n) for n in "abc")
    y = a * sg.sin(b) + sg.exp(c * a)
    outputs = [y] + sg.gradients(y, [a, b, c])
    return sg.function([a, b, c], outputs), sg.evaluate(outputs, {a: 0.5, b: 1.5, c: 0.25})


def test_scalar_fast_path_takes_every_way_of_calling(scalar_function):
    """The driver's positional-only parameters: Python floats take the fast path; keyword
    arguments, numpy scalars, 0-d arrays and ints the checked one, with the same results;
    a wrong count of arguments still names the function."""
    f, want = scalar_function
    assert "/, *rest, **kwargs" in f.source
    calls = [f(0.5, 1.5, 0.25), f(a=0.5, b=1.5, c=0.25), f(0.5, 1.5, c=0.25),
             f(np.float64(0.5), 1.5, 0.25), f(np.array(0.5), 1.5, 0.25)]
    for got in calls:
        for g, w in zip(got, want):
            assert isinstance(g, np.ndarray) and g.shape == ()
            np.testing.assert_allclose(g, w, rtol=1e-14)
    for args in [(0.5, 1.5), (0.5, 1.5, 0.25, 1.0), ()]:
        with pytest.raises(TypeError, match="f\\(a, b, c\\)|argument"):
            f(*args)
    with pytest.raises(TypeError):
        f(0.5, 1.5, 0.25, d=1.0)


def test_formula_text_does_not_depend_on_the_symbols_history():
    """Two equal symbols, one made with every deduced fact spelled out (as sympy's cache
    may hand back), name the same in the key text; srepr names them differently."""
    import sympy as sp

    from symgrad.compile.plan.fold import _expr_text
    x = sp.Symbol("x_key_history", real=True)
    spelled = sp.Symbol("x_key_history", **x.assumptions0)
    assert spelled == x and sp.srepr(spelled) != sp.srepr(x)
    assert _expr_text(sp.sin(spelled) + 2, {}) == _expr_text(sp.sin(x) + 2, {})
    assert _expr_text(sp.sin(sp.Symbol("x_key_history")) + 2, {}) != \
        _expr_text(sp.sin(x) + 2, {})
