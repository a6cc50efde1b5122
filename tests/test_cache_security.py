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
from symgrad.compile.cache import modules as cache, trust


@pytest.fixture()
def fresh(tmp_path, monkeypatch):
    """An empty cache directory, a fresh key file and no module loaded in this process."""
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("SYMGRAD_KEY_FILE", str(tmp_path / "key" / "cache.key"))
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setattr(trust, "_KEY", [])
    monkeypatch.setattr(cache, "_LOADED", {})
    monkeypatch.setattr(trust, "_WARNED", set())
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


@pytest.mark.skipif(os.getuid() == 0, reason="root writes into any directory")
def test_a_really_unwritable_directory(fresh):
    directory = fresh / "cache"
    directory.mkdir()
    os.chmod(directory, 0o500)
    x, y = _graph(67.0)
    try:
        with pytest.warns(sg.CacheWarning, match="compiled in memory"):
            f = sg.function([x], y)
    finally:
        os.chmod(directory, 0o700)
    _check(f, 67.0)


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
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        g = sg.function([x], y)
    _check(g, 13.0)
    texts = " | ".join(str(w.message) for w in caught if w.category is sg.CacheWarning)
    assert "is not a regular file" in texts and "compiled in memory" in texts, texts
    assert str(path.parent) in texts and "SYMGRAD_CACHE_DIR" in texts


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
    # half below, half above the size where the parallel (prange) kernels take over
    inputs = [rng.normal(size=(10_000 if k % 2 else 100_000) + k) for k in range(8)]
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


# --- the key ----------------------------------------------------------------------------

def test_group_readable_key_is_replaced(fresh):
    key = fresh / "key" / "cache.key"
    key.parent.mkdir()
    key.write_bytes(b"k" * cache.KEY_BYTES)
    os.chmod(key, 0o644)
    x, y = _graph(23.0)
    with pytest.warns(sg.CacheWarning, match="readable or writable by group or others"):
        f = sg.function([x], y)
    _check(f, 23.0)
    assert key.stat().st_mode & 0o777 == 0o600
    assert key.read_bytes() != b"k" * cache.KEY_BYTES
    assert cache.secret_key() == key.read_bytes()


@pytest.mark.skipif(os.getuid() != 0, reason="giving a file away needs root")
def test_key_owned_by_another_user_is_refused(fresh):
    key = fresh / "key" / "cache.key"
    key.parent.mkdir()
    key.write_bytes(b"k" * cache.KEY_BYTES)
    os.chmod(key, 0o600)
    os.chown(key, 65534, 65534)
    x, y = _graph(29.0)
    with pytest.warns(sg.CacheWarning, match="owned by another user"):
        f = sg.function([x], y)
    _check(f, 29.0)
    assert cache.secret_key() != b"k" * cache.KEY_BYTES
    assert key.read_bytes() == b"k" * cache.KEY_BYTES      # not overwritten


def _in_thread(fn, timeout: float = 120.0):
    """fn() in a thread; fails if it blocks (a FIFO opened for reading waits for a writer)."""
    box = []
    thread = threading.Thread(target=lambda: box.append(fn()), daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), "blocked"
    return box[0]


def test_a_fifo_as_key_file_is_refused_without_blocking(fresh):
    key = fresh / "key" / "cache.key"
    key.parent.mkdir()
    os.mkfifo(key, 0o600)
    x, y = _graph(31.0)
    with pytest.warns(sg.CacheWarning, match="not a regular file"):
        f = _in_thread(lambda: sg.function([x], y))
    _check(f, 31.0)


# --- what is run ------------------------------------------------------------------------

def test_a_genuine_module_under_another_key_is_not_run(fresh):
    xa, ya = _graph(3.0)
    xb, yb = _graph(5.0)
    fa, fb = sg.function([xa], ya), sg.function([xb], yb)
    Path(fb.module.__file__).write_bytes(Path(fa.module.__file__).read_bytes())
    _forget(fb)
    with pytest.warns(sg.CacheWarning, match="not a module this user's symgrad wrote"):
        g = sg.function([xb], yb)
    _check(g, 5.0)
    assert not g.cache_hit


