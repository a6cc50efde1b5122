"""The kernel helpers (vecmath, support) come from numba's sealed on-disk cache in a second
process, still inlined into the loops; a tampered helper file is refused (compiled again,
one warning); another key reads and writes files of its own (compile/cache/helpers.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from symgrad.compile.cache import helpers

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, warnings
import numpy as np
warnings.simplefilter("always")
import symgrad as sg
from symgrad.compile.kernel_lib import vecmath as vm, support
x = sg.placeholder("x", shape=(None,))
y = sg.exp(-x) * sg.sin(x) + sg.sign(x - 0.5)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    f = sg.function([x], [y, sg.gradients(sg.reduce_sum(y), x)[0]])
    value, grad = f(np.linspace(-2.0, 2.0, 101))
kernels = [v for k, v in vars(f.module).items() if k.endswith("_cpu") and hasattr(v, "inspect_llvm")]
llvm = "".join(t for k in kernels for t in k.inspect_llvm().values())
calls = [l for l in llvm.splitlines() if " call " in l and ("exp_f64" in l or "sin_f64" in l)]
print(json.dumps({
    "hits": len(vm.exp_f64._cache_hits), "misses": len(vm.exp_f64._cache_misses),
    "sign_hits": len(support.sign_._cache_hits), "calls": len(calls),
    "warnings": [str(w.message) for w in caught if issubclass(w.category, sg.CacheWarning)],
    "value": value.tolist(), "grad": grad.tolist()}))
"""


def _run(tmp: Path, sg_dir: str, key: str = "key") -> dict:
    env = dict(os.environ, SYMGRAD_CACHE_DIR=str(tmp / sg_dir), NUMBA_CACHE_DIR=str(tmp / "nb"),
               SYMGRAD_KEY_FILE=str(tmp / key / "cache.key"),
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("SYMGRAD_NUMBA_INTERNALS", None)
    done = subprocess.run([sys.executable, "-c", CHILD], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _expected():
    x = np.linspace(-2.0, 2.0, 101)
    value = np.exp(-x) * np.sin(x) + np.sign(x - 0.5)
    grad = -np.exp(-x) * np.sin(x) + np.exp(-x) * np.cos(x)
    return value, grad


def _helper_files(tmp: Path) -> list:
    return sorted(p for p in (tmp / "nb").rglob("vecmath.exp_f64-*.nbc"))


@pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1", reason="no numba compile")
def test_second_process_loads_sealed_helpers_inlined(tmp_path):
    first = _run(tmp_path, "sg1")
    second = _run(tmp_path, "sg2")          # a new symgrad cache: the kernels compile again
    assert (first["hits"], first["misses"]) == (0, 1)
    assert (second["hits"], second["misses"]) == (1, 0)
    assert second["sign_hits"] == 1
    assert first["calls"] == second["calls"] == 0          # inlined either way
    assert first["warnings"] == second["warnings"] == []
    value, grad = _expected()
    for run in (first, second):
        np.testing.assert_allclose(run["value"], value, rtol=1e-14, atol=1e-15)
        np.testing.assert_allclose(run["grad"], grad, rtol=1e-14, atol=1e-15)
    assert second["value"] == first["value"] and second["grad"] == first["grad"]

    # a tampered file is never unpickled: compiled again, one warning, the same results
    files = _helper_files(tmp_path)
    assert len(files) == 1
    data = bytearray(files[0].read_bytes())
    data[-5] ^= 0xFF
    files[0].write_bytes(bytes(data))
    third = _run(tmp_path, "sg3")
    assert third["hits"] == 0 and third["misses"] == 1
    assert any("numba's cache file cannot be read" in w for w in third["warnings"])
    assert third["value"] == first["value"] and third["grad"] == first["grad"]

    # another key: its own files, no warning about the first key's
    other = _run(tmp_path, "sg4", key="other")
    assert (other["hits"], other["misses"], other["warnings"]) == (0, 1, [])
    assert len(_helper_files(tmp_path)) == 2

    # a key for this process only (the key file is refused): no helper files pile up
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "cache.key").write_bytes(b"short")
    (bad / "cache.key").chmod(0o600)
    once = _run(tmp_path, "sg5", key="bad")
    assert once["misses"] == 1 and any("key" in w for w in once["warnings"])
    assert len(_helper_files(tmp_path)) == 2
    assert once["value"] == first["value"]


def test_closures_and_ir_pieces_are_not_cached():
    from symgrad.compile.kernel_lib import support, vecmath
    assert helpers.cacheable(vecmath.sin_f64) and helpers.cacheable(support.sign_)
    assert not helpers.cacheable(vecmath.sin_f32)          # a closure over sin_f64
    assert not helpers.cacheable(vecmath._sin_kernel)      # inlined at numba's IR level
    assert not helpers.cacheable(len)


def test_refused_directory_is_quiet_for_helpers(tmp_path, monkeypatch):
    import warnings

    from symgrad.compile.cache import numba_files, trust
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)                      # writable by others, no sticky bit
    source = shared / "lib" / "helpers.py"
    source.parent.mkdir()
    source.write_text("")
    monkeypatch.setattr(trust, "_WARNED", set())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert numba_files.numba_cache_allowed(source, quiet=True) is False
    with pytest.warns(Warning, match="writable by group or others"):
        assert numba_files.numba_cache_allowed(source) is False
