"""Every ```python block of every docs/*.md page and of README.md runs and its asserts hold
(one namespace per page: later blocks build on earlier ones), except the few marked
```python no-run <reason>; every code fence is balanced and names its language; the
repository documents itself (no reference to files outside it)."""

from __future__ import annotations

import doctest
import importlib.util
import logging
import re
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")) + ["README.md"]
FENCE = re.compile(r"^```python([^\n]*)\n(.*?)^```", re.S | re.M)
NO_RUN = re.compile(r"^\s*no-run\b\s*(.*)$")
EXTRA_IMPORT = re.compile(r"^import (dask|matplotlib)\b", re.M)
"""A block that imports an optional extra is skipped (and said so) where it is missing."""
ELSEWHERE = {"docs/gradients.md": "tests/test_docs_gradients.py"}
"""Pages whose blocks another test runs (as a doctest file), not run twice."""
MAX_NO_RUN = 6


def python_blocks(relative: str, runnable: bool = True) -> list:
    """The ```python blocks of a markdown file, with the line each starts on: those that
    run (``runnable``) or those marked ``no-run`` (then ``(line, reason)``)."""
    text = (ROOT / relative).read_text(encoding="utf-8")
    found = []
    for m in FENCE.finditer(text):
        line = text.count("\n", 0, m.start()) + 2
        skip = NO_RUN.match(m.group(1))
        if runnable and skip is None:
            found.append((line, m.group(2)))
        elif not runnable and skip is not None:
            found.append((line, skip.group(1).strip()))
    return found


def _pages_with_blocks() -> list:
    return [page for page in PAGES if python_blocks(page) and page not in ELSEWHERE]


@pytest.mark.parametrize("relative", _pages_with_blocks())
def test_examples_run(relative, monkeypatch):
    namespace: dict = {"__name__": "__docs__"}
    skipped = []
    logger, root = logging.getLogger("symgrad"), logging.getLogger()
    monkeypatch.setattr(logger, "level", logger.level)         # a page may turn on logging
    monkeypatch.setattr(root, "handlers", list(root.handlers))
    for line, code in python_blocks(relative):   # one namespace per file
        extra = EXTRA_IMPORT.search(code)
        if extra and importlib.util.find_spec(extra.group(1)) is None:
            skipped.append(f"line {line} needs {extra.group(1)}")
            continue
        with monkeypatch.context(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if code.lstrip().startswith(">>>"):      # a session: its output is checked too
                run_session(code, namespace, f"{relative}:{line}")
                continue
            try:
                exec(compile(code, f"{relative}:{line}", "exec"), namespace)
            except Exception as exc:
                raise AssertionError(f"{relative}, example at line {line}: "
                                     f"{type(exc).__name__}: {exc}") from exc
    if skipped:
        pytest.skip(f"{relative}: the other blocks ran; {', '.join(skipped)} (not installed)")


def run_session(code: str, namespace: dict, where: str) -> None:
    """A ``>>>`` block as a doctest (ELLIPSIS, NORMALIZE_WHITESPACE) in ``namespace``."""
    test = doctest.DocTestParser().get_doctest(code, namespace, where, where, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report: list = []
    runner.run(test, out=report.append, clear_globs=False)
    assert runner.failures == 0, f"{where}:\n" + "".join(report)


def test_every_page_with_python_is_run():
    assert {"docs/control_flow.md", "docs/from_sympy.md", "docs/api.md",
            "README.md"} <= set(_pages_with_blocks())
    for page, test in ELSEWHERE.items():
        assert Path(page).name in (ROOT / test).read_text(encoding="utf-8"), (page, test)


def test_no_run_blocks_are_few_and_say_why():
    marked = {f"{page}:{line}": reason for page in PAGES
              for line, reason in python_blocks(page, runnable=False)}
    print("blocks not run:", *(f"{k}: {v}" for k, v in marked.items()), sep="\n  ")
    assert all(marked.values()), f"a no-run block without its reason: {marked}"
    assert len(marked) <= MAX_NO_RUN, f"too many blocks not run: {marked}"


def fence_problems(text: str) -> list:
    """Unbalanced fences: an opening fence must name its language (```python, ```text), a
    closing one is bare, and none is left open (a stray ``` after a closed block opens a
    bare one, which turns the prose below it into code)."""
    problems, opened = [], None
    for number, line in enumerate(text.splitlines(), 1):
        m = re.match(r"^\s*```(.*)$", line)
        if m is None:
            continue
        info = m.group(1).strip()
        if opened is None:
            opened = number
            if not info:
                problems.append(f"line {number}: a fence opens without a language")
        else:
            if info:
                problems.append(f"line {number}: ```{info} inside the block of line {opened}")
            opened = None
    if opened is not None:
        problems.append(f"line {opened}: the block never closes")
    return problems


@pytest.mark.parametrize("relative", PAGES)
def test_fences_are_balanced(relative):
    problems = fence_problems((ROOT / relative).read_text(encoding="utf-8"))
    assert not problems, f"{relative}: " + "; ".join(problems)


def test_fence_checker_catches_a_stray_fence():
    good = "a\n```python\nx = 1\n```\ntext\n```text\nout\n```\n"
    assert fence_problems(good) == []
    stray = "```python\nx = 1\n```\n```\n\n## Section\n- item\n```\n"
    assert fence_problems(stray) == ["line 4: a fence opens without a language"]
    assert fence_problems("```python\nx\n") == ["line 1: the block never closes"]


def test_fence_parser_finds_every_block():
    text = "a\n```python\nx = 1\n```\n```text\nno\n```\n```python\ny = 2\n```\n"
    found = [m.group(2) for m in FENCE.finditer(text)]
    assert found == ["x = 1\n", "y = 2\n"]
    marked = "```python no-run needs a GPU\nz = 3\n```\n"
    assert NO_RUN.match(FENCE.search(marked).group(1)).group(1) == "needs a GPU"


def test_no_reference_outside_the_repository():
    pattern = re.compile(r"\.\./shared|/work/shared|/shared API")
    offenders = []
    paths = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    for folder in ("symgrad", "tests", "examples", "benchmarks"):
        paths += sorted((ROOT / folder).rglob("*.py")) if (ROOT / folder).is_dir() else []
    for path in paths:
        if path == Path(__file__).resolve():
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pattern.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not offenders, "references outside the repository:\n" + "\n".join(offenders)


# written by other branches of this round; remove a name once its file is on main
PENDING = {"compiler.md"}


def test_docs_api_links_resolve():
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    links = set(re.findall(r"\]\(([^)#]+\.md)(?:#[^)]*)?\)", text))
    assert {"security.md", "vecmath.md", "ops_structural.md", "ops_elementwise.md",
            "gradients.md", "dask.md"} <= links
    missing = sorted(link for link in links - PENDING if not (ROOT / "docs" / link).exists())
    assert not missing, f"docs/api.md links to missing files: {missing}"
