"""The module cache runs only what this user's symgrad wrote; faults degrade to an
in-memory compile with one CacheWarning; compiling and calling from many threads is safe."""

from __future__ import annotations

import errno
import hashlib
import os
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest

import symgrad as sg
from symgrad.compile import cache


@pytest.fixture()
def fresh(tmp_path, monkeypatch):
    """An empty cache directory, a fresh key file and no module loaded in this process."""
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("SYMGRAD_KEY_FILE", str(tmp_path / "key" / "cache.key"))
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setattr(cache, "_KEY", [])
    monkeypatch.setattr(cache, "_LOADED", {})
    monkeypatch.setattr(cache, "_WARNED", set())
    return tmp_path


def _graph(scale: float = 3.0):
    x = sg.placeholder("x", shape=(None,))
    return x, sg.reduce_sum(sg.sin(x) * scale)


def _check(f, scale: float = 3.0):
    value = np.array([0.25, 0.5, 1.0])
    assert f(value) == pytest.approx(scale * np.sin(value).sum())


def _forget(f):
    cache._LOADED.clear()


def test_key_file_is_private(fresh):
    x, y = _graph()
    sg.function([x], y)
    key = fresh / "key" / "cache.key"
    assert key.stat().st_mode & 0o777 == 0o600
    assert len(key.read_bytes()) == cache.KEY_BYTES


def test_foreign_module_with_recomputed_checksum_is_not_run(fresh):
    x, y = _graph()
    f = sg.function([x], y)
    path = Path(f.module.__file__)
    marker = fresh / "pwned"
    evil = f"open({str(marker)!r}, 'w').write('x')\n"
    path.write_text(evil + "# symgrad-mac " + hashlib.sha256(evil.encode()).hexdigest() + "\n")
    _forget(f)
    with pytest.warns(sg.CacheWarning, match="not a module this user's symgrad wrote"):
        g = sg.function([x], y)
    _check(g)
    assert not marker.exists() and not g.cache_hit


def test_planted_bytecode_next_to_a_genuine_module_is_not_run(fresh):
    x, y = _graph()
    f = sg.function([x], y)
    path = Path(f.module.__file__)
    marker = fresh / "pwned"
    pyc_dir = path.parent / "__pycache__"
    pyc_dir.mkdir(exist_ok=True)
    code = compile(f"open({str(marker)!r}, 'w').write('x')", str(path), "exec")
    import importlib.util
    import marshal
    for tag in ("cpython-311", "cpython-312", "cpython-310"):
        data = importlib.util.MAGIC_NUMBER + b"\0" * 12 + marshal.dumps(code)
        (pyc_dir / f"{path.stem}.{tag}.pyc").write_bytes(data)
    _forget(f)
    g = sg.function([x], y)
    _check(g)
    assert g.cache_hit and not marker.exists()


def test_numba_cache_is_refused_in_a_group_writable_directory(fresh):
    x, y = _graph(5.0)
    directory = fresh / "cache"
    directory.mkdir(parents=True)
    os.chmod(directory, 0o777)
    with pytest.warns(sg.CacheWarning, match="numba's cache there is off"):
        f = sg.function([x], y)
    _check(f, 5.0)
    assert not list(directory.glob("__pycache__/*.nbi"))


@pytest.mark.parametrize("fault", ["EACCES", "ENOSPC", "EFBIG"])
def test_write_faults_compile_in_memory(fresh, monkeypatch, fault):
    def failing(*args, **kwargs):
        raise OSError(getattr(errno, fault), os.strerror(getattr(errno, fault)))
    cache.secret_key()                  # the key exists: only the module write fails
    monkeypatch.setattr(cache.tempfile, "mkstemp", failing)
    x, y = _graph(7.0)
    with pytest.warns(sg.CacheWarning, match="compiled in memory"):
        f = sg.function([x], y)
    _check(f, 7.0)


def test_cache_dir_naming_a_file(fresh, monkeypatch):
    target = fresh / "afile"
    target.write_text("not a directory")
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(target))
    x, y = _graph(11.0)
    with pytest.warns(sg.CacheWarning, match="compiled in memory"):
        f = sg.function([x], y)
    _check(f, 11.0)


def test_directory_where_the_module_should_be(fresh):
    x, y = _graph(13.0)
    f = sg.function([x], y)
    path = Path(f.module.__file__)
    path.unlink()
    path.mkdir()
    _forget(f)
    with pytest.warns(sg.CacheWarning):
        g = sg.function([x], y)
    _check(g, 13.0)


def test_truncated_file_is_rebuilt(fresh):
    x, y = _graph(17.0)
    f = sg.function([x], y)
    path = Path(f.module.__file__)
    path.write_bytes(path.read_bytes()[:100])
    _forget(f)
    with pytest.warns(sg.CacheWarning, match="truncated"):
        g = sg.function([x], y)
    _check(g, 17.0)
    assert cache.unsealed(path.stem, path.read_bytes()) is not None


def test_a_fault_warns_once(fresh, monkeypatch):
    cache.secret_key()
    monkeypatch.setattr(cache.tempfile, "mkstemp",
                        lambda *a, **k: (_ for _ in ()).throw(OSError(errno.EACCES, "no")))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for scale in (2.0, 4.0, 6.0):
            x, y = _graph(scale)
            _check(sg.function([x], y), scale)
    assert sum(issubclass(w.category, sg.CacheWarning) for w in caught) == 1


def test_eight_threads_compile_the_same_graph(fresh):
    x, y = _graph(19.0)
    results, errors = [], []
    barrier = threading.Barrier(8)

    def work():
        try:
            barrier.wait()
            f = sg.function([x], y)
            results.append((f.module, float(f(np.array([0.25, 0.5, 1.0])))))
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)
    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len({id(m) for m, _ in results}) == 1
    assert all(v == pytest.approx(19.0 * np.sin([0.25, 0.5, 1.0]).sum()) for _, v in results)


def test_eight_threads_call_one_function(fresh):
    x = sg.placeholder("x", shape=(None,))
    loss = sg.reduce_sum(sg.exp(-x * x))
    f = sg.function([x], [loss, sg.gradients(loss, x)[0]], target="parallel")
    rng = np.random.default_rng(0)
    inputs = [rng.normal(size=10_000 + k) for k in range(8)]
    out = [None] * 8
    barrier = threading.Barrier(8)

    def work(k):
        barrier.wait()
        for _ in range(5):
            out[k] = f(inputs[k])
    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(8):
        np.testing.assert_allclose(out[k][0], np.exp(-inputs[k] ** 2).sum(), rtol=1e-12)
        np.testing.assert_allclose(out[k][1], -2 * inputs[k] * np.exp(-inputs[k] ** 2),
                                   rtol=1e-12)
