"""The shape of symgrad/compile (issue 8): no op is matched by its name string, and the
modules import each other without cycles (in-function imports included)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import symgrad.compile as compile_package
from symgrad.ops.registry import REGISTRY

COMPILE = Path(compile_package.__file__).parent


def _modules() -> dict:
    return {p.name: p.read_text() for p in sorted(COMPILE.glob("*.py"))}


def test_no_op_is_matched_by_name():
    names = "|".join(sorted(map(re.escape, REGISTRY), key=len, reverse=True))
    pattern = re.compile(
        r"op\.name\s*(==|!=|\bin\b|\bnot in\b)|"
        rf"\bname\s*(==|!=)\s*[\"']({names})[\"']|[\"']({names})[\"']\s*(==|!=)")
    found = []
    for name, text in _modules().items():
        for n, line in enumerate(text.splitlines(), 1):
            code = line.split("#", 1)[0]
            if pattern.search(code):
                found.append(f"{name}:{n}: {line.strip()}")
    assert found == []


def _imports(text: str) -> set:
    """Sibling modules of symgrad/compile that ``text`` imports, anywhere in the file."""
    out = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                out.add(node.module.split(".")[0])
            else:
                out |= {a.name for a in node.names}
    return out


def _cycles(graph: dict) -> list:
    cycles, state = [], {}

    def visit(m, path):
        state[m] = 1
        for n in sorted(graph.get(m, ())):
            if state.get(n) == 1:
                cycles.append(path[path.index(n):] + [n])
            elif n not in state:
                visit(n, path + [n])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    return cycles


def test_no_import_cycle_in_compile():
    graph = {name[:-3]: _imports(text) for name, text in _modules().items()}
    graph.pop("__init__", None)
    assert _cycles(graph) == []
    assert _cycles({"a": {"b"}, "b": {"a"}}) == [["a", "b", "a"]]
