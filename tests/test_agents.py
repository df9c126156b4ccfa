"""Installing skills into agents: targets, path safety, --force and atomicity."""

from __future__ import annotations

from pathlib import Path

import pytest

from upskill_hub.agents import install_skill, target_dirs
from upskill_hub.errors import UpskillError
from upskill_hub.skill import Skill


def _skill(**files: bytes) -> Skill:
    return Skill.create("demo-skill", "A demo.", "# Demo\n", files=dict(files))


def test_targets_per_agent(tmp_path: Path) -> None:
    dirs = target_dirs(["claude", "codex", "agents", "gemini"], project_root=tmp_path)
    rel = [d.relative_to(tmp_path).as_posix() for d in dirs]
    # Codex and the shared folder are the same place: installed once.
    assert rel == [".claude/skills", ".agents/skills", ".gemini/skills"]
    with pytest.raises(UpskillError, match="no install target"):
        target_dirs([])


def test_global_targets_use_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (d,) = target_dirs(["opencode"], global_=True)
    assert d == tmp_path / ".config/opencode/skills"


def test_install_writes_files_and_refuses_overwrite(tmp_path: Path) -> None:
    skill = _skill(**{"references/a.md": b"ref"})
    out = install_skill(skill, tmp_path / ".claude/skills")
    assert (out / "SKILL.md").read_bytes() == skill.files["SKILL.md"]
    assert (out / "references/a.md").read_bytes() == b"ref"
    with pytest.raises(UpskillError, match="--force"):
        install_skill(skill, tmp_path / ".claude/skills")


def test_force_replaces_atomically(tmp_path: Path) -> None:
    target = tmp_path / "skills"
    install_skill(_skill(**{"old.txt": b"old"}), target)
    install_skill(_skill(**{"new.txt": b"new"}), target, force=True)
    names = sorted(p.name for p in (target / "demo-skill").iterdir())
    assert names == ["SKILL.md", "new.txt"]
    assert [p.name for p in target.iterdir()] == ["demo-skill"]  # no temp or backup folders left


@pytest.mark.parametrize("bad", ["../escape.txt", "/abs.txt", "a/../../b.txt", "a\\b.txt"])
def test_paths_that_escape_are_refused_and_nothing_written(tmp_path: Path, bad: str) -> None:
    skill = _skill()
    skill.files[bad] = b"x"
    target = tmp_path / "skills"
    with pytest.raises(UpskillError, match="unsafe path"):
        install_skill(skill, target)
    assert not target.exists() or list(target.iterdir()) == []
    assert not (tmp_path / "escape.txt").exists()


def test_failed_install_keeps_previous_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "skills"
    first = install_skill(_skill(**{"keep.txt": b"v1"}), target)

    def boom(self: Path, data: bytes) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_bytes", boom)
    with pytest.raises(UpskillError, match="No space left"):
        install_skill(_skill(**{"keep.txt": b"v2"}), target, force=True)
    monkeypatch.undo()
    assert (first / "keep.txt").read_bytes() == b"v1"
    assert [p.name for p in target.iterdir()] == ["demo-skill"]


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def test_install_keeps_modes_from_a_local_folder(tmp_path: Path) -> None:
    import os

    from upskill_hub.skill import load_skill

    src = _skill(**{"scripts/run.sh": b"#!/bin/sh\necho hi\n", "scripts/lib.py": b"x = 1\n"}).write(
        tmp_path / "src" / "demo-skill"
    )
    os.chmod(src / "scripts" / "run.sh", 0o750)
    os.chmod(src / "scripts" / "lib.py", 0o640)
    os.chmod(src / "scripts", 0o750)
    old = os.umask(0o077)  # a strict umask must not leak into what is installed
    try:
        out = install_skill(load_skill(src).skill, tmp_path / "agent")
    finally:
        os.umask(old)
    assert _mode(out / "scripts" / "run.sh") == 0o750  # still executable
    assert _mode(out / "scripts" / "lib.py") == 0o640
    assert _mode(out / "scripts") == 0o750  # the source said so
    assert _mode(out) == 0o755  # not mkdtemp's 0700


def test_install_of_an_in_memory_skill_uses_shebangs_and_0755_folders(tmp_path: Path) -> None:
    out = install_skill(
        _skill(**{"scripts/run.py": b"#!/usr/bin/env python3\n", "references/a.md": b"# A\n"}), tmp_path / "agent"
    )
    assert _mode(out / "scripts" / "run.py") == 0o755
    assert _mode(out / "references" / "a.md") == 0o644
    assert _mode(out) == _mode(out / "scripts") == _mode(out / "references") == 0o755
