"""Each agent CLI's tool calls, read from its stream into an ordered, bounded transcript.

The samples are the documented shapes of each CLI's JSON output (Claude Code
``stream-json``, ``codex exec --json``, Gemini CLI ``stream-json`` / ``json``, ``opencode
run --format json``); the fake CLIs print the same shapes from a real run against the
scripted model, with a shell command the model asked for really run.
"""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest
from _harness_kit import API_KEY, write_fake_clis

from upskill_hub.cases.schema import Assertion
from upskill_hub.lift.grading.transcript_checks import (
    PROMPT_MAX_CHARS,
    Activity,
    check_transcript,
    judge_summary,
)
from upskill_hub.lift.harness.base import NO_TRANSCRIPT, ParsedRun
from upskill_hub.lift.harness.claude_code import ADAPTER as CLAUDE
from upskill_hub.lift.harness.codex import ADAPTER as CODEX
from upskill_hub.lift.harness.custom import custom_adapter
from upskill_hub.lift.harness.gemini import ADAPTER as GEMINI
from upskill_hub.lift.harness.opencode import ADAPTER as OPENCODE
from upskill_hub.session import transcript as transcript_mod
from upskill_hub.testing.llm_server import running_llm_server


def _lines(*events: dict) -> str:
    return "\n".join(json.dumps(e) for e in events) + "\n"


def _calls(run: ParsedRun) -> list[tuple[str, str, dict, str | None, bool]]:
    """(name, kind, arguments, result, error) of each kept call."""
    return [(e.name, e.kind, json.loads(e.arguments), e.result, e.error) for e in run.transcript.events]


CLAUDE_STREAM = _lines(
    {"type": "system", "subtype": "init", "cwd": "/w/project", "session_id": "s1", "model": "claude-sonnet-4-5",
     "tools": ["Bash", "Read", "Write", "Skill"], "permissionMode": "bypassPermissions"},
    {"type": "assistant", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [
        {"type": "text", "text": "I'll load the skill first."},
        {"type": "tool_use", "id": "toolu_01", "name": "Skill", "input": {"skill": "xlsx"}}]},
     "parent_tool_use_id": None, "session_id": "s1"},
    {"type": "user", "message": {"role": "user", "content": [
        {"tool_use_id": "toolu_01", "type": "tool_result", "content": "Launching skill: xlsx"}]}, "session_id": "s1"},
    {"type": "assistant", "message": {"id": "msg_2", "type": "message", "role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_02", "name": "Bash",
         "input": {"command": "python .claude/skills/xlsx/scripts/fill.py data.csv", "description": "Fill it"}},
        {"type": "tool_use", "id": "toolu_03", "name": "Read", "input": {"file_path": "/w/project/missing.txt"}}]},
     "session_id": "s1"},
    {"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_03", "content": "<tool_use_error>File does not exist.</tool_use_error>",
         "is_error": True},
        {"type": "tool_result", "tool_use_id": "toolu_02", "content": [{"type": "text", "text": "wrote report.xlsx"}]}]},
     "session_id": "s1"},
    {"type": "assistant", "message": {"id": "msg_3", "type": "message", "role": "assistant",
                                      "content": [{"type": "text", "text": "Done: report.xlsx"}]}, "session_id": "s1"},
    {"type": "result", "subtype": "success", "is_error": False, "num_turns": 4, "result": "Done: report.xlsx",
     "session_id": "s1", "total_cost_usd": 0.0123,
     "usage": {"input_tokens": 10, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0, "output_tokens": 5}},
)  # fmt: skip


