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
    (d / "SKILL.md").write_text(
        f'---\nname: demo\ndescription: "{description}"\n{meta}---\n\n{body}', encoding="utf-8"
    )
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
    skill, problems = build_skill(
        {"SKILL.md": md.replace("\u202egpj.sh", "").replace("Steps.", "Steps \x1b[2J.")}
    )
    assert skill is None and any("body" in p and "U+001B" in p for p in problems)


# --------------------------------------------------------------------------- issue 45 (round 4)
#: What round 4 sent: an OSC title, a clear-screen, a C1 CSI, a right-to-left override, a newline.
HOSTILE = "ok \x1b]0;pwned\x07 \x1b[2J x\x9by \u202egpj.sh\nsecond line"


def _assert_escaped(out: str) -> None:
    assert not any(c in out for c in ("\x1b", "\x9b", "\u202e", "\x07")), out
    assert "\\x1b]0;pwned" in out and "\\x1b[2J" in out and "\\x9b" in out and "\\u202e" in out


def _assert_one_line(out: str) -> None:
    """The newline is shown escaped: the text never starts a line of its own."""
    lines = [line for line in out.splitlines() if "second line" in line]
    assert lines and all("\\x0asecond line" in line for line in lines), out


def test_failing_queries_table_escapes_a_query(capsys) -> None:
    """``triggers``' "queries that fail at threshold" table printed a query raw (round 3 regressed)."""
    from types import SimpleNamespace

    from upskill_hub.cli._output import make_console
    from upskill_hub.rundir.trigger_rows import QueryRate
    from upskill_hub.triggering.description_report import print_query_verdicts

    q = QueryRate("m", "q1", HOSTILE, True, 3, 0, 0.0, 0.0, 0.56, False)
    res = SimpleNamespace(queries=[q], failing=[q], skill_name="demo", threshold=0.5, run_dir=Path("run"))
    print_query_verdicts(res, make_console())
    out = capsys.readouterr().out
    _assert_escaped(out)
    _assert_one_line(out)


def test_every_cli_console_escapes_text_it_did_not_style(capsys) -> None:
    """The shared console escapes any cell of any table, so a new table cannot regress."""
    from rich.table import Table
    from rich.text import Text

    from upskill_hub.cli._output import make_console

    t = Table("name", title="Any table")
    t.add_row(Text(HOSTILE))
    make_console().print(t)
    make_console(stderr=True).print(HOSTILE, markup=False)
    captured = capsys.readouterr()
    _assert_escaped(captured.out)
    _assert_escaped(captured.err)


def test_eval_scenarios_prints_a_scenario_id_escaped_on_one_line(tmp_path: Path, capsys, monkeypatch) -> None:
    """An ``eval --scenarios`` id with ESC/OSC and a newline was printed raw."""
    import json

    from upskill_hub.testing.llm_server import running_llm_server

    root = tmp_path / "repo"
    skill = root / "skills" / "demo"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: demo\ndescription: Use for demos.\n---\n\n# Demo\n\nSay hi.\n"
    )
    (root / "smoke.json").write_text(
        json.dumps({"cases": [{"input": "Q1", "verifiers": [{"type": "contains", "values": ["hi"]}]}]})
    )
    (root / "evals.json").write_text(
        json.dumps({"scenarios": [{"id": HOSTILE, "skills": ["skills/demo"], "tests": "smoke.json"}]})
    )
    monkeypatch.setenv("OPENAI_API_KEY", "sk-" + "test-0123456789abcdefghijklmnop")
    with running_llm_server(lambda system, messages, params: "hi") as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        code, out, err = run_cli(
            ["eval", "--scenarios", str(root / "evals.json"), "-m", "openai:gpt-4.1-mini", "-o", str(tmp_path / "out"),
             "--no-plots", "--format", "human"], capsys, monkeypatch,
        )  # fmt: skip
    assert code == 0, err
    _assert_escaped(out + err)
    _assert_one_line(out + err)