@pytest.mark.parametrize("damage", ["empty", "garbage", "flipped", "no-mac-line"])
def test_damaged_files_are_rebuilt(fresh, damage):
    x, y = _graph(37.0)
    path = Path(sg.function([x], y).module.__file__)
    data = path.read_bytes()
    damaged = {"empty": b"", "garbage": os.urandom(4000),
               "flipped": data.replace(b"37.0", b"38.0"),
               "no-mac-line": data[:data.rindex(b"# symgrad-mac")]}[damage]
    assert damaged != data
    path.write_bytes(damaged)
    _forget(None)
    with pytest.warns(sg.CacheWarning, match="not a module this user's symgrad wrote"):
        g = sg.function([x], y)
    _check(g, 37.0)
    assert path.read_bytes() != damaged


def test_a_fifo_at_the_module_path_is_refused_without_blocking(fresh):
    x, y = _graph(41.0)
    path = Path(sg.function([x], y).module.__file__)
    path.unlink()
    os.mkfifo(path, 0o600)
    _forget(None)
    with pytest.warns(sg.CacheWarning, match="not a regular file"):
        g = _in_thread(lambda: sg.function([x], y))
    _check(g, 41.0)
    assert path.is_file()            # replaced by the rebuilt module, never written through


def test_a_symlink_at_the_module_path_is_not_followed(fresh):
    x, y = _graph(43.0)
    path = Path(sg.function([x], y).module.__file__)
    outside = fresh / "outside.py"
    outside.write_bytes(path.read_bytes())          # a genuine module, out of the directory
    path.unlink()
    path.symlink_to(outside)
    _forget(None)
    with pytest.warns(sg.CacheWarning, match="cannot be read"):
        g = sg.function([x], y)
    _check(g, 43.0)
    assert not g.cache_hit and not path.is_symlink()
    assert outside.read_bytes() == path.read_bytes()   # the link was replaced, not written


def test_no_bytecode_is_written_into_the_cache(fresh, monkeypatch):
    monkeypatch.setattr("sys.dont_write_bytecode", False)
    x, y = _graph(47.0)
    _check(sg.function([x], y), 47.0)
    _forget(None)
    g = sg.function([x], y)
    _check(g, 47.0)
    assert g.cache_hit
    assert not list((fresh / "cache").rglob("*.pyc"))


# --- numba's own cache files ----------------------------------------------------------

class _Evil:
    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').write('x')",))


def _plant_numba_files(fresh, mode: int, pattern: str = "*.nbi"):
    """Compile and call once (numba writes its index and data files), replace every file
    matching ``pattern`` with a pickle that creates a marker when loaded, then load the
    module again from a directory of ``mode`` and call it."""
    import pickle
    import sys
    x, y = _graph(53.0)
    f = sg.function([x], y)
    _check(f, 53.0)
    pycache = Path(f.module.__file__).parent / "__pycache__"
    planted = list(pycache.glob(pattern))
    assert planted, "numba wrote no such file: the probe would prove nothing"
    marker = fresh / "pwned"
    for path in planted:
        path.write_bytes(pickle.dumps(_Evil(marker)))
    _forget(f)
    sys.modules.pop(f.module.__name__, None)
    os.chmod(pycache.parent, mode)
    g = sg.function([x], y)
    _check(g, 53.0)
    return g, marker


def test_planted_numba_index_in_an_unsafe_directory_is_never_loaded(fresh):
    with pytest.warns(sg.CacheWarning, match="numba's cache there is off"):
        g, marker = _plant_numba_files(fresh, 0o777)
    assert g.cache_hit and not marker.exists()