def test_claude_code_stream_pairs_tool_use_with_its_result():
    run = CLAUDE.parse(CLAUDE_STREAM)
    assert _calls(run) == [
        ("Skill", "skill", {"skill": "xlsx"}, "Launching skill: xlsx", False),
        ("Bash", "shell", {"command": "python .claude/skills/xlsx/scripts/fill.py data.csv",
                           "description": "Fill it"}, "wrote report.xlsx", False),
        ("Read", "read", {"file_path": "/w/project/missing.txt"},
         "<tool_use_error>File does not exist.</tool_use_error>", True),
    ]  # fmt: skip
    t = run.transcript
    assert (t.total, t.missing, t.cut, run.tool_calls) == (3, None, False, 3)
    # What the skill checks read: only calls whose result succeeded (the failed Read is no read).
    assert run.skill_tool == ["xlsx"] and run.commands[0].startswith("python") and run.reads == []


def test_claude_code_lone_result_object_has_no_transcript():
    run = CLAUDE.parse(json.dumps({"type": "result", "subtype": "success", "result": "ok", "num_turns": 2}))
    assert run.transcript.missing and "no tool calls" in run.transcript.missing
    result = check_transcript(Assertion("tool-called", "Bash"), Activity(run.transcript, "x"))
    assert result.passed is False and result.evidence.startswith("not graded:")


CODEX_STREAM = _lines(
    {"type": "thread.started", "thread_id": "0199a213-81c0-7800-8aa1-bbab2a035a53"},
    {"type": "turn.started"},
    {"type": "item.completed", "item": {"id": "item_0", "type": "reasoning", "text": "Reading the skill"}},
    {"type": "item.started", "item": {"id": "item_1", "type": "command_execution",
                                      "command": "bash -lc 'cat .agents/skills/xlsx/SKILL.md'",
                                      "aggregated_output": "", "exit_code": None, "status": "in_progress"}},
    {"type": "item.completed", "item": {"id": "item_1", "type": "command_execution",
                                        "command": "bash -lc 'cat .agents/skills/xlsx/SKILL.md'",
                                        "aggregated_output": "---\nname: xlsx\n", "exit_code": 0, "status": "completed"}},
    {"type": "item.started", "item": {"id": "item_2", "type": "command_execution", "command": "bash -lc 'false'",
                                      "aggregated_output": "", "exit_code": None, "status": "in_progress"}},
    {"type": "item.completed", "item": {"id": "item_2", "type": "command_execution", "command": "bash -lc 'false'",
                                        "aggregated_output": "", "exit_code": 1, "status": "failed"}},
    {"type": "item.completed", "item": {"id": "item_3", "type": "file_change",
                                        "changes": [{"path": "/w/project/report.csv", "kind": "add"}],
                                        "status": "completed"}},
    {"type": "item.started", "item": {"id": "item_4", "type": "mcp_tool_call", "server": "docs", "tool": "search",
                                      "arguments": {"q": "SUM formula"}, "result": None, "error": None,
                                      "status": "in_progress"}},
    {"type": "item.completed", "item": {"id": "item_4", "type": "mcp_tool_call", "server": "docs", "tool": "search",
                                        "arguments": {"q": "SUM formula"},
                                        "result": {"content": [{"type": "text", "text": "=SUM(B2:B9)"}],
                                                   "structured_content": None},
                                        "error": None, "status": "completed"}},
    {"type": "item.completed", "item": {"id": "item_5", "type": "web_search", "query": "openpyxl formulas"}},
    {"type": "item.completed", "item": {"id": "item_6", "type": "agent_message", "text": "Wrote report.csv"}},
    {"type": "turn.completed", "usage": {"input_tokens": 1200, "cached_input_tokens": 200, "output_tokens": 345}},
)  # fmt: skip


def test_codex_items_become_calls_once_with_their_completed_result():
    run = CODEX.parse(CODEX_STREAM)
    assert _calls(run) == [
        ("command_execution", "shell", {"command": "bash -lc 'cat .agents/skills/xlsx/SKILL.md'"},
         "---\nname: xlsx\n\n(exit code 0)", False),
        ("command_execution", "shell", {"command": "bash -lc 'false'"}, "(exit code 1)", True),
        ("file_change", "edit", {"changes": [{"path": "/w/project/report.csv", "kind": "add"}]}, "completed", False),
        ("search", "mcp", {"q": "SUM formula"}, "=SUM(B2:B9)", False),
        ("web_search", "web", {"query": "openpyxl formulas"}, None, False),
    ]  # fmt: skip
    assert run.tool_calls == 5 and run.text == "Wrote report.csv"


