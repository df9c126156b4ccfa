"""The run folder's one home: typed read/write, derived parquet columns, and a full round trip."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from _evalkit import InProcessClient, make_skill

from upskill_hub import rundir
from upskill_hub.errors import UpskillError
from upskill_hub.hub.pull import pull_run
from upskill_hub.hub.push import push
from upskill_hub.lift.api import run_eval
from upskill_hub.lift.prepare import EvalOptions
from upskill_hub.rundir.schema import ResultRow, RunPlan, RunSummary


def test_run_pushed_and_pulled_reads_back_as_equal_typed_objects(hub_server, hub_repo_id, tmp_path: Path):
    skill_dir = make_skill(tmp_path)
    client = InProcessClient(answer=lambda s, u, n: '{"a": "BANANA"}' if "BANANA" in s else "hi")
    res = run_eval(
        skill_dir, [client], EvalOptions(runs=2, output_dir=tmp_path / "runs", plots=False, use_cache=False)
    )

    rows, summary, plan = (
        rundir.read_results(res.run_dir),
        rundir.read_summary(res.run_dir),
        rundir.read_plan(res.run_dir),
    )
    assert rows == res.rows and summary == res.summary
    assert plan is not None and plan.run_id == res.summary.run_id and plan.planned_calls == len(rows) == 12
    assert summary.n_results == 12

    push([skill_dir], hub_repo_id, results=[res.run_dir])
    pulled = pull_run(hub_repo_id, plan.run_id, out_dir=tmp_path / "pulled")

    assert pulled == tmp_path / "pulled" / plan.run_id
    assert rundir.read_results(pulled) == rows
    assert rundir.read_summary(pulled) == summary
    # pass@k and the lift survive the JSON-text columns unchanged
    assert summary.conditions[0].pass_at_k and summary.lifts[0].method


def test_pulling_a_missing_run_is_one_error_and_writes_nothing(hub_server, hub_repo_id, tmp_path: Path):
    push([make_skill(tmp_path)], hub_repo_id)
    with pytest.raises(UpskillError, match="no run 'nope'"):
        pull_run(hub_repo_id, "nope", out_dir=tmp_path / "out")
    with pytest.raises(UpskillError, match="invalid run id"):
        pull_run(hub_repo_id, "../x", out_dir=tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_parquet_columns_come_from_the_dataclasses():
    results = rundir.result_arrow_schema()
    assert results.names == list(ResultRow.__dataclass_fields__)
    assert results.field("repeat").type == pa.int32() and results.field("input_tokens").type == pa.int64()
    assert results.field("passed").type == pa.bool_() and results.field("latency_s").type == pa.float64()
    runs = rundir.runs_arrow_schema()
    assert runs.names == list(RunSummary.__dataclass_fields__)
    assert runs.field("holdout").type == pa.string()  # dicts are JSON text
    cond = runs.field("conditions").type.value_type
    assert cond.field("pass_at_k").type == pa.string() and cond.field("n").type == pa.int32()


def test_plan_round_trips_and_bad_plans_are_one_error(tmp_path: Path):
    plan = RunPlan(run_id="r1", created="2026-11-23T00:00:00.000Z", runs=3, params={"temperature": 0})
    rundir.write_plan(tmp_path, plan)
    assert rundir.read_plan(tmp_path) == plan
    assert rundir.read_plan(tmp_path / "missing") is None
    (tmp_path / rundir.RUN_FILE).write_text("[1, 2]")
    with pytest.raises(UpskillError, match="expected a JSON object"):
        rundir.read_plan(tmp_path)
    (tmp_path / rundir.RUN_FILE).write_text("{not json")
    with pytest.raises(UpskillError, match="is not valid JSON"):
        rundir.read_plan(tmp_path)


def test_torn_last_line_is_skipped_by_both_readers(tmp_path: Path):
    row = ResultRow(
        run_id="r1", timestamp="t", tool_version="0", skill_name="s", skill_version="v", model="m",
        provider="p", params="{}", condition="baseline", case_id="c", repeat=0, passed=True,
        assertions_passed=1, assertions_total=1, assertion_details="[]", output="ok",
    )  # fmt: skip
    (tmp_path / rundir.RESULTS_FILE).write_text(rundir.row_line(row) + '{"run_id": "r1", "time')
    assert rundir.read_results(tmp_path) == [row]
    assert rundir.rows_from_table(rundir.read_results_table(tmp_path)) == [row]


def test_find_resumable_picks_the_latest_matching_plan(tmp_path: Path):
    for name, created, fp in [
        ("a", "2026-01-01", "f1"),
        ("b", "2026-02-01", "f1"),
        ("c", "2026-03-01", "f2"),
    ]:
        (tmp_path / name).mkdir()
        rundir.write_plan(tmp_path / name, RunPlan(run_id=name, created=created, fingerprint=fp))
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / rundir.RUN_FILE).write_text(json.dumps("not a plan"))
    assert rundir.find_resumable(tmp_path, "f1") == tmp_path / "b"
    assert rundir.find_resumable(tmp_path, "zz") is None


def test_create_run_makes_the_folder_with_its_plan_once(tmp_path: Path):
    """Local runs, runs on Jobs and shards all start a run folder through create_run."""
    plan = RunPlan(run_id="r1", created="2026-11-23T00:00:00.000Z", runs=2)
    run_dir = rundir.create_run(tmp_path / "out", plan)
    assert run_dir == tmp_path / "out" / "r1"
    assert rundir.read_plan(run_dir) == plan
    with pytest.raises(UpskillError, match=r"^cannot create run folder .*r1: File exists$"):
        rundir.create_run(tmp_path / "out", plan)
    (run_dir / rundir.RESULTS_FILE).write_text("kept\n")
    assert rundir.create_run(tmp_path / "out", plan, exist_ok=True) == run_dir  # a shard's retry
    assert (run_dir / rundir.RESULTS_FILE).read_text() == "kept\n"
