"""Issue 29, item 4: the cache covers every build. A second process on the same caches
builds ``sg.jacobian`` / ``sg.hessians`` functions, loops (``sg.scan``) and scalar kernels
without compiling anything (no numba compile at all: every kernel, loop body and helper
is loaded) and folding nothing (a fused scan's loop module is found without the
body's plan), with bit-identical results; a tampered warm record degrades to the cold path
with a warning. (Run in subprocesses: a process's numba state is what is under test.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from symgrad.compile.cache import warm

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = textwrap.dedent(r"""
    import hashlib, json, sys, warnings
    import numpy as np
    import numba.core.compiler as compiler
    compiled = []
    _orig = compiler.compile_extra
    def compile_extra(typingctx, targetctx, func, *args, **kwargs):
        compiled.append(f"{getattr(func, '__module__', '?')}.{getattr(func, '__name__', '?')}")
        return _orig(typingctx, targetctx, func, *args, **kwargs)
    compiler.compile_extra = compile_extra
    import symgrad as sg
    import importlib
    entry = importlib.import_module("symgrad.compile.function")   # (sg.function is the function)
    folds = []
    _fold = entry.fold_graph
    def fold_graph(*args, **kwargs):          # every fold, loop bodies' included
        folds.append(1)
        return _fold(*args, **kwargs)
    entry.fold_graph = fold_graph

    def lv(p, u):
        return sg.stack([p[0] * u[0] - p[1] * u[0] * u[1], p[3] * u[0] * u[1] - p[2] * u[1]])

    def build(case):
        if case in ("jacobian", "hessian"):
            x = sg.placeholder("x", (12,))
            y = sg.sin(x[1:]) * x[:-1] ** 2 + sg.exp(-x[1:])
            out = (sg.jacobian(y, x) if case == "jacobian"
                   else sg.hessians(sg.reduce_sum(y), x)[0])
            return [x], [out], [np.linspace(0.1, 1.0, 12)]
        p = sg.placeholder("p", (4,))
        if case == "scan":
            u, _ = sg.scan(lambda u, _: (u + 0.01 * lv(p, u), None), sg.constant([1.0, 1.0]),
                           length=50)
        else:                                      # "scalar": one straight-line kernel
            u = sg.constant([1.0, 1.0])
            for _ in range(5):
                u = u + 0.01 * lv(p, u)
        loss = sg.reduce_sum(u * u)
        return [p], [loss, sg.gradients(loss, [p])[0]], [np.array([1.0, 0.5, 1.0, 0.3])]

    inputs, outputs, args = build(sys.argv[1])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f = sg.function(inputs, outputs)
        results = f(*args)
    digest = hashlib.sha256(b"".join(np.ascontiguousarray(r).tobytes()
                                     for r in results)).hexdigest()
    from symgrad.compile.cpu.native_kernels import STATS
    print(json.dumps({"compiled": compiled, "hit": bool(f.cache_hit), "digest": digest,
                      "native": STATS.get("compiled", 0),
                      "passes": [r.name for r in f.passes], "folds": len(folds),
                      "warnings": [str(w.message) for w in caught]}))
""")


def _run(case: str, cache) -> dict:
    env = dict(os.environ, SYMGRAD_CACHE_DIR=str(cache / "sg"),
               NUMBA_CACHE_DIR=str(cache / "nb"), SYMGRAD_KEY_FILE=str(cache / "key"),
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", CHILD, case], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("case", ["jacobian", "hessian", "scan", "scalar"])
def test_a_warm_process_compiles_nothing_and_agrees(case, tmp_path):
    cold = _run(case, tmp_path)
    # cold: numba or LLVM compiles (the 12-entry Jacobian is one IR kernel, no numba)
    assert (cold["compiled"] or cold["native"]) and not cold["hit"]
    hot = _run(case, tmp_path)
    assert hot["hit"], hot
    assert hot["passes"] == ["warm key", "bind", "numba compile"], hot["passes"]  # no fold
    assert hot["compiled"] == [] and hot["native"] == 0, (hot["compiled"], hot["native"])
    assert hot["folds"] == 0 and cold["folds"] > 0    # a scan's body: not replanned either
    assert hot["digest"] == cold["digest"]


def test_a_tampered_record_in_a_new_process_compiles_again_with_a_warning(tmp_path):
    cold = _run("jacobian", tmp_path)
    (record,) = (tmp_path / "sg").glob("symgrad_warm_*")
    data = bytearray(record.read_bytes())
    data[len(data) // 2] ^= 1
    record.write_bytes(bytes(data))
    again = _run("jacobian", tmp_path)
    assert "fold" in again["passes"]
    assert any("symgrad_warm_" in w for w in again["warnings"]), again["warnings"]
    assert again["digest"] == cold["digest"]


def _plan_with(values: list):
    from types import SimpleNamespace
    order = [SimpleNamespace(is_const=True, index=k, value=v) for k, v in enumerate(values)]
    graph = SimpleNamespace(order=order, placeholders=[])
    return SimpleNamespace(graph=graph, units=[], kernels=[])


def test_constants_come_back_with_the_cold_layout_and_writeability(tmp_path, monkeypatch):
    """numba types an argument by layout and read-only flag: a constant that changed either
    between the cold and the warm process made the warm one compile its kernel again."""
    from symgrad.compile.cache import modules as cache, trust
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("SYMGRAD_KEY_FILE", str(tmp_path / "key"))
    monkeypatch.setattr(trust, "_KEY", [])
    monkeypatch.setattr(cache, "_LOADED", {})
    base = np.arange(12.0).reshape(3, 4)
    frozen = base.copy()
    frozen.flags.writeable = False
    values = [base.copy(), np.asfortranarray(base), base[:, ::2], frozen,
              np.broadcast_to(np.float64(2.5), (3, 4)), np.array(-0.0)]
    warm.store("k" * 64, [], [], _plan_with(values), "m" * 64)
    module_key, light = warm.load("k" * 64, [], [])
    assert module_key == "m" * 64
    got = [node.value for node in light.graph.order]
    for a, b in zip(got, values):
        np.testing.assert_array_equal(a, b)
        assert a.shape == b.shape and a.dtype == b.dtype
        assert warm._layout(a) == warm._layout(b)
        assert a.flags.writeable == b.flags.writeable
    assert np.signbit(got[-1])
