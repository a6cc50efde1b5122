"""f.explain(), the notebook displays, and the compile log (issue 8, 'seeing what the
compiler did')."""

from __future__ import annotations

import logging

import numpy as np

import symgrad as sg
from symgrad.compile.scalar import settings as scalar_settings


def _softmax_loss():
    x = sg.placeholder("x", (4, 5))
    w = sg.placeholder("w", (5, 3))
    h = sg.tanh(sg.matmul(sg.sin(x, name="sx"), w, name="h"), name="th")
    e = sg.exp(h - sg.reduce_max(h, axis=1, keepdims=True, name="hmax"), name="e")
    p = e / sg.reduce_sum(e, axis=1, keepdims=True, name="z")
    loss = sg.reduce_sum(p * p, name="loss")
    return [x, w], [loss] + sg.gradients(loss, [x, w])


def test_explain_names_kernels_steps_temporaries_and_boundaries(monkeypatch):
    # the loop plan's lines: these shapes are small enough for one scalar kernel
    # (compile/scalar, tests/test_scalar_regions.py), so that pass is off here
    monkeypatch.setattr(scalar_settings, "ENABLED", False)
    inputs, outputs = _softmax_loss()
    f = sg.function(inputs, outputs)
    report = f.explain()
    lines = report.splitlines()
    assert lines[0].startswith("sg.function target='cpu': ")
    for k in f.plan.kernels:
        assert any(line.strip().startswith(f"kernel {k.index}  loop ") for line in lines)
    assert "step      matmul 'h' -> (4, 3) (numpy)" in lines
    assert "  reads  w float64 (5, 3)" not in lines[1:3]
    # the stored sin(x) (4 x 5 float64) is a temporary: 160 bytes
    assert "  sx float64 (4, 5): 160 bytes" in lines
    temps = next(line for line in lines if line.startswith("temporaries: "))
    count = int(temps.split()[1].rstrip(","))
    assert count == sum(1 for line in lines if line.endswith(" bytes") and
                        line.startswith("  ") and ": " in line)
    bounds = lines[lines.index("fusion boundaries:") + 1:]
    assert any("h is a matmul step (structural ops run between kernels)" in b for b in bounds)
    assert any("is a reduction, complete only after kernel" in b for b in bounds)
    np.testing.assert_allclose(f(np.ones((4, 5)), np.ones((5, 3)))[0],
                               sg.evaluate(outputs[0], {inputs[0]: np.ones((4, 5)),
                                                        inputs[1]: np.ones((5, 3))}))


def test_explain_shape_boundary_and_unknown_lengths():
    x = sg.placeholder("x", (None, 3))
    y = sg.placeholder("y", (3,))
    sx = sg.sin(x, name="sx")
    s = sg.reduce_sum(sx, axis=0, name="colsum")
    out = sg.cos(s * y, name="out")
    t = sg.exp(sg.transpose(sx, name="sxT"), name="t")
    report = sg.function([x, y], [out, t]).explain()
    assert "loop (?0, 3)" in report
    assert "colsum is a reduction, complete only after kernel 0's loop" in report
    assert "  colsum float64 (3,): 24 bytes" in report
    assert "  sx float64 (None, 3): ? bytes" in report
    assert "24 bytes + unknown lengths" in report


def test_notebook_displays():
    x = sg.placeholder("x", (3,))
    y = sg.sin(x) * x
    assert y._repr_latex_() == "$" + sg.latex(y) + "$"
    assert sg.matmul(sg.reshape(x, (1, 3)), sg.reshape(x, (3, 1)))._repr_latex_() is None
    f = sg.function([x], sg.reduce_sum(y))
    html = f._repr_html_()
    assert html.startswith("<pre>&lt;sg.function") and "kernel 0  loop (3,)" in html

    class Printer:
        text_ = ""

        def text(self, t):
            self.text_ += t

    p = Printer()
    f._repr_pretty_(p, False)
    assert p.text_ == repr(f) + "\n" + f.explain()


def test_compile_phases_are_logged(caplog):
    x = sg.placeholder("x", (3,))
    with caplog.at_level(logging.DEBUG, logger="symgrad"):
        sg.function([x], sg.reduce_sum(sg.cos(x) * 3.0))
    records = [r for r in caplog.records if r.name == "symgrad"]
    debug = [r.getMessage() for r in records if r.levelno == logging.DEBUG]
    phases = [m.split(": ", 1)[1].rsplit(" ", 2)[0] for m in debug]
    assert phases[:2] == ["fold", "plan"] and phases[-2] == "module (cache or build)"
    assert phases[-1] in ("numba compile", "numba load")   # sg.function compiles numba too
    info = [r.getMessage() for r in records if r.levelno == logging.INFO]
    assert len(info) == 1 and info[0].startswith("sg.function f(x) target='cpu' compiled in ")


