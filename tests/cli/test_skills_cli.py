"""``upskill-hub skills ...`` through the real CLI entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
GOOD = "---\nname: {name}\ndescription: Use for demos.\n---\n\n# Demo\n\nSteps.\n"


def run_cli(*args: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "upskill_hub.cli.app", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=full_env,
        timeout=120,
    )


def make(tmp: Path, name: str, text: str | None = None) -> Path:
    d = tmp / name
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text(text if text is not None else GOOD.format(name=name))
    return d


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_shipped_skills_validate() -> None:
    skills = sorted(str(p) for p in (REPO / "skills").iterdir() if p.is_dir())
    assert "skills/kernel-builder-cuda-kernels" in " ".join(skills)
    res = run_cli("skills", "validate", *skills)
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("no frontmatter\n", "frontmatter"),
        ("---\nname: Bad\ndescription: x\n---\nBody.\n", "name"),
        ("---\nname: bad-skill\ndescription: ''\n---\nBody.\n", "description"),
    ],
)
def test_validate_bad_skill_is_one_line_exit_1(tmp_path: Path, text: str, field: str) -> None:
    d = make(tmp_path, "bad-skill", text)
    before = snapshot(tmp_path)
    res = run_cli("skills", "validate", str(d))
    assert res.returncode == 1
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith(f"Error: {d}: {field}:")  # the README's promise: errors start with Error:
    assert "Traceback" not in res.stderr + res.stdout
    assert snapshot(tmp_path) == before


def test_validate_json_report(tmp_path: Path) -> None:
    good = make(tmp_path, "good-one")
    bad = make(tmp_path, "bad-one", "---\nname: x--y\ndescription: d\n---\n")
    res = run_cli("skills", "validate", "--json", str(good), str(bad))
    assert res.returncode == 1
    report = json.loads(res.stdout)
    assert [s["valid"] for s in report["skills"]] == [True, False]
    assert report["skills"][1]["problems"][0]["field"] == "name"


def test_list_and_show(tmp_path: Path) -> None:
    make(tmp_path, "alpha")
    make(tmp_path, "beta")
    res = run_cli("skills", "list", str(tmp_path), "--json")
    assert res.returncode == 0, res.stderr
    assert [r["name"] for r in json.loads(res.stdout)] == ["alpha", "beta"]
    table = run_cli("skills", "list", str(tmp_path))
    assert "alpha" in table.stdout and "tokens" in table.stdout  # piped: the listing (see test_output.py)
    show = run_cli("skills", "show", str(tmp_path / "alpha"))
    assert show.returncode == 0 and "Use for demos." in show.stdout


def test_install_into_agents_and_force(tmp_path: Path) -> None:
    src = make(tmp_path / "src", "demo-skill")
    proj = tmp_path / "proj"
    proj.mkdir()
    res = run_cli("skills", "install", str(src), "--claude", "--codex", cwd=proj)
    assert res.returncode == 0, res.stderr
    assert (proj / ".claude/skills/demo-skill/SKILL.md").is_file()
    assert (proj / ".agents/skills/demo-skill/SKILL.md").is_file()
    again = run_cli("skills", "install", str(src), "--claude", cwd=proj)
    assert again.returncode == 1 and "--force" in again.stderr
    (src / "SKILL.md").write_text(GOOD.format(name="demo-skill") + "\nMore.\n")
    forced = run_cli("skills", "install", str(src), "--claude", "--force", cwd=proj)
    assert forced.returncode == 0
    assert "More." in (proj / ".claude/skills/demo-skill/SKILL.md").read_text()


def test_install_refuses_symlink_out_of_skill(tmp_path: Path) -> None:
    secret = tmp_path / "id_rsa"
    secret.write_text("PRIVATE")
    src = make(tmp_path / "src", "demo-skill")
    (src / "key").symlink_to(secret)
    dest = tmp_path / "dest"
    res = run_cli("skills", "install", str(src), "--dest", str(dest))
    assert res.returncode == 1
    assert "symlink points outside" in res.stderr
    assert not dest.exists()


def test_install_refuses_dotdot_in_symlinked_dir(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.txt").write_text("x")
    src = make(tmp_path / "src", "demo-skill")
    (src / "references").symlink_to(outside)
    dest = tmp_path / "dest"
    res = run_cli("skills", "install", str(src), "--dest", str(dest))
    assert res.returncode == 1
    assert not dest.exists()
