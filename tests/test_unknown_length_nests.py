"""Unknown lengths keep their loop nests (``compile/runtime/specialise.py``): a pair sum
over a placeholder ``(None, 3)`` runs, at its first call with N rows, a variant compiled as
if the placeholder were ``(N, 3)``: the same nest, mask predicates and symmetry; values
and gradients equal the ``(N, 3)`` compile and ``sg.evaluate``; variants are bounded (LRU);
a wrong shape is a clear error; ordinary functions do not specialise."""

from __future__ import annotations

import re

import numpy as np
import pytest

import symgrad as sg
from benchmarks import pair_sums as ps
from benchmarks.workloads import w3_pair_sums as w
from symgrad.compile.nest import Nest
from symgrad.compile.scalar import settings as scalar_settings
from symgrad.errors import ArgumentError
from symgrad.compile.runtime.specialise import MAX_SPECIALISED

pytestmark = [pytest.mark.compiled, pytest.mark.filterwarnings("ignore::RuntimeWarning")]

MASK_FORMS = list(ps.MASK_FORMS)
W3_FORM = "lj: 0.5*sum ~eye, r2**-6 - r2**-3"


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "sgcache"))


def _outputs(name: str, P, data):
    E = ps.FORMULATIONS[name][0](P, w.constants(data))
    return [E] + sg.gradients(E, P)


def _close(got, want) -> None:
    for g, h in zip(got, want):
        np.testing.assert_allclose(g, h, rtol=1e-9, atol=1e-9 * (np.abs(h).max() + 1))


def _mask_rules(text: str) -> list:
    """The nests' constant-mask lines of an explain, node names left out."""
    return [re.sub(r"'[^']*'", "'.'", ln.strip()) for ln in text.splitlines()
            if re.match(r"\s*nest \d+ (reads the constant|visits only)", ln)]


def _nested(f) -> bool:
    return any(isinstance(u, Nest) for u in f.plan.units)


@pytest.mark.parametrize("n", [17, 26])
@pytest.mark.parametrize("name", MASK_FORMS + [W3_FORM])
def test_none_rows_run_the_static_nest(name, n, monkeypatch):
    # nests, not the scalar kernels the cost model picks for some small lengths
    monkeypatch.setattr(scalar_settings, "ENABLED", False)
    data = w.make_data(n)
    P = sg.placeholder("P", shape=(None, 3))
    outs = _outputs(name, P, data)
    f = sg.function([P], outs)
    assert not _nested(f)                       # the plan with the unknown length is flat
    got = f(data["P"])
    Ps = sg.placeholder("P", shape=(n, 3))
    static = sg.function([Ps], _outputs(name, Ps, data))
    assert _nested(static)
    _close(got, static(data["P"]))
    _close(got, sg.evaluate(outs, {P: data["P"]}))
    assert f.specialised == [((0, 0, n),)]
    text = f.explain()
    assert "specialisation per call" in text
    assert f"the last call ran the variant P axis 0 = {n}:" in text
    variant_text = text.split("the last call ran the variant")[1]
    assert re.search(r"\bnest \d+ ", variant_text) and f"({n}, {n})" in variant_text
    # the variant's nest reads the same constant masks as the static compile
    assert _mask_rules(static.explain()) == _mask_rules(variant_text) != []


def test_one_function_many_lengths_keeps_a_bounded_lru():
    P = sg.placeholder("P", shape=(None, 3))
    E = ps.FORMULATIONS["gaussian kernel sum"][0](P, {})
    outs = [E] + sg.gradients(E, P)
    f = sg.function([P], outs)
    assert f.max_specialised == MAX_SPECIALISED
    f.max_specialised = 2
    rng = np.random.default_rng(0)
    feeds = {n: rng.standard_normal((n, 3)) for n in (5, 9, 14)}
    for n in (5, 9, 5, 14):
        _close(f(feeds[n]), sg.evaluate(outs, {P: feeds[n]}))
    # 9 was the least recently used when 14 arrived: dropped
    assert f.specialised == [((0, 0, 5),), ((0, 0, 14),)]
    assert "2 kept, at most 2" in f.explain()
    _close(f(feeds[9]), sg.evaluate(outs, {P: feeds[9]}))     # compiled again
    assert f.specialised == [((0, 0, 14),), ((0, 0, 9),)]
    assert f.release_buffers() >= 0


def test_lists_and_keywords_specialise_too():
    P = sg.placeholder("P", shape=(None, 3))
    E = ps.FORMULATIONS["gaussian kernel sum"][0](P, {})
    f = sg.function([P], [E])
    x = np.arange(12.0).reshape(4, 3) / 7
    want = sg.evaluate([E], {P: x})
    _close(f(x.tolist()), want)
    _close(f(P=x), want)
    assert f.specialised == [((0, 0, 4),)]


