"""Issue 37, items 4 and 6: output that scripts and pipes read, and help that reads as written.

* ``hub serve`` piped prints its ``export HF_ENDPOINT=… HF_HUB_DISABLE_XET=1`` line whole.
* ``--help`` paragraphs wrap once, for the width they are shown at (never mid-sentence
  where the source had a line break); switches show no ``<bool>``.
* ``skills validate`` error lines start with ``Error:``, as the README promises.
* ``kernels check`` says what a local build's glibc means once, in plain words.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from cli_runner import run_cli
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[2]


def _piped_env() -> dict[str, str]:
    """The environment of ``upskill-hub … | cat``: no width hint, no colour."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "TERMINAL_WIDTH")}
    env["NO_COLOR"] = "1"
    return env


def test_hub_serve_piped_prints_the_export_line_whole(tmp_path: Path) -> None:
    cmd = [
        sys.executable,
        "-m",
        "upskill_hub.cli.app",
        "hub",
        "serve",
        "--root",
        str(tmp_path),
        "--port",
        "0",
    ]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=_piped_env()
    )
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # the server prints then serves: read until the line or EOF
            lines.append(line.rstrip("\n"))
            if "HF_HUB_DISABLE_XET" in line or len(lines) > 10:
                break
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    pointed = [ln for ln in lines if "export HF_ENDPOINT=" in ln]
    assert pointed, lines
    assert re.fullmatch(
        r"Point clients at it: export HF_ENDPOINT=http://127\.0\.0\.1:\d+ HF_HUB_DISABLE_XET=1", pointed[0]
    ), lines


def _commands() -> list[list[str]]:
    sys.path.insert(0, str(ROOT / "docs" / "hooks"))
    try:
        import commands
    finally:
        sys.path.pop(0)
    return [[]] + [path for path, _cmd in commands.walk()]


def _help(path: list[str], width: int = 80) -> str:
    from upskill_hub.cli.app import app

    env = {"COLUMNS": str(width), "NO_COLOR": "1", "TERMINAL_WIDTH": str(width)}
    result = CliRunner().invoke(app, [*path, "--help"], env=env)
    assert result.exit_code == 0, (path, result.output)
    return result.output


def _prose(text: str) -> list[str]:
    """The help's text lines before its first panel, without Rich's one-space margin."""
    head = text.split("╭", 1)[0]
    return [ln[1:].rstrip() if ln.startswith(" ") else ln.rstrip() for ln in head.splitlines()]


def _early_breaks(lines: list[str], width: int) -> list[tuple[str, str]]:
    """Pairs of prose lines where the first ended although the next word would have fitted.

    Text wrapped once, for ``width``, breaks a line only when the next word does not fit;
    a break left from the source's own line breaks ends a line early, mid-sentence.
    """
    bad = []
    for line, following in zip(lines, lines[1:], strict=False):
        if (
            not line.strip()
            or not following.strip()
            or following.startswith("    ")
            or line.startswith("    ")
        ):
            continue  # paragraph ends, and verbatim blocks (commands, examples) keep their lines
        if len(line) + 1 + len(following.split()[0]) <= width - 2:
            bad.append((line, following))
    return bad


def test_help_paragraphs_wrap_once_for_every_command() -> None:
    failures = {}
    for path in _commands():
        bad = _early_breaks(_prose(_help(path)), 80)
        if bad:
            failures[" ".join(path) or "(root)"] = bad[:2]
    assert not failures, failures


def test_hub_serve_help_reads_in_whole_sentences() -> None:
    text = " ".join(_prose(_help(["hub", "serve"])))
    assert "Repo types: model, dataset, space, kernel." in text
    assert "datasets and kernels clients" in text
    lines = _prose(_help(["hub", "serve"]))
    assert (
        "    export HF_HUB_DISABLE_XET=1   # LFS through the Git LFS API, not Xet" in lines
    )  # kept as written


