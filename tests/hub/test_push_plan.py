"""Planning a push: what is added, updated, deleted, unchanged or kept, without a server.

The remote side is described with real ``huggingface_hub`` ``RepoFile`` objects built
from the JSON the Hub's tree API returns, so the hash comparison is the one used live.
"""

from __future__ import annotations

import pytest
from huggingface_hub.hf_api import RepoFile
from test_push_support import write_run, write_skill

from upskill_hub._util.hashing import git_blob_sha1, sha256_hex
from upskill_hub.errors import UpskillError
from upskill_hub.hub import dataset_repo as dr
from upskill_hub.hub import layout
from upskill_hub.hub.push import RemoteState, build_plan, load_local


def _remote_from(files: dict[str, bytes], lfs: tuple[str, ...] = (".parquet",)) -> RemoteState:
    entries = {}
    for path, data in files.items():
        info = {"type": "file", "path": path, "size": len(data), "oid": git_blob_sha1(data)}
        if path.endswith(lfs):
            info["lfs"] = {"oid": sha256_hex(data), "size": len(data), "pointerSize": 130}
            info["oid"] = "0" * 40  # the pointer's blob id, not the content's
        entries[path] = RepoFile(**info)
    return RemoteState(head="a" * 40, files=entries)


def _no_rows(prefix, skip):
    return []


def test_empty_repo_gets_everything(tmp_path):
    skill_dir = write_skill(tmp_path / "s")
    skills, runs = load_local([skill_dir], [write_run(tmp_path / "r", "run-1", skill_dir)])
    plan = build_plan("me/x", RemoteState(head=None, files={}), skills, runs, _no_rows)
    assert set(plan.adds) == {
        "skills/tiny-skill/SKILL.md",
        "skills/tiny-skill/references/notes.md",
        "data/skills/tiny-skill.parquet",
        "data/results/run-1.parquet",
        "data/runs/run-1.parquet",
        "README.md",
        "marketplace.json",
    }
    assert {c.status for c in plan.changes} == {"added"}


def test_same_content_plans_nothing(tmp_path):
    skill_dir = write_skill(tmp_path / "s")
    skills, runs = load_local([skill_dir], [write_run(tmp_path / "r", "run-1", skill_dir)])
    first = build_plan("me/x", RemoteState(head=None, files={}), skills, runs, _no_rows)
    # The card lists the run; the second plan gets it back from the remote runs table.
    run_rows = [dr.read_parquet_rows(first.adds["data/runs/run-1.parquet"])[0]]
    skills_rows = []

    def rows(prefix, skip):
        return run_rows if prefix == layout.RUNS_TABLE_DIR else skills_rows

    skills, runs = load_local([skill_dir], [tmp_path / "r" / "run-1"])  # a fresh process
    again = build_plan("me/x", _remote_from(first.adds), skills, runs, rows)
    assert again.empty, [c for c in again.changes if c.status != "unchanged"]
    status = {c.path: c.status for c in again.changes}
    assert status.pop("data/results/run-1.parquet") == status.pop("data/runs/run-1.parquet") == "kept"
    assert set(status.values()) == {"unchanged"}
    assert runs[0]._results is None  # a run already in the repo is not even read again


def test_changed_and_removed_skill_files(tmp_path):
    skill_dir = write_skill(tmp_path / "s")
    skills, _ = load_local([skill_dir], [])
    first = build_plan("me/x", RemoteState(head=None, files={}), skills, [], _no_rows)
    (skill_dir / "references" / "notes.md").unlink()
    (skill_dir / "SKILL.md").write_text((skill_dir / "SKILL.md").read_text() + "More.\n")
    skills, _ = load_local([skill_dir], [])
    plan = build_plan("me/x", _remote_from(first.adds), skills, [], _no_rows)
    status = {c.path: c.status for c in plan.changes}
    assert status["skills/tiny-skill/SKILL.md"] == "updated"
    assert status["skills/tiny-skill/references/notes.md"] == "deleted"
    assert plan.deletes == ["skills/tiny-skill/references/notes.md"]
    assert status["data/skills/tiny-skill.parquet"] == "updated"


def test_existing_run_is_never_rewritten(tmp_path):
    skill_dir = write_skill(tmp_path / "s")
    remote = _remote_from({"data/results/run-1.parquet": b"other bytes", "data/runs/run-1.parquet": b"x"})
    skills, runs = load_local([], [write_run(tmp_path / "r", "run-1", skill_dir)])
    plan = build_plan("me/x", remote, skills, runs, _no_rows)
    status = {c.path: c.status for c in plan.changes}
    assert status["data/results/run-1.parquet"] == "kept"
    assert status["data/runs/run-1.parquet"] == "kept"
    assert "data/results/run-1.parquet" not in plan.adds


def test_invalid_skill_stops_before_anything(tmp_path):
    good = write_skill(tmp_path / "s")
    bad = tmp_path / "bad" / "Bad_Name"
    bad.mkdir(parents=True)
    (bad / "SKILL.md").write_text("---\nname: Bad_Name\ndescription: x\n---\nbody\n")
    with pytest.raises(UpskillError, match="name"):
        load_local([good, bad], [])


def test_duplicate_inputs_are_refused(tmp_path):
    skill_dir = write_skill(tmp_path / "s")
    with pytest.raises(UpskillError, match="two skills named"):
        load_local([skill_dir, skill_dir], [])
    run = write_run(tmp_path / "r", "run-1", skill_dir)
    with pytest.raises(UpskillError, match="given twice"):
        load_local([], [run, run])
    with pytest.raises(UpskillError, match="nothing to push"):
        load_local([], [])


def test_skill_with_an_escaping_symlink_is_refused(tmp_path):
    outside = tmp_path / "secret.txt"
    outside.write_text("private\n")
    skill_dir = write_skill(tmp_path / "s")
    (skill_dir / "references" / "leak.md").symlink_to(outside)
    with pytest.raises(UpskillError, match="symlink points outside"):
        load_local([skill_dir], [])
