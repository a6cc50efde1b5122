"""The runnable examples of docs/api.md, docs/security.md, docs/jacobians.md,
docs/sparsity.md, docs/assembly.md and README.md's Jacobians section run and their asserts hold;
the repository documents itself (no reference to files outside it)."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ["docs/api.md", "docs/security.md", "docs/jacobians.md", "docs/sparsity.md",
        "docs/linalg.md", "docs/assembly.md"]
FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def python_blocks(relative: str) -> list:
    """The ```python blocks of a markdown file, with the line each starts on."""
    text = (ROOT / relative).read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start()) + 2, m.group(1)) for m in FENCE.finditer(text)]


@pytest.mark.parametrize("relative", DOCS)
def test_examples_run(relative, monkeypatch):
    blocks = python_blocks(relative)
    assert blocks, f"{relative} has no ```python example"
    namespace: dict = {"__name__": "__docs__"}
    for line, code in blocks:            # one namespace per file: later blocks build on earlier
        with monkeypatch.context(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                exec(compile(code, f"{relative}:{line}", "exec"), namespace)
            except Exception as exc:
                raise AssertionError(f"{relative}, example at line {line}: "
                                     f"{type(exc).__name__}: {exc}") from exc


def test_readme_jacobians_section_runs():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Jacobians, Hessians, forward mode, sparsity\n", 1)[1]
    section = section.split("\n## ", 1)[0]
    blocks = [m.group(1) for m in FENCE.finditer(section)]
    assert blocks, "README.md's Jacobians section has no ```python example"
    namespace: dict = {"__name__": "__docs__"}
    for code in blocks:
        exec(compile(code, "README.md (Jacobians, Hessians, forward mode, sparsity)", "exec"),
             namespace)
    assert namespace["J"].nnz == 98


def test_fence_parser_finds_every_block():
    text = "a\n```python\nx = 1\n```\n```text\nno\n```\n```python\ny = 2\n```\n"
    found = [m.group(1) for m in FENCE.finditer(text)]
    assert found == ["x = 1\n", "y = 2\n"]


def test_no_reference_outside_the_repository():
    pattern = re.compile(r"\.\./shared|/work/shared")
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
