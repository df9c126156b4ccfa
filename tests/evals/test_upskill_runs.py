"""``upskill-hub runs`` reads upskill's result folders (batch_summary.json, run_*/run_result.json)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from upskill_shapes import save_upskill_batch

from upskill_hub.evals.upskill_runs import batch_rows, find_batches


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "upskill_hub.cli.app", *args], capture_output=True, text=True,
                          timeout=120)


def test_batches_become_rows_per_condition(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    save_upskill_batch(runs, "2026_01_22_13_10", [("baseline", True, 100), ("baseline", False, 300),
                                                  ("with_skill", True, 200), ("with_skill", True, 400)])
    save_upskill_batch(runs, "2026_01_22_13_11", [("with_skill", False, 50)], summary=False)  # killed
    assert [p.name for p in find_batches(runs)] == ["2026_01_22_13_10", "2026_01_22_13_11"]
    rows = batch_rows(runs / "2026_01_22_13_10")
    got = {(r["condition"], r["n"], r["passed"], r["mean_total_tokens"]) for r in rows}
    assert got == {("baseline", 2, 1, 200.0), ("with_skill", 2, 2, 300.0)}
    assert all(r["skill_name"] == "write-good-pr" and r["model"] == "kimi" for r in rows)
    assert all(0 <= r["ci_low"] <= r["pass_rate"] <= r["ci_high"] <= 1 for r in rows)
    (killed,) = batch_rows(runs / "2026_01_22_13_11")
    assert (killed["run_id"], killed["n"], killed["passed"]) == ("2026_01_22_13_11", 1, 0)


def test_runs_command_says_what_it_read(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    save_upskill_batch(runs, "2026_01_22_13_10", [("baseline", False, 10), ("with_skill", True, 20)])
    proc = run_cli("runs", str(runs))
    assert proc.returncode == 0, proc.stderr
    assert f"read 1 upskill batch folder(s) (batch_summary.json / run_*/run_result.json) from {runs}" in proc.stderr
    assert "upskill batches" in proc.stdout and "2026_01_22_13_10" in proc.stdout
    data = json.loads(run_cli("runs", str(runs), "--json").stdout)
    assert {(r["condition"], r["pass_rate"], r["status"]) for r in data} == {
        ("baseline", 0.0, "upskill batch"), ("with_skill", 1.0, "upskill batch")
    }
    assert "upskill batch" in run_cli("runs", str(runs), "--csv").stdout