def test_help_shows_switches_as_switches_and_values_with_their_type() -> None:
    for path in _commands():
        text = _help(path, width=200)
        assert "<bool>" not in text, (path, text)
    validate = _help(["skills", "validate"], width=200)
    assert re.search(r"│ --strict\s+Treat keys outside the spec as errors", validate), validate
    assert re.search(r"--format\s+<auto\|human\|agent\|json\|quiet>", validate), validate
    serve = _help(["hub", "serve"], width=200)
    assert re.search(r"--port\s+<int>", serve) and re.search(r"--root\s+DIR", serve), serve


@pytest.mark.parametrize("target", ["README.md", "pyproject.toml"])
def test_validate_of_a_file_prints_the_error_prefix(target: str, capsys, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    code, out, err = run_cli(["skills", "validate", target], capsys, monkeypatch)
    assert code == 1 and out == ""
    assert err.splitlines() == [f"Error: {target}: path: is not a skill folder (expected a directory)"]


def _abi_note(variant: str):
    from upskill_hub._util.problems import Problem

    return Problem(
        f"build/{variant}",
        "abi",
        "local build targets manylinux_2_36 (this machine's glibc), not manylinux_2_28: "
        "use --builder nix for a portable build",
        "warning",
    )


def test_kernels_check_says_the_local_glibc_note_once_in_plain_words(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    from upskill_hub.kernels import check

    variants = ["torch213-cxx11-cpu-x86_64-linux", "torch212-cxx11-cpu-x86_64-linux"]
    monkeypatch.setattr(check, "check_project", lambda path, manylinux=None: [_abi_note(v) for v in variants])
    code, out, err = run_cli(["kernels", "check", str(tmp_path)], capsys, monkeypatch)
    assert code == 0 and "✓" in out
    (note,) = err.splitlines()
    assert note.startswith("note: built with the local builder, so it needs this machine's glibc or newer")
    assert "--builder nix" in note and "manylinux_2_36" not in note
    code, out, err = run_cli(["kernels", "check", str(tmp_path), "--verbose"], capsys, monkeypatch)
    assert code == 0
    assert [ln.split(":")[1].strip() for ln in err.splitlines()] == [f"build/{v}" for v in variants]
    code, out, _ = run_cli(["kernels", "check", str(tmp_path), "--format", "json"], capsys, monkeypatch)
    assert code == 0 and out.count('"abi"') == 2  # programs still get every finding


def test_arguments_read_as_names_and_values_as_one_values_type() -> None:
    """Issue 48, item 12: no ``{source}`` / ``{paths}...`` and no ``<list[Path]>`` in any help."""
    for path in _commands():
        text = _help(path, width=200)
        usage = next(line for line in text.splitlines() if "Usage:" in line)
        assert "{" not in usage, (path, usage)
        assert "<list[" not in text, (path, text)
    validate = _help(["skills", "validate"], width=200)
    assert "Usage: upskill-hub skills validate [OPTIONS] PATHS..." in validate
    assert re.search(r"│ \*\s+PATHS\.\.\.\s+<path>\s+Skill folders", validate), validate
    assert "Usage: upskill-hub skills install [OPTIONS] SOURCE " in _help(["skills", "install"], width=200)
    push = _help(["push"], width=200)
    assert "Usage: upskill-hub push [OPTIONS] [SKILL_DIRS]..." in push
    assert re.search(r"--results\s+<path>\s+Eval run folder", push), push
    install = _help(["skills", "install"], width=200)
    assert re.search(r"--skill\s+<str>\s+Skill\(s\) to take.*\[repeatable\]", install), install


def test_every_command_shows_an_example_and_demo_states_its_default_once() -> None:
    missing = []
    for path in _commands():
        text = _help(path, width=200)
        if "Commands" in text and "Usage:" in text and "COMMAND [ARGS]" in text:
            continue  # a group: its commands carry the examples
        if not re.search(r"Example: (\[cyan\])?upskill-hub " + re.escape(" ".join(path)), text):
            missing.append(" ".join(path) or "(root)")
    assert not missing, missing
    model = next(line for line in _help(["demo"], width=200).splitlines() if "--model" in line)
    assert model.count("default") == 1 and "[default: local]" in model, model
