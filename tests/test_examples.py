"""Every example in examples/ runs to completion and prints its own checks as True.

Each example runs in a fresh interpreter (as a user runs it), with the test suite's
temporary cache directory inherited from the environment (conftest.py).
"""

import importlib.util
import os
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
NEEDS = {"dask_gradient_descent.py": "dask"}


def _examples():
    return sorted(p.name for p in EXAMPLES.glob("*.py"))


@pytest.mark.parametrize("name", _examples())
def test_example_runs(name):
    needed = NEEDS.get(name)
    if needed and importlib.util.find_spec(needed) is None:
        pytest.skip(f"{name} needs {needed}")
    env = dict(os.environ, PYTHONPATH=str(EXAMPLES.parent))
    done = subprocess.run([sys.executable, str(EXAMPLES / name)], capture_output=True,
                          text=True, timeout=600, env=env, cwd=EXAMPLES.parent)
    assert done.returncode == 0, f"{name} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    assert done.stdout.strip(), f"{name} printed nothing"
    # An example states its own checks as "...: True"; none may print False.
    failed = [line for line in done.stdout.splitlines() if line.rstrip().endswith(": False")]
    assert not failed, f"{name} reported failed checks: {failed}"
