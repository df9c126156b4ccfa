"""Skill rules as the Agent Skills reference validator (skills-ref) reads them.

Unicode names after NFKC, a lowercase skill.md, duplicate keys refused, and values PyYAML
would type (numbers, booleans, dates) read as their written text in lenient mode.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest

from upskill_hub.skill import find_skills, load_skill, name_problem


def write(folder: Path, text: str, file: str = "SKILL.md") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / file).write_text(text, encoding="utf-8")
    return folder


def md(name: str, extra: str = "") -> str:
    return f"---\nname: {name}\ndescription: Use it when testing.\n{extra}---\n\nBody.\n"


@pytest.mark.parametrize("name", ["数据-分析", "café", "навык-1", "σκιλ", "ｒｅｌｕ"])
def test_names_in_any_script_are_valid(tmp_path: Path, name: str) -> None:
    folder = write(tmp_path / unicodedata.normalize("NFKC", name), md(name))
    res = load_skill(folder, strict=True)
    assert res.ok, [str(p) for p in res.problems]


def test_nfkc_equivalent_folder_name_matches(tmp_path: Path) -> None:
    decomposed = unicodedata.normalize("NFD", "café")
    assert decomposed != "café"
    folder = write(tmp_path / decomposed, md("café"))
    assert load_skill(folder).ok


@pytest.mark.parametrize(
    ("name", "needle"),
    [("Café", "capitals"), ("名前!", "may only contain"), ("-日本", "start or end"), ("a--b", "'--'"),
     ("é" * 65, "65 characters")],
)
def test_unicode_names_still_follow_the_rules(name: str, needle: str) -> None:
    assert needle in (name_problem(name) or "")


def test_lowercase_skill_md_is_read_with_a_warning(tmp_path: Path) -> None:
    folder = write(tmp_path / "demo", md("demo"), file="skill.md")
    res = load_skill(folder)
    assert res.ok and res.skill is not None
    assert "Body." in res.skill.prompt_text()
    (warning,) = res.warnings
    assert warning.field == "skill.md" and "rename it" in warning.message
    assert find_skills(tmp_path) == [folder]
    assert load_skill(folder / "skill.md").ok  # pointing at the file works too


def test_hidden_collection_folders_are_listed(tmp_path: Path) -> None:
    # openai/skills-style: skills/.curated/<skill>/ and skills/.system/<skill>/
    curated = write(tmp_path / ".curated" / "pdf", md("pdf"))
    system = write(tmp_path / ".system" / "skill-creator", md("skill-creator"))
    plain = write(tmp_path / "plain", md("plain"))
    (plain / "references" / "nested").mkdir(parents=True)
    write(plain / "references" / "nested", md("nested"))  # inside a skill: not a skill of its own
    (tmp_path / ".git" / "x").mkdir(parents=True)
    write(tmp_path / ".git" / "x", md("x"))
    assert find_skills(tmp_path) == [curated, system, plain]


@pytest.mark.parametrize(
    "text",
    [
        md("demo", "name: demo\n"),
        md("demo", "metadata:\n  author: a\n  author: b\n"),
    ],
    ids=["top-level", "inside-metadata"],
)
def test_duplicate_keys_are_rejected(tmp_path: Path, text: str) -> None:
    res = load_skill(write(tmp_path / "demo", text))
    assert res.skill is None
    (err,) = res.errors
    assert err.field == "frontmatter" and "duplicate key" in err.message and "remove one" in err.message


def test_lenient_mode_reads_typed_scalars_as_written_with_a_warning(tmp_path: Path) -> None:
    folder = write(tmp_path / "demo", md("demo", "license: 2024\nmetadata:\n  version: 1.10\n  beta: yes\n"))
    res = load_skill(folder)
    assert res.ok, [str(p) for p in res.errors]
    assert res.skill.metadata == {"version": "1.10", "beta": "yes"}  # the text, not 1.1 / True
    assert res.skill.license == "2024"
    warnings = {p.field: p.message for p in res.warnings}
    assert warnings["metadata.version"] == "read as the string '1.10': YAML reads 1.10 as a number; " \
        'quote it: version: "1.10"'
    assert 'quote it: beta: "yes"' in warnings["metadata.beta"]
    assert 'quote it: license: "2024"' in warnings["license"]


def test_strict_mode_refuses_them_and_says_how_to_quote(tmp_path: Path) -> None:
    folder = write(tmp_path / "123", md("123", "metadata:\n  version: 1.0\n"))
    errors = {p.field: p.message for p in load_skill(folder, strict=True).errors}
    assert errors["name"] == 'must be a string (YAML reads 123 as a number; quote it: name: "123")'
    assert 'quote it: version: "1.0"' in errors["metadata"]
    assert load_skill(folder).ok  # lenient: "123" it is, as the reference validator reads it
