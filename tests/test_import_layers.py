"""symgrad.graph and symgrad.ops sit in layers without import cycles (in-function imports
included): the foundation (errors, dtypes, shapes) imports only itself, the graph imports
only the foundation, and the ops import only the graph and the foundation. So no import
cycle anywhere in the package passes through the graph or the ops."""

from __future__ import annotations

import ast
from pathlib import Path

import symgrad

from .test_compile_structure import _cycles

ROOT = Path(symgrad.__file__).parent
FOUNDATION = {"symgrad.errors", "symgrad.dtypes", "symgrad.shapes"}


def _name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in ROOT.rglob("*.py")}


def _imports(name: str) -> set:
    """The symgrad modules that module ``name`` imports, anywhere in its file (an import of
    a package's member that is a module counts as an import of that module)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[:len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            out |= {f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base
                    for a in node.names}
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
    return {m for m in out if m in MODULES and m != name}


def _in(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _outside(package: str, allowed: set) -> list:
    return sorted(f"{m} -> {n}" for m in MODULES if _in(m, package)
                  for n in _imports(m) if not any(_in(n, a) for a in allowed))


def test_no_import_cycle_in_graph_and_ops():
    names = [m for m in MODULES if _in(m, "symgrad.graph") or _in(m, "symgrad.ops")]
    assert len(names) > 30
    graph = {m: {n for n in _imports(m) if n in names} for m in names}
    assert _cycles(graph) == []
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]


def test_layers():
    for name in FOUNDATION:
        assert _imports(name) <= FOUNDATION, name
    assert _outside("symgrad.graph", {"symgrad.graph"} | FOUNDATION) == []
    assert _outside("symgrad.ops", {"symgrad.ops", "symgrad.graph"} | FOUNDATION) == []
    # the checker sees in-function imports
    assert "symgrad.ops.symbols" in _imports("symgrad.ops.elementwise.special")


def test_ops_families_call_each_other_through_F():
    """A family's modules import no other family (gradient rules use ``ops.functions.F``),
    except the records of the few ops whose forms they share (listed here)."""
    families = ["elementwise", "reductions", "layout", "indexing", "contraction", "scans"]
    shared = {("reductions", "symgrad.ops.scans.records"),       # prod_others' vjp
              ("reductions", "symgrad.ops.elementwise.records")}  # norm's square root
    found = set()
    for family in families:
        package = f"symgrad.ops.{family}"
        for m in MODULES:
            if _in(m, package):
                found |= {(family, n) for n in _imports(m) for other in families
                          if other != family and _in(n, f"symgrad.ops.{other}")}
    assert found == shared


def test_distributed_builds_on_compile():
    """symgrad.distributed imports the compiler; the compiler reaches it only through the
    hooks it sets (``compile.runtime.DISTRIBUTED``)."""
    from symgrad.compile.runtime.compiled import DISTRIBUTED
    from symgrad.distributed import call_dask
    assert [f"{m} -> {n}" for m in MODULES if _in(m, "symgrad.compile")
            for n in _imports(m) if _in(n, "symgrad.distributed")] == []
    assert DISTRIBUTED["call_dask"] is call_dask


def test_no_import_cycle_in_the_package():
    """No cycle anywhere below ``symgrad/__init__`` (imports inside functions included)."""
    names = [m for m in MODULES if m != "symgrad"]
    graph = {m: {n for n in _imports(m) if n in names} for m in names}
    assert _cycles(graph) == []
