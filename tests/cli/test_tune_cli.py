"""``upskill-hub tune``: the report a user reads, ``--write`` byte for byte, and bad input in one line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "triggering"))
from test_tune_run import GOOD, KEY, MODEL, TEACHER, ScriptedTeacher, write_skill  # noqa: E402

from upskill_hub.testing.llm_server import running_llm_server  # noqa: E402

#: A SKILL.md as people write them: CRLF line ends, a comment, a folded description,
#: trailing spaces and a nested block. Only the description's bytes may change.
HAND_WRITTEN = (
    b"---\r\n"
    b"name: sheet-to-json\r\n"
    b"# keep this comment\r\n"
    b"description: >\r\n"
    b"  Helps with\r\n"
    b"  stuff.\r\n"
    b"license: Apache-2.0   \r\n"
    b"metadata:\r\n"
    b"  author: 'someone'\r\n"
    b"---\r\n"
    b"\r\n"
    b"# Sheet to JSON\r\n"
    b"\r\n"
    b"Read the header row first.  \r\n"
)


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("UPSKILL_HUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "220")


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_tune_prints_before_and_after_with_intervals_and_write_changes_only_the_description(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    from cli_runner import run_cli

    skill = write_skill(tmp_path / "skills")
    (skill / "SKILL.md").write_bytes(HAND_WRITTEN)
    before = _files(skill)
    with running_llm_server(ScriptedTeacher([GOOD])) as srv:
        common = ["tune", str(skill), "-m", MODEL, "--teacher", TEACHER, "--base-url", srv.openai_base_url,
                  "--runs", "2", "--distractors", "none", "-o", str(tmp_path / "out")]  # fmt: skip
        code, out, err = run_cli(common, capsys, monkeypatch)
        assert code == 0, err
        assert _files(skill) == before  # without --write nothing changes
        assert "0% (0/8)" in out and "[0%, 32%]" in out  # held-out recall before
        assert "100% (8/8)" in out and "[68%, 100%]" in out  # and after
        assert "before: Helps with stuff." in out and f"after:  {GOOD}" in out
        assert "Run again with --write" in out and "1 candidate(s) scored, 0 proposal(s) rejected" in out
        asked = len(srv.completion_requests)
        code, out, err = run_cli([*common, "--write"], capsys, monkeypatch)
        assert code == 0, err
        assert len(srv.completion_requests) == asked  # the same run again: every call from the cache
    after = _files(skill)
    expected = HAND_WRITTEN.replace(b">\r\n  Helps with\r\n  stuff.\r\n", b'"' + GOOD.encode() + b'"\r\n')
    assert after["SKILL.md"] == expected
    assert {k: v for k, v in after.items() if k != "SKILL.md"} == {k: v for k, v in before.items() if k != "SKILL.md"}
    assert "Wrote the new description into" in out


def test_json_output_holds_every_candidate(tmp_path: Path, capsys, monkeypatch) -> None:
    from cli_runner import run_cli

    skill = write_skill(tmp_path / "skills")
    with running_llm_server(ScriptedTeacher(["", GOOD])) as srv:
        code, out, err = run_cli(
            ["tune", str(skill), "-m", MODEL, "--teacher", TEACHER, "--base-url", srv.openai_base_url, "--runs", "1",
             "--distractors", "none", "-o", str(tmp_path / "out"), "--json"], capsys, monkeypatch,
        )  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    assert [c["description"] for c in data["candidates"]] == ["Helps with stuff.", GOOD]
    assert data["rejected"][0]["reason"] == "the description is empty" and data["winner"] == 1
    assert data["candidates"][1]["held_out"]["recall"] == 1.0


def test_bad_input_is_one_line_and_calls_nothing(tmp_path: Path, capsys, monkeypatch) -> None:
    from cli_runner import assert_one_line_errors

    skill = write_skill(tmp_path / "skills")
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "SKILL.md").write_text("---\nname: bare\ndescription: Does things. Use when asked.\n---\nBody.\n")
    with running_llm_server(ScriptedTeacher([GOOD])) as srv:
        common = ["--teacher", TEACHER, "--base-url", srv.openai_base_url, "-o", str(tmp_path / "out")]
        cases = [
            (["tune", str(tmp_path / "missing"), "-m", MODEL, *common], "missing"),
            (["tune", str(skill), "-m", MODEL, *common, "--iterations", "-1"], "--iterations"),
            (["tune", str(skill), "-m", MODEL, *common, "--held-out", "1.5"], "--held-out"),
            (["tune", str(skill), "-m", "openai:", *common], "names no model"),
            (["tune", str(skill), "-m", MODEL, *common, "--teacher", "hf:"], "names no model"),
            (["tune", str(bare), "-m", MODEL, *common, "--distractors", "none"], "no trigger queries"),
            (["tune", str(skill), "-m", MODEL, *common, "--resume"], "no tune run"),
        ]
        assert_one_line_errors(cases, capsys, monkeypatch)
        assert srv.completion_requests == []
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
