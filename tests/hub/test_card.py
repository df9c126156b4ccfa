"""The dataset card: YAML configs the Hub and `datasets` read, and the per-skill results table."""

from __future__ import annotations

from dataclasses import replace

from huggingface_hub import DatasetCard
from test_push_support import make_rows, make_summary, write_skill

from upskill_hub.hub import dataset_repo as dr
from upskill_hub.hub.card import hub_license, latest_runs, render_card
from upskill_hub.rundir import summary_from_record, summary_record
from upskill_hub.skill import load_skill


def _inputs(tmp_path):
    skill = load_skill(write_skill(tmp_path)).skill
    old = make_summary("run-old", skill, make_rows("run-old", skill), "2026-11-01T00:00:00Z")
    new = make_summary(
        "run-new", skill, make_rows("run-new", skill, models=("m1", "m2")), "2026-11-20T00:00:00Z"
    )
    runs = [summary_from_record(summary_record(replace(s, n_results=6))).to_dict() for s in (old, new)]
    return skill, [dr.skill_record(skill)], runs


def test_yaml_declares_three_configs_license_tags_and_name(tmp_path):
    _, skills, runs = _inputs(tmp_path)
    card = DatasetCard(render_card("me/my-skills", skills, runs, has_results=True))
    data = card.data.to_dict()
    assert data["license"] == "apache-2.0"
    assert data["tags"] == ["agent-skills", "upskill-hub"]
    assert data["pretty_name"] == "my-skills"
    assert data["configs"] == [
        {"config_name": "skills", "data_files": [{"split": "train", "path": "data/skills/*.parquet"}]},
        {"config_name": "results", "data_files": [{"split": "train", "path": "data/results/*.parquet"}]},
        {"config_name": "runs", "data_files": [{"split": "train", "path": "data/runs/*.parquet"}]},
    ]


def test_body_shows_latest_results_per_skill(tmp_path):
    skill, skills, runs = _inputs(tmp_path)
    text = render_card("me/my-skills", skills, runs, has_results=True)
    assert "### tiny-skill" in text
    assert "run `run-new`" in text and "run `run-old`" not in text
    # model | baseline | with skill | lift [interval] | tokens
    assert "| m1 | 33% (1/3) | 100% (3/3) | +67 pts [+42, +77] | 1,200 → 900 |" in text
    assert "| m2 |" in text
    assert 'load_dataset("me/my-skills", "results", split="train")' in text


def test_card_is_deterministic_and_skips_empty_configs(tmp_path):
    _, skills, _ = _inputs(tmp_path)
    a = render_card("me/x", skills, [], has_results=False)
    assert a == render_card("me/x", skills, [], has_results=False)
    configs = DatasetCard(a).data.to_dict()["configs"]
    assert [c["config_name"] for c in configs] == ["skills"]
    assert "No eval results yet." in a


def test_latest_runs_picks_newest_per_skill():
    runs = [
        {"skill_name": "a", "timestamp": "2026-01-02", "run_id": "r1"},
        {"skill_name": "a", "timestamp": "2026-01-03", "run_id": "r2"},
        {"skill_name": "b", "timestamp": "2026-01-01", "run_id": "r3"},
    ]
    assert {k: v["run_id"] for k, v in latest_runs(runs).items()} == {"a": "r2", "b": "r3"}


def test_hub_license_mapping():
    assert hub_license(["Apache-2.0"]) == "apache-2.0"
    assert hub_license([None]) == "other"
    assert hub_license(["MIT", "Proprietary, see LICENSE"]) == ["mit", "other"]


def test_runs_without_their_skill_are_listed(tmp_path):
    _, _, runs = _inputs(tmp_path)
    text = render_card("me/x", [], runs, has_results=True)
    assert "### tiny-skill" in text and "files are not in this repo" in text
    assert "run `run-new`" in text
    configs = [c["config_name"] for c in DatasetCard(text).data.to_dict()["configs"]]
    assert configs == ["results", "runs"]
