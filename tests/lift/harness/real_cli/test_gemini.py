"""Gemini CLI (``@google/gemini-cli``): its real output read by the adapter, and the real CLI
driven through ``eval --agent gemini`` and ``triggers --agent gemini`` against the scripted
Gemini API server, with only ``GEMINI_API_KEY`` and ``GOOGLE_GEMINI_BASE_URL`` set.

The recorded lines below are Gemini CLI 0.61.0's own ``--output-format stream-json`` output
(timestamps, ids and the workspace path shortened), from runs against that server.
"""

from __future__ import annotations

import json
import stat

import pytest
from _real_cli_kit import API_KEY, SKILL, call_setup, check_triggers, cli_bin, lift_rows, script_for
from _real_cli_kit import events as _events

from upskill_hub.lift.api import run_eval
from upskill_hub.lift.harness import HarnessOptions
from upskill_hub.lift.harness.gemini import ADAPTER, NO_OUTPUT_SHOWN
from upskill_hub.lift.harness.run import skill_usage
from upskill_hub.lift.prepare import EvalOptions
from upskill_hub.testing.agent_server import running_agent_server
from upskill_hub.testing.agent_wire.gemini import PROTOCOL

TS = "2026-11-28T18:41:31.000Z"
INIT = {"type": "init", "timestamp": TS, "session_id": "4ca2961a", "model": "auto"}
USER = {
    "type": "message",
    "timestamp": TS,
    "role": "user",
    "content": "Use the hello-skill skill to say hello in a file.",
}
SHELL_USE = {"type": "tool_use", "timestamp": TS, "tool_name": "run_shell_command",
             "tool_id": "run_shell_command__run_shell_command_1795891291487_0",
             "parameters": {"command": "printf 'HELLO-FROM-SKILL\\n' > hello.txt"}}  # fmt: skip
SHELL_RESULT = {"type": "tool_result", "timestamp": TS, "tool_id": "run_shell_command__run_shell_command_1795891291487_0",
                "status": "success", "output": ""}  # fmt: skip
ANSWER = {
    "type": "message",
    "timestamp": TS,
    "role": "assistant",
    "content": "Done: the file is written.",
    "delta": True,
}
RESULT = {"type": "result", "timestamp": TS, "status": "success",
          "stats": {"total_tokens": 301, "input_tokens": 284, "output_tokens": 17, "cached": 0, "input": 284,
                    "duration_ms": 479, "tool_calls": 2}}  # fmt: skip

ACTIVATE = {"type": "tool_use", "timestamp": TS, "tool_name": "activate_skill",
            "tool_id": "activate_skill__activate_skill_1795891291237_0", "parameters": {"name": "hello-skill"}}  # fmt: skip
ACTIVATED = {"type": "tool_result", "timestamp": TS, "tool_id": "activate_skill__activate_skill_1795891291237_0",
             "status": "success", "output": "Skill **hello-skill** activated. Resources loaded from "
             "`/tmp/gp/project/.gemini/skills/hello-skill`:\n\n/tmp/gp/project/.gemini/skills/hello-skill/\n└───SKILL.md"}  # fmt: skip
#: The baseline: no skill installed, the tool's enum of names is empty.
NOT_ACTIVATED = {"type": "tool_result", "timestamp": TS, "tool_id": "activate_skill__activate_skill_1795891291237_0",
                 "status": "error", "output": "params/name must be equal to one of the allowed values",
                 "error": {"type": "invalid_tool_params",
                           "message": "params/name must be equal to one of the allowed values"}}  # fmt: skip
READ = {"type": "tool_use", "timestamp": TS, "tool_name": "read_file", "tool_id": "read_file__read_file_1795891303959_0",
        "parameters": {"file_path": ".gemini/skills/hello-skill/SKILL.md"}}  # fmt: skip
READ_OK = {"type": "tool_result", "timestamp": TS, "tool_id": "read_file__read_file_1795891303959_0",
           "status": "success", "output": ""}  # fmt: skip
READ_MISSING = {"type": "tool_result", "timestamp": TS, "tool_id": "read_file__read_file_1795891303959_0",
                "status": "error", "output": "File not found.",
                "error": {"type": "file_not_found",
                          "message": "File not found: /tmp/gp/project/.gemini/skills/hello-skill/SKILL.md"}}  # fmt: skip


def _stream(*events: dict) -> str:
    return "\n".join(json.dumps(e, ensure_ascii=False) for e in events) + "\n"


def _results(run) -> list[tuple[str, object, bool]]:
    return [(e.name, e.result, e.error) for e in run.transcript.events]


# --------------------------------------------------------------------------- recorded output


