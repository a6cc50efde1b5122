"""``import symgrad`` stays light (issue 29 item 5): the compiler, and numba with it, loads when
``sg.function`` is first used, not at import. Checked in a fresh process, by which modules
are loaded (no timing asserts; benchmarks/README.md has the figures)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# numba's package __init__ loads its compiler and type system: none of these may be loaded
HEAVY = ["numba", "numba.core.compiler", "numba.core.typing", "numba.core.caching",
         "llvmlite.binding", "symgrad.compile.function", "symgrad.compile.cpu.driver"]


def _loaded(script: str) -> dict:
    """Run ``script`` in a fresh interpreter; it ends by printing the modules it loaded."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    code = script + "\nimport json, sys\nprint(json.dumps({m: m in sys.modules for m in %r}))" % (
        HEAVY,)
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_import_symgrad_loads_no_numba():
    loaded = _loaded("import symgrad as sg\n"
                     "x = sg.placeholder('x', shape=(3,))\n"
                     "(g,) = sg.gradients(sg.reduce_sum(sg.sin(x) * x), [x])\n"
                     "sg.evaluate(g, {x: [0.0, 1.0, 2.0]})\n"
                     "sg.cache_info()")
    assert [m for m, there in loaded.items() if there] == []


def test_sg_function_loads_the_compiler_when_used():
    loaded = _loaded("import symgrad as sg\nfrom symgrad import function\n"
                     "assert function is sg.function and callable(function)\n"
                     "import symgrad.compile as c\nassert c.CompiledFunction.__name__ == "
                     "'CompiledFunction'")
    # the compiler loads without numba: numba is imported when a module first needs one of
    # its functions (compile/kernel_lib/deferred.py; tests/test_jit_standalone.py)
    assert loaded["symgrad.compile.function"] and not loaded["numba"]
