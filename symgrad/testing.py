"""Gradient checks anyone can run: the three-way comparison and the dot-product test.

``check_gradients`` traces ``fn`` twice, once as a graph (placeholders) and once eagerly
under a ``GradientTape``, and compares four answers for the gradient of
``sum_k <c_k, fn(...)_k>`` (``c_k`` a fixed random cotangent, ones for a scalar):
``sg.gradients`` run by ``sg.evaluate``, the same graph compiled by ``sg.function``
(when the compiler is available), the tape, and central finite differences in float64.

>>> import numpy as np
>>> import symgrad as sg
>>> report = check_gradients(lambda x, y: sg.reduce_sum(sg.sin(x) * y),
...                          np.array([0.1, 0.2]), np.array([1.0, 2.0]))
>>> report.ok
True
>>> lhs, rhs = check_vjp(lambda x: sg.tanh(x) * x, np.array([0.3, -1.2, 2.0]))
>>> bool(np.isclose(lhs, rhs))
True
"""

from __future__ import annotations

import inspect
import platform
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import numpy as np

from .testing_kinks import find_kinks
from .testing_engines import (ENGINES, PAIRS, EngineResult, Traced, fd_gradients, run_function,
                                   run_symbolic, run_tape)

__all__ = ["GradientReport", "Comparison", "check_gradients", "check_vjp", "compare_arrays"]


@dataclass
class Comparison:
    """One pair of engines on one source (or on the forward values)."""

    source: str
    pair: str
    max_abs: float
    max_rel: float
    ok: bool
    note: str = ""
    kink: bool = False  # a finite-difference row at an input where an op has a kink


@dataclass
class GradientReport:
    """The result of ``check_gradients``: ``print(report)``, ``report.ok``, ``assert_ok()``."""

    fn_name: str
    inputs: dict
    sources: list
    rtol: float
    atol: float
    eps: float
    rows: list = field(default_factory=list)
    connected: dict = field(default_factory=dict)  # source -> {engine: True/False/None}
    notes: list = field(default_factory=list)
    kinks: list = field(default_factory=list)  # one line per op with an input at a kink

    @property
    def disagreements(self) -> list:
        return [row for row in self.rows if not row.ok]

    @property
    def ok(self) -> bool:
        return not self.disagreements

    def assert_ok(self) -> "GradientReport":
        """Raise AssertionError listing every disagreement (with the full report)."""
        if not self.ok:
            lines = [f"  {r.source}: {r.pair}: max abs {r.max_abs:.3g}, max rel "
                     f"{r.max_rel:.3g}; {r.note}".rstrip("; ") for r in self.disagreements]
            count = len(lines)
            lines += [f"  kink: {k}" for k in self.kinks]
            raise AssertionError(f"symgrad gradient check of {self.fn_name} failed: "
                                 f"{count} disagreement(s)\n" + "\n".join(lines)
                                 + "\n\n" + str(self))
        return self

    def __str__(self) -> str:
        import symgrad

        out = [f"symgrad {symgrad.__version__} gradient check of {self.fn_name} "
               f"(numpy {np.__version__}, Python {platform.python_version()})",
               f"tolerances: rtol={self.rtol:g} atol={self.atol:g}; finite differences: "
               f"central, eps={self.eps:g}, float64"]
        out += [f"note: {n}" for n in self.notes]
        out += [f"kink: {k}" for k in self.kinks]
        if any(r.kink for r in self.rows):
            out.append("kink: finite differences straddle a non-differentiable point, so they "
                       "cannot match a one-sided rule there; symgrad follows TensorFlow's "
                       "convention (above)")
        out.append("inputs:")
        for name, array in self.inputs.items():
            text = np.array2string(np.asarray(array), precision=17, threshold=50,
                                   separator=", ").replace("\n", " ")
            out.append(f"  {name}: {array.dtype.name}{tuple(array.shape)} = {text}")
        out.append("")
        header = f"{'source':<12} {'pair':<22} {'max abs err':>12} {'max rel err':>12}  status"
        out += [header, "-" * len(header)]
        for r in self.rows:
            status = "ok" if r.ok else "MISMATCH at a kink" if r.kink else "MISMATCH"
            note = f"  ({r.note})" if r.note else ""
            out.append(f"{r.source:<12} {r.pair:<22} {r.max_abs:>12.3g} {r.max_rel:>12.3g}"
                       f"  {status}{note}")
        out.append("")
        out.append("connected per engine (no = the gradient is None):")
        for source, flags in self.connected.items():
            parts = [f"{e}={'n/a' if c is None else ('yes' if c else 'no')}"
                     for e, c in flags.items()]
            out.append(f"  {source:<10} " + "  ".join(parts))
        verdict = "OK" if self.ok else f"FAILED: {len(self.disagreements)} disagreement(s)"
        out.append(f"result: {verdict} ({len(self.rows)} comparisons)")
        return "\n".join(out)

    __repr__ = __str__


