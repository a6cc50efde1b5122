"""numba internals with a seatbelt (issue 24, item 8): each internal symgrad reaches is
named in ``symgrad.numba_internals.INTERNALS`` and in docs/compiler.md; a numba release that
moves one fails here naming it; ``SYMGRAD_NUMBA_INTERNALS=0`` takes every public fallback;
nothing symgrad patches in numba changes another thread's compile."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numba
import numpy as np
import pytest

import symgrad as sg
from symgrad import numba_internals
from symgrad.compile.cpu import eager

DOCS = Path(__file__).parent.parent / "docs" / "compiler.md"
SIMULATOR = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"


@pytest.mark.parametrize("internal", numba_internals.INTERNALS, ids=lambda i: i.path)
def test_each_internal_is_where_symgrad_expects_it(internal):
    if internal.cuda:
        if SIMULATOR:
            pytest.skip("numba.cuda's dispatcher does not import under the simulator")
        try:
            import numba.cuda.dispatcher  # noqa: F401
        except Exception as exc:          # noqa: BLE001 - no numba.cuda here at all
            pytest.skip(f"numba.cuda unavailable: {exc}")
    try:
        numba_internals.resolve(internal.path)
    except (LookupError, ImportError, AttributeError) as exc:
        pytest.fail(f"numba internal {internal.path} (used in symgrad/compile/"
                    f"{internal.used_in}) moved in numba {numba.__version__}: {exc}; "
                    f"SYMGRAD_NUMBA_INTERNALS=0 takes its public fallback")


def test_a_moved_internal_is_named():
    with pytest.raises(LookupError, match=r"numba\.core\.caching\.Cache\._gone"):
        numba_internals.resolve("numba.core.caching.Cache._gone")


def test_every_internal_is_documented():
    text = DOCS.read_text()
    section = text[text.index("## numba internals"):]
    missing = [i.path for i in numba_internals.INTERNALS if f"`{i.path}`" not in section]
    assert missing == []
    assert "SYMGRAD_NUMBA_INTERNALS=0" in section


def test_typing_memo_is_invisible_to_other_threads():
    """While this thread compiles inside ``memoised_typing``, a user's njit compile in
    another thread types through numba's own function: nothing enters this thread's memo,
    and the other thread sees no memo at all."""
    if not numba_internals.enabled():
        pytest.skip("the memo is off with SYMGRAD_NUMBA_INTERNALS=0")
    seen = {}

    def user_compile():
        seen["memo"] = getattr(eager._TYPING, "memo", None)

        @numba.njit
        def user(a, b):
            return a * b + a - b / 3.0
        seen["value"] = user(2.0, 3.0)

    with eager.memoised_typing():
        memo = eager._TYPING.memo
        thread = threading.Thread(target=user_compile)
        thread.start()
        thread.join()
        assert memo == {}                    # the other thread's typing was not memoised
    assert seen == {"memo": None, "value": 2.0 * 3.0 + 2.0 - 1.0}
    assert getattr(eager._TYPING, "memo", None) is None


def test_internals_off_takes_the_public_fallbacks(monkeypatch, tmp_path):
    from symgrad.compile.cache import modules, numba_files

    monkeypatch.setenv(numba_internals.ENV, "1")
    on = modules.versions()
    monkeypatch.setenv(numba_internals.ENV, "0")
    assert not numba_internals.enabled()
    assert modules.versions() != on           # another key: no module built with internals
    assert not numba_files.numba_cache_allowed(tmp_path / "m.py")
    with eager.memoised_typing():
        assert getattr(eager._TYPING, "memo", None) is None
    x = sg.placeholder("x", shape=(None,))
    e = x
    for k in range(6):                       # a kernel that would get an LLVM IR body
        e = sg.sin(e) * x + float(k)
    loss = sg.reduce_sum(e)
    f = sg.function([x], [loss] + sg.gradients(loss, [x]))
    assert "llvm_body_(" not in f.source
    v = np.linspace(-1, 1, 7)
    for got, want in zip(f(v), sg.evaluate([loss] + sg.gradients(loss, [x]), {x: v})):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_blas_probe_is_deferred_for_the_refreshing_thread_only(monkeypatch):
    """``defer_blas_check`` swaps numba's ``ensure_blas`` only around its own refresh, and
    the swapped probe runs numba's real check in any other thread."""
    import numba.np.linalg as linalg
    from symgrad.compile.cpu import numba_startup

    monkeypatch.setenv(numba_internals.ENV, "1")
    calls = []
    monkeypatch.setattr(linalg, "ensure_blas", lambda: calls.append("real"))
    probes = []

    class Context:                          # stands in for cpu_target.target_context
        def refresh(self):
            probes.append(linalg.ensure_blas)
            linalg.ensure_blas()                              # this thread: deferred
            t = threading.Thread(target=linalg.ensure_blas)   # another: numba's check
            t.start()
            t.join()

    import numba.core.registry as registry
    monkeypatch.setattr(registry.cpu_target, "_toplevel_target_context", Context())
    monkeypatch.delitem(__import__("sys").modules, "numba.np.arraymath", raising=False)
    numba_startup.defer_blas_check()
    assert len(probes) == 1 and calls == ["real"]
    assert linalg.ensure_blas is not probes[0]                # restored
