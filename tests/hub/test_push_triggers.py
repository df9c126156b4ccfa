"""``push`` of catalog-mode runs: the ``triggers`` config, the ``mode`` column, and old shards.

Checked against the local Hub with the real ``huggingface_hub`` and ``datasets``: a repo
that already holds ``results`` / ``runs`` shards written by the previous version (fewer
columns) must still load every config after a newer run joins them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from catalog_runs import publish_old_run, trigger_stats, write_catalog_run, write_skill
from huggingface_hub import HfApi

from upskill_hub.errors import UpskillError
from upskill_hub.hub.push import push
from upskill_hub.rundir.trigger_rows import read_trigger_rows


def _load(repo_id, config, tmp_path):
    from datasets import load_dataset

    cache = tmp_path / f"ds-cache-{config}-{len(list(tmp_path.iterdir()))}"
    return load_dataset(repo_id, config, split="train", cache_dir=str(cache)).to_list()


def test_old_shards_and_a_catalog_run_load_every_config(hub_server, hub_repo_id, tmp_path):
    skill_dir = write_skill(tmp_path / "skills")
    old_rows = publish_old_run(hub_repo_id, skill_dir)
    # The old shard sorts first: ``datasets`` would take its columns for the whole config.
    run = write_catalog_run(tmp_path / "runs", "run-20261124-new", skill_dir)

    result = push([skill_dir], hub_repo_id, results=[run])
    added = {c.path for c in result.changes if c.status == "added"}
    assert {"data/results/run-20261124-new.parquet", "data/triggers/run-20261124-new.parquet"} <= added

    results = _load(hub_repo_id, "results", tmp_path)
    assert len(results) == len(old_rows) + 16
    old = [r for r in results if r["run_id"] == "run-20261101-old"]
    assert {r["mode"] for r in old} == {None}  # written before modes: null, read as inject
    assert {(r["case_id"], r["condition"]) for r in old} == {(r["case_id"], r["condition"]) for r in old_rows}
    new = [r for r in results if r["run_id"] == "run-20261124-new"]
    assert {r["mode"] for r in new} == {"inject", "catalog"}
    loaded = [r for r in new if r["mode"] == "catalog" and r["triggered"]]
    assert loaded and all(json.loads(r["files_read"]) == [f"{skill_dir.name}/references/notes.md"] for r in loaded)

    runs = {r["run_id"]: r for r in _load(hub_repo_id, "runs", tmp_path)}
    assert runs["run-20261101-old"]["triggers"] is None
    assert {c["mode"] for c in runs["run-20261101-old"]["conditions"]} == {None}
    figures = runs["run-20261124-new"]["triggers"][0]
    expected = trigger_stats(read_trigger_rows(run), "model-a")
    assert (figures["recall"], figures["recall_ci_low"], figures["false_trigger_rate"]) == (
        expected.recall,
        expected.recall_ci_low,
        expected.false_trigger_rate,
    )

    triggers = _load(hub_repo_id, "triggers", tmp_path)
    assert len(triggers) == 20
    assert sum(t["triggered"] for t in triggers if t["should_trigger"]) == 7
    assert sum(t["triggered"] for t in triggers if not t["should_trigger"]) == 2

    card = HfApi().dataset_info(hub_repo_id).card_data.to_dict()
    assert [c["config_name"] for c in card["configs"]] == ["skills", "results", "runs", "triggers"]
    declared = {i["config_name"]: [f["name"] for f in i["features"]] for i in card["dataset_info"]}
    assert {"mode", "triggered", "loaded", "files_read"} <= set(declared["results"])
    assert "triggers" in declared["runs"]
    readme = Path(HfApi().hf_hub_download(hub_repo_id, "README.md", repo_type="dataset")).read_text()
    assert "Trigger recall" in readme and "70% [40%–89%] (7/10)" in readme

    # A second push of the same run changes nothing: every shard is append-only.
    again = push([skill_dir], hub_repo_id, results=[run])
    assert not again.committed
    assert {c.path for c in again.changes if c.status == "kept"} >= {"data/triggers/run-20261124-new.parquet"}


def test_a_trigger_only_run_pushes_its_triggers_and_summary(hub_server, hub_repo_id, tmp_path):
    skill_dir = write_skill(tmp_path / "skills")
    run = write_catalog_run(tmp_path / "runs", "trig-20261124-a", skill_dir, results=False)
    assert not (run / "results.jsonl").exists() and not (run / "run.json").exists()

    result = push([], hub_repo_id, results=[run])
    assert {c.path for c in result.changes if c.status == "added"} >= {
        "data/triggers/trig-20261124-a.parquet",
        "data/runs/trig-20261124-a.parquet",
    }
    assert not any(c.path.startswith("data/results/") for c in result.changes)
    assert len(_load(hub_repo_id, "triggers", tmp_path)) == 20
    card = HfApi().dataset_info(hub_repo_id).card_data.to_dict()
    assert [c["config_name"] for c in card["configs"]] == ["runs", "triggers"]
    # It has no eval rows to pair with, so `eval --compare` never takes it as its reference.
    from upskill_hub.hub.published_runs import load_reference

    with pytest.raises(UpskillError, match="no published run of skill 'tiny-skill'"):
        load_reference(hub_repo_id, "tiny-skill", ["model-a"])


@pytest.mark.parametrize(
    "line, message",
    [
        ("{not json", "line 21 is not a trigger row"),
        ('{"run_id": "trig-x"}', "line 21 is not a trigger row"),
        (None, "belongs to run 'other-run'"),
    ],
)
def test_a_bad_triggers_file_pushes_nothing(hub_server, hub_repo_id, tmp_path, line, message):
    skill_dir = write_skill(tmp_path / "skills")
    run = write_catalog_run(tmp_path / "runs", "trig-20261124-b", skill_dir)
    path = run / "triggers.jsonl"
    if line is None:
        row = json.loads(path.read_text().splitlines()[0])
        line = json.dumps({**row, "run_id": "other-run"})
    path.write_text(path.read_text() + line + "\n")
    with pytest.raises(UpskillError, match=message) as info:
        push([skill_dir], hub_repo_id, results=[run])
    assert "\n" not in str(info.value)
    assert not HfApi().repo_exists(hub_repo_id, repo_type="dataset")


def test_a_torn_last_trigger_line_is_skipped_and_secrets_are_masked(hub_server, hub_repo_id, tmp_path, monkeypatch):
    secret = "hf_" + "a" * 34
    skill_dir = write_skill(tmp_path / "skills")
    run = write_catalog_run(tmp_path / "runs", "trig-20261124-c", skill_dir)
    path = run / "triggers.jsonl"
    lines = path.read_text().splitlines()
    first = json.loads(lines[0])
    lines[0] = json.dumps({**first, "query": f"my token is {secret}"})
    path.write_text("\n".join(lines) + '\n{"run_id": "trig-2026')  # a killed writer's half line
    push([], hub_repo_id, results=[run])
    rows = _load(hub_repo_id, "triggers", tmp_path)
    assert len(rows) == 20
    assert not any(secret in json.dumps(r) for r in rows)


def test_a_library_routing_run_pushes_a_routing_config(hub_server, hub_repo_id, tmp_path):
    from upskill_hub.rundir.routing_rows import read_routing, write_routing
    from upskill_hub.rundir.schema import TriggerRow
    from upskill_hub.triggering.routing import routing_report

    skills = ["sql-format", "sql-lint", "csv-json"]
    picks = {"sql-format": ["sql-format"] * 3, "sql-lint": ["sql-format", "sql-format", "sql-lint"], "csv-json": ["csv-json", "csv-json", None]}
    rows = [
        TriggerRow("lib-20261124-a", "t", "v", skill, "x", "m", "p", "{}", f"{skill}-{i}", f"query {skill} {i}", True, 0,
                   got == skill, json.dumps([got] if got else []))
        for skill, gots in picks.items() for i, got in enumerate(gots)
    ]  # fmt: skip
    run = tmp_path / "lib-20261124-a"
    run.mkdir()
    (run / "triggers.jsonl").write_text("".join(json.dumps(r.to_dict()) + "\n" for r in rows))
    write_routing(run, [routing_report(rows, skills, "m")], "lib-20261124-a", "2026-11-24T10:00:00Z")
    assert read_routing(run)[2][0].stealing[0].examples_b_to_a == ["query sql-lint 0", "query sql-lint 1"]

    result = push([], hub_repo_id, results=[run])
    assert "data/routing/lib-20261124-a.parquet" in {c.path for c in result.changes if c.status == "added"}
    cells = {(r["skill"], r["loaded"]): r for r in _load(hub_repo_id, "routing", tmp_path)}
    assert len(cells) == 3 * 4
    assert cells[("sql-lint", "sql-format")]["count"] == 2 and cells[("csv-json", "none")]["count"] == 1
    assert cells[("sql-lint", "sql-lint")]["accuracy"] == 1 / 3
    card = HfApi().dataset_info(hub_repo_id).card_data.to_dict()
    assert [c["config_name"] for c in card["configs"]] == ["triggers", "routing"]

    (run / "routing.json").write_text('{"run_id": "lib-20261124-a", "timestamp": "t", "reports": [{"model": 1}]}')
    with pytest.raises(UpskillError, match="not a routing report") as info:
        push([], hub_repo_id + "-bad", results=[run])  # a repo without this run: the file is read
    assert "\n" not in str(info.value) and not HfApi().repo_exists(hub_repo_id + "-bad", repo_type="dataset")
