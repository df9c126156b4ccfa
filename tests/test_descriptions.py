"""Rewriting a description byte for byte, and the description checks of ``skills validate``."""

from __future__ import annotations

import json

import pytest
from cli_runner import run_cli as run_main

from upskill_hub.descriptions import (
    description_warnings,
    library_description_problems,
    near_duplicates,
    replace_description,
)
from upskill_hub.errors import UpskillError
from upskill_hub.skill import Skill, parse_frontmatter

NEW = 'Convert CSV files to JSON. Use when the user asks to turn a "table" into JSON: keys from the header.'

STYLES = {
    "plain": "description: Does CSV things\n",
    "single": "description: 'Does CSV things'\n",
    "double": 'description: "Does CSV things"\n',
    "multi-line plain": "description: Does CSV\n  things over two lines\n",
    "folded": "description: >\n  Does CSV\n  things\n",
    "literal": "description: |\n  Does CSV\n  things\n\n",
    "next line": "description:\n  Does CSV things\n",
}


@pytest.mark.parametrize("style", list(STYLES))
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_only_the_description_changes_byte_for_byte(style, newline):
    head = "\ufeff---\n# a comment the user wrote\nname: csv-tool   # trailing comment\n"
    tail = "license: MIT\nmetadata:\n  owner: 'me'\n---\n\n# CSV tool\n\nBody text.  \n"
    text = (head + STYLES[style] + tail).replace("\n", newline)
    out = replace_description(text, NEW)
    fm, body, _ = parse_frontmatter(out)
    assert fm["description"] == NEW and fm["name"] == "csv-tool" and fm["metadata"] == {"owner": "me"}
    # Every byte before the old value and after it is the same.
    start = text.index("description:") + len("description:")
    prefix = out[:start]
    assert prefix == text[:start]
    old_end = text.index("license: MIT")
    new_end = out.index("license: MIT")
    assert out[new_end:] == text[old_end:]
    changed = out[start:new_end]
    assert changed.strip(" \r\n") == json.dumps(NEW)  # one double-quoted line in place of the old value


def test_bad_descriptions_and_files_are_refused_without_change():
    text = "---\nname: a\ndescription: x\n---\nbody\n"
    for bad, why in (("", "empty"), ("x" * 1025, "1025 characters"), ("a\x00b", "control")):
        with pytest.raises(UpskillError, match=why):
            replace_description(text, bad)
    with pytest.raises(UpskillError, match="no frontmatter"):
        replace_description("name: a\n", "ok")
    with pytest.raises(UpskillError, match="exactly one text 'description'"):
        replace_description("---\nname: a\n---\n", "ok")
    with pytest.raises(UpskillError, match="closing"):
        replace_description("---\nname: a\ndescription: x\n", "ok")


def test_when_clause_and_near_duplicates():
    assert description_warnings("Formats SQL queries.")  # what, not when
    assert not description_warnings("Formats SQL queries. Use when the user pastes SQL.")
    assert not description_warnings("Use this for formatting SQL.")
    lib = {
        "sql-format": "Format and indent SQL queries for readability. Use when the user pastes SQL.",
        "sql-pretty": "Format and indent SQL queries for readability. Use when SQL is pasted.",
        "csv-json": "Convert CSV files to JSON. Use when the user has a CSV.",
    }
    (pair,) = near_duplicates(lib)
    assert pair[:2] == ("sql-format", "sql-pretty") and pair[2] >= 0.6
    probs = library_description_problems({f"skills/{k}": (k, v) for k, v in lib.items()})
    assert [p.severity for p in probs["skills/sql-format"]] == ["warning"]
    assert "'sql-pretty'" in probs["skills/sql-format"][0].message
    assert probs["skills/csv-json"] == []


def test_validate_warns_but_passes(tmp_path, capsys, monkeypatch):
    for name, desc in (
        ("sql-format", "Format and indent SQL queries for readability."),
        ("sql-pretty", "Format and indent SQL queries for readability, nicely."),
    ):
        Skill.create(name, desc, "Body.\n").write(tmp_path / name)
    args = ["skills", "validate", str(tmp_path / "sql-format"), str(tmp_path / "sql-pretty")]
    code, out, err = run_main(args, capsys, monkeypatch)
    assert code == 0, err
    assert "not when to use it" in err and "nearly the same as the description of 'sql-pretty'" in err
    code, out, err = run_main([*args, "--strict"], capsys, monkeypatch)
    assert code == 0 and "warning" in err  # advice, not an error, under --strict too
    code, out, err = run_main([*args, "--format", "agent"], capsys, monkeypatch)
    assert "nearly the same" in out


def test_write_description_changes_only_those_bytes_on_disk(tmp_path):
    import os

    from upskill_hub.descriptions import write_description

    folder = tmp_path / "csv-tool"
    folder.mkdir()
    original = (
        b"---\r\nname: csv-tool\r\n# keep me\r\ndescription: >-\r\n  Does CSV\r\n  things\r\nlicense: MIT\r\n---\r\n"
        b"\r\n# Body \xc3\xa9\r\n"
    )
    (folder / "SKILL.md").write_bytes(original)
    os.chmod(folder / "SKILL.md", 0o640)
    assert write_description(folder, NEW)
    after = (folder / "SKILL.md").read_bytes()
    start = original.index(b"description:") + len(b"description:")
    end_old, end_new = original.index(b"license: MIT"), after.index(b"license: MIT")
    assert after[:start] == original[:start] and after[end_new:] == original[end_old:]
    assert after[start:end_new] == b" " + json.dumps(NEW, ensure_ascii=False).encode() + b"\r\n"
    assert (folder / "SKILL.md").stat().st_mode & 0o777 == 0o640
    assert not write_description(folder, NEW)  # already so: nothing written
    with pytest.raises(UpskillError, match="1025 characters"):
        write_description(folder, "x" * 1025)
    assert (folder / "SKILL.md").read_bytes() == after
