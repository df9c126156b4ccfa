"""``upskill-hub tune --description``: a seed instead of SKILL.md's text, bad seeds in one line, the report."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "triggering"))
from test_tune_run import GOOD, KEY, MODEL, TEACHER, VAGUE, ScriptedTeacher, write_skill  # noqa: E402

from upskill_hub.testing.llm_server import running_llm_server  # noqa: E402

SEED = "Turns sheet data into records."  # catches 3 of the 10 should-trigger queries


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("UPSKILL_HUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "220")


def _run(tmp_path: Path, skill: Path, teacher: ScriptedTeacher, capsys, monkeypatch, *extra: str):
    from cli_runner import run_cli

    with running_llm_server(teacher) as srv:
        code, out, err = run_cli(
            ["tune", str(skill), "-m", MODEL, "--teacher", TEACHER, "--base-url", srv.openai_base_url, "--runs", "1",
             "--distractors", "none", "-o", str(tmp_path / "out"), *extra], capsys, monkeypatch,
        )  # fmt: skip
    return code, out, err, srv


def test_description_seeds_the_loop_and_leaves_skill_md_alone(tmp_path: Path, capsys, monkeypatch) -> None:
    skill = write_skill(tmp_path / "skills")
    before = (skill / "SKILL.md").read_bytes()
    teacher = ScriptedTeacher([GOOD])
    code, out, err, _ = _run(tmp_path, skill, teacher, capsys, monkeypatch, "--description", SEED)
    assert code == 0, err
    assert (skill / "SKILL.md").read_bytes() == before
    (run_dir,) = (tmp_path / "out").iterdir()
    res = json.loads((run_dir / "tune_result.json").read_text())
    assert res["candidates"][0]["description"] == SEED and res["started_from"] == "--description"
    assert f"<description>{SEED}</description>" in teacher.asked[0] and VAGUE not in teacher.asked[0].split("<skill_md>")[0]
    assert "seed (--description)" in out and f"before: {SEED}" in out
    assert json.loads((run_dir / "tune-plan.json").read_text())["seed_description"] == SEED


def test_description_from_a_file_is_folded_to_one_line(tmp_path: Path, capsys, monkeypatch) -> None:
    skill = write_skill(tmp_path / "skills")
    seed_file = tmp_path / "seed.txt"
    seed_file.write_text("Turns sheet data\n  into records.\n")
    code, out, err, _ = _run(tmp_path, skill, ScriptedTeacher([GOOD]), capsys, monkeypatch, "--description",
                             f"@{seed_file}", "--format", "json")  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    assert data["candidates"][0]["description"] == SEED and data["started_from"] == "--description"
    assert Path(data["report"]).name == "tune_report.md" and Path(data["report"]).is_file()


def test_a_bad_description_is_one_line_and_nothing_is_written_or_asked(tmp_path: Path, capsys, monkeypatch) -> None:
    from cli_runner import assert_one_line_errors

    skill = write_skill(tmp_path / "skills")
    before = (skill / "SKILL.md").read_bytes()
    (tmp_path / "latin1.txt").write_bytes(b"caf\xe9 sheets")
    (tmp_path / "blank.txt").write_text("  \n\n")
    (tmp_path / "folder").mkdir()
    with running_llm_server(ScriptedTeacher([GOOD])) as srv:
        common = ["tune", str(skill), "-m", MODEL, "--teacher", TEACHER, "--base-url", srv.openai_base_url,
                  "-o", str(tmp_path / "out"), "--distractors", "none", "--write"]  # fmt: skip
        cases = [
            ([*common, "--description", ""], "the description is empty"),
            ([*common, "--description", "   "], "the description is empty"),
            ([*common, "--description", "x" * 1025], "1025 characters; the spec allows 1024"),
            ([*common, "--description", "bad \x1b[31m text"], "U+001B"),
            ([*common, "--description", f"@{tmp_path / 'missing.txt'}"], "missing.txt"),
            ([*common, "--description", f"@{tmp_path / 'folder'}"], "folder"),
            ([*common, "--description", f"@{tmp_path / 'latin1.txt'}"], "is not UTF-8 text"),
            ([*common, "--description", f"@{tmp_path / 'blank.txt'}"], "the description is empty"),
            ([*common, "--description", "@"], "names no file"),
        ]
        assert_one_line_errors(cases, capsys, monkeypatch)
        assert srv.completion_requests == []
    assert not (tmp_path / "out").exists()
    assert (skill / "SKILL.md").read_bytes() == before


def test_the_report_lists_every_iteration_and_keeps_hostile_text_inert(tmp_path: Path, capsys, monkeypatch) -> None:
    skill = write_skill(tmp_path / "skills")
    hostile = "Sheets ```` | <script>x</script> # [link](http://x) to records."
    code, out, err, _ = _run(tmp_path, skill, ScriptedTeacher(["", GOOD]), capsys, monkeypatch,
                             "--description", hostile, "--held-out", "0.5")  # fmt: skip
    assert code == 0, err
    (run_dir,) = (tmp_path / "out").iterdir()
    report = (run_dir / "tune_report.md").read_text()
    res = json.loads((run_dir / "tune_result.json").read_text())
    # The seed sits whole in a fence longer than its own backtick run; the table has one row per candidate.
    assert f"`````text\n{hostile}\n`````" in report
    rows = [line for line in report.splitlines() if line.startswith("| ") and "candidate |" not in line]
    assert len(rows) == len(res["candidates"]) == 2 and all(row.count(" | ") == 9 for row in rows)
    assert "## Iteration 1: proposal rejected, not scored" in report and "why: the description is empty" in report
    assert report.count("★ winner") == 1 and "<script>" not in report.replace(hostile, "")
    assert "| seed \\(--description\\) |" not in report and "| seed (--description) |" in report
    assert "Report of every iteration:" in out and str(run_dir / "tune_report.md") in out.replace("\n", "")


def test_a_symlink_planted_at_the_report_is_replaced_never_written_through(tmp_path: Path, capsys, monkeypatch) -> None:
    from cli_runner import run_cli

    skill = write_skill(tmp_path / "skills")
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me\n")
    with running_llm_server(ScriptedTeacher([GOOD])) as srv:
        args = ["tune", str(skill), "-m", MODEL, "--teacher", TEACHER, "--base-url", srv.openai_base_url, "--runs", "1",
                "--distractors", "none", "-o", str(tmp_path / "out")]  # fmt: skip
        code, _, err = run_cli(args, capsys, monkeypatch)
        assert code == 0, err
        (run_dir,) = (tmp_path / "out").iterdir()
        (run_dir / "tune_report.md").unlink()
        (run_dir / "tune_report.md").symlink_to(outside)
        code, _, err = run_cli([*args, "--resume"], capsys, monkeypatch)
        assert code == 0, err
    assert outside.read_text() == "keep me\n" and not (run_dir / "tune_report.md").is_symlink()
    assert "## Iteration 1: candidate 1 (iteration 1) ★ winner" in (run_dir / "tune_report.md").read_text()


def test_a_teachers_control_characters_reach_neither_the_report_nor_its_next_request(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    skill = write_skill(tmp_path / "skills")
    teacher = ScriptedTeacher(["Sheets \u202e\x1b[31m JSON", GOOD])
    code, _, err, _ = _run(tmp_path, skill, teacher, capsys, monkeypatch)
    assert code == 0, err
    (run_dir,) = (tmp_path / "out").iterdir()
    report = (run_dir / "tune_report.md").read_text()
    assert "U+202E" in report and "\\u202e" in report
    for text in (report, teacher.asked[1]):
        assert "\u202e" not in text and "\x1b" not in text
    assert '<rejected iteration="1">Sheets \\u202e\\x1b[31m JSON</rejected>' in teacher.asked[1]