def test_activate_skill_loads_the_skill_only_when_it_succeeded():
    """The baseline's real line: activate_skill of an absent skill fails (invalid_tool_params)."""
    run = ADAPTER.parse(_stream(INIT, USER, ACTIVATE, ACTIVATED, SHELL_USE, SHELL_RESULT, ANSWER, RESULT))
    assert skill_usage(run)[0] == [SKILL]
    assert (run.text, run.tool_calls, run.input_tokens, run.output_tokens) == (
        "Done: the file is written.",
        2,
        284,
        17,
    )
    run = ADAPTER.parse(_stream(INIT, USER, ACTIVATE, NOT_ACTIVATED, SHELL_USE, SHELL_RESULT, ANSWER, RESULT))
    assert run.skill_tool == [] and skill_usage(run) == ([], [])
    assert run.commands == ["printf 'HELLO-FROM-SKILL\\n' > hello.txt"]  # that call succeeded
    assert _results(run)[0] == (
        "activate_skill",
        "params/name must be equal to one of the allowed values",
        True,
    )


def test_a_read_file_of_a_missing_skill_md_is_no_read_and_names_the_path():
    run = ADAPTER.parse(_stream(INIT, USER, READ, READ_MISSING, ANSWER, RESULT))
    assert run.reads == [] and skill_usage(run) == ([], [])
    assert _results(run) == [
        ("read_file", "File not found: /tmp/gp/project/.gemini/skills/hello-skill/SKILL.md", True)
    ]


def test_a_successful_read_file_counts_and_its_hidden_output_is_said_not_shown_empty():
    """Gemini CLI prints ``"output": ""`` for a read: the transcript says the CLI hides it."""
    run = ADAPTER.parse(_stream(INIT, USER, READ, READ_OK, SHELL_USE, SHELL_RESULT, ANSWER, RESULT))
    assert skill_usage(run) == ([SKILL], [f"{SKILL}/SKILL.md"])
    assert _results(run) == [
        ("read_file", NO_OUTPUT_SHOWN, False),
        ("run_shell_command", NO_OUTPUT_SHOWN, False),
    ]


def test_a_call_without_any_result_never_counts():
    run = ADAPTER.parse(_stream(INIT, USER, ACTIVATE, READ, ANSWER, RESULT))
    assert run.skill_tool == [] and run.reads == []


# --------------------------------------------------------------------------- prepare


_setup = call_setup


def test_prepare_picks_the_api_key_auth_trusts_the_workspace_and_stays_offline(tmp_path):
    call = _setup(tmp_path, {"GEMINI_API_KEY": API_KEY, "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:9"})
    ADAPTER.prepare(call)
    assert call.env["GEMINI_CLI_TRUST_WORKSPACE"] == "true"
    path = call.home / ".gemini" / "settings.json"
    settings = json.loads(path.read_text())
    assert settings["security"]["auth"]["selectedType"] == "gemini-api-key"  # not "gateway"
    assert (
        settings["privacy"]["usageStatisticsEnabled"] is False and settings["telemetry"]["enabled"] is False
    )
    assert settings["general"]["enableAutoUpdate"] is False
    assert API_KEY not in path.read_text()  # the key stays in the environment
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    # With --agent-real-home nothing is written there; a trust value passed by the user is kept.
    call = _setup(tmp_path / "real", {"GEMINI_API_KEY": API_KEY, "GEMINI_CLI_TRUST_WORKSPACE": "false"}, True)
    ADAPTER.prepare(call)
    assert call.env["GEMINI_CLI_TRUST_WORKSPACE"] == "false"
    assert not (call.home / ".gemini").exists()


# --------------------------------------------------------------------------- the real CLI


_script = script_for(".gemini/skills")


def _point_at(env, server) -> None:
    """Only the provider's documented variables."""
    env.setenv("GEMINI_API_KEY", API_KEY)
    env.setenv("GOOGLE_GEMINI_BASE_URL", server.url)


@pytest.mark.slow
def test_real_gemini_eval_with_skill_passes_and_baseline_fails_to_load(clean_env, hello_skill, tmp_path):
    cli_bin("gemini")
    with running_agent_server(_script(), protocols=[PROTOCOL]) as server:
        _point_at(clean_env, server)
        opts = EvalOptions(agents=["gemini"], output_dir=tmp_path / "runs", cache_dir=tmp_path / "cache",
                           plots=False, concurrency=1, harness=HarnessOptions(timeout=120))  # fmt: skip
        result = run_eval(hello_skill, [], opts)
    with_skill, baseline = lift_rows(result)
    # The failed load attempt stays in the baseline's transcript, with its error.
    (failed,) = [e for e in _events(baseline) if e.name == "activate_skill"]
    assert failed.error is True and "allowed values" in str(failed.result)
    (shell,) = [e for e in _events(with_skill) if e.name == "run_shell_command"]
    assert shell.result == NO_OUTPUT_SHOWN and shell.error is False
    # The agent's turns went through the streamed API (side questions may use generateContent).
    assert sum(":streamGenerateContent" in r.path for r in server.requests) == 6  # 3 per condition


@pytest.mark.slow
def test_real_gemini_triggers_count_only_a_successful_load(clean_env, tmp_path):
    cli_bin("gemini")
    check_triggers("gemini", _script, lambda server: _point_at(clean_env, server), PROTOCOL, tmp_path)