GEMINI_STREAM = _lines(
    {"type": "init", "timestamp": "2026-11-25T02:00:00.000Z", "session_id": "g1", "model": "gemini-2.5-pro"},
    {"type": "message", "timestamp": "2026-11-25T02:00:00.000Z", "role": "user", "content": "Fill the sheet"},
    {"type": "tool_use", "timestamp": "2026-11-25T02:00:01.000Z", "tool_name": "read_file", "tool_id": "read_file-1",
     "parameters": {"absolute_path": "/w/project/data.csv"}},
    {"type": "tool_result", "timestamp": "2026-11-25T02:00:01.000Z", "tool_id": "read_file-1", "status": "success",
     "output": "a,b\n1,2\n"},
    {"type": "tool_use", "timestamp": "2026-11-25T02:00:02.000Z", "tool_name": "run_shell_command",
     "tool_id": "run_shell_command-2", "parameters": {"command": "python scripts/fill.py", "description": "fill"}},
    {"type": "tool_result", "timestamp": "2026-11-25T02:00:02.000Z", "tool_id": "run_shell_command-2",
     "status": "error", "error": {"type": "shell_error", "message": "python: not found"}},
    {"type": "message", "timestamp": "2026-11-25T02:00:03.000Z", "role": "assistant", "content": "Could not ",
     "delta": True},
    {"type": "message", "timestamp": "2026-11-25T02:00:03.000Z", "role": "assistant", "content": "fill it.",
     "delta": True},
    {"type": "result", "timestamp": "2026-11-25T02:00:03.000Z", "status": "success",
     "stats": {"total_tokens": 30, "input_tokens": 20, "output_tokens": 10, "cached": 0, "duration_ms": 3000,
               "tool_calls": 2}},
)  # fmt: skip


def test_gemini_stream_pairs_tool_use_and_tool_result_by_id():
    run = GEMINI.parse(GEMINI_STREAM)
    assert _calls(run) == [
        ("read_file", "read", {"absolute_path": "/w/project/data.csv"}, "a,b\n1,2\n", False),
        ("run_shell_command", "shell", {"command": "python scripts/fill.py", "description": "fill"},
         "python: not found", True),
    ]  # fmt: skip
    assert run.text == "Could not fill it."


def test_gemini_single_json_object_has_counts_but_no_transcript():
    out = json.dumps({"session_id": "g", "response": "ok", "stats": {"tools": {"totalCalls": 3}}}, indent=2)
    run = GEMINI.parse(out)
    assert run.tool_calls == 3 and run.transcript.events == ()
    assert "tool counts only" in run.transcript.missing


