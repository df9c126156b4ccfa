"""A skill's tests file that cannot be read is named once in the error (issue 48 item 13:
"evals/evals.json: evals/evals.json: not valid JSON")."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import run_cli

from upskill_hub.skill import load_skill

SKILL_MD = (
    "---\nname: my-skill\ndescription: Use when testing how a broken tests file is reported.\n---\n\nDo it.\n"
)


@pytest.mark.parametrize(
    ("rel", "text", "expected"),
    [
        ("evals/evals.json", "{ nope", "evals/evals.json: not valid JSON ("),
        ("skill_meta.json", "{ nope", "skill_meta.json: not valid JSON ("),
        ("evals/evals.json", b"\xff\xfe{}", "evals/evals.json: not valid UTF-8"),
        (
            "evals/evals.json",
            '{"skill_name": "my-skill", "evals": [{"id": 1, "prompt": "x", "expected_output": "y", "assertions": [5]}]}',
            "evals/evals.json: evals[0].assertions: ",
        ),
    ],
)
def test_the_tests_file_is_named_once(rel, text, expected, tmp_path: Path, capsys, monkeypatch) -> None:
    skill = tmp_path / "my-skill"
    (skill / "evals").mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL_MD)
    target = skill / rel
    target.write_bytes(text if isinstance(text, bytes) else text.encode())
    res = load_skill(skill)
    shown = [str(p) for p in res.errors]
    assert len(shown) == 1 and expected in shown[0] and shown[0].count(Path(rel).name) == 1, shown
    code, _out, err = run_cli(["skills", "validate", str(skill)], capsys, monkeypatch)
    assert code == 1 and expected in err and err.count(Path(rel).name) == 1, err
