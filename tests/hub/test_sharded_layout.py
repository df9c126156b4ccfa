"""A run sharded over Jobs (``data/results/<run_id>/shard-<i>.parquet``) reads like any other.

The repo is built with plain ``HfApi`` uploads next to a run pushed from one machine, then
read back by every reader: ``push`` (keeps the shards, records the run, card configs),
``load_dataset``, ``pull_run``, ``--compare``'s reference and the Space.
"""

from __future__ import annotations

import io

from huggingface_hub import CommitOperationAdd, HfApi

from upskill_hub import rundir
from upskill_hub.hub import dataset_repo as dr
from upskill_hub.hub.push import push
from upskill_hub.rundir.schema import ResultRow, RunPlan, RunSummary

SKILL = "greeting"


def _rows(run_id: str, n_cases: int) -> list[ResultRow]:
    return [
        ResultRow(
            run_id=run_id,
            timestamp="2026-11-23T10:00:00Z",
            tool_version="0",
            skill_name=SKILL,
            skill_version="1",
            model="m",
            provider="openai-compatible",
            params="{}",
            condition=cond,
            case_id=f"c{i}",
            repeat=0,
            passed=cond == "with_skill" or i % 2 == 0,
            assertions_passed=1,
            assertions_total=1,
            assertion_details="[]",
            output="ok",
        )  # fmt: skip
        for i in range(n_cases)
        for cond in ("baseline", "with_skill")
    ]


def _run_folder(root, run_id: str, rows: list[ResultRow], created: str):
    folder = root / run_id
    folder.mkdir(parents=True)
    rundir.write_plan(folder, RunPlan(run_id=run_id, created=created, skill_name=SKILL, skill_version="1"))
    rundir.write_results(folder, rows)
    summary = RunSummary(run_id=run_id, timestamp=created, tool_version="0", skill_name=SKILL, skill_version="1",
                         models=["m"], runs_per_case=1, n_cases=len(rows) // 2)  # fmt: skip
    rundir.write_summary(folder, summary)
    return folder


def test_every_reader_takes_a_sharded_run_like_a_pushed_one(hub_server, hub_repo_id, tmp_path):
    from datasets import load_dataset

    from upskill_hub.hub.published_runs import load_reference
    from upskill_hub.hub.pull import pull_run
    from upskill_hub.space.data import clear_cache, load_library

    api = HfApi()
    flat_id, sharded_id = "20261123T100000Z-greeting-aaaaaa", "20261123T110000Z-greeting-bbbbbb"
    flat, sharded = _rows(flat_id, 3), _rows(sharded_id, 4)
    push([], hub_repo_id, results=[_run_folder(tmp_path, flat_id, flat, "2026-11-23T10:00:00Z")])
    ops = [
        CommitOperationAdd(
            dr.results_shard_path(sharded_id, i),
            io.BytesIO(rundir.table_parquet_bytes(rundir.rows_table(sharded[i::2]))),
        )
        for i in range(2)
    ]
    api.create_commit(hub_repo_id, ops, commit_message="two shards", repo_type="dataset")
    result = push(
        [], hub_repo_id, results=[_run_folder(tmp_path, sharded_id, sharded, "2026-11-23T11:00:00Z")]
    )
    kept = sorted(c.path for c in result.changes if c.status == "kept")
    assert kept == [dr.results_shard_path(sharded_id, 0), dr.results_shard_path(sharded_id, 1)]
    files = api.list_repo_files(hub_repo_id, repo_type="dataset")
    assert dr.results_path(sharded_id) not in files and dr.runs_path(sharded_id) in files

    table = load_dataset(hub_repo_id, "results", split="train")
    assert sorted((r["run_id"], r["case_id"], r["condition"]) for r in table) == sorted(
        (r.run_id, r.case_id, r.condition) for r in flat + sharded
    )
    assert len(load_dataset(hub_repo_id, "runs", split="train")) == 2

    pulled = pull_run(hub_repo_id, sharded_id, out_dir=tmp_path / "pulled")
    assert sorted(r.key for r in rundir.read_results(pulled)) == sorted(r.key for r in sharded)

    ref = load_reference(hub_repo_id, SKILL, ["m"])  # the newest run of the skill: the sharded one
    assert ref.run_id == sharded_id and sorted(r.key for r in ref.rows) == sorted(r.key for r in sharded)

    clear_cache()
    lib = load_library(hub_repo_id, token=False)
    assert sorted(lib.results["run_id"].value_counts().items()) == [(flat_id, 6), (sharded_id, 8)]
