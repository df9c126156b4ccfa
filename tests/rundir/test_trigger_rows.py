"""Issue 33, classes 4 and 8: trigger and routing rows read back from a run folder.

One schema is checked on every read (types, finite numbers, one answer per call) and each
bad row is one line naming the file and the line; routing reports are checked the same way;
the library routing run appends to its rows file, never rewrites it, and never through a symlink.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from upskill_hub.cases import TriggerQuery
from upskill_hub.errors import UpskillError
from upskill_hub.rundir.routing_rows import read_routing, write_routing
from upskill_hub.rundir.schema import TriggerRow
from upskill_hub.rundir.trigger_rows import TRIGGERS_FILE, read_trigger_rows
from upskill_hub.triggering.routing import routing_report, run_library_routing


def _row(i: int, **kw: object) -> dict:
    row = TriggerRow(
        run_id="r1", timestamp="2026-01-01T00:00:00Z", tool_version="0", skill_name="csv-tidy", skill_version="v",
        model="m", provider="openai", params="{}", query_id=f"q{i}", query=f"query {i}", should_trigger=i % 2 == 0,
        repeat=0, triggered=i % 2 == 0, loaded=json.dumps(["csv-tidy"] if i % 2 == 0 else []), latency_s=0.1,
    )  # fmt: skip
    return {**row.to_dict(), **kw}


def _write(run: Path, rows: list[dict], tail: str = "") -> Path:
    run.mkdir(parents=True, exist_ok=True)
    (run / TRIGGERS_FILE).write_text("".join(json.dumps(r) + "\n" for r in rows) + tail)
    return run


@pytest.mark.parametrize(
    ("edit", "must"),
    [
        ({"triggered": "no"}, "line 3 is not a trigger row (field 'triggered' is text, not true/false)"),
        ({"should_trigger": 1}, "field 'should_trigger' is a number, not true/false"),
        ({"query_id": ["a", "b"]}, "field 'query_id' is a list, not text"),
        ({"loaded": ["csv-tidy"]}, "field 'loaded' is a list, not text"),
        ({"latency_s": float("nan")}, "line 3 is not a trigger row (NaN is not a number JSON allows)"),
        ({"cost_usd": float("inf")}, "Infinity is not a number JSON allows"),
        ({"input_tokens": -5}, "field 'input_tokens' must be from 0 to"),
        ({"repeat": True}, "field 'repeat' is a boolean, not a whole number"),
    ],
)
def test_a_row_of_the_wrong_type_is_refused_naming_file_and_line(
    tmp_path: Path, edit: dict, must: str
) -> None:
    rows = [_row(i) for i in range(5)]
    rows[2].update(edit)
    run = _write(tmp_path / "run", rows)
    with pytest.raises(UpskillError) as err:
        read_trigger_rows(run)
    assert must in str(err.value) and TRIGGERS_FILE in str(err.value) and "\n" not in str(err.value)


def test_a_call_answered_twice_is_refused_and_a_retry_replaces_its_failure(tmp_path: Path) -> None:
    rows = [_row(i) for i in range(3)]
    with pytest.raises(UpskillError, match="line 4 answers the same call as line 2"):
        read_trigger_rows(_write(tmp_path / "dup", [*rows, rows[1]]))
    failed = _row(1, triggered=None, error="HTTP 500", loaded="[]")
    got = read_trigger_rows(_write(tmp_path / "retry", [rows[0], failed, rows[2], rows[1]], tail='{"torn'))
    assert [(r.query_id, r.error) for r in got] == [("q0", None), ("q2", None), ("q1", None)]


def test_rows_files_that_are_symlinks_or_fifos_are_refused(tmp_path: Path) -> None:
    import os

    outside = _write(tmp_path / "elsewhere", [_row(0)]) / TRIGGERS_FILE
    run = tmp_path / "run"
    run.mkdir()
    (run / TRIGGERS_FILE).symlink_to(outside)
    with pytest.raises(UpskillError, match="symlink"):
        read_trigger_rows(run)
    (run / TRIGGERS_FILE).unlink()
    os.mkfifo(run / TRIGGERS_FILE)
    with pytest.raises(UpskillError, match="FIFO"):
        read_trigger_rows(run)


# --------------------------------------------------------------------------- routing
def _report(tmp_path: Path):
    rows = [TriggerRow.from_dict(_row(i, skill_name="a" if i < 2 else "b", triggered=True,
                                      loaded=json.dumps(["a"]))) for i in range(4)]  # fmt: skip
    report = routing_report(rows, ["a", "b"], "m")
    write_routing(tmp_path, [report], "r1", "t")
    return report


@pytest.mark.parametrize(
    ("edit", "must"),
    [
        (lambda r: r.update(accuracy=float("nan")), "'accuracy' must be a share"),
        (lambda r: r["matrix"][0].__setitem__(0, "2"), "matrix[0][0] must be a whole number"),
        (lambda r: r["per_skill"][1].update(n=1e400), "per_skill[1].n must be a whole number"),
        (lambda r: r.update(skills=["a", "a"]), "two skills are named 'a'"),
        (lambda r: r["stealing"].append({"a": ["x"], "b": "b"}), "stealing[1] must name two of the skills"),
    ],
)
def test_a_routing_report_of_the_wrong_shape_is_refused(tmp_path: Path, edit, must: str) -> None:
    _report(tmp_path)
    path = tmp_path / "routing.json"
    data = json.loads(path.read_text())
    edit(data["reports"][0])
    path.write_text(json.dumps(data))
    with pytest.raises(UpskillError) as err:
        read_routing(tmp_path)
    assert must in str(err.value) and "routing.json" in str(err.value)


def test_a_skill_named_none_cannot_make_a_second_none_column() -> None:
    rows = [TriggerRow.from_dict(_row(0, skill_name="none", loaded=json.dumps(["none"])))]
    with pytest.raises(UpskillError, match="a skill is named 'none'"):
        routing_report(rows, ["none", "csv-tidy"], "m")


def _ask_many(run_id: str):
    def ask_many(calls, emit) -> None:
        for model, skill, q, k in calls:
            emit(TriggerRow.from_dict(_row(0, run_id=run_id, model=model, skill_name=skill, query_id=q.id, query=q.query,
                                           repeat=k, should_trigger=True, triggered=True, loaded=json.dumps([skill]))))  # fmt: skip

    return ask_many


def test_a_library_resume_never_writes_through_a_symlinked_rows_file(tmp_path: Path) -> None:
    library = {s: [TriggerQuery(f"t{i}", f"{s} query {i}", True) for i in range(2)] for s in ("a", "b")}
    run = tmp_path / "run"
    run_library_routing(library, ["m"], _ask_many("r1"), run, run_id="r1", timestamp="t")
    outside = tmp_path / "outside.jsonl"
    rows = (run / TRIGGERS_FILE).read_text().splitlines(keepends=True)
    failed = (
        json.dumps(_row(9, skill_name="a", query_id="t1", model="m", triggered=None, error="HTTP 500")) + "\n"
    )
    outside.write_text("".join(rows[:2]) + failed)
    before = outside.read_text()
    (run / TRIGGERS_FILE).unlink()
    (run / TRIGGERS_FILE).symlink_to(outside)
    with pytest.raises(UpskillError, match="symlink"):
        run_library_routing(library, ["m"], _ask_many("r1"), run, run_id="r1", timestamp="t")
    assert outside.read_text() == before


def test_a_library_resume_appends_and_keeps_the_failed_attempt_out_of_the_figures(tmp_path: Path) -> None:
    library = {s: [TriggerQuery(f"t{i}", f"{s} query {i}", True) for i in range(2)] for s in ("a", "b")}
    run = tmp_path / "run"
    run_library_routing(library, ["m"], _ask_many("r1"), run, run_id="r1", timestamp="t")
    path = run / TRIGGERS_FILE
    lines = path.read_text().splitlines(keepends=True)
    failed = (
        json.dumps(_row(9, skill_name="b", query_id="t1", model="m", triggered=None, error="HTTP 500")) + "\n"
    )
    path.write_text("".join(lines[:3]) + failed + '{"torn')
    (report,) = run_library_routing(library, ["m"], _ask_many("r1"), run, run_id="r1", timestamp="t")
    assert (report.n, report.routed, report.errors) == (4, 4, 0)
    kept = path.read_text()
    assert (
        kept.startswith("".join(lines[:3]) + failed) and kept.endswith("\n") and len(kept.splitlines()) == 5
    )
    assert len(read_trigger_rows(run)) == 4


def test_a_library_run_replaces_planted_report_symlinks_instead_of_writing_through(tmp_path: Path) -> None:
    library = {s: [TriggerQuery(f"t{i}", f"{s} query {i}", True) for i in range(2)] for s in ("a", "b")}
    run = tmp_path / "run"
    run.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("precious\n")
    for name in ("routing.png", "routing.json"):
        (run / name).symlink_to(outside)
    run_library_routing(library, ["m"], _ask_many("r1"), run, run_id="r1", timestamp="t")
    assert outside.read_text() == "precious\n"
    assert not (run / "routing.png").is_symlink() and (run / "routing.png").read_bytes()[:4] == b"\x89PNG"
    assert read_routing(run)[0] == "r1"


def test_runs_names_a_fifo_plan_instead_of_waiting_on_it(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    (tmp_path / "runs" / "r1").mkdir(parents=True)
    os.mkfifo(tmp_path / "runs" / "r1" / "routing-plan.json")
    proc = subprocess.run(
        [sys.executable, "-c", "from upskill_hub.cli.app import entry; entry()", "runs", str(tmp_path / "runs")],
        capture_output=True, text=True, timeout=30, env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "unreadable routing-plan.json" in proc.stdout
