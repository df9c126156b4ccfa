"""Issue 37: a SKILL.md symlinked out of a skill folder names the boundary it really crossed.

Inside a git repository a shared SKILL.md may live anywhere in it; a skill folder in no
repository is its own boundary. The refusal used to say "symlink points outside the
repository (<the skill folder itself>)" there, naming a repository that does not exist.
"""

from __future__ import annotations

from pathlib import Path

from upskill_hub.skill import load_skill

MD = "---\nname: demo\ndescription: Use for demos.\n---\n\n# Demo\n"


def _shared(root: Path) -> Path:
    """``root/skill/SKILL.md`` -> ``root/shared/SKILL.md`` (a sibling folder)."""
    (root / "shared").mkdir(parents=True)
    (root / "shared" / "SKILL.md").write_text(MD, encoding="utf-8")
    skill = root / "skill"
    skill.mkdir()
    (skill / "SKILL.md").symlink_to("../shared/SKILL.md")
    return skill


def _no_repository_above(path: Path) -> bool:
    return not any((p / ".git").exists() for p in (path.resolve(), *path.resolve().parents))


def test_outside_any_repository_the_skill_folder_is_named_as_the_boundary(tmp_path: Path) -> None:
    skill = _shared(tmp_path)
    assert _no_repository_above(skill)
    res = load_skill(skill)
    assert res.skill is None
    assert str(res.errors[0]) == (
        f"{skill}: SKILL.md: symlink points outside the skill folder ({skill.resolve()}), which is in no git "
        "repository: a SKILL.md shared through a symlink is followed only within one repository"
    )
    assert "outside the repository" not in str(res.errors[0])


def test_inside_a_repository_the_repository_is_the_boundary(tmp_path: Path) -> None:
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    inside = _shared(tmp_path / "repo")
    assert load_skill(inside).skill is not None  # shared within the repository: followed
    outside = tmp_path / "repo" / "plugin"
    outside.mkdir()
    (outside / "SKILL.md").symlink_to(tmp_path / "elsewhere" / "SKILL.md")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "SKILL.md").write_text(MD, encoding="utf-8")
    res = load_skill(outside)
    assert res.skill is None
    assert str(res.errors[0]).endswith(
        f"symlink points outside the repository ({(tmp_path / 'repo').resolve()})"
    )
