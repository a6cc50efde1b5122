"""Every example in examples/ runs to completion, and those that fit, integrate or
assemble save their figure (into a temporary folder, ``--out``) when matplotlib is installed.

Each example runs in a fresh interpreter (as a user runs it), with the test suite's
temporary cache directory inherited from the environment (conftest.py). Files starting
with ``_`` are the examples' shared helpers, not examples.
"""

import importlib.util
import os
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
NEEDS = {"dask_gradient_descent.py": "dask"}
FIGURES = {"lotka_volterra_fit.py", "stiff_ode.py", "double_pendulum.py", "gp_regression.py",
           "newton_cg.py", "reaction_diffusion.py", "spring_network.py",
           "softmax_regression.py", "dask_gradient_descent.py", "implicit_layer.py",
           "vmap_ode_steps.py", "robertson_fit.py"}
"""The examples that draw a figure: each takes --no-plot and --out DIR."""
SMALL = {"dask_gradient_descent.py": ["--rows", "400000", "--chunk", "100000"],
         "implicit_layer.py": ["60"], "vmap_ode_steps.py": ["--quick"]}
"""Smaller runs than the examples' defaults, where the default is not already seconds."""
HAS_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None


def _examples():
    return sorted(p.name for p in EXAMPLES.glob("*.py") if not p.name.startswith("_"))


def _run(name, *args, env=None):
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(EXAMPLES.parent),
                                                      env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, str(EXAMPLES / name), *args], capture_output=True,
                          text=True, timeout=600, env=env, cwd=EXAMPLES.parent)


@pytest.mark.parametrize("name", _examples())
def test_example_runs(name, tmp_path):
    needed = NEEDS.get(name)
    if needed and importlib.util.find_spec(needed) is None:
        pytest.skip(f"{name} needs {needed}")
    args = SMALL.get(name, []) + (["--out", str(tmp_path)] if name in FIGURES else [])
    done = _run(name, *args)
    assert done.returncode == 0, f"{name} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    assert done.stdout.strip(), f"{name} printed nothing"
    # An example asserts its checks; none may print a failed one either.
    failed = [line for line in done.stdout.splitlines() if line.rstrip().endswith(": False")]
    assert not failed, f"{name} reported failed checks: {failed}"
    if name in FIGURES:
        drawn = sorted(p.name for p in tmp_path.glob("*.png"))
        if HAS_MATPLOTLIB:
            assert drawn == [name.replace(".py", ".png")], f"{name} drew {drawn}"
            assert (tmp_path / drawn[0]).stat().st_size > 5000
            assert f"figure: {tmp_path / drawn[0]}" in done.stdout
        else:
            assert not drawn and "no figure: matplotlib is not installed" in done.stdout


def test_the_examples_that_draw_take_no_plot_and_out():
    for name in FIGURES:
        text = (EXAMPLES / name).read_text(encoding="utf-8")
        assert "--no-plot" in text and "--out" in text, name


def _blocking(tmp_path, *modules):
    """An environment where importing ``modules`` fails as if they were not installed."""
    for module in modules:
        package = tmp_path / "blocked" / module
        package.mkdir(parents=True)
        (package / "__init__.py").write_text(
            f"raise ModuleNotFoundError(\"No module named '{module}'\", name={module!r})\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path / "blocked"),
                                                      env.get("PYTHONPATH")]))
    return env


def test_dask_example_without_dask_says_which_extra(tmp_path):
    done = _run("dask_gradient_descent.py", "--no-plot", env=_blocking(tmp_path, "dask"))
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "dask is not installed" in lines[0] and 'pip install -e ".[dask]"' in lines[0]


def test_figure_skipped_in_one_line_without_matplotlib(tmp_path):
    done = _run("stiff_ode.py", "--out", str(tmp_path / "figs"),
                env=_blocking(tmp_path, "matplotlib"))
    assert done.returncode == 0, done.stderr
    skipped = [line for line in done.stdout.splitlines() if line.startswith("no figure")]
    assert skipped == ["no figure: matplotlib is not installed (needed for the example's figure); "
                       "install the 'bench' extra: pip install -e \".[bench]\" "
                       "(or pip install \"symgrad[bench]\")"]
    assert not (tmp_path / "figs").exists()


def test_no_plot_draws_nothing(tmp_path):
    done = _run("softmax_regression.py", "--no-plot", "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert not list(tmp_path.iterdir()) and "figure" not in done.stdout
