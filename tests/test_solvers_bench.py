"""benchmarks/solvers.py (issue 31) runs end to end: ``--quick`` writes rows for every
program of a case (fresh processes), the ratios to the reference, the targets and JSON."""

from __future__ import annotations

import json

import numpy as np

from benchmarks import solvers as sb


def test_quick_root_case_writes_rows_targets_and_json(tmp_path):
    out = tmp_path / "solvers.json"
    rows = sb.main(["--quick", "--cases", "root", "--no-iterations", "--timeout", "200",
                    "--json", str(out), "--chart", ""])
    by = {r["program"]: r for r in rows}
    for program in ("sg.root", "unrolled"):
        row = by[program]
        assert "error" not in row and "timeout_s" not in row, row
        assert row["n"] == sb.CASES["root"]["size"][1]
        assert row["build_s"] > 0 and row["per_call_us"] > 0 and row["peak_bytes"] > 0
    assert by["unrolled"]["ratio"] == 1.0
    # the same loss from both programs (the root and its unrolled Newton agree)
    assert abs(by["sg.root"]["values"][0][0] - by["unrolled"]["values"][0][0]) < 1e-9
    if "casadi rootfinder" in by:
        assert abs(by["casadi rootfinder"]["values"][0][0] -
                   by["sg.root"]["values"][0][0]) < 1e-8
    saved = json.loads(out.read_text())
    assert saved["quick"] and {r["program"] for r in saved["rows"]} == set(by)
    assert any("sg.root per call <= 0.5x unrolled" in t["what"] for t in saved["targets"])
    assert "| root | 20 | sg.root |" in sb.format_table(rows)


def test_cases_name_their_programs_reference_and_target():
    for name, spec in sb.CASES.items():
        assert spec["reference"] in spec["programs"], name
        program, ratio = spec["target"]
        assert program in spec["programs"] and ratio > 0, name
        assert len(spec["args"](spec["size"][1], 0)) >= 1


def test_odeint_cases_mark_their_peer_targets():
    rows = [{"case": "lv", "program": "sg.odeint", "per_call_us": 500.0, "build_s": 3.0},
            {"case": "lv", "program": "sg.odeint value", "per_call_us": 250.0,
             "build_s": 1.0},
            {"case": "lv", "program": "casadi cvodes", "per_call_us": 7000.0,
             "build_s": 0.03},
            {"case": "robertson", "program": "sg.odeint bdf", "per_call_us": 900.0,
             "build_s": 3.0},
            {"case": "robertson", "program": "casadi cvodes", "per_call_us": 600.0,
             "build_s": 0.03}]
    met = {what: (value, ok) for what, value, ok in sb.targets(rows)}
    assert met["lv: sg.odeint per call <= JAX odeint / 5"] == ("jax odeint not run", None)
    assert met["lv: sg.odeint per call <= 3.0x sg.odeint value"] == ("2.00x", True)
    assert met["lv: sg.odeint build <= 2 s cold"] == ("3.00 s", False)
    value, ok = met["robertson: sg.odeint bdf per call <= CasADi CVODES with adjoints"]
    assert value == "1.50x casadi cvodes" and ok is False
    for case in ("lv", "robertson"):
        inputs = sb.CASES[case]["args"](sb.CASES[case]["size"][1], 1)
        assert all(np.all(np.isfinite(a)) for a in inputs)
