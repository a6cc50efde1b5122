"""Progress and Ctrl-C (issue 29 item 6, issue 30 item 3): one short line per phase naming the
function by its inputs (a loop body after the function it belongs to, never its captures),
labels that say what happened (a numba compile after an interrupted build is a compile),
``progress=True`` or ``SYMGRAD_PROGRESS=1`` shows progress on any stderr, and Ctrl-C during a
build ends with one line and leaves every cache valid."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import symgrad as sg
import symgrad.compile.function as compile_function

ROOT = Path(__file__).resolve().parents[1]
needs_jit = pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1",
                               reason="no numba compile to interrupt or label")


def _lines(err: str) -> list:
    return [line for line in err.splitlines() if line.startswith("symgrad: ")]


def test_progress_true_shows_one_short_line_per_phase(capsys):
    x, y = sg.placeholder("x", shape=(4,)), sg.placeholder("y", shape=(4,))
    sg.function([x, y], sg.cos(x) * 1.25 + y, progress=True)
    lines = _lines(capsys.readouterr().err)
    assert lines and all(line.startswith("symgrad: compiling f(x, y): ") for line in lines)
    phases = [line.split(": ")[2].split(" (")[0] for line in lines]
    assert phases[0] == "fold..." and phases[-1] == "done" and "start..." not in phases
    assert any(p in ("numba compile...", "numba load...") for p in phases)
    assert max(map(len, lines)) < 100


def test_loop_bodies_are_named_after_the_function_not_their_captures(capsys):
    x = sg.placeholder("x", shape=(3,))
    w = [sg.sin(x * (k + 1.0)) for k in range(30)]          # 30 captures of the body

    def body(c, _):
        for k, wk in enumerate(w):
            c = c + wk * (k + 0.5)
        return c * 0.5, sg.reduce_sum(c)
    c, ys = sg.scan(body, x, length=3)
    sg.function([x], sg.gradients(sg.reduce_sum(c) + sg.reduce_sum(ys), [x]), progress=True)
    lines = _lines(capsys.readouterr().err)
    body_lines = [line for line in lines if ": loop body: " in line]
    assert body_lines and all(line.startswith("symgrad: compiling f(x): ") for line in lines)
    assert not any("capture" in line or "__loop" in line for line in lines)
    assert max(map(len, lines)) < 100


def test_the_environment_variable_asks_for_progress(capsys, monkeypatch):
    x = sg.placeholder("x", shape=(4,))
    monkeypatch.setenv("SYMGRAD_PROGRESS", "1")             # stderr here is not a terminal
    sg.function([x], sg.tanh(x) * 1.75)
    assert _lines(capsys.readouterr().err)[-1].startswith("symgrad: compiling f(x): done")
    monkeypatch.setenv("SYMGRAD_PROGRESS", "0")
    sg.function([x], sg.tanh(x) * 1.875, progress=None)
    assert _lines(capsys.readouterr().err) == []
    sg.function([x], sg.tanh(x) * 1.9375, progress=True)    # the argument wins
    assert _lines(capsys.readouterr().err)


def test_labels_of_long_input_lists_are_truncated():
    from symgrad.compile.progress import label

    names = [f"gradients/adj_carry__loop{i}" for i in range(170)]
    assert label(names) == ("f(gradients/adj_carry__loop0, ... 170 inputs)")
    assert label(["x"]) == "f(x)" and label([]) == "f()"


@needs_jit
def test_ctrl_c_ends_the_build_with_one_line_and_the_rerun_compiles(monkeypatch, caplog):
    x = sg.placeholder("x", shape=(5,))
    out = sg.exp(x) * 2.53125 - x

    def interrupt(*args):
        raise KeyboardInterrupt
    monkeypatch.setattr(compile_function, "compile_module", interrupt)
    with pytest.raises(KeyboardInterrupt) as caught:
        sg.function([x], out)
    message = str(caught.value)
    assert message.startswith("symgrad: build of f(x) interrupted during numba compile")
    assert "\n" not in message and caught.value.__suppress_context__
    from symgrad.compile.progress import innermost
    assert innermost() is None                    # no compile is left marked as running
    monkeypatch.undo()
    with caplog.at_level("DEBUG", logger="symgrad"):
        f = sg.function([x], out)                 # the module was kept: numba compiles
    phases = [r.getMessage() for r in caplog.records if r.name == "symgrad"]
    assert any(": numba compile " in m for m in phases)
    assert not any(": numba load " in m for m in phases)
    decided = [r.decided for r in f.passes if r.name == "numba compile"][0]
    assert decided.startswith(("1 compiled", "2 compiled", "3 compiled")), decided
    v = np.linspace(-1, 1, 5)
    np.testing.assert_allclose(f(v), np.exp(v) * 2.53125 - v)


_INTERRUPTED = """
import numba                         # imported first: the module's numba functions are made at once
import numpy as np, symgrad as sg
import symgrad.compile.function as F
x = sg.placeholder("x", shape=(6,))
out = [sg.cos(x) * 3.03125 + sg.sin(x), sg.reduce_sum(sg.exp(x) * 0.75)]
if MODE == "interrupt":              # Ctrl-C while numba compiles the module's second function
    real, calls = F.compile_module, []
    def compile_module(module, *args):
        for d in F.dispatchers(module).values():
            def compile(*a, inner=d._compiler.compile):
                calls.append(1)
                if len(calls) == 2:
                    raise KeyboardInterrupt
                return inner(*a)
            d._compiler.compile = compile
        return real(module, *args)
    F.compile_module = compile_module
f = sg.function([x], out, progress=True)
v = np.linspace(-1, 1, 6)
assert np.allclose(f(v)[0], np.cos(v) * 3.03125 + np.sin(v))
print(f.cache_hit, [r.decided for r in f.passes if r.name == "numba compile"][0])
"""


@needs_jit
def test_ctrl_c_in_a_fresh_process_prints_one_line_and_keeps_the_cache(tmp_path):
    env = dict(os.environ, SYMGRAD_CACHE_DIR=str(tmp_path / "sg"), PYTHONPATH=str(ROOT),
               NUMBA_CACHE_DIR=str(tmp_path / "nb"))
    env.pop("SYMGRAD_PROGRESS", None)

    def run(mode):
        return subprocess.run([sys.executable, "-c", f"MODE = {mode!r}\n" + _INTERRUPTED],
                              env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    stopped = run("interrupt")
    assert stopped.returncode != 0
    last = [line for line in stopped.stderr.splitlines() if not line.startswith("symgrad: ")]
    assert last == ["KeyboardInterrupt: symgrad: build of f(x) interrupted during numba "
                    + last[0].split("during numba ")[1]], stopped.stderr
    again = run("again")                 # symgrad's module is cached; numba compiles the rest
    assert again.returncode == 0, again.stderr
    shown = textwrap.dedent(again.stderr)
    assert "numba compile..." in shown and "numba load" not in shown
    assert again.stdout.startswith("True ") and " 0 compiled" not in again.stdout
    warm = run("warm")                   # everything cached now: a load, said so
    assert warm.returncode == 0, warm.stderr
    assert "numba load..." in warm.stderr and "numba compile" not in warm.stderr
    assert warm.stdout.startswith("True ") and "0 compiled" in warm.stdout
