"""A huge scalar kernel cut into chunks, each its own LLVM function (codegen/llvm/chunks.py,
kernel.py): forced to small chunks, random programs and their gradients give the results
of the same kernel as one function (within rounding: LLVM's fused multiply-adds and
reassociation do not cross a chunk's edge); bool values and linalg checks cross chunks;
the scratch on the heap; ``f.explain()`` says how many chunks."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
from symgrad.compile.codegen.llvm import chunks, native
from symgrad.compile.cpu import native_kernels


def _random_program(seed: int, tag: str = ""):
    """A random straight-line program on 4 elements (sin, tanh, products, where on a
    comparison, maximum), its value and gradient (``tag``: in the inputs' names, so that
    the program is compiled again, not found in the cache)."""
    rng = np.random.default_rng(seed)
    x = sg.placeholder("x" + tag, shape=(4,))
    p = sg.placeholder("p" + tag, shape=(3,))
    vals = [x[i] for i in range(4)] + [p[i] for i in range(3)]
    for _ in range(40):
        a, b = (vals[int(k)] for k in rng.integers(0, len(vals), 2))
        op = int(rng.integers(0, 7))
        if op == 0:
            v = sg.sin(a) * b
        elif op == 1:
            v = sg.tanh(a + b)
        elif op == 2:
            v = a * b + 0.5 * a
        elif op == 3:
            v = sg.where(a > b, a - b, 0.25 * b)
        elif op == 4:
            v = sg.maximum(a, b) - 0.1 * b
        elif op == 5:
            v = a / (1.0 + b * b)
        else:
            v = sg.cos(a) + sg.exp(-b * b)
        vals.append(v)
    y = sg.stack(vals[-6:])
    loss = sg.reduce_sum(y * y)
    return [x, p], [y, loss] + sg.gradients(loss, [x, p])


def _build(inputs, outputs, limit, monkeypatch):
    monkeypatch.setattr(chunks, "CHUNK_STATEMENTS", limit)
    monkeypatch.setattr(chunks, "DEEP", 0)               # small programs are wide
    f = sg.function(inputs, outputs)
    kernels = native_kernels.kernels(f.module)
    assert kernels, f.explain()
    return f, [chunks.chunking(k.ir_text) for _, k in kernels]


def _same_levels(monkeypatch):
    """The one-function kernel at the chunks' levels: the cut alone is compared."""
    monkeypatch.setattr(native, "opt_level", lambda n: native.CHUNK_LEVELS[0])
    monkeypatch.setattr(native, "codegen_level", lambda n: native.CHUNK_LEVELS[1])


@pytest.mark.parametrize("seed", range(4))
def test_random_programs_in_chunks_match_one_function(seed, monkeypatch):
    _same_levels(monkeypatch)
    inputs, outputs = _random_program(seed, "whole")
    whole, shapes = _build(inputs, outputs, 10**9, monkeypatch)
    assert shapes == [None] * len(shapes)
    inputs, outputs = _random_program(seed, "split")
    split, shapes = _build(inputs, outputs, 7, monkeypatch)
    assert all(s is not None for s in shapes) and max(s[0] for s in shapes) >= 3, shapes
    assert "chunks of at most" in split.explain()
    text = split.explain()
    assert "passes sroa, instruction_combine, simplify_cfg, code generation -O1" in text
    rng = np.random.default_rng(100 + seed)
    for _ in range(3):
        args = [rng.normal(size=4), rng.normal(size=3)]
        want = whole(*args)
        got = split(*args)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype
            # fused multiply-adds and reassociation stop at a chunk's edge: not bit for bit
            np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-15)
        reference = sg.evaluate(outputs, dict(zip(inputs, args)))
        for g, r in zip(got, reference):
            np.testing.assert_allclose(g, r, rtol=1e-10, atol=1e-12)