OPENCODE_STREAM = _lines(
    {"type": "step_start", "timestamp": 1, "sessionID": "ses_1", "part": {"type": "step-start"}},
    {"type": "tool_use", "timestamp": 2, "sessionID": "ses_1",
     "part": {"type": "tool", "callID": "call_1", "tool": "bash",
              "state": {"status": "completed", "input": {"command": "ls scripts", "description": "List"},
                        "output": "fill.py\n", "title": "ls scripts", "metadata": {}}}},
    {"type": "tool_use", "timestamp": 3, "sessionID": "ses_1",
     "part": {"type": "tool", "callID": "call_2", "tool": "read",
              "state": {"status": "error", "input": {"filePath": "/w/project/nope.md"}, "error": "File not found"}}},
    {"type": "tool_use", "timestamp": 3, "sessionID": "ses_1",  # the same call reported again
     "part": {"type": "tool", "callID": "call_2", "tool": "read",
              "state": {"status": "error", "input": {"filePath": "/w/project/nope.md"}, "error": "File not found"}}},
    {"type": "step_finish", "timestamp": 4, "sessionID": "ses_1",
     "part": {"type": "step-finish", "reason": "tool-calls", "cost": 0,
              "tokens": {"input": 1, "output": 1, "reasoning": 0, "cache": {"read": 0, "write": 0}}}},
    {"type": "step_start", "timestamp": 5, "sessionID": "ses_1", "part": {"type": "step-start"}},
    {"type": "text", "timestamp": 6, "sessionID": "ses_1", "part": {"type": "text", "text": "Listed."}},
    {"type": "step_finish", "timestamp": 7, "sessionID": "ses_1",
     "part": {"type": "step-finish", "reason": "stop", "cost": 0.001,
              "tokens": {"input": 5, "output": 2, "reasoning": 0, "cache": {"read": 0, "write": 0}}}},
)  # fmt: skip


def test_opencode_tool_parts_once_per_call_id_with_output_or_error():
    run = OPENCODE.parse(OPENCODE_STREAM)
    assert _calls(run) == [
        ("bash", "shell", {"command": "ls scripts", "description": "List"}, "fill.py\n", False),
        ("read", "read", {"filePath": "/w/project/nope.md"}, "File not found", True),
    ]
    assert run.tool_calls == 2 and run.text == "Listed."


def test_cmd_agents_have_no_transcript_and_the_checks_say_so():
    run = custom_adapter("my-agent {prompt}").parse("done\n")
    assert run.transcript.missing == NO_TRANSCRIPT
    activity = Activity(run.transcript, "xlsx")
    for a in (Assertion("tool-called", "Bash"), Assertion("skill-loaded"), Assertion("file-read", "a.txt")):
        result = check_transcript(a, activity)
        assert result.passed is False
        assert "no transcript for cmd: agents" in result.evidence
    assert "no transcript for cmd: agents" in judge_summary(run.transcript)


# --------------------------------------------------------------------------- hostile output
def _claude_calls(n: int, command: str = "echo hi", result: str = "hi") -> str:
    out = []
    for i in range(n):
        out.append({"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": command}}]}})  # fmt: skip
        out.append({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"t{i}", "content": result}]}})  # fmt: skip
    out.append({"type": "result", "subtype": "success", "result": "ok", "num_turns": n})
    return _lines(*out)


def test_a_hundred_thousand_tool_calls_keep_a_bounded_transcript():
    stdout = _claude_calls(100_000)
    t0 = time.perf_counter()
    run = CLAUDE.parse(stdout)
    elapsed = time.perf_counter() - t0
    t = run.transcript
    assert (t.total, len(t.events), dict(t.dropped)) == (100_000, 100, {"Bash": 99_900})
    row = t.to_json([API_KEY])
    assert len(row) < 60_000 and "99,900 of 100,000 tool calls not kept" in row
    assert elapsed < 60  # about 3 s on 2 cores: the parse of 200,000 lines, not the transcript
    summary = judge_summary(t)
    assert len(summary) <= PROMPT_MAX_CHARS
    assert summary.splitlines()[-1].startswith("… truncated:") and "of 100,000" in summary


def test_a_50_mb_argument_and_result_are_cut_without_copying_them_whole():
    big = "A" * (50 * 1024 * 1024)
    stdout = _claude_calls(1, command=big + " scripts/fill.py", result=big)
    run = CLAUDE.parse(stdout)
    (e,) = run.transcript.events
    assert e.arguments_cut and e.result_cut and e.result_chars == len(big)
    row = json.loads(run.transcript.to_json())
    call = row["calls"][0]
    assert len(call["arguments"].encode()) <= transcript_mod.MAX_ARG_BYTES
    assert len(call["result"].encode()) <= transcript_mod.MAX_RESULT_BYTES
    assert row["cut"] == [
        "arguments of 1 call(s) cut at 2,000 bytes (UPSKILL_TRANSCRIPT_MAX_ARG_BYTES)",
        "results of 1 call(s) cut at 1,000 bytes (UPSKILL_TRANSCRIPT_MAX_RESULT_BYTES)",
    ]
    # The text past the cut is not there to match, and the evidence says why.
    result = check_transcript(
        Assertion("tool-called", "Bash", args="scripts/fill.py"), Activity(run.transcript, "x")
    )
    assert result.passed is False and "arguments cut" in result.evidence


