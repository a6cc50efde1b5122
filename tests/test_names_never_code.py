"""User names (placeholders, op ``name=``) never become code in generated modules."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg

HOSTILE = [
    "e\nopen({path!r}, 'w').write('x')\n#",
    "e\r\nopen({path!r}, 'w').write('x')  # \\",
    "q'\"\\\"\"\"; open({path!r}, 'w')",
    "#\u2028open({path!r}, 'w')\u0085\x0c",
    "ünïcode·名前\tx",
    "x" * 5000 + "\nopen({path!r}, 'w')",
]


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "names"))


@pytest.mark.parametrize("target", ["cpu", "parallel", "cuda"])
@pytest.mark.parametrize("template", HOSTILE)
def test_hostile_names_compile_and_run_as_data(tmp_path, template, target):
    marker = tmp_path / "pwned"
    name = template.format(path=str(marker))
    x = sg.placeholder(name, shape=(None,))
    y = sg.multiply(sg.sin(x), x, name=name + "op")
    loss = sg.reduce_sum(y, name=name + "loss")
    f = sg.function([x], [loss, sg.gradients(loss, x)[0]], target=target)
    value = np.array([0.5, 1.0, 2.0])
    got = f(value)
    want = sg.evaluate([loss, sg.gradients(loss, x)[0]], {x: value})
    np.testing.assert_allclose(np.asarray(got[0]), want[0], rtol=1e-12)
    np.testing.assert_allclose(np.asarray(got[1]), want[1], rtol=1e-12)
    assert not marker.exists()
    if target != "cuda":
        code_lines = [line for line in f.source.splitlines()
                      if line.strip() and not line.lstrip().startswith("#")]
        assert not any("open(" in line for line in code_lines)


def test_generated_identifiers_are_symgrads_own():
    x = sg.placeholder("math", shape=(3,))
    y = sg.placeholder("np", shape=(3,))
    f = sg.function([x, y], sg.reduce_sum(x * y + sg.exp(x)))
    assert f(np.ones(3), np.full(3, 2.0)) == pytest.approx(6.0 + 3 * np.e)
    assert "def _k0_point(a0, a1):" in f.source


@pytest.mark.parametrize("target", ["cpu", "parallel", "cuda"])
def test_hostile_names_of_constants_and_layout_ops(tmp_path, target):
    marker = tmp_path / "pwned"
    name = HOSTILE[0].format(path=str(marker))
    x = sg.placeholder(name, shape=(None, 2))
    c = sg.constant(np.array([[2.0, 3.0]]), name=name)
    y = sg.reduce_sum(sg.identity(sg.transpose(x * c, name=name), name=name), name=name)
    f = sg.function([x], [y, sg.gradients(y, x)[0]], target=target)
    value = np.array([[1.0, 2.0], [3.0, 4.0]])
    got = f(value)
    assert float(np.asarray(got[0])) == 2.0 + 6.0 + 6.0 + 12.0
    np.testing.assert_array_equal(np.asarray(got[1]), np.array([[2.0, 3.0], [2.0, 3.0]]))
    assert not marker.exists()
    code = [line for line in f.source.splitlines() if not line.lstrip().startswith("#")]
    assert not any("open(" in line.split("#")[0] for line in code)
