"""Issue 45: ``eval --against`` on hostile git trees and revisions, and on a skill at a repo's root.

A tree ``git mktree`` accepts but no checkout could hold (a file ``a`` beside a folder
``a/``), a symlink or submodule in the old version, a 10,000-character revision: each is one
``Error:`` line, exit 1, before any model call. ``--against git:HEAD`` works when the skill
folder is the repository's root (its old version is no longer loaded from a folder named
``upskill-against-…``, which failed the name check).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from upskill_hub.testing.llm_server import running_llm_server

sys.path.insert(0, str(Path(__file__).parent))
from _evalkit import WIDGET_NEW_BODY, WIDGET_OLD_BODY, widget_script, write_widget_skill  # noqa: E402
from cli_runner import run_cli  # noqa: E402

OLD_BODY, NEW_BODY = WIDGET_OLD_BODY, WIDGET_NEW_BODY


@pytest.fixture
def llm():
    with running_llm_server(widget_script) as server:
        yield server


def _write(folder: Path, body: str) -> Path:
    return write_widget_skill(folder, body, 4)


def _git(repo: Path, *args: str, stdin: bytes | None = None) -> str:
    res = subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, input=stdin)
    return res.stdout.decode().strip()


def _init(repo: Path) -> None:
    repo.mkdir(parents=True, exist_ok=True)
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "t@example.com")
    _git(repo, "config", "user.name", "t")


def _eval(args: list[str], llm, tmp_path, capsys, monkeypatch) -> tuple[int, str, str]:
    spec = f"openai-compatible:scripted-model@{llm.openai_base_url}"
    return run_cli(["eval", *args, "-m", spec, "-o", str(tmp_path / "runs"), "--no-plots", "--format", "json"],
                   capsys, monkeypatch)  # fmt: skip


def _refused(args: list[str], said: str, llm, tmp_path, capsys, monkeypatch) -> str:
    code, _, err = _eval(args, llm, tmp_path, capsys, monkeypatch)
    assert code == 1 and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1 and err.startswith("Error: ") and said in err, err
    assert llm.calls == 0 and not (tmp_path / "runs").exists()
    return err


def _hostile_ref(repo: Path, skill_entries: str) -> None:
    """Branch ``evil``: ``skills/widget-answers`` is the tree ``skill_entries`` (mktree lines)."""
    skills = _git(
        repo,
        "mktree",
        stdin=f"040000 tree {_git(repo, 'mktree', stdin=skill_entries.encode())}\twidget-answers\n".encode(),
    )
    top = _git(repo, "mktree", stdin=f"040000 tree {skills}\tskills\n".encode())
    _git(repo, "update-ref", "refs/heads/evil", _git(repo, "commit-tree", top, "-m", "evil"))


@pytest.fixture
def repo_skill(tmp_path) -> tuple[Path, Path, str, str]:
    """A repository holding ``skills/widget-answers``; the blob ids of its SKILL.md and of b"x"."""
    repo = tmp_path / "repo"
    _init(repo)
    skill = _write(repo / "skills" / "widget-answers", NEW_BODY)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "new")
    md = _git(repo, "hash-object", "-w", str(skill / "SKILL.md"))
    blob = _git(repo, "hash-object", "-w", "--stdin", stdin=b"x")
    return repo, skill, md, blob


def test_a_file_and_a_folder_of_one_name_at_a_git_ref_is_one_line(
    repo_skill, llm, tmp_path, capsys, monkeypatch
):
    repo, skill, md, blob = repo_skill
    sub = _git(repo, "mktree", stdin=f"100644 blob {blob}\tb\n".encode())
    _hostile_ref(repo, f"100644 blob {md}\tSKILL.md\n100644 blob {blob}\ta\n040000 tree {sub}\ta\n")
    _refused([str(skill), "--against", "git:evil"], "holds both a file and a folder named skills/widget-answers/a",
             llm, tmp_path, capsys, monkeypatch)  # fmt: skip


@pytest.mark.parametrize(("mode", "kind", "what"), [
    ("120000", "blob", "is a symlink"),
    ("160000", "commit", "is a submodule"),
])  # fmt: skip
def test_symlinks_and_submodules_at_a_git_ref_are_refused(repo_skill, llm, tmp_path, capsys, monkeypatch, mode, kind,
                                                          what):  # fmt: skip
    repo, skill, md, blob = repo_skill
    oid = blob if kind == "blob" else _git(repo, "rev-parse", "HEAD")
    _hostile_ref(repo, f"100644 blob {md}\tSKILL.md\n{mode} {kind} {oid}\tshared\n")
    _refused([str(skill), "--against", "git:evil"], f"skills/widget-answers/shared at evil {what}",
             llm, tmp_path, capsys, monkeypatch)  # fmt: skip


@pytest.mark.parametrize(("spec", "said"), [
    ("user/repo@" + "r" * 10_000, "the revision after @ must be a branch, tag or commit"),
    ("user/repo@main;rm", "the revision after @ must be a branch, tag or commit"),
    ("x" * 10_000, "no such folder, not git:REF"),
    ("git:" + "r" * 10_000, "name a git revision after git:"),
])  # fmt: skip
def test_a_hostile_revision_is_one_line_before_any_file_system_or_hub_use(tmp_path, llm, capsys, monkeypatch, spec,
                                                                          said):  # fmt: skip
    skill = _write(tmp_path / "new" / "widget-answers", NEW_BODY)
    err = _refused([str(skill), "--against", spec], said, llm, tmp_path, capsys, monkeypatch)
    assert len(err) < 400  # the 10,000 characters are not echoed back


def test_against_git_head_when_the_skill_is_the_repository_root(tmp_path, llm, capsys, monkeypatch):
    repo = tmp_path / "widget-answers"
    _write(repo, OLD_BODY)
    _init(repo)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "old")
    md = repo / "SKILL.md"
    md.write_text(md.read_text().replace(OLD_BODY, NEW_BODY))  # the new version, not committed yet
    code, out, err = _eval([str(repo), "--against", "git:HEAD"], llm, tmp_path, capsys, monkeypatch)
    assert code == 0, err
    (v,) = json.loads(out)["versus"]
    assert v["lift"] == pytest.approx(1.0) and v["n_cases"] == 4
    assert _git(repo, "status", "--porcelain") == "M SKILL.md"  # read from git's objects, never checked out