def compare_arrays(a: Optional[np.ndarray], b: Optional[np.ndarray], rtol: float,
                   atol: float) -> tuple:
    """``(max_abs, max_rel, ok, note)``; nan equals nan, inf must match with its sign."""
    if a is None or b is None:
        if a is None and b is None:
            return 0.0, 0.0, True, "both unconnected"
        return float("nan"), float("nan"), False, "one engine says unconnected (None)"
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape:
        return float("nan"), float("nan"), False, f"shapes differ: {a.shape} vs {b.shape}"
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    with np.errstate(all="ignore"):
        diff = np.where(same, 0.0, np.abs(a - b))
        scale = np.maximum(np.abs(a), np.abs(b))
        rel = np.where(same, 0.0, diff / np.where(scale > 0, scale, 1.0))
        ok = bool(np.all(same | (np.isfinite(diff) & (diff <= atol + rtol * np.abs(b)))))
    max_abs = float(np.max(diff)) if diff.size else 0.0
    max_rel = float(np.max(rel)) if rel.size else 0.0
    if ok:
        return max_abs, max_rel, True, ""
    bad = np.where(np.isfinite(diff), diff, np.inf)
    worst = np.unravel_index(int(np.argmax(bad)), bad.shape) if bad.ndim else ()
    where = tuple(int(i) for i in worst)
    return max_abs, max_rel, False, f"worst at {where}: {a[worst]:.8g} vs {b[worst]:.8g}"


