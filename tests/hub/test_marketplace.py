"""``marketplace.json``: written by push, enough on its own to install; managed installs and update."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _evalkit import make_skill
from cli_runner import run_cli as run_main
from huggingface_hub import HfApi

from upskill_hub.errors import UpskillError
from upskill_hub.hub.marketplace import MARKETPLACE_PATH, marketplace_document, parse_marketplace
from upskill_hub.managed import MARKER, read_marker
from upskill_hub.skill import IGNORED_NAMES, Skill, load_skill


def _drop_skills_tables(repo_id: str) -> None:
    """Leave only the index and the skill folders, as a plain marketplace repo has."""
    api = HfApi()
    for path in api.list_repo_files(repo_id, repo_type="dataset"):
        if path.startswith("data/skills/"):
            api.delete_file(path, repo_id, repo_type="dataset")


def _marketplace(repo_id: str) -> dict:
    return json.loads(Path(HfApi().hf_hub_download(repo_id, MARKETPLACE_PATH, repo_type="dataset")).read_text())


def test_push_index_install_change_update_round_trip(hub_server, hub_repo_id, tmp_path, capsys, monkeypatch):
    src = make_skill(tmp_path / "src")
    code, out, err = run_main(["push", str(src), "--repo", hub_repo_id, "--format", "quiet"], capsys, monkeypatch)
    assert (code, out) == (0, f"{hub_repo_id}\n"), err
    index = _marketplace(hub_repo_id)
    assert index["plugins"] == [
        {
            "name": "greeting",
            "source": "./skills/greeting",
            "description": "Greets with BANANA. Use when greeting.",
            "version": load_skill(src).skill.version,
        }
    ]
    _drop_skills_tables(hub_repo_id)

    agent = tmp_path / "agent-skills"
    code, out, err = run_main(["skills", "install", hub_repo_id, "--dest", str(agent), "--format", "agent"], capsys, monkeypatch)
    assert code == 0, err
    assert out.splitlines()[1].split("\t") == ["greeting", load_skill(src).skill.version, str(agent / "greeting"), "true"]
    installed = agent / "greeting"
    assert read_marker(installed)["repo"] == hub_repo_id
    assert load_skill(installed).skill.files == load_skill(src).skill.files  # the marker is not content

    mine = Skill.create("mine", "My own skill. Use when testing.", "# Mine\n\nHand-written.\n").write(agent / "mine")
    before = {p.name: p.read_bytes() for p in mine.iterdir()}

    (src / "SKILL.md").write_text((src / "SKILL.md").read_text() + "\nAlso wave.\n")
    code, out, err = run_main(["push", str(src), "--repo", hub_repo_id, "--format", "agent"], capsys, monkeypatch)
    assert code == 0 and "committed=true" in out, err
    new_version = load_skill(src).skill.version
    assert _marketplace(hub_repo_id)["plugins"][0]["version"] == new_version
    _drop_skills_tables(hub_repo_id)

    code, out, err = run_main(["skills", "update", "--dest", str(agent), "--format", "agent"], capsys, monkeypatch)
    assert code == 0, err
    rows = {ln.split("\t")[0]: ln.split("\t") for ln in out.splitlines()[1:]}
    assert rows["greeting"][1] == "updated" and rows["mine"][1] == "unmanaged"
    assert "Also wave." in (installed / "SKILL.md").read_text()
    assert load_skill(installed).skill.version == new_version
    assert {p.name: p.read_bytes() for p in mine.iterdir()} == before and not (mine / MARKER).exists()

    code, out, err = run_main(["skills", "update", "greeting", "--dest", str(agent), "--format", "quiet"], capsys, monkeypatch)
    assert (code, out) == (0, ""), err  # already up to date: nothing updated
    code, out, err = run_main(["skills", "update", "nope", "--dest", str(agent)], capsys, monkeypatch)
    assert code == 1 and err.startswith("Error:") and "nope" in err


def test_update_reports_an_unreachable_source_and_keeps_the_folder(hub_server, tmp_path, capsys, monkeypatch):
    folder = make_skill(tmp_path / "agent")
    (folder / MARKER).write_text(json.dumps({"repo": "user/does-not-exist-xyz", "skill": "greeting", "revision": None}))
    before = (folder / "SKILL.md").read_bytes()
    code, out, err = run_main(["skills", "update", "--dest", str(tmp_path / "agent"), "--json"], capsys, monkeypatch)
    assert code == 1 and "could not be updated" in err and len(err.strip().splitlines()) == 1
    assert json.loads(out)[0]["status"] == "source_unreachable"
    assert (folder / "SKILL.md").read_bytes() == before


def test_index_is_checked_like_untrusted_input():
    doc = marketplace_document("me/skills", [{"name": "b", "description": "B"}, {"name": "a", "description": "A"}])
    assert [p["name"] for p in doc["plugins"]] == ["a", "b"] and doc["owner"] == {"name": "me"}
    assert parse_marketplace(json.dumps(doc).encode(), "me/skills") == {"a": "skills/a", "b": "skills/b"}
    bad = [
        b"not json",
        b'{"plugins": {}}',
        json.dumps({"plugins": [{"name": "x", "source": "../../etc"}]}).encode(),
        json.dumps({"plugins": [{"name": "../x", "source": "skills/x"}]}).encode(),
        json.dumps({"plugins": [{"name": "x", "source": "./"}]}).encode(),
        json.dumps({"plugins": [{"name": "x", "source": "a"}, {"name": "x", "source": "b"}]}).encode(),
        b'{"plugins": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",  # nesting without bound
    ]
    for data in bad:
        with pytest.raises(UpskillError, match="refusing marketplace.json"):
            parse_marketplace(data, "me/skills")
    # Entries whose source is not a path (a plugin from elsewhere) are not skills we fetch.
    assert parse_marketplace(json.dumps({"plugins": [{"name": "x", "source": {"github": "o/r"}}]}).encode(), "r/x") == {}
    assert MARKER in IGNORED_NAMES and ".hf-skill-manifest.json" in IGNORED_NAMES
