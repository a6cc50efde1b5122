"""The shape of symgrad/compile (issues 8 and 24): no op is matched by its name string; the
modules, in every subfolder, import each other without cycles (in-function imports
included); the rooms import one way (the order in ``ROOMS``); a short top level, every CUDA
module in ``cuda/``, no module over 700 lines."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import symgrad.compile as compile_package
from symgrad.ops.registry import REGISTRY

COMPILE = Path(compile_package.__file__).parent

# Rooms from the top (entry) down: a module may import its own room and any room below it.
# scalar/ sits above codegen and plan: it reads folded graphs and lowers with their rules.
# loops/ sits below cpu/ (the eager compile reads its dry-run flag) and above cache/ and
# scalar/: a loop whose body is one scalar kernel writes its fused loop module.
ROOMS = ["(top)", "targets", "cuda", "runtime", "cpu", "loops", "cache", "nest", "scalar",
         "codegen", "plan", "printing", "kernel_lib", "linalg"]
# Imports that still run upward, each named (docs/compiler.md "Known upward imports").
UPWARD = {
    "cuda.driver -> targets", "cuda.runtime -> targets",   # the CUDA backend reads its target
    "cpu.driver -> targets",                                # the module writer asks the target
    "runtime.compiled -> passes",                           # explain(passes=True) reads Context
    "runtime.explain -> targets",                           # explain asks the target its lines
}


def _dotted(path: Path) -> str:
    rel = path.relative_to(COMPILE).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts) or "__init__"


def _files() -> dict:
    return {_dotted(p): p for p in sorted(COMPILE.rglob("*.py"))}


def _modules() -> dict:
    return {str(p.relative_to(COMPILE)): p.read_text() for p in _files().values()}


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


def _imports(module: str, path: Path, known: set) -> set:
    """The modules of symgrad/compile that ``module`` imports, anywhere in the file."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    if module == "__init__":
        package = []
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            if node.level - 1 > len(package):
                continue                                     # leaves symgrad.compile
            base = package[:len(package) - (node.level - 1)]
        elif node.module and node.module.startswith("symgrad.compile."):
            base = []
            node = ast.ImportFrom(module=node.module[len("symgrad.compile."):],
                                  names=node.names, level=1)
        else:
            continue
        if node.level - 1 == len(package) and node.module and \
                node.module.split(".")[0] not in {m.split(".")[0] for m in known}:
            continue                                         # a sibling of symgrad.compile
        target = ".".join(base + ([node.module] if node.module else []))
        for alias in node.names:
            full = f"{target}.{alias.name}" if target else alias.name
            found = full if full in known else target
            if found in known and found != module:
                out.add(found)
    return out


def _graph() -> dict:
    files = _files()
    return {m: _imports(m, p, set(files)) for m, p in files.items()}


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


def _room(module: str) -> str:
    return module.split(".")[0] if "." in module or (COMPILE / module).is_dir() else "(top)"


def test_no_import_cycle_in_compile():
    graph = _graph()
    graph.pop("__init__", None)
    assert "cpu.driver" in graph and "plan.fold" in graph["cache.warm"]   # subfolders walked
    assert _cycles(graph) == []
    assert _cycles({"a": {"b"}, "b": {"a"}}) == [["a", "b", "a"]]


def test_rooms_import_downward():
    upward = set()
    for module, targets in _graph().items():
        for target in targets:
            a, b = _room(module), _room(target)
            if a != b and ROOMS.index(b) < ROOMS.index(a):
                upward.add(f"{module} -> {target}")
    # a room's package __init__ re-exports its own modules: not an upward import
    upward = {u for u in upward if not u.split(" -> ")[0] in ROOMS}
    assert upward - UPWARD == set(), "imports running up the rooms (see ROOMS)"
    assert {r for m in _files() for r in [_room(m)]} <= set(ROOMS)


def test_layout_targets():
    top = [p.name for p in COMPILE.glob("*.py")]
    assert len(top) <= 8, top
    cuda = [str(p.relative_to(COMPILE)) for p in COMPILE.rglob("*.py")
            if "cuda" in p.stem and p.parent.name != "cuda" and p.parent.name != "targets"]
    assert cuda == []
    long = {str(p.relative_to(COMPILE)): n for p in COMPILE.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 700}
    assert long == {}