def _names(fn: Callable, count: int) -> list:
    try:
        params = [p.name for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return params[:count] + [f"x{k}" for k in range(len(params), count)]


def _default_tolerances(arrays: list, wrt: list) -> tuple:
    single = any(arrays[k].dtype == np.float32 for k in wrt)
    return (2e-3, 1e-4) if single else (1e-5, 1e-7)


def check_gradients(fn: Callable, *arrays: Any, wrt: Optional[Sequence[int]] = None,
                    rtol: Optional[float] = None, atol: Optional[float] = None,
                    eps: float = 1e-6, raise_on_error: bool = False, seed: int = 0,
                    target: str = "cpu", compiled: bool = True) -> GradientReport:
    """Compare symbolic (``sg.evaluate`` and ``sg.function``), tape and finite differences.

    ``fn(*tensors)`` builds its result from symgrad ops and returns a tensor or a list of
    them; ``wrt`` lists the positions of the inputs to differentiate (default: every
    floating input). ``compiled=False`` skips ``sg.function`` (no numba compile, fast).
    Returns a ``GradientReport``; ``raise_on_error=True`` (or
    ``report.assert_ok()``) raises AssertionError listing the disagreements.
    """
    arrays = [np.asarray(a) for a in arrays]
    wrt = [k for k, a in enumerate(arrays) if a.dtype.kind == "f"] if wrt is None else list(wrt)
    names = _names(fn, len(arrays))
    default_rtol, default_atol = _default_tolerances(arrays, wrt)
    rtol = default_rtol if rtol is None else rtol
    atol = default_atol if atol is None else atol
    traced = Traced(fn, arrays, names, wrt, np.random.default_rng(seed))
    report = GradientReport(getattr(fn, "__name__", "fn"), dict(zip(names, arrays)),
                            [names[k] for k in wrt], rtol, atol, eps)
    function = (run_function(traced, target) if compiled else
                EngineResult("function", skipped=True, note="sg.function skipped (compiled=False)"))
    results = {"evaluate": run_symbolic(traced), "function": function,
               "tape": run_tape(traced), "fd": fd_gradients(traced, eps)}
    for engine in ENGINES:
        if results[engine].note:
            report.notes.append(results[engine].note)
    _forward_rows(report, results, rtol, atol)
    for k, source in enumerate(report.sources):
        report.connected[source] = {e: results[e].connected(k) for e in ENGINES if e != "fd"}
        for first, second in PAIRS:
            _add_row(report, source, k, results[first], results[second], rtol, atol)
    _mark_kinks(report, traced, eps)
    if raise_on_error:
        report.assert_ok()
    return report


def _mark_kinks(report: GradientReport, traced: Traced, eps: float) -> None:
    """Name the ops whose inputs sit at a kink; mark the finite-difference rows."""
    if traced.loss64 is None:
        return
    try:
        report.kinks = find_kinks([traced.loss64], dict(zip(traced.placeholders64,
                                                            traced.arrays64)), 4.0 * eps)
    except Exception:  # noqa: BLE001 - the engines' own rows already report a failing graph
        return
    if not report.kinks:
        return
    for row in report.rows:
        if row.pair.endswith("vs fd") and not row.ok:
            row.kink = True
            row.note = (row.note + "; " if row.note else "") + \
                "the input sits at a non-differentiable point (see kink lines)"


def _forward_rows(report: GradientReport, results: dict, rtol: float, atol: float) -> None:
    reference = results["evaluate"]
    for engine in ("function", "tape"):
        other = results[engine]
        if reference.forward is None or other.forward is None:
            continue
        for j, (a, b) in enumerate(zip(other.forward, reference.forward)):
            max_abs, max_rel, ok, note = compare_arrays(a, b, rtol, atol)
            report.rows.append(Comparison(f"forward[{j}]", f"{engine} vs evaluate",
                                          max_abs, max_rel, ok, note))


def _add_row(report: GradientReport, source: str, k: int, first: Any, second: Any,
             rtol: float, atol: float) -> None:
    pair = f"{first.engine} vs {second.engine}"
    if first.skipped or second.skipped:
        return
    if first.error or second.error:
        error = first.error or second.error
        report.rows.append(Comparison(source, pair, float("nan"), float("nan"), False, error))
        return
    a, b = first.grads[k], second.grads[k]
    if second.engine == "fd" and a is None:  # FD cannot tell None from zeros
        a = np.zeros_like(b)
    max_abs, max_rel, ok, note = compare_arrays(a, b, rtol, atol)
    report.rows.append(Comparison(source, pair, max_abs, max_rel, ok, note))


def check_vjp(fn: Callable, *arrays: Any, wrt: Optional[Sequence[int]] = None,
              engine: str = "tape", eps: float = 1e-6, rtol: float = 1e-5,
              atol: float = 1e-8, seed: int = 0) -> tuple:
    """Dot-product test ``<c, J t> == <J^T c, t>`` for random t, c (JAX's check_vjp).

    ``J t`` comes from central differences in float64, ``J^T c`` from ``engine``
    ('tape' or 'symbolic'). Returns ``(lhs, rhs)``; raises AssertionError when they differ.
    """
    arrays = [np.asarray(a, np.float64) if np.asarray(a).dtype.kind == "f" else np.asarray(a)
              for a in arrays]
    wrt = [k for k, a in enumerate(arrays) if a.dtype.kind == "f"] if wrt is None else list(wrt)
    rng = np.random.default_rng(seed)
    traced = Traced(fn, arrays, _names(fn, len(arrays)), wrt, rng)
    tangents = [rng.standard_normal(arrays[k].shape) for k in wrt]
    lhs = traced.directional_derivative(tangents, eps)
    if engine not in ("tape", "symbolic"):
        raise ValueError(f"check_vjp: engine must be 'tape' or 'symbolic', got {engine!r}")
    result = run_tape(traced) if engine == "tape" else run_symbolic(traced)
    if result.error:
        raise AssertionError(f"check_vjp: the {engine} engine failed: {result.error}")
    rhs = sum(float(np.sum(g * t)) for g, t in zip(result.grads, tangents) if g is not None)
    if not np.isclose(lhs, rhs, rtol=rtol, atol=atol):
        raise AssertionError(f"check_vjp ({engine}): <c, J t> = {lhs!r} (finite differences) "
                             f"but <J^T c, t> = {rhs!r} (difference {abs(lhs - rhs):.3g})")
    return lhs, rhs
