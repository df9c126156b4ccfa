"""Issue 28 finding 6: `skills list`, `check`, `install` and `push` find skills with one walker.

Trees laid out like openai/skills (``skills/.curated``, ``.system``, ``.experimental``) and
anthropics/claude-plugins-official (``.claude-plugin/marketplace.json`` and
``plugins/<plugin>/skills/<skill>/``), with same-named skills in different folders.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import run_cli

from upskill_hub.corpus import find_items
from upskill_hub.errors import UpskillError
from upskill_hub.skill import skills_in

MD = "---\nname: {name}\ndescription: {desc} Use when testing.\n---\n\n# {name}\n\nSteps.\n"


def _skill(folder: Path, name: str, desc: str = "Does things.") -> Path:
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(MD.format(name=name, desc=desc))
    return folder


@pytest.fixture
def openai_tree(tmp_path: Path) -> Path:
    root = tmp_path / "openai-skills"
    for group, names in {".curated": ["gh-fix-ci", "notion"], ".system": ["skill-creator"],
                         ".experimental": ["notion"]}.items():  # fmt: skip
        for n in names:
            _skill(root / "skills" / group / n, n, f"{group} {n}.")
    (root / "README.md").write_text("# Skills\n")
    return root


@pytest.fixture
def plugin_tree(tmp_path: Path) -> Path:
    root = tmp_path / "claude-plugins"
    (root / ".claude-plugin").mkdir(parents=True)
    (root / ".claude-plugin" / "marketplace.json").write_text(json.dumps({
        "name": "official", "owner": {"name": "x"},
        "plugins": [{"name": "docs", "source": "./plugins/docs"}, {"name": "ops", "source": "./plugins/ops"}],
    }))  # fmt: skip
    for plugin, names in {"docs": ["pdf", "xlsx"], "ops": ["pdf", "deploy"]}.items():
        (root / "plugins" / plugin / ".claude-plugin").mkdir(parents=True)
        (root / "plugins" / plugin / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": plugin}))
        for n in names:
            _skill(root / "plugins" / plugin / "skills" / n, n, f"{plugin} {n}.")
    return root


@pytest.mark.parametrize("tree", ["openai_tree", "plugin_tree"])
def test_finding_6_skills_list_at_repo_root_lists_every_skill_check_finds(tree: str, request, capsys, monkeypatch):
    root: Path = request.getfixturevalue(tree)
    checked = sorted(p.relative_to(root).as_posix() for kind, p in find_items(root) if kind == "skill")
    code, out, err = run_cli(["skills", "list", str(root), "--format", "json"], capsys, monkeypatch)
    assert code == 0, err
    listed = sorted(r["path"] for r in json.loads(out))
    assert listed == checked and len(listed) == 4
    code, out, err = run_cli(["check", str(root), "--format", "json"], capsys, monkeypatch)
    data = json.loads(out)
    items = data if isinstance(data, list) else data.get("items", data.get("verdicts", []))
    assert len([i for i in items if i.get("kind") == "skill"]) == 4


@pytest.mark.parametrize("tree", ["openai_tree", "plugin_tree"])
def test_finding_6_quiet_prints_one_line_per_skill_folder(tree: str, request, capsys, monkeypatch):
    root: Path = request.getfixturevalue(tree)
    code, out, err = run_cli(["skills", "list", str(root), "--format", "quiet"], capsys, monkeypatch)
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == 4 and len(set(lines)) == 4
    code, out, err = run_cli(["skills", "list", str(root)], capsys, monkeypatch)
    # the human table labels rows by path, so the two same-named skills stay apart
    assert out.count("pdf") + out.count("notion") >= 4


def test_finding_6_install_and_push_find_skills_like_list(plugin_tree: Path, tmp_path: Path, capsys, monkeypatch):
    with pytest.raises(UpskillError, match="two skills named 'pdf': plugins/docs/skills/pdf and plugins/ops/skills/pdf"):
        skills_in(plugin_tree)
    picked = skills_in(plugin_tree, ["plugins/ops/skills/pdf", "deploy"])
    assert [(s.name, s.path.parent.parent.name) for s in picked] == [("pdf", "ops"), ("deploy", "ops")]
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(
        ["skills", "install", str(plugin_tree), "--skill", "plugins/docs/skills/pdf", "--skill", "xlsx", "--claude"],
        capsys, monkeypatch,
    )  # fmt: skip
    assert code == 0, err
    assert (tmp_path / ".claude" / "skills" / "pdf" / "SKILL.md").read_text().count("docs pdf.") == 1
    assert (tmp_path / ".claude" / "skills" / "xlsx" / "SKILL.md").is_file()
    from upskill_hub.hub.push import load_local

    with pytest.raises(UpskillError, match="two skills named 'pdf'"):
        load_local([plugin_tree], [])
    skills, _ = load_local([plugin_tree / "plugins" / "docs"], [])
    assert sorted(s.name for s in skills) == ["pdf", "xlsx"]
