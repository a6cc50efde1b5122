"""TensorFlow conformance: ``sg.gradients`` evaluated by ``sg.evaluate`` and ``sg.function``.

One test per case (id = case name) for the reference interpreter, and one per case
and compiled target, marked ``compiled``. The rules are those of
``tests/conformance/README.md``; the harness lives in ``tests/conformance/``.
"""

from __future__ import annotations

import os
from typing import Any, Callable

import pytest

from tests.conformance.checks import check_values, expect_error
from tests.conformance.loader import (
    BuiltCase, build_case, case_params, import_symgrad, load_cases,
)

CASES = load_cases()
CPU_TARGETS = ("cpu", "parallel")


def _runs_compiled(case: dict) -> bool:
    """Cases with something to evaluate: values, or an error raised while running."""
    expected = case["expected"]
    return expected["outcome"] == "values" or expected.get("phase") == "run"


@pytest.fixture(scope="module")
def sg() -> Any:
    """The symgrad module (imported lazily so that collection works without it)."""
    return import_symgrad()


def _gradients(built: BuiltCase, path: str) -> list[Any]:
    """The top-level gradients call, which must return a list (API.md)."""
    grads = built.call_gradients()
    if not isinstance(grads, list):
        pytest.fail(f"[{path}] case {built.name}: sg.gradients returned "
                    f"{type(grads).__name__}, not a list")
    return grads


def _error_case(sg: Any, case: dict, run: Callable[[BuiltCase, list[Any]], Any],
                path: str) -> None:
    """Check an error outcome at its phase; ``run`` evaluates the gradients (phase run)."""
    expected = case["expected"]
    phase = expected["phase"]
    if phase == "graph":
        expect_error(case, expected, lambda: build_case(case, sg), path)
        return
    built = build_case(case, sg)
    if phase == "gradients":
        expect_error(case, expected, built.call_gradients, path)
        return
    grads = _gradients(built, path)
    expect_error(case, expected, lambda: run(built, grads), path)


# --- sg.evaluate -----------------------------------------------------------------------------

@pytest.mark.parametrize("case", case_params(CASES))
def test_evaluate(case: dict, sg: Any) -> None:
    """``sg.evaluate(sg.gradients(...), feeds)`` gives the case's expected outcome."""
    def evaluate(built: BuiltCase, outputs: list[Any]) -> list[Any]:
        return sg.evaluate(outputs, built.feed_dict)

    if case["expected"]["outcome"] == "error":
        _error_case(sg, case, evaluate, "evaluate")
        return
    built = build_case(case, sg)
    grads = _gradients(built, "evaluate")
    values = evaluate(built, grads)
    check_values(case, case["expected"], values,
                 lambda: evaluate(built, built.ys_list), "evaluate")


# --- sg.function -----------------------------------------------------------------------------

def _cuda_available() -> bool:
    """True under the CUDA simulator (NUMBA_ENABLE_CUDASIM=1) or with a usable GPU."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return True
    try:
        from numba import cuda
        return bool(cuda.is_available())
    except Exception:  # noqa: BLE001 - no CUDA at all
        return False


def _compiled(sg: Any, target: str) -> Callable[[BuiltCase, list[Any]], Any]:
    """``(built, outputs) -> f(*feeds)`` with ``f = sg.function(placeholders, outputs)``."""
    function = getattr(sg, "function", None)
    if function is None:
        pytest.skip("sg.function is not available yet")

    def run(built: BuiltCase, outputs: list[Any]) -> Any:
        return function(built.placeholders, outputs, target=target)(*built.feeds)

    return run


def _skipping_unimplemented(run: Callable[[BuiltCase, list[Any]], Any],
                            target: str) -> Callable[[BuiltCase, list[Any]], Any]:
    """``run``, skipping the test when the target raises NotImplementedError."""
    def guarded(built: BuiltCase, outputs: list[Any]) -> Any:
        try:
            return run(built, outputs)
        except NotImplementedError as exc:
            pytest.skip(f"sg.function(target={target!r}) is not implemented: {exc}")

    return guarded


def _target_params() -> list[Any]:
    """The compiled targets; cuda runs only under the simulator or on a GPU."""
    params = [pytest.param(target, id=target) for target in CPU_TARGETS]
    params.append(pytest.param("cuda", id="cuda", marks=pytest.mark.cuda))
    return params


@pytest.mark.compiled
@pytest.mark.parametrize("target", _target_params())
@pytest.mark.parametrize("case", case_params([c for c in CASES if _runs_compiled(c)]))
def test_function(case: dict, target: str, sg: Any) -> None:
    """``sg.function(placeholders_in_node_order, grads, target=...)(*feeds)`` agrees too."""
    if target == "cuda" and not _cuda_available():
        pytest.skip("cuda target: no GPU and NUMBA_ENABLE_CUDASIM is not 1")
    raw = _compiled(sg, target)
    run = _skipping_unimplemented(raw, target)
    path = f"function:{target}"
    if case["expected"]["outcome"] == "error":
        _error_case(sg, case, run, path)
        return
    built = build_case(case, sg)
    grads = _gradients(built, path)
    values = run(built, grads)
    if not isinstance(values, list):
        pytest.fail(f"[{path}] case {case['name']}: the compiled function returned "
                    f"{type(values).__name__}, not a list, for a list of outputs")
    check_values(case, case["expected"], values, lambda: raw(built, built.ys_list), path)
