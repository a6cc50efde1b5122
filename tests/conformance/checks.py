"""Checking one evaluation path of a case against its expected outcome.

Failures say which case and path, which x differs, expected vs actual, and whether
the forward ys agree with ``expected.forward`` (a diagnostic aid only).
"""

from __future__ import annotations

import builtins
from typing import Any, Callable, Sequence

import pytest

from tests.conformance.arrays import compare, describe
from tests.conformance.loader import describe_ref, tolerances


def error_class(name: str) -> type[BaseException]:
    """The builtin exception class named by an expected error outcome."""
    cls = getattr(builtins, name, None)
    if not (isinstance(cls, type) and issubclass(cls, BaseException)):
        raise ValueError(f"conformance harness: {name!r} is not a builtin exception class")
    return cls


def is_expected_error(exc: BaseException, cls: type[BaseException]) -> bool:
    """``isinstance`` except that KeyError/IndexError do not count as LookupError."""
    if cls is LookupError and isinstance(exc, (KeyError, IndexError)):
        return False
    return isinstance(exc, cls)


def expect_error(case: dict, expected: dict, action: Callable[[], Any], path: str) -> None:
    """Run ``action`` and fail unless it raises the class that ``expected`` names."""
    __tracebackhide__ = True  # pytest: show the message, not this helper
    cls = error_class(expected["error"])
    where = f"[{path}] case {case['name']}: expected {cls.__name__} (phase {expected['phase']})"
    try:
        result = action()
    except Exception as exc:  # noqa: BLE001 - any other class is a failure, reported
        if is_expected_error(exc, cls):
            return
        pytest.fail(f"{where}, got {type(exc).__name__}: {exc}{_contract(expected)}")
    pytest.fail(f"{where}, but nothing was raised; the call returned "
                f"{_describe_result(result)}{_contract(expected)}")


def check_values(
    case: dict,
    expected: dict,
    actual: Sequence[Any],
    forward: Callable[[], Sequence[Any]],
    path: str,
) -> None:
    """Compare ``actual`` (one value per x) with ``expected["values"]``; fail on a difference.

    ``forward`` is called only when something differs; it returns the ys' values.
    """
    __tracebackhide__ = True  # pytest: show the message, not this helper
    rtol, atol = tolerances(case)
    wanted = expected["values"]
    xs = case["xs"] if isinstance(case["xs"], list) else [case["xs"]]
    problems = []
    if len(actual) != len(wanted):
        problems.append(f"got {len(actual)} gradients for {len(wanted)} xs")
    for i, (want, got) in enumerate(zip(wanted, actual)):
        diff = compare(want, got, rtol, atol)
        if diff is not None:
            problems.append(f"xs[{i}] {describe_ref(xs[i])}: {diff}\n"
                            f"      expected {describe(want)}\n      actual   {describe(got)}")
    if problems:
        lines = [f"[{path}] case {case['name']}: gradients differ from expected",
                 f"  description: {case.get('description', '')}"]
        lines += [f"  {problem}" for problem in problems]
        lines.append(f"  forward: {forward_agreement(case, expected, forward)}")
        pytest.fail("\n".join(lines) + _contract(expected))


def forward_agreement(case: dict, expected: dict, forward: Callable[[], Sequence[Any]]) -> str:
    """Whether the ys computed by this path agree with ``expected.forward``."""
    wanted = expected.get("forward")
    if wanted is None:
        return "the case has no expected.forward"
    try:
        got = list(forward())
    except Exception as exc:  # noqa: BLE001 - a diagnostic must not hide the real failure
        return f"could not compute the ys ({type(exc).__name__}: {exc})"
    if len(got) != len(wanted):
        return f"{len(got)} ys computed, expected.forward has {len(wanted)}"
    rtol, atol = tolerances(case)
    ys = case["ys"] if isinstance(case["ys"], list) else [case["ys"]]
    diffs = []
    for i, (want, value) in enumerate(zip(wanted, got)):
        diff = compare(want, value, rtol, atol)
        if diff is not None:
            diffs.append(f"ys[{i}] {describe_ref(ys[i])}: {diff}; expected {describe(want)}, "
                         f"actual {describe(value)}")
    if not diffs:
        return "the ys agree with expected.forward"
    return "the ys DIFFER from expected.forward:\n    " + "\n    ".join(diffs)


def _contract(expected: dict) -> str:
    """The case's contract note, when it states one."""
    return f"\n  contract: {expected['contract']}" if expected.get("contract") else ""


def _describe_result(result: Any) -> str:
    """Short description of what a call returned instead of raising."""
    if isinstance(result, (list, tuple)):
        return f"{type(result).__name__} of {len(result)}: " + ", ".join(
            type(item).__name__ for item in result)
    return type(result).__name__