@pytest.mark.parametrize("pattern", ["*.nbi", "*.nbc"])
def test_planted_numba_files_in_a_safe_directory_are_never_unpickled(fresh, pattern):
    """numba's cache is on in a directory only this user can write, but its files are
    sealed with the key: a planted pickle (index or data) is refused, the kernel
    recompiles, and numba's next save replaces the file with a sealed one."""
    with pytest.warns(sg.CacheWarning, match="numba's cache file cannot be read .not sealed"):
        g, marker = _plant_numba_files(fresh, 0o700, pattern)
    assert g.cache_hit and not marker.exists()
    for path in _numba_files(g, pattern):
        assert path.read_bytes().startswith(trust.NUMBA_MAGIC)


def test_sealed_numba_files_are_loaded_not_recompiled(fresh, monkeypatch):
    """The control of the probes above: a genuine sealed index and data file are loaded
    (numba does not compile the kernel again) without a warning, and without refreshing
    numba's registries (``numba_cache._load_light``: linking a cached object needs none)."""
    import sys

    from numba.core.base import BaseContext

    from symgrad.compile.cpu.eager import dispatchers
    x, y = _graph(57.0)
    f = sg.function([x], y)
    _check(f, 57.0)
    assert _numba_files(f, "*.nbi") and _numba_files(f, "*.nbc")
    _forget(f)
    sys.modules.pop(f.module.__name__, None)
    refreshed = []
    real = BaseContext.refresh
    monkeypatch.setattr(BaseContext, "refresh", lambda self: refreshed.append(real(self)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.CacheWarning)
        g = sg.function([x], y)
        _check(g, 57.0)
    stats = [d.stats for d in dispatchers(g.module).values()]
    assert sum(sum(s.cache_hits.values()) for s in stats) >= 1
    assert sum(sum(s.cache_misses.values()) for s in stats) == 0
    assert refreshed == []


def test_a_cached_library_with_an_unknown_symbol_gets_numbas_full_refresh():
    """The light load links only libraries whose every external symbol resolves now;
    one that declares another (a registry module would add it) or a payload of another
    shape takes numba's own path (a full refresh first)."""
    import llvmlite.binding as ll

    from symgrad.compile.cache.numba_files import _links_without_refresh

    def payload(ir_text):
        bitcode = ll.parse_assembly(ir_text).as_bitcode()
        return (("lib", "object", (b"", bitcode)), "fndesc")
    assert _links_without_refresh(payload(
        "declare double @tanh(double)\ndeclare double @llvm.fabs.f64(double)\n"))
    assert not _links_without_refresh(payload("declare double @symgrad_no_such_symbol(double)\n"))
    assert not _links_without_refresh(("not a numba payload",))


def test_the_light_load_is_for_cpu_contexts_only():
    """A cache of another target (numba-cuda's) is loaded by numba's own method."""
    from symgrad.compile.cache.numba_files import _load_light

    class OtherCache:
        def load_overload(self, sig, context):
            return ("numba's own", sig, context)
    context = object()
    assert _load_light(OtherCache(), "sig", context) == ("numba's own", "sig", context)


def test_numba_cudas_copy_of_the_cache_file_class_is_sealed_too(fresh, tmp_path):
    """numba-cuda keeps its own IndexDataCacheFile; a class with the same members is
    sealed the same way (and anything else leaves the kernel without a disk cache)."""
    import pickle

    from numba.core import caching

    from symgrad.compile.cache import numba_files as numba_cache

    class CudaCopy(caching.IndexDataCacheFile):   # stands in for numba-cuda's class
        pass
    files = CudaCopy(str(tmp_path), "m.k-1.py311", ("stamp", 1))
    sealed = numba_cache.sealed_cache_file(files)
    assert isinstance(sealed, CudaCopy) and isinstance(sealed, numba_cache.SealedFiles)
    sealed.save("key", ("data",))
    assert sealed.load("key") == ("data",)
    index = tmp_path / "m.k-1.py311.nbi"
    assert index.read_bytes().startswith(trust.NUMBA_MAGIC)
    index.write_bytes(pickle.dumps(_Evil(fresh / "pwned")))
    with pytest.warns(sg.CacheWarning, match="not sealed"):
        assert sealed.load("key") is None
    assert not (fresh / "pwned").exists()
    assert numba_cache.sealed_cache_file(object()) is None


def test_a_sealed_numba_file_moved_to_another_name_is_refused(fresh):
    """The MAC binds each file to its name: one kernel's sealed data cannot stand in for
    another's."""
    payload = trust.seal_bytes("m.a-1.py311.1.nbc", b"data")
    assert trust.unseal_bytes("m.a-1.py311.1.nbc", payload) == b"data"
    assert trust.unseal_bytes("m.b-1.py311.1.nbc", payload) is None


def test_an_unsafe_numba_cache_dir_turns_numbas_cache_off(fresh, monkeypatch):
    from numba.core import config
    shared = fresh / "shared-numba"
    shared.mkdir()
    os.chmod(shared, 0o777)
    monkeypatch.setattr(config, "CACHE_DIR", str(shared))
    x, y = _graph(59.0)
    with pytest.warns(sg.CacheWarning, match="numba's cache there is off"):
        f = sg.function([x], y)
    _check(f, 59.0)
    assert not list(shared.rglob("*.nbi"))


# --- more faults --------------------------------------------------------------------------

@pytest.mark.parametrize("fault", ["ENOSPC", "EFBIG"])
def test_a_write_failing_midway_leaves_nothing_behind(fresh, monkeypatch, fault):
    cache.secret_key()
    real_write = os.write

    def failing(fd, data):
        if len(data) > 100:
            real_write(fd, bytes(data[:100]))
        raise OSError(getattr(errno, fault), os.strerror(getattr(errno, fault)))
    x, y = _graph(61.0)
    with monkeypatch.context() as patch:
        patch.setattr(cache.os, "write", failing)
        with pytest.warns(sg.CacheWarning, match="compiled in memory"):
            f = sg.function([x], y)
    _check(f, 61.0)
    assert not [p for p in (fresh / "cache").iterdir() if p.name != "__pycache__"]


def test_the_suite_never_uses_the_users_cache():
    user = Path(os.path.expanduser("~")) / ".cache" / "symgrad"
    assert Path(os.environ["SYMGRAD_CACHE_DIR"]).resolve() != user.resolve()
    assert "symgrad-tests-" in os.environ["SYMGRAD_KEY_FILE"]


_WORKQUEUE_SCRIPT = """
import threading, numpy as np, symgrad as sg
x = sg.placeholder("x", shape=(None,))
loss = sg.reduce_sum(sg.exp(-x * x))
f = sg.function([x], [loss, sg.gradients(loss, x)[0]], target="parallel")
a = np.linspace(-1.0, 1.0, 200_000)
want = f(a)
import numba
assert numba.threading_layer() == "workqueue", numba.threading_layer()
bad = []
def work():
    for _ in range(10):
        got = f(a)
        bad.append(not np.allclose(got[1], want[1]))
threads = [threading.Thread(target=work) for _ in range(8)]
[t.start() for t in threads]
[t.join() for t in threads]
print("calls", len(bad), "bad", sum(bad))
"""


def test_eight_threads_call_a_parallel_function_under_the_workqueue_layer(tmp_path):
    """numba's workqueue layer aborts the process when two threads launch parallel kernels
    at once; symgrad serialises its parallel kernels under that layer."""
    import subprocess
    import sys
    env = dict(os.environ, NUMBA_THREADING_LAYER="workqueue",
               SYMGRAD_CACHE_DIR=str(tmp_path / "cache"),
               SYMGRAD_KEY_FILE=str(tmp_path / "key"))
    root = Path(__file__).resolve().parent.parent
    env["PYTHONPATH"] = os.pathsep.join([str(root), env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-c", _WORKQUEUE_SCRIPT], env=env, cwd=root,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "calls 80 bad 0" in done.stdout


def test_doctests_alone_never_use_the_users_cache(tmp_path):
    """``pytest symgrad/...`` (doctests only, tests/conftest.py not loaded) compiles into
    a temporary cache: HOME points at an empty folder, which stays empty of symgrad."""
    import subprocess
    import sys
    root = Path(__file__).resolve().parent.parent
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SYMGRAD_", "XDG_CACHE", "XDG_CONFIG"))}
    env.update(HOME=str(tmp_path), PYTHONPATH=str(root))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "symgrad/compile/function.py"], env=env, cwd=root,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:]
    assert not (tmp_path / ".cache" / "symgrad").exists()
    assert not (tmp_path / ".config" / "symgrad").exists()


# --- faults of numba's own cache files ---------------------------------------------------

def _numba_files(f, pattern: str) -> list:
    return sorted((Path(f.module.__file__).parent / "__pycache__").glob(pattern))


@pytest.mark.parametrize("pattern", ["*.nbi", "*.nbc"])
def test_truncated_numba_cache_files_degrade_and_are_repaired(fresh, pattern):
    import sys
    x, y = _graph(71.0)
    f = sg.function([x], y)
    _check(f, 71.0)
    files = _numba_files(f, pattern)
    assert files
    for path in files:
        path.write_bytes(path.read_bytes()[:len(path.read_bytes()) // 2])
    _forget(f)
    sys.modules.pop(f.module.__name__, None)
    with pytest.warns(sg.CacheWarning, match="numba's cache file cannot be read"):
        g = sg.function([x], y)
        _check(g, 71.0)
    assert all(p.read_bytes().startswith(trust.NUMBA_MAGIC) for p in _numba_files(g, pattern))
    _forget(g)                              # a third process-like load: repaired, silent
    sys.modules.pop(g.module.__name__, None)
    trust._WARNED.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.CacheWarning)
        _check(sg.function([x], y), 71.0)


def test_a_sealed_numba_file_whose_library_is_broken_degrades(fresh):
    """The light load reads the cached library's bitcode before linking: a genuine seal
    over a broken library (bitcode that does not parse) is one warning and a compile."""
    import pickle
    import sys

    from symgrad.compile.cache.numba_files import SealedCacheFile
    x, y = _graph(73.0)
    f = sg.function([x], y)
    _check(f, 73.0)
    paths = _numba_files(f, "*.nbc")
    assert paths
    for path in paths:
        payload = pickle.loads(SealedCacheFile.__new__(SealedCacheFile)._read_sealed(str(path)))
        name, kind, (obj, _bitcode) = payload[0]
        broken = ((name, kind, (obj, b"not bitcode")),) + tuple(payload[1:])
        path.write_bytes(trust.seal_bytes(path.name, pickle.dumps(broken)))
    _forget(f)
    sys.modules.pop(f.module.__name__, None)
    with pytest.warns(sg.CacheWarning, match="numba's cache file cannot be read"):
        g = sg.function([x], y)
        _check(g, 73.0)


def test_a_full_disk_while_numba_saves_its_cache(fresh, monkeypatch):
    from numba.core import caching

    def full(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(caching.IndexDataCacheFile, "save", full)
    x, y = _graph(73.0)
    with pytest.warns(sg.CacheWarning, match="numba's cache file cannot be written"):
        f = sg.function([x], y)
        _check(f, 73.0)


@pytest.mark.parametrize("target", ["parallel", "cuda"])
def test_eight_threads_compile_the_same_graph_on_other_targets(fresh, target):
    """Compiled concurrently, called afterwards (numba's CUDA simulator cannot run two
    kernels at once; a real GPU can)."""
    x, y = _graph(79.0)
    functions, errors = [], []
    barrier = threading.Barrier(8)

    def work():
        try:
            barrier.wait()
            functions.append(sg.function([x], y, target=target))
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)
    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(functions) == 8
    assert len({id(f.module) for f in functions}) == 1
    for f in functions:
        _check(f, 79.0)