def test_wrong_shapes_are_clear_errors():
    data = w.make_data(12)
    P = sg.placeholder("P", shape=(None, 3))
    f = sg.function([P], _outputs(W3_FORM, P, data))
    with pytest.raises(sg.FeedError, match=r"has shape \(None, 3\) but was fed shape"):
        f(np.zeros((12, 4)))
    with pytest.raises(sg.FeedError, match=r"has shape \(None, 3\) but was fed shape"):
        f(np.zeros(12))
    with pytest.raises(sg.ShapeError, match=r"f\(P\).*lengths \(P axis 0 = 10\) do not fit"):
        # the (12, 12) mask does not fit 10 rows
        f(np.ones((10, 3)))
    with pytest.raises(ArgumentError, match="expects a float64 array of shape"):
        f([[0.0, 1.0, 2.0], [1.0]])                 # ragged: the driver's own error
    assert f.specialised == []
    with pytest.raises(ArgumentError, match="takes 1 arguments"):
        f(data["P"], data["P"])


def test_elementwise_functions_do_not_specialise():
    x = sg.placeholder("x", shape=(None, None))
    f = sg.function([x], sg.sin(x) * x)
    a = np.linspace(0, 1, 12).reshape(3, 4)
    np.testing.assert_allclose(f(a), np.sin(a) * a)
    assert f.specialised == [] and "specialisation" not in f.explain()
    assert "_specialiser" not in f.__dict__


def test_a_variant_without_a_nest_stops_specialising():
    x = sg.placeholder("x", shape=(None,))
    outer = x[:, None] * x[None, :]                  # an (N, N) output: no nest either way
    f = sg.function([x], outer)
    # N*N = 10,000 elements: far past the build budget of one scalar kernel (the cost
    # model, compile/scalar/cost.py), so the variant is loops without a nest (at N = 20 it
    # is a scalar kernel, which pays: test_a_small_variant_as_a_scalar_kernel_...)
    a, b = np.arange(100.0), np.arange(120.0)
    np.testing.assert_allclose(f(a), np.outer(a, a))
    np.testing.assert_allclose(f(b), np.outer(b, b))
    assert f.specialised == []
    assert "specialisation per call: stopped" in f.explain()


def test_a_small_variant_as_a_scalar_kernel_keeps_specialising():
    """At small lengths the variant is one scalar kernel (compile/scalar): that pays too, so
    a first small call does not stop specialisation for the large calls after it."""
    P = sg.placeholder("P", shape=(None, 3))
    E = ps.FORMULATIONS["gaussian kernel sum"][0](P, {})
    f = sg.function([P], [E])
    small, large = np.arange(12.0).reshape(4, 3) / 7, np.arange(90.0).reshape(30, 3) / 50
    _close(f(small), sg.evaluate([E], {P: small}))
    _close(f(large), sg.evaluate([E], {P: large}))
    assert f.specialised == [((0, 0, 4),), ((0, 0, 30),)]
    assert re.search(r"\bnest \d+ ", f.explain())


def test_parallel_target_specialises(monkeypatch):
    monkeypatch.setattr(scalar_settings, "ENABLED", False)   # nests (see above)
    n = 23
    data = w.make_data(n)
    name = MASK_FORMS[-1]
    P = sg.placeholder("P", shape=(None, 3))
    outs = _outputs(name, P, data)
    f = sg.function([P], outs, target="parallel")
    _close(f(data["P"]), sg.evaluate(outs, {P: data["P"]}))
    assert f.specialised == [((0, 0, n),)] and re.search(r"\bnest \d+ ", f.explain())


@pytest.mark.cuda
def test_cuda_target_specialises():
    n = 13
    data = w.make_data(n)
    P = sg.placeholder("P", shape=(None, 3))
    outs = _outputs(W3_FORM, P, data)
    f = sg.function([P], outs, target="cuda")
    got = f(data["P"])
    _close(got, sg.evaluate(outs, {P: data["P"]}))
    assert f.specialised == [((0, 0, n),)]
    assert any(isinstance(u, Nest) for u in f._specialiser.variants[((0, 0, n),)].plan.units)
    assert f"the last call ran the variant P axis 0 = {n}:" in f.explain()


def test_a_warm_function_decides_at_its_first_call():
    data = w.make_data(11)
    P = sg.placeholder("P", shape=(None, 3))
    outs = _outputs(W3_FORM, P, data)
    sg.function([P], outs)
    g = sg.function([P], outs)                      # the warm record: its plan made lazily
    if type(g.plan).__name__ != "LazyPlan":
        pytest.skip("not a warm hit in this cache directory")
    _close(g(data["P"]), sg.evaluate(outs, {P: data["P"]}))
    assert g.specialised == [((0, 0, 11),)]
    _close(g(data["P"]), sg.evaluate(outs, {P: data["P"]}))


def test_the_docs_example_runs():
    from pathlib import Path
    text = (Path(__file__).resolve().parent.parent / "docs" / "unknown_lengths.md").read_text()
    blocks = re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)
    assert blocks
    for code in blocks:
        exec(compile(code, "docs/unknown_lengths.md", "exec"), {"__name__": "__docs__"})


def test_a_length_a_constant_fixed_is_a_clear_error_without_specialising():
    x = sg.placeholder("x", shape=(None,))
    f = sg.function([x], sg.sin(x) + sg.constant(np.ones(5)))
    np.testing.assert_allclose(f(np.zeros(5)), np.ones(5))
    np.testing.assert_allclose(f(np.zeros(1)), np.ones(5))      # numpy broadcasting
    with pytest.raises(sg.ShapeError, match=r"has shape \(3,\) in this call, which does not "
                                            r"broadcast to \(5,\)"):
        f(np.zeros(3))
