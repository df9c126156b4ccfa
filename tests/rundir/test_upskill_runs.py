"""``upskill-hub runs`` reads upskill's result folders (batch_summary.json, run_*/run_result.json)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from upskill_shapes import save_upskill_batch

from upskill_hub.lift.history import batch_rows
from upskill_hub.rundir.upskill_runs import find_batches


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


def _benchmark_batch(runs: Path) -> Path:
    """An upskill batch: a baseline run and a with-skill run of four tests each, scoring 1/4
    and 3/4, plus a third run stopped after upskill wrote its run_metadata.json."""
    folder = save_upskill_batch(runs, "2026_02_10_09_30", [("baseline", False, 100), ("with_skill", False, 120)])
    summary = json.loads((folder / "batch_summary.json").read_text())
    for result, score in zip(summary["results"], (1, 3), strict=True):
        result["assertions_passed"], result["assertions_total"] = score, 4
        n = result["metadata"]["run_number"]
        (folder / f"run_{n}" / "run_result.json").write_text(json.dumps(result, indent=2))
    (folder / "batch_summary.json").write_text(json.dumps(summary, indent=2))
    stopped = folder / "run_3"
    stopped.mkdir()
    (stopped / "run_metadata.json").write_text(json.dumps(
        {"model": "kimi", "task": "write a good pr", "batch_id": "2026_02_10_09_30", "run_number": 3,
         "timestamp": "2026-02-10T09:31:00"}, indent=2))
    return folder


def test_finding_3_runs_shows_upskill_assertion_counts_1_of_4_and_3_of_4(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    folder = _benchmark_batch(runs)
    done = {r["condition"]: r for r in batch_rows(folder) if r["status"] == "upskill batch"}
    got = {c: (r["assertions_passed"], r["assertions_total"], r["passed"], r["n"]) for c, r in done.items()}
    assert got == {"baseline": (1, 4, 0, 1), "with_skill": (3, 4, 0, 1)}
    # without batch_summary.json the run_*/run_result.json files give the same counts
    (folder / "batch_summary.json").unlink()
    again = {r["condition"]: (r["assertions_passed"], r["assertions_total"]) for r in batch_rows(folder) if r["n"]}
    assert again == {"baseline": (1, 4), "with_skill": (3, 4)}
    proc = run_cli("runs", str(runs), "--format", "agent")
    assert proc.returncode == 0, proc.stderr
    lines = [line.split("\t") for line in proc.stdout.splitlines()]
    head = lines[0]
    counts = {r[head.index("condition")]: (r[head.index("assertions_passed")], r[head.index("assertions_total")])
              for r in lines[1:] if r[head.index("status")] == "upskill batch"}
    assert counts == {"baseline": ("1", "4"), "with_skill": ("3", "4")}
    table = run_cli("runs", str(runs)).stdout
    assert "1/4" in table and "3/4" in table


def test_finding_3_run_folder_with_only_run_metadata_is_listed_incomplete(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    folder = _benchmark_batch(runs)
    (inc,) = [r for r in batch_rows(folder) if r["status"] == "incomplete"]
    assert inc["run_id"] == "2026_02_10_09_30/run_3" and "only run_metadata.json" in inc["reason"]
    # a batch folder holding nothing but that folder is still found and listed
    lone = runs / "2026_02_10_10_00" / "run_1"
    lone.mkdir(parents=True)
    (lone / "run_metadata.json").write_text(json.dumps({"model": "kimi", "run_number": 1}))
    assert runs / "2026_02_10_10_00" in find_batches(runs)
    proc = run_cli("runs", str(runs))
    assert proc.returncode == 0, proc.stderr
    assert "incomplete" in proc.stdout and "run_3" in proc.stdout
    data = json.loads(run_cli("runs", str(runs), "--json").stdout)
    reasons = {r["run_id"]: r["reason"] for r in data if r["status"] == "incomplete"}
    assert set(reasons) == {"2026_02_10_09_30/run_3", "2026_02_10_10_00/run_1"}
