"""``push SKILL --results upskill-runs``: a folder of runs publishes every finished run of the
skills pushed (the README's tour line failed with "not an eval run folder")."""

from __future__ import annotations

from pathlib import Path

import pytest
from catalog_runs import write_catalog_run, write_skill
from cli_runner import run_cli
from huggingface_hub import HfApi

from upskill_hub.errors import UpskillError
from upskill_hub.hub.push import push


def _runs(tmp_path: Path) -> tuple[Path, Path]:
    skills = tmp_path / "skills"
    mine, other = write_skill(skills, "tiny-skill"), write_skill(skills, "other-skill")
    runs = tmp_path / "upskill-runs"
    write_catalog_run(runs, "20261126T100000Z-tiny-skill-aaaaaa", mine)
    write_catalog_run(runs, "20261126T110000Z-tiny-skill-bbbbbb", mine, timestamp="2026-11-26T11:00:00Z")
    write_catalog_run(runs, "20261126T120000Z-other-skill-cccccc", other)
    (runs / "20261126T130000Z-tiny-skill-dddddd").mkdir()  # started, never answered
    (runs / "20261126T130000Z-tiny-skill-dddddd" / "results.jsonl").write_text("")
    (runs / "notes").mkdir()  # not a run at all
    return mine, runs


def test_a_folder_of_runs_publishes_the_finished_runs_of_the_skills_pushed(
    hub_server, hub_repo_id, tmp_path, capsys, monkeypatch
):
    mine, runs = _runs(tmp_path)
    code, out, err = run_cli(["push", str(mine), "--repo", hub_repo_id, "--results", str(runs)], capsys, monkeypatch)
    assert code == 0, err
    assert f"{runs}: publishing 2 runs" in err
    assert "left out 1 run without results and 1 run of other skills" in err
    files = set(HfApi().list_repo_files(hub_repo_id, repo_type="dataset"))
    published = {f for f in files if f.startswith("data/results/")}
    assert any("aaaaaa" in f for f in published) and any("bbbbbb" in f for f in published)
    assert not any("cccccc" in f or "dddddd" in f for f in files)
    # Pushing the same folder again changes nothing.
    code, out, err = run_cli(["push", str(mine), "--repo", hub_repo_id, "--results", str(runs)], capsys, monkeypatch)
    assert code == 0 and "Nothing changed" in out


def test_a_folder_without_finished_runs_is_one_line_and_pushes_nothing(hub_server, hub_repo_id, tmp_path):
    mine, runs = _runs(tmp_path)
    empty = tmp_path / "empty-runs"
    empty.mkdir()
    with pytest.raises(UpskillError, match="holds no finished eval run of tiny-skill to publish"):
        push([mine], hub_repo_id, results=[empty])
    assert not HfApi().repo_exists(hub_repo_id, repo_type="dataset")


def test_a_damaged_run_in_the_folder_stops_the_push(hub_server, hub_repo_id, tmp_path):
    mine, runs = _runs(tmp_path)
    bad = runs / "20261126T100000Z-tiny-skill-aaaaaa" / "results.jsonl"
    bad.write_text(bad.read_text() + '{"run_id": 1}\n{"x": 2}\n')
    with pytest.raises(UpskillError, match="results.jsonl"):
        push([mine], hub_repo_id, results=[runs])
    assert not HfApi().repo_exists(hub_repo_id, repo_type="dataset")
