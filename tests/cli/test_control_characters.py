"""Issue 33 class 9: terminal controls in a skill's text never reach a terminal raw.

An ESC/OSC sequence, a C1 CSI (``\\x9b``) or a right-to-left override in a description,
a metadata value or the body used to print raw in ``skills list`` / ``skills show`` and pass
``skills validate``; a generated skill could carry a teacher's U+202E into SKILL.md.
"""

from __future__ import annotations

from pathlib import Path

from cli_runner import run_cli

from upskill_hub.generate.teacher import build_skill

RAW = ("\x1b", "\x9b", "\u202e", "\x07")


def _skill(root: Path, description: str, body: str = "# Demo\n\nSteps.\n", meta: str = "") -> Path:
    d = root / "demo"
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text(f'---\nname: demo\ndescription: "{description}"\n{meta}---\n\n{body}', encoding="utf-8")
    return d


def test_validate_refuses_controls_in_description_and_metadata(tmp_path: Path, capsys, monkeypatch) -> None:
    d = _skill(tmp_path, "Use for demos \\e]0;pwned\\a now", meta='metadata:\n  k: "a\\x9bb"\n')
    code, out, err = run_cli(["skills", "validate", str(d)], capsys, monkeypatch)
    assert code == 1
    assert "description: control character U+001B" in out + err
    assert "metadata.k: control character U+009B" in out + err
    assert not any(c in out + err for c in RAW)


def test_body_controls_warn_and_fail_strict(tmp_path: Path, capsys, monkeypatch) -> None:
    d = _skill(tmp_path, "Use for demos.", body="# Demo\n\nSteps \x1b[2J here.\n")
    code, out, err = run_cli(["skills", "validate", str(d)], capsys, monkeypatch)
    assert code == 0 and "body: control character U+001B" in out + err
    code, out, err = run_cli(["skills", "validate", "--strict", str(d)], capsys, monkeypatch)
    assert code == 1 and "body: control character U+001B" in out + err


def test_list_and_show_escape_controls_and_markup(tmp_path: Path, capsys, monkeypatch) -> None:
    d = _skill(
        tmp_path,
        "Demo \\e[31mred\\u202egpj.sh [bold]x[/bold]",
        body="# Demo\n\nStep \x1b]8;;http://evil\x07link\n",
        meta='metadata:\n  k: "a\\x9bb"\n',
    )
    for args in (["skills", "list", str(tmp_path)], ["skills", "show", str(d)]):
        code, out, err = run_cli(args, capsys, monkeypatch)
        assert code == 0, err
        assert not any(c in out for c in RAW), (args, out)
        assert "\\x1b[31mred\\u202egpj.sh" in out
        assert "[bold]x[/bold]" in out  # a description is text, never Rich markup
    assert "\\x9b" in out and "\\x1b]8;;http://evil\\x07" in out


def test_generate_refuses_a_teacher_skill_with_controls() -> None:
    md = "---\nname: demo\ndescription: Use for demos \u202egpj.sh\n---\n\n# Demo\n\nSteps.\n"
    skill, problems = build_skill({"SKILL.md": md})
    assert skill is None and any("U+202E" in p for p in problems)
    skill, problems = build_skill({"SKILL.md": md.replace("\u202egpj.sh", "").replace("Steps.", "Steps \x1b[2J.")})
    assert skill is None and any("body" in p and "U+001B" in p for p in problems)