@pytest.mark.parametrize(
    "block",
    [
        {"type": "tool_use", "id": "a", "name": "Bash", "input": "not an object"},
        {"type": "tool_use", "id": 7, "name": None, "input": None},
        {"type": "tool_use", "name": ["x"], "input": [[[[1]]]]},
        {
            "type": "tool_use",
            "id": "b",
            "name": "Bash",
            "input": {"k": {"k": {"k": {"k": {"k": [1.5, True, None]}}}}},
        },
    ],
)
def test_odd_tool_use_blocks_are_recorded_without_a_traceback(block):
    stdout = _lines(
        {"type": "assistant", "message": {"content": [block]}},
        {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "zzz", "content": {"x": 1}},
                                                 {"type": "tool_result", "content": None}, "junk"]}},
        {"type": "result", "subtype": "success", "result": "ok"},
    )  # fmt: skip
    run = CLAUDE.parse(stdout)
    (e,) = run.transcript.events
    assert e.result is None and isinstance(e.name, str) and json.loads(run.transcript.to_json())["total"] == 1


def test_secrets_in_calls_are_masked_and_a_cut_never_keeps_half_a_key(monkeypatch):
    key = "agentkey-0123456789-ABCDEFGHIJ"
    run = CLAUDE.parse(_claude_calls(1, command=f"curl -H 'x-key: {key}' {API_KEY}", result=f"echo {key}"))
    row = run.transcript.to_json([key])
    assert key not in row and API_KEY not in row and "***" in row
    # A key straddling the cut: the part before the cut is dropped with it, never kept.
    monkeypatch.setattr(transcript_mod, "MAX_RESULT_BYTES", 20)
    monkeypatch.setattr(transcript_mod, "_MARGIN", 0)
    run = CLAUDE.parse(_claude_calls(1, result="0123456789ab" + key))
    kept = json.loads(run.transcript.to_json([key]))["calls"][0]["result"]
    assert kept == "0123456789ab" and run.transcript.events[0].result_cut


# --------------------------------------------------------------------------- the fake CLIs
FILL_SKILL = """---
name: sheet-filler
description: Fills spreadsheet templates from inventory data with the fill script.
---
# Sheet filler

FILL-MARKER: run scripts/fill.py to fill the sheet.
"""


def _fill_script(system: str, messages: list[dict[str, str]], params: dict) -> str:
    if "impartial grader" in system:
        return '{"pass": true, "reason": "ok"}'
    if "FILL-MARKER" in system:
        return (
            "RUN python3 .claude/skills/sheet-filler/scripts/fill.py\nREAD filled.txt\nThe sheet is filled."
        )
    return "RUN ls\nI filled the spreadsheet by hand."


@pytest.fixture
def fill_llm():
    with running_llm_server(_fill_script) as server:
        yield server


def _project(tmp_path, with_skill: bool):
    project = tmp_path / ("with" if with_skill else "without") / "project"
    project.mkdir(parents=True)
    if with_skill:
        skill = project / ".claude" / "skills" / "sheet-filler"
        (skill / "scripts").mkdir(parents=True)
        (skill / "SKILL.md").write_text(FILL_SKILL)
        (skill / "scripts" / "fill.py").write_text(
            "open('filled.txt', 'w').write('B10: =SUM(B2:B9)')\nprint('filled')\n"
        )
    return project


