"""The four gradient engines that ``symgrad.testing.check_gradients`` compares.

Each runner returns an ``EngineResult``; an engine that raises is reported, not re-raised,
so one broken engine shows up as a row of the report instead of hiding the others.

>>> import numpy as np
>>> import symgrad as sg
>>> traced = Traced(lambda x: x * x, [np.array([1.0, 2.0])], ["x"], [0],
...                 np.random.default_rng(0))
>>> [g.tolist() for g in run_tape(traced).grads] == [g.tolist() for g in run_symbolic(traced).grads]
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np

ENGINES = ("evaluate", "function", "tape", "fd")
PAIRS = (("function", "evaluate"), ("tape", "evaluate"), ("evaluate", "fd"), ("tape", "fd"))


@dataclass
class EngineResult:
    """Gradients (one per source, None = unconnected) and forward values of one engine."""

    engine: str
    grads: Optional[list] = None
    forward: Optional[list] = None
    error: str = ""
    note: str = ""
    skipped: bool = False

    def connected(self, k: int) -> Optional[bool]:
        if self.skipped or self.error or self.grads is None:
            return None
        return self.grads[k] is not None


def _as_list(value: Any) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _describe(exc: BaseException) -> str:
    return f"raised {type(exc).__name__}: {exc}".splitlines()[0][:200]


class Traced:
    """``fn`` traced on placeholders (as given, and in float64 for finite differences)."""

    def __init__(self, fn: Callable, arrays: list, names: list, wrt: list,
                 rng: np.random.Generator):
        import symgrad as sg

        self.fn, self.arrays, self.names, self.wrt = fn, arrays, names, wrt
        self.placeholders = [sg.placeholder(n, a.shape, a.dtype) for n, a in zip(names, arrays)]
        self.ys = _as_list(fn(*self.placeholders))
        for k, y in enumerate(self.ys):
            if not isinstance(y, sg.Tensor):
                raise TypeError(
                    f"sg.testing.check_gradients: fn must build its result from symgrad ops on "
                    f"its arguments and return a Tensor (or a list of them); result {k} is "
                    f"{type(y).__name__} {y!r:.40}. Write e.g. lambda p: sg.reduce_sum(p * p)")
        self.cotangents = [self._cotangent(y, rng) for y in self.ys]
        self.arrays64 = [a.astype(np.float64) if a.dtype.kind == "f" else a for a in arrays]
        self.placeholders64 = [sg.placeholder(n, a.shape, a.dtype)
                               for n, a in zip(names, self.arrays64)]
        ys64 = _as_list(fn(*self.placeholders64))
        terms = [sg.reduce_sum(sg.cast(y, "float64") * c.astype(np.float64))
                 for y, c in zip(ys64, self.cotangents) if c is not None]
        self.loss64 = sum(terms[1:], terms[0]) if terms else None

    @staticmethod
    def _cotangent(y: Any, rng: np.random.Generator) -> Optional[np.ndarray]:
        if y.dtype.kind != "f":
            return None
        if y.shape == ():
            return np.ones((), y.dtype)
        return rng.standard_normal(y.shape).astype(y.dtype)

    @property
    def sources(self) -> list:
        return [self.placeholders[k] for k in self.wrt]

    def feed(self) -> dict:
        return dict(zip(self.placeholders, self.arrays))

    def loss64_at(self, arrays64: list) -> float:
        import symgrad as sg

        if self.loss64 is None:
            return 0.0
        return float(sg.evaluate(self.loss64, dict(zip(self.placeholders64, arrays64))))

    def directional_derivative(self, tangents: list, eps: float) -> float:
        """``<c, J t>`` by central differences in float64."""
        plus, minus = list(self.arrays64), list(self.arrays64)
        for k, t in zip(self.wrt, tangents):
            plus[k] = self.arrays64[k] + eps * t
            minus[k] = self.arrays64[k] - eps * t
        return (self.loss64_at(plus) - self.loss64_at(minus)) / (2.0 * eps)


def run_symbolic(traced: Traced) -> EngineResult:
    """``sg.gradients`` evaluated by ``sg.evaluate``."""
    import symgrad as sg

    try:
        grads = sg.gradients(traced.ys, traced.sources, grad_ys=_grad_ys(traced))
        values = sg.evaluate(list(grads) + traced.ys, traced.feed())
    except Exception as exc:  # noqa: BLE001 - reported as a row of the report
        return EngineResult("evaluate", error=_describe(exc))
    n = len(traced.sources)
    return EngineResult("evaluate", grads=values[:n], forward=values[n:])


def _grad_ys(traced: Traced) -> list:
    return [c for c in traced.cotangents]


def run_function(traced: Traced, target: str = "cpu") -> EngineResult:
    """``sg.gradients`` compiled by ``sg.function`` (skipped when it is not available)."""
    import symgrad as sg

    compile_fn = getattr(sg, "function", None)
    if compile_fn is None:
        return EngineResult("function", skipped=True, note="sg.function is not available; "
                            "the symbolic gradients were checked with sg.evaluate only")
    try:
        grads = sg.gradients(traced.ys, traced.sources, grad_ys=_grad_ys(traced))
        compiled = compile_fn(traced.placeholders, list(grads) + traced.ys, target=target)
        values = compiled(*traced.arrays)
    except NotImplementedError as exc:
        return EngineResult("function", skipped=True, note=f"sg.function(target={target!r}) "
                            f"is not implemented ({exc}); checked with sg.evaluate only")
    except Exception as exc:  # noqa: BLE001
        return EngineResult("function", error=_describe(exc))
    values = _as_list(values)
    n = len(traced.sources)
    return EngineResult("function", grads=values[:n], forward=values[n:])


def run_tape(traced: Traced) -> EngineResult:
    """The eager ``sg.GradientTape`` on Variables holding the same arrays."""
    import symgrad as sg

    try:
        variables = [sg.Variable(a, name=n) for a, n in zip(traced.arrays, traced.names)]
        with sg.GradientTape() as tape:
            ys = _as_list(traced.fn(*variables))
        grads = tape.gradient(ys, [variables[k] for k in traced.wrt],
                              output_gradients=_grad_ys(traced))
    except Exception as exc:  # noqa: BLE001
        return EngineResult("tape", error=_describe(exc))
    return EngineResult("tape", grads=[None if g is None else np.asarray(g) for g in grads],
                        forward=[np.asarray(y) for y in ys])


def fd_gradients(traced: Traced, eps: float) -> EngineResult:
    """Central finite differences of ``sum_k <c_k, y_k>`` in float64, element by element."""
    try:
        grads = []
        for k in traced.wrt:
            base = traced.arrays64[k]
            grad = np.zeros(base.shape)
            for index in np.ndindex(*base.shape):
                values = []
                for step in (eps, -eps):
                    moved = base.copy()
                    moved[index] += step
                    arrays = list(traced.arrays64)
                    arrays[k] = moved
                    values.append(traced.loss64_at(arrays))
                grad[index] = (values[0] - values[1]) / (2.0 * eps)
            grads.append(grad)
    except Exception as exc:  # noqa: BLE001
        return EngineResult("fd", error=_describe(exc))
    return EngineResult("fd", grads=grads)
