"""A build whose kernels are all LLVM IR never imports numba (issue 29, case e): the
generated module's numba names are deferred (``compile/kernel_lib/deferred.py``) and LLVM
runs numba's settings through llvmlite alone (``compile/codegen/llvm/jit.py``). Checked in
fresh processes: which modules are loaded, and the results bit for bit those of numba's
codegen (numba imported first), from a compile and from the other path's cached object
code; a function that needs numba afterwards still gets it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent("""
    import json, sys
    if {first_numba}:
        import numba
    import numpy as np, symgrad as sg
    x = sg.placeholder("x", shape=(24,))
    y = sg.sin(x[1:]) * x[:-1] ** 2 + sg.exp(-x[1:])
    (h,) = sg.hessians(sg.reduce_sum(y), x)
    f = sg.function([x], [sg.jacobian(y, x), h])
    rng = np.random.default_rng(0)
    outs = [f(rng.uniform(-3.0, 3.0, 24)) for _ in range(4)]
    numba_after_build = "numba" in sys.modules
    paths = [line for line in f.explain().splitlines() if line.strip().startswith("runs")]
    z = sg.placeholder("z", shape=(None,))
    g = sg.function([z], sg.gradients(sg.reduce_sum(sg.sin(z) * z), z))
    grad = g(np.linspace(0.0, 1.0, 7))[0]
    ok = bool(np.allclose(grad, np.sin(np.linspace(0, 1, 7)) + np.linspace(0, 1, 7)
                          * np.cos(np.linspace(0, 1, 7))))
    print(json.dumps(dict(numba=numba_after_build, paths=paths, later=ok,
                          numba_end="numba" in sys.modules,
                          bits=[o.view(np.int64).ravel().tolist() for out in outs for o in out])))
""")


def _run(cache: Path, first_numba: bool, script: str = SCRIPT) -> dict:
    env = dict(os.environ, SYMGRAD_CACHE_DIR=str(cache),
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for name in ("NUMBA_OPT", "NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES", "NUMBA_DISABLE_JIT"):
        env.pop(name, None)
    done = subprocess.run([sys.executable, "-c", script.format(first_numba=first_numba)],
                          env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_all_ir_build_without_numba_equals_numba_codegen(tmp_path):
    alone = _run(tmp_path / "alone", first_numba=False)
    assert alone["numba"] is False, alone["paths"]       # built and called without numba
    assert alone["paths"] and all("LLVM IR" in p for p in alone["paths"]), alone["paths"]
    assert alone["later"] and alone["numba_end"]         # a numba loop afterwards: imported
    numba = _run(tmp_path / "numba", first_numba=True)   # numba's codegen compiles
    assert numba["paths"] == alone["paths"]
    assert numba["bits"] == alone["bits"]
    loaded = _run(tmp_path / "alone", first_numba=True)  # the standalone's objects, via numba
    assert loaded["bits"] == alone["bits"]
    again = _run(tmp_path / "numba", first_numba=False)  # numba's objects, standalone
    assert again["numba"] is False and again["bits"] == alone["bits"]
    values = np.concatenate([np.array(b, np.int64) for b in alone["bits"]]).view(np.float64)
    assert np.isfinite(values).all() and np.count_nonzero(values) > 24


CHUNKED = textwrap.dedent("""
    import json, sys
    if {first_numba}:
        import numba
    import numpy as np, symgrad as sg
    from symgrad.compile.codegen.llvm import chunks
    chunks.CHUNK_STATEMENTS, chunks.DEEP = 7, 0        # a small program in chunks
    x = sg.placeholder("x", shape=(4,))
    h = x
    for _ in range(6):
        h = sg.sin(h * 1.1 + sg.reverse(h, [0])) * h
    loss = sg.reduce_sum(h * h)
    f = sg.function([x], [loss] + sg.gradients(loss, [x]))
    outs = f(np.array([0.3, -0.7, 1.1, 0.2]))
    print(json.dumps(dict(numba="numba" in sys.modules, chunked="chunks of at most" in
                          f.explain(), bits=[np.asarray(o).view(np.int64).ravel().tolist()
                                             for o in outs])))
""")


def test_chunks_short_passes_equal_on_both_paths(tmp_path):
    """A kernel in chunks (the short passes, no machine scheduler) compiled without numba
    and by numba's codegen: the same bits."""
    alone = _run(tmp_path / "alone", first_numba=False, script=CHUNKED)
    numba = _run(tmp_path / "numba", first_numba=True, script=CHUNKED)
    assert alone["chunked"] and numba["chunked"] and alone["numba"] is False
    assert numba["bits"] == alone["bits"]
