"""A scalar body longer than templates.INLINE_STATEMENTS is compiled as a plain njit
function (not forced inline into its loop): same results on every target."""

import numpy as np
import pytest

import symgrad as sg
from symgrad.compile.codegen import templates


def _wide(terms: int):
    x = sg.placeholder("x", shape=(None,))
    acc = sg.sin(x)
    for k in range(2, terms + 1):
        acc = acc + sg.sin(x * float(k)) * float(k - 1)
    y = sg.reduce_sum(acc)
    return x, [y, sg.gradients(y, x)[0]]


@pytest.mark.parametrize("target", ["cpu", "cuda"])
def test_long_body_is_not_forced_inline_and_agrees(target):
    x, outputs = _wide(templates.INLINE_STATEMENTS + 20)
    f = sg.function([x], outputs, target=target)
    if target == "cpu":   # a straight float64 body is LLVM IR (llvm_body), not inlined
        body = f.source.split("_k0_point = llvm_body_(")[1].split('""", ')[0]
        assert "define weak_odr void" in body and "alwaysinline" not in body
    else:
        assert "@always_inline" not in f.source.split("def _k0_point")[0].splitlines()[-2:]
    value = np.linspace(-1.0, 1.0, 7)
    got = [np.asarray(v) for v in f(value)]
    want = sg.evaluate(outputs, {x: value})
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-9)


def test_short_body_stays_inline():
    x = sg.placeholder("x", shape=(None,))
    f = sg.function([x], [sg.reduce_sum(sg.sin(x))])
    assert "@always_inline\n@numba.njit(cache=False" in f.source