def test_bool_values_and_outputs_cross_chunks(monkeypatch):
    x = sg.placeholder("x", shape=(6,))
    c = [x[i] > x[(i + 1) % 6] for i in range(6)]
    v = [sg.where(c[i], x[i] * x[i], -x[i]) for i in range(6)]
    late = [sg.where(c[i], sg.where(c[(i + 2) % 6], v[i] + v[5 - i], v[i]), v[i] * 0.5)
            for i in range(6)]
    outputs = [sg.stack(late), sg.stack(c)]
    f, shapes = _build([x], outputs, 3, monkeypatch)
    assert all(s is not None for s in shapes)
    for value in (np.array([0.3, -1.0, 2.0, 2.0, np.nan, -0.0]), np.arange(6.0)[::-1]):
        got = f(value)
        want = sg.evaluate(outputs, {x: value})
        for g, w in zip(got, want):
            assert g.dtype == w.dtype
            np.testing.assert_array_equal(g, w)


def test_heap_scratch_gives_the_same_results(monkeypatch):
    inputs, outputs = _random_program(7, "stack")
    stack, _ = _build(inputs, outputs, 6, monkeypatch)
    monkeypatch.setattr(chunks, "STACK_SCRATCH", 0)
    inputs, outputs = _random_program(7, "heap")
    heap, shapes = _build(inputs, outputs, 6, monkeypatch)
    texts = [k.ir_text for _, k in native_kernels.kernels(heap.module)]
    assert any("@malloc(" in t for t in texts) and all(s for s in shapes)
    args = [np.linspace(-1, 1, 4), np.array([0.5, -2.0, 1.5])]
    for a, b in zip(heap(*args), stack(*args)):
        assert np.array_equal(a, b)


def test_a_singular_matrix_still_raises_from_a_chunked_kernel(monkeypatch):
    a = sg.placeholder("a", shape=(3, 3))
    b = sg.placeholder("b", shape=(3,))
    y = sg.linalg.solve(a, b[:, None])[:, 0]
    loss = sg.reduce_sum(y * y)
    outputs = [y] + sg.gradients(loss, [a, b])
    f, shapes = _build([a, b], outputs, 20, monkeypatch)
    assert any(s is not None for s in shapes), f.explain()
    m = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
    v = np.array([1.0, -2.0, 0.5])
    got = f(m, v)
    want = sg.evaluate(outputs, {a: m, b: v})
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
    with pytest.raises(sg.LinAlgError):
        f(np.zeros((3, 3)), v)


def test_chunk_bounds_are_equal_shares_and_plans_reuse_slots():
    for n in (1, 499, 500, 501, 1_000, 72_123):
        b = chunks.bounds([1] * n, 500)
        sizes = [end - start for start, end in b]
        assert b[0][0] == 0 and b[-1][1] == n and sum(sizes) == n
        assert max(sizes) <= 500 and max(sizes) - min(sizes) <= 1
        assert all(b[k][1] == b[k + 1][0] for k in range(len(b) - 1))
    # a chain: each value read only by the next statement: two slots serve them all
    steps = [("Q0_+1.0", ["r0" if k == 0 else f"t{k - 1}"], f"t{k}", ("double",), "double")
             for k in range(10)]
    body = [f"  %t{k} = ..." for k in range(10)]
    p = chunks.plan(steps, body, {}, list(range(10)), {"r0": "double"}, [[(0, "%t9")]], 2)
    assert len(p.bounds) == 6 and p.slots == 2     # weights 1 and 2 (t9 is stored)
    assert p.writes[-1] == [(0, 0, "%t9")] and p.reads[0] == ["r0"]


def test_a_wide_kernel_stays_one_function(monkeypatch):
    monkeypatch.setattr(chunks, "CHUNK_STATEMENTS", 5)
    x = sg.placeholder("xwide", shape=(5,))
    y = sg.stack([sg.sin(x[i]) * x[(i + 1) % 5] for i in range(5)])
    f = sg.function([x], [y, sg.jacobian(y, x)])      # few statements per element stored
    kernels = native_kernels.kernels(f.module)
    assert kernels and all(chunks.chunking(k.ir_text) is None for _, k in kernels)
    assert "chunks of at most" not in f.explain()
