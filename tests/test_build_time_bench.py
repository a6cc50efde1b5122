"""benchmarks/build_time.py (issue 29) runs end to end: ``--quick`` on one tiny case writes a
row with every phase, a warm second process, and a case past ``--timeout`` is reported, not
waited for."""

from __future__ import annotations

import json

from benchmarks import build_time as bt


def test_quick_case_writes_rows_and_json(tmp_path):
    out = tmp_path / "bt.json"
    rows = bt.main(["--quick", "--cases", "e_jac", "--no-peers", "--warm",
                    "--timeout", "120", "--json", str(out), "--chart", ""])
    assert [r["tool"] for r in rows] == ["symgrad"]
    row = rows[0]
    assert "error" not in row, row
    for key in ("import_s", "graph_s", "function_s", "first_call_s", "build_s", "per_call_us"):
        assert row[key] >= 0, key
    assert row["size"] == bt.CASES["e_jac"][2]
    assert row["warm"]["build_s"] >= 0 and row["met"] in (True, False)
    saved = json.loads(out.read_text())
    assert saved["quick"] and saved["rows"][0]["case"] == "e_jac"
    assert "| e_jac | 8 | symgrad |" in bt.format_table(rows)


def test_timeout_is_reported_not_waited_for(tmp_path):
    rows = bt.main(["--quick", "--cases", "e_jac", "--no-peers", "--timeout", "1",
                    "--json", "", "--chart", ""])       # 1 CPU s: imports and a compile
    assert rows[0]["timeout_s"] == 1 and rows[0]["met"] is None, rows
    assert "> 1 s CPU" in bt.format_table(rows)