def _run_fake_claude(tmp_path, fill_llm, project) -> ParsedRun:
    bin_dir = write_fake_clis(tmp_path / "bin", ("claude",))
    env = {**os.environ, "ANTHROPIC_BASE_URL": fill_llm.url, "ANTHROPIC_API_KEY": API_KEY,
           "HOME": str(tmp_path / "home")}  # fmt: skip
    res = subprocess.run(
        [str(bin_dir / "claude"), *CLAUDE.options("claude", None)[1:]],
        input="Fill the spreadsheet template from the inventory data.",
        capture_output=True, text=True, cwd=project, env=env, timeout=60, check=True,
    )  # fmt: skip
    return CLAUDE.parse(res.stdout)


def test_tool_called_on_the_fake_claude_code_stream(tmp_path, fill_llm):
    """The issue's example: Bash with scripts/fill.py in its arguments, and the same run without the skill."""
    check = Assertion("tool-called", "Bash", args="scripts/fill.py")
    run = _run_fake_claude(tmp_path, fill_llm, _project(tmp_path, with_skill=True))
    names = [(e.name, e.result) for e in run.transcript.events]
    assert names == [("Skill", "Launching skill: sheet-filler"), ("Bash", "filled"),
                     ("Read", "     1\u2192B10: =SUM(B2:B9)")]  # fmt: skip
    passed = check_transcript(
        check, Activity(run.transcript, "sheet-filler", run.skill_tool, run.reads, run.commands)
    )
    assert passed.passed is True and "call 2 of 3: Bash" in passed.evidence
    assert check_transcript(
        Assertion("file-read", "filled.txt"), Activity(run.transcript, "x", reads=run.reads)
    ).passed

    run = _run_fake_claude(tmp_path, fill_llm, _project(tmp_path, with_skill=False))
    assert [e.name for e in run.transcript.events] == ["Bash"]
    failed = check_transcript(check, Activity(run.transcript, "sheet-filler"))
    assert failed.passed is False
    assert failed.evidence.startswith("1 call(s) of 'Bash', none with 'scripts/fill.py' in its arguments")


@pytest.mark.parametrize("cli,adapter", [("codex", CODEX), ("gemini", GEMINI), ("opencode", OPENCODE)])
def test_every_fake_cli_shows_the_command_it_ran(tmp_path, fill_llm, cli, adapter):
    bin_dir = write_fake_clis(tmp_path / "bin", (cli,))
    project = tmp_path / "project"
    project.mkdir()
    env = {**os.environ, "OPENAI_BASE_URL": fill_llm.openai_base_url, "OPENAI_API_KEY": API_KEY,
           "GOOGLE_GEMINI_BASE_URL": fill_llm.url, "GEMINI_API_KEY": API_KEY, "HOME": str(tmp_path / "home")}  # fmt: skip
    inv = adapter.invocation(str(bin_dir / cli), "Fill the sheet.", None)
    res = subprocess.run(
        inv.argv, input=inv.stdin, capture_output=True, cwd=project, env=env, timeout=60, check=True
    )
    run = adapter.parse(res.stdout.decode())
    shell = [e for e in run.transcript.events if e.kind == "shell"]
    assert shell and "ls" in shell[0].arguments and shell[0].error is False
    assert [e for e in run.transcript.events if e.kind != "shell"] == []  # no skill: nothing else


# --------------------------------------------------------------------------- a whole eval
FILL_PY = "open('filled.txt', 'w').write('B10: =SUM(B2:B9)')\nprint('filled')\n"
FILL_CASES = {"schema_version": 1, "cases": [{
    "id": "fill", "input": "Fill the spreadsheet template from the inventory data.",
    "assert": [
        {"type": "tool-called", "value": "Bash", "args": "scripts/fill.py"},
        {"type": "skill-loaded"},
        {"type": "file-read", "value": "filled.txt"},
        {"type": "llm-rubric", "value": "The agent ran the skill's fill script"},
    ],
}]}  # fmt: skip


