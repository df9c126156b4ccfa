"""The run folder's readers and writers against hostile folders (issue 33, classes 4 and 8).

Every run-folder file is read capped, never through a symlink and never from a FIFO, and
written (appended, locked) the same way; rows read back are checked against the schema
(types, finite numbers), leniently for reports (a bad row is skipped) and strictly for
push (a bad row, or a call twice, is one line naming the line).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from upskill_hub import rundir
from upskill_hub.errors import UpskillError
from upskill_hub.rundir.schema import ResultRow, RunSummary


def _row(i: int, **changes) -> dict:
    row = ResultRow("r1", "2026-11-26T10:00:00Z", "0.3.0", "s", "v1", "m", "p", "{}", "baseline", f"c{i}", 0, True,
                    1, 1, "[]", f"answer {i}").to_dict()  # fmt: skip
    return {**row, **changes}


def _write(run: Path, rows: list[dict], tail: str = "") -> None:
    run.mkdir(exist_ok=True)
    (run / rundir.RESULTS_FILE).write_text("".join(json.dumps(r) + "\n" for r in rows) + tail)


def test_record_problem_checks_types_numbers_and_required_fields() -> None:
    from upskill_hub.rundir.schema import record_problem, required_fields

    assert record_problem(ResultRow, _row(0)) is None
    assert (
        record_problem(ResultRow, _row(0, cost_usd=math.nan))
        == "field 'cost_usd' is nan (NaN and Infinity are not stored)"
    )
    assert record_problem(ResultRow, _row(0, model=["m"])) == "field 'model' is a list, not text"
    assert (
        record_problem(ResultRow, _row(0, repeat=True)) == "field 'repeat' is a boolean, not a whole number"
    )
    assert record_problem(ResultRow, _row(0, repeat=2**40)) == "field 'repeat' is too large"
    assert record_problem(ResultRow, _row(0, input_tokens=2**40)) is None  # a 64-bit column
    assert record_problem(ResultRow, {"run_id": "r"}) == "field 'timestamp' is missing"
    assert record_problem(RunSummary, {**_summary(), "holdout": {"share": [1, math.inf]}}) == (
        "field 'holdout' key 'share' holds NaN or Infinity"
    )
    assert "output" in required_fields(ResultRow) and "cost_usd" not in required_fields(ResultRow)


def _summary() -> dict:
    return {"run_id": "r1", "timestamp": "t", "tool_version": "v", "skill_name": "s", "skill_version": "1",
            "models": ["m"], "runs_per_case": 1, "n_cases": 1}  # fmt: skip


def test_lenient_reads_skip_bad_rows_strict_reads_name_them(tmp_path: Path) -> None:
    run = tmp_path / "run"
    _write(run, [_row(0), _row(1, latency_s=math.inf), _row(2)], tail='{"run_id": "r1", "torn')
    assert [r.case_id for r in rundir.read_results(run)] == ["c0", "c2"]
    with pytest.raises(
        UpskillError, match=r"results.jsonl: line 2 is not a valid result row \(field 'latency_s' is inf"
    ):
        rundir.read_results(run, strict=True)
    _write(run, [_row(0), _row(1)], tail='{"run_id": "r1", "torn')  # a torn last line is a killed writer's
    assert len(rundir.read_results(run, strict=True)) == 2
    _write(run, [_row(0), _row(1), _row(0)])
    with pytest.raises(UpskillError, match="line 3 repeats the call of line 1"):
        rundir.read_results(run, strict=True)
    assert (
        rundir.results_table_problem(rundir.read_results_table(run))
        == "1 row(s) repeat a call already in the run"
    )
    with pytest.raises(
        UpskillError, match="line 3 repeats the call of line 1"
    ):  # Arrow's table, then the line
        rundir.read_results_table(run, strict=True)


def test_a_symlinked_results_file_is_never_read_or_appended_to(tmp_path: Path) -> None:
    outside = tmp_path / "outside.jsonl"
    outside.write_text(json.dumps(_row(0)) + "\n")
    run = tmp_path / "run"
    run.mkdir()
    (run / rundir.RESULTS_FILE).symlink_to(outside)
    with pytest.raises(UpskillError, match="symlink"):
        rundir.read_results(run)
    with pytest.raises(UpskillError, match="symlink"):
        rundir.ResultsWriter(run)
    with pytest.raises(UpskillError, match="symlink"):
        rundir.read_results_raw(run)
    assert outside.read_text() == json.dumps(_row(0)) + "\n"


def test_a_symlinked_lock_is_not_truncated(tmp_path: Path) -> None:
    outside = tmp_path / "precious.txt"
    outside.write_text("keep me\n")
    run = tmp_path / "run"
    run.mkdir()
    (run / rundir.LOCK_FILE).symlink_to(outside)
    with pytest.raises(UpskillError, match="symlink"), rundir.run_lock(run):
        pass
    assert outside.read_text() == "keep me\n"


def test_a_fifo_summary_is_refused_at_once(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    os.mkfifo(run / rundir.SUMMARY_FILE)
    with pytest.raises(UpskillError, match="FIFO"):
        rundir.check_run_files(run, [rundir.SUMMARY_FILE])
    with pytest.raises(UpskillError, match="FIFO"):
        rundir.read_summary(run)


def test_the_row_cap_is_set_by_its_environment_variable() -> None:
    code = "from upskill_hub.rundir import files; print(files.MAX_ROW_BYTES)"
    for value, expected in (("2", "2000000"), ("nonsense", "64000000"), ("-1", "64000000")):
        env = {**os.environ, "UPSKILL_MAX_ROW_MB": value}
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
        )
        assert out.stdout.strip() == expected