def test_long_compile_shows_progress_on_a_terminal(monkeypatch):
    import io
    import time

    from symgrad.compile import progress

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    term = Terminal()
    monkeypatch.setattr(progress.sys, "stderr", term)
    monkeypatch.setattr(progress, "SHOW_AFTER", 0.05)
    phases = progress.Phases("f(x)")
    with phases.phase("fold"):
        time.sleep(0.3)
    with phases.phase("plan"):
        pass
    phases.done()
    lines = term.getvalue().splitlines()
    assert [line.split(": ")[2].split(" (")[0] for line in lines] == \
        ["fold...", "plan...", "done"]
    assert all(line.startswith("symgrad: compiling f(x): ") for line in lines)
    quiet = io.StringIO()                       # not a terminal: nothing is written
    monkeypatch.setattr(progress.sys, "stderr", quiet)
    phases = progress.Phases("f(x)")
    with phases.phase("fold"):
        time.sleep(0.2)
    phases.done()
    assert quiet.getvalue() == ""


def test_explain_lists_the_nest_rule_that_kept_a_pair_value_stored():
    """A pair-shaped value that is also an output stays stored (N x N bytes): the report's
    "loop nests" section names the rule; a fully nested pair sum has no such section."""
    P = sg.placeholder("P", shape=(40, 3))
    D = P[:, None, :] - P[None, :, :]
    S = sg.exp(-sg.reduce_sum(D * D, axis=-1), name="S")
    E = sg.reduce_sum(S)
    f = sg.function([P], [E, S] + sg.gradients(E, P))
    lines = f.explain().splitlines()
    section = [line for line in lines[lines.index("loop nests:") + 1:] if "visits" not in line]
    assert len(section) == 1 and section[0].startswith("  nest ")
    assert "stores 'S' (40, 40): it is read outside the nest" in section[0]
    nested = sg.function([P], [E] + sg.gradients(E, P)).explain().splitlines()
    # nothing stopped the nest; the sum is symmetric in the pair: it visits i0 <= i1 only
    assert nested[nested.index("loop nests:") + 1:] == [
        "  nest 1 visits only the (i0, i1) of (40, 40) with i0 <= i1: the sum is symmetric "
        "in the pair (docs/pair_sums.md), so each off-diagonal pair adds twice to its sums "
        "and into both rows"]
    args = [np.random.default_rng(0).uniform(-1, 1, (40, 3))]
    for got, want in zip(f(*args), sg.evaluate([E, S] + sg.gradients(E, P), {P: args[0]})):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_explain_lists_the_rule_that_kept_a_pair_kernel_flat():
    """A trailing axis longer than nest.INNER_MAX is not unrolled: the (N, N) kernel of the
    gradient stays flat and stores N x N values, and the report says which rule."""
    from symgrad.compile.nest import INNER_MAX
    P = sg.placeholder("P", shape=(60, INNER_MAX + 4))
    D = P[:, None, :] - P[None, :, :]
    E = sg.reduce_sum(sg.exp(-sg.reduce_sum(D * D, axis=-1)))
    f = sg.function([P], [E] + sg.gradients(E, P))
    lines = f.explain().splitlines()
    section = [line for line in lines[lines.index("loop nests:") + 1:] if "visits" not in line]
    assert section and all(line.startswith("  kernel ") for line in section)
    assert any("over shape (60, 60): it stores" in line and f"INNER_MAX={INNER_MAX}" in line
               for line in section)


def test_explain_lists_a_pair_kernel_of_unknown_length():
    """(None, 3) points: the (N, N) loop has two unknown lengths, the nest needs static
    shapes, and the report says so (and that a call specialises: compile/runtime/specialise)."""
    Q = sg.placeholder("Q", shape=(None, 3))
    D = Q[:, None, :] - Q[None, :, :]
    E = sg.reduce_sum(sg.exp(-sg.reduce_sum(D * D, axis=-1)))
    f = sg.function([Q], [E] + sg.gradients(E, Q))
    lines = f.explain().splitlines()
    section = [line for line in lines[lines.index("loop nests:") + 1:]
               if line.startswith("  kernel ")]
    assert section and all("the nest needs static shapes" in line for line in section)
    assert any("a variant compiled for its lengths" in line for line in lines)
    q = np.random.default_rng(1).uniform(-1, 1, (7, 3))
    for got, want in zip(f(q), sg.evaluate([E] + sg.gradients(E, Q), {Q: q})):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
