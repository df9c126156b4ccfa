"""Issue 28 findings 5, 7 and 8: skills as published repositories write them."""

from __future__ import annotations

import json
import os
from pathlib import Path

from cli_runner import run_cli

from upskill_hub.skill import BOM_WARNING, load_skill

MD = "---\nname: {name}\ndescription: Does things. Use when testing.\n{extra}---\n\n# Body\n\nDo it.\n"


def _skill(root: Path, name: str, extra: str = "") -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(MD.format(name=name, extra=extra))
    return folder


def test_finding_7_unquoted_argument_hint_list_is_a_warning_with_quoting_advice(tmp_path: Path):
    res = load_skill(_skill(tmp_path, "argy", "argument-hint: [file]\n"))
    assert res.ok
    (w,) = [p for p in res.warnings if p.field == "argument-hint"]
    assert "reads it as the list ['file']" in w.message and 'argument-hint: "[file]"' in w.message
    assert res.skill.frontmatter["argument-hint"] == ["file"]  # shown as read
    strict = load_skill(tmp_path / "argy", strict=True)
    assert any(p.field == "argument-hint" for p in strict.errors)


def test_finding_7_list_metadata_value_is_a_warning_not_quote_the_value(tmp_path: Path):
    # written like huggingface/skills' trl-training: a list under metadata
    res = load_skill(_skill(tmp_path, "trl-training", "metadata:\n  author: hf\n  tags: [trl, sft, dpo]\n"))
    assert res.ok
    (w,) = [p for p in res.warnings if p.field == "metadata.tags"]
    assert "list ['trl', 'sft', 'dpo']" in w.message and 'tags: "trl, sft, dpo"' in w.message
    assert "quote the value" not in w.message
    assert load_skill(tmp_path / "trl-training", strict=True).errors


def test_finding_8_bom_is_a_warning_naming_the_agents_that_reject_it(tmp_path: Path):
    folder = _skill(tmp_path, "bommy")
    (folder / "SKILL.md").write_bytes(b"\xef\xbb\xbf" + (folder / "SKILL.md").read_bytes())
    res = load_skill(folder)
    assert res.ok and res.skill.name == "bommy"
    (w,) = [p for p in res.warnings if p.field == "SKILL.md"]
    assert w.message == BOM_WARNING and "crewAI" in w.message and "without BOM" in w.message


def test_finding_8_symlinked_skill_md_inside_the_repository_is_followed(tmp_path: Path):
    repo = tmp_path / "plugin"
    (repo / ".git").mkdir(parents=True)
    shared = _skill(repo / "skills", "shared")
    claude = repo / ".claude" / "skills" / "shared"
    claude.mkdir(parents=True)
    (claude / "SKILL.md").symlink_to(os.path.relpath(shared / "SKILL.md", claude))
    res = load_skill(claude)
    assert res.ok and res.skill.name == "shared" and res.skill.files["SKILL.md"].startswith(b"---")


def test_finding_8_symlinked_skill_md_pointing_outside_the_repository_is_refused(tmp_path: Path):
    repo = tmp_path / "plugin"
    (repo / ".git").mkdir(parents=True)
    elsewhere = _skill(tmp_path / "elsewhere", "shared")
    linked = repo / "skills" / "shared"
    linked.mkdir(parents=True)
    (linked / "SKILL.md").symlink_to(elsewhere / "SKILL.md")
    res = load_skill(linked)
    assert res.skill is None and "outside the repository" in str(res.errors[0])


def test_finding_5_skills_show_carries_the_whole_frontmatter_and_upskill_metadata(tmp_path: Path, capsys, monkeypatch):
    folder = _skill(tmp_path, "meta-skill", "license: MIT\ncompatibility: Python 3.10+\nmetadata:\n  author: hf\n  version: \"2\"\n")
    (folder / "skill_meta.json").write_text(json.dumps({
        "metadata": {"version": "1.0", "generated_by": "claude-sonnet", "license": "Apache-2.0",
                     "compatibility": "needs network"},
        "tests": [{"input": "q", "expected": {"contains": ["x"]}}],
    }))
    code, out, err = run_cli(["skills", "show", str(folder), "--format", "json"], capsys, monkeypatch)
    assert code == 0, err
    data = json.loads(out)
    assert data["frontmatter"]["metadata"] == {"author": "hf", "version": "2"}
    assert data["frontmatter"]["compatibility"] == "Python 3.10+"
    assert data["meta"]["metadata"]["generated_by"] == "claude-sonnet"
    code, out, err = run_cli(["skills", "show", str(folder)], capsys, monkeypatch)
    assert code == 0, err
    for text in ("metadata.author", "Python 3.10+", "skill_meta.json metadata.generated_by", "claude-sonnet"):
        assert text in out
