"""float32 pair sums get the float64 pair rules (issue 26, item 3).

A float32 plan used to lose them: its pre sums (``reduce_sum(D * D, -1)``) were not
fused into the nest (``nest/match.py`` took float64 sums only), so the outer kernel read
an ``N x N`` array and no symmetry could be proved; and the gradient seeds that fold
``where(mask, g, 0)`` into two-valued float32 constants were not read as masks
(``plan/masks.py`` took float64 only). Here every formulation of
``benchmarks/pair_sums.py`` at N=37 has the same rules in float32 and float64 --
``f.explain()``'s nest lines and the rule objects of ``nest_masks``, ``nest_symmetry``,
``nest_gate`` and ``nest_factors`` -- on cpu, parallel and cuda (simulator), and its
float32 values and gradients agree with ``sg.evaluate`` (float32) and with the float64
reference within float32 tolerance.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import symgrad as sg
from benchmarks import pair_sums as ps
from benchmarks.workloads import w3_pair_sums as w
from symgrad.compile.codegen.lower import lower_kernel
from symgrad.compile.cuda.tiles import column_pass, device_rules
from symgrad.compile.nest import Nest, nest_factors, nest_gate, nest_masks, nest_symmetry
from symgrad.compile.plan.masks import literal, mask_band, outer_factors, read_text

pytestmark = [pytest.mark.compiled, pytest.mark.filterwarnings("ignore::RuntimeWarning")]

N = 37
DATA = w.make_data(N)
TARGETS = ["cpu", "parallel", pytest.param("cuda", marks=pytest.mark.cuda)]


def _data(dtype: str) -> dict:
    return {k: (v.astype(dtype) if v.dtype.kind == "f" else v) for k, v in DATA.items()}


def _build(name: str, dtype: str, target: str):
    P = sg.placeholder("P", shape=(N, 3), dtype=dtype)
    E = ps.FORMULATIONS[name][0](P, w.constants(_data(dtype)))
    outs = [E] + sg.gradients(E, P)
    return sg.function([P], outs, target=target), P, outs


_CACHE: dict = {}


def _function(name: str, dtype: str, target: str):
    key = (name, dtype, target)
    if key not in _CACHE:
        _CACHE[key] = _build(name, dtype, target)
    return _CACHE[key]


def _nest_text(f) -> list:
    """The nests' headers and the "loop nests:" lines of ``f.explain()``, with node
    names and numbers (a float32 cutoff is another float) made neutral."""
    lines, on = [], False
    for line in f.explain().splitlines():
        if line.startswith("loop nests:"):
            on = True
            continue
        if on and not line.startswith("  "):
            on = False
        if on or line.startswith("nest "):
            line = re.sub(r"'[^']*'", "'X'", line)
            line = re.sub(r"\b([A-Za-z]\w*?)_\d+\b", r"\1_K", line)
            lines.append(re.sub(r"\d+\.\d+(e-?\d+)?", "F", line))
    return lines


def _rules(f) -> list:
    """Per nest: the rule objects, with node ids replaced by input positions."""
    out = []
    for n in (u for u in f.plan.units if isinstance(u, Nest)):
        lowered = {k.index: lower_kernel(k) for k in n.kernels}
        pos = {id(i): k for k, i in enumerate(n.outer.inputs)}
        bands, skip = nest_masks(n, lowered)
        gate = nest_gate(n, lowered)
        out.append({
            "kernels": [k.index for k in n.kernels], "pre": len(n.pre), "post": len(n.post),
            "bands": sorted((pos[x], b, float(a), float(o)) for x, (b, a, o) in bands.items()),
            "skip": None if skip is None else pos[skip],
            "mirror": nest_symmetry(n, lowered) if skip is None else {},
            "gate": None if gate is None else re.sub(r"\d+\.\d+(e-?\d+)?", "F", str(gate)),
            "factors": sorted((pos[x], rc) for x, rc in nest_factors(n).items())})
    return out


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", list(ps.FORMULATIONS))
def test_float32_has_the_float64_rules(name, target):
    f64 = _function(name, "float64", target)[0]
    f32 = _function(name, "float32", target)[0]
    rules = _rules(f64)
    assert _rules(f32) == rules
    assert _nest_text(f32) == _nest_text(f64)
    if target != "cuda":   # the device plan has no nests of one kernel (components forms)
        assert rules and any(r["mirror"] or r["skip"] is not None for r in rules)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", list(ps.FORMULATIONS))
def test_float32_values_and_gradients(name, target):
    f, P, outs = _function(name, "float32", target)
    x = _data("float32")["P"]
    got = f(x)
    want = sg.evaluate(outs, {P: x})
    f64, P64, outs64 = _function(name, "float64", "cpu")
    exact = sg.evaluate(outs64, {P64: DATA["P"]})
    for g, h, e in zip(got, want, exact):
        assert isinstance(g, np.ndarray) and g.dtype == np.float32 and g.shape == e.shape
        scale = float(np.max(np.abs(e)))
        for ref in (h, e):   # float32 evaluate, and the float64 truth
            np.testing.assert_allclose(g, ref, rtol=2e-4, atol=2e-4 * scale)


@pytest.mark.cuda
def test_cuda_bench_w3_float32_plan_mirrors_columns():
    """The issue's symptom: ``cuda_bench``'s W3 in float32 ran a column pass."""
    from benchmarks import cuda_bench
    mod = cuda_bench.load("W3")
    lines = {}
    for dtype in ("float32", "float64"):
        data = cuda_bench.data_for(mod, {"N": N}, dtype)
        f = cuda_bench.symgrad_function(mod, data)
        nests = [u for u in f.plan.units if isinstance(u, Nest)]
        assert len(nests) == 1 and len(nests[0].pre) == 1
        lowered = {k.index: lower_kernel(k) for k in nests[0].kernels}
        assert device_rules(nests[0], lowered).mirror
        assert not column_pass(nests[0], lowered)
        lines[dtype] = [x for x in f.explain().splitlines() if "tiled device kernel" in x]
        assert len(lines[dtype]) == 1 and "no column pass" in lines[dtype][0]
        value, grad = f(data["P"])
        assert np.asarray(grad).dtype == np.dtype(dtype)
    assert lines["float32"] == lines["float64"]


class _Const:
    def __init__(self, value):
        self.value = value


def test_float32_two_valued_constant_is_a_mask():
    eye = np.eye(5, dtype=bool)
    for dtype, text in (("float32", "f32(-2.0)"), ("float64", "-2.0")):
        seed = np.where(eye, 0.0, -2.0).astype(dtype)
        mb = mask_band(_Const(seed), "[i0, i1]")
        assert mb[0] == ("==", 0) and literal(mb[2]) == text
        assert read_text(mb, "i0", "i1") == f"({literal(mb[1])} if i0 == i1 else {text})"
    assert mask_band(_Const(np.where(eye, 0.0, -2.0).astype(np.float16)), "[i0, i1]") is None
    assert mask_band(_Const(np.arange(25.0, dtype=np.float32).reshape(5, 5)), "[i0, i1]") \
        is None


def test_float32_outer_product_constant():
    q = np.array([1.0, -1.0, 2.0, 0.5], np.float32)
    assert outer_factors(_Const(np.multiply.outer(q, q)), "[i0, i1]") == (0, 0)
    bent = np.multiply.outer(q, q)
    bent[3, 2] += 1
    assert outer_factors(_Const(bent), "[i0, i1]") is None