def _transcript_judge(system: str, messages: list[dict[str, str]], params: dict) -> str:
    """PASS only when the prompt's <transcript> section shows the fill script run."""
    text = messages[-1]["content"]
    section = text.partition("<transcript>")[2].partition("</transcript>")[0]
    ok = "scripts/fill.py" in section
    return json.dumps({"pass": ok, "reason": "ran the script" if ok else "no fill script in the transcript"})


def _fill_and_judge(system: str, messages: list[dict[str, str]], params: dict) -> str:
    if "impartial grader" in system:
        return _transcript_judge(system, messages, params)
    return _fill_script(system, messages, params)


@pytest.fixture
def llm():
    """The agents' model for ``agents_env``: runs the fill script when the skill told it to."""
    with running_llm_server(_fill_and_judge) as server:
        yield server


def test_run_eval_rows_keep_the_transcript_and_grade_it(agents_env, tmp_path, llm):
    """Needs the wiring of ``transcript`` into rows, ``evaluate_case`` and the judge prompt."""
    from upskill_hub.lift.api import run_eval
    from upskill_hub.lift.harness import HarnessOptions
    from upskill_hub.lift.prepare import EvalOptions

    skill = tmp_path / "skills" / "sheet-filler"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text(FILL_SKILL)
    (skill / "scripts" / "fill.py").write_text(FILL_PY)
    (skill / "skill_meta.json").write_text(json.dumps(FILL_CASES))
    done = agents_env / "done-agent"
    done.write_text('#!/bin/sh\n[ "$1" = --version ] && echo 1.0 && exit 0\necho done\n')
    done.chmod(0o755)
    opts = EvalOptions(
        agents=["claude-code", "cmd:done-agent {prompt}"], output_dir=tmp_path / "runs",
        cache_dir=tmp_path / "cache", plots=False, harness=HarnessOptions(timeout=60),
        judge=f"openai-compatible:scripted-model@{llm.openai_base_url}",
    )  # fmt: skip
    result = run_eval(skill, [], opts)
    by = {(r.model, r.condition): r for r in result.rows}
    assert [r.error for r in result.rows] == [None] * 4

    ws = by[("claude-code", "with_skill")]
    details = json.loads(ws.assertion_details)
    assert [d["passed"] for d in details] == [True] * 4 and ws.passed is True
    assert details[0]["evidence"].startswith("call 2 of 3: Bash with 'scripts/fill.py' in its arguments")
    assert details[1]["evidence"].startswith("loaded 'sheet-filler'")
    prompt = details[3]["judge_prompt"]
    assert "<transcript>\n1. Skill " in prompt and "scripts/fill.py" in prompt.partition("<transcript>")[2]
    # Paths inside the workspace read the same in every run (the judge's prompt is a cache key).
    assert '3. Read {"file_path": "filled.txt"} ->      1\u2192B10: =SUM(B2:B9)\n</transcript>' in prompt
    row = json.loads(ws.transcript)
    assert [c["name"] for c in row["calls"]] == ["Skill", "Bash", "Read"] and row["total"] == 3

    base = by[("claude-code", "baseline")]
    bd = json.loads(base.assertion_details)
    assert [d["passed"] for d in bd] == [False] * 4
    assert bd[0]["evidence"].startswith("1 call(s) of 'Bash', none with 'scripts/fill.py' in its arguments")
    assert bd[1]["evidence"] == "did not load 'sheet-filler' (loaded: none)"

    cmd = by[("cmd:done-agent", "with_skill")]
    cd = json.loads(cmd.assertion_details)
    assert all("no transcript for cmd: agents" in d["evidence"] for d in cd[:3]) and not cmd.passed
    assert json.loads(cmd.transcript)["missing"].startswith("no transcript for cmd: agents")
    assert all(API_KEY not in r.transcript for r in result.rows)
