"""A command line click refuses is one ``Error:`` line, exit 1, as the README promises
(issue 48 item 8): not Typer's boxed error (exit 2), not 200 lines of help."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import run_cli

README = Path(__file__).resolve().parents[2] / "README.md"


def _one_error_line(args: list[str], capsys, monkeypatch) -> str:
    code, out, err = run_cli(args, capsys, monkeypatch)
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1 and lines[0].startswith("Error: "), (args, code, out, err)
    assert "Traceback" not in err and "╭" not in err and out == "", (args, out, err)
    return lines[0]


def test_the_readme_promises_one_line_and_exit_1() -> None:
    assert "errors are one line (`Error: ...`, exit 1)" in README.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("args", "expected", "command"),
    [
        (
            ["eval", "skills/x", "--modle", "local"],
            "No such option: --modle. Did you mean --mode or --model?",
            "eval",
        ),
        (["eval", "skills/x", "--zzz"], "No such option: --zzz.", "eval"),
        (["kernels", "pushh"], "No such command 'pushh'. Did you mean 'push'?", "kernels"),
        (["eval", "--runs", "abc", "skills/x"], "Invalid value for '--runs'", "eval"),
        (["eval", "--runs"], "Option '--runs' requires an argument.", "eval"),
    ],
)
def test_a_refused_command_line_is_one_line_pointing_to_help(
    args, expected, command, capsys, monkeypatch
) -> None:
    line = _one_error_line(args, capsys, monkeypatch)
    assert expected in line and line.endswith(f"See 'upskill-hub {command} --help'."), line


@pytest.mark.parametrize(
    ("args", "missing", "command"),
    [
        (["eval"], "SKILL", "eval"),
        (["skills", "install"], "'SOURCE'", "skills install"),  # as --help's usage line names it
        (["check"], "'PATHS'", "check"),
        (["pull"], "'REPO'", "pull"),
    ],
)
def test_a_missing_argument_is_named_not_answered_with_the_help(
    args, missing, command, capsys, monkeypatch
) -> None:
    line = _one_error_line(args, capsys, monkeypatch)
    assert "issing argument" in line and missing in line and f"'upskill-hub {command} --help'" in line, line


def test_help_and_a_group_without_its_command_still_show_the_help(capsys, monkeypatch) -> None:
    for args in (["eval", "--help"], ["kernels"], []):
        code, out, err = run_cli(args, capsys, monkeypatch)
        assert code == 0 and "Usage:" in out and err == "", (args, code, err)
