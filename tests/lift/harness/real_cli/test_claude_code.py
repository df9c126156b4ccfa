"""Claude Code (``@anthropic-ai/claude-code``): its real output read by the adapter, and the real
CLI driven through ``eval --agent claude-code`` and ``triggers --agent claude-code`` against the
scripted Anthropic Messages server, with only ``ANTHROPIC_API_KEY`` and ``ANTHROPIC_BASE_URL`` set.

The recorded lines below are Claude Code 2.1.197's own ``-p --output-format stream-json
--verbose`` output (session ids, uuids, timestamps and the workspace path shortened), from runs
against that server.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from _real_cli_kit import API_KEY, SKILL, check_triggers, cli_bin, lift_rows, script_for
from _real_cli_kit import events as _events

from upskill_hub.lift.api import run_eval
from upskill_hub.lift.harness import HarnessOptions
from upskill_hub.lift.harness.base import CallSetup
from upskill_hub.lift.harness.claude_code import ADAPTER
from upskill_hub.lift.harness.run import skill_usage
from upskill_hub.lift.prepare import EvalOptions
from upskill_hub.testing.agent_server import running_agent_server
from upskill_hub.testing.agent_wire.anthropic import PROTOCOL
from upskill_hub.testing.llm_server import running_llm_server

SID = "928f983c"
INIT = {"type": "system", "subtype": "init", "cwd": "/tmp/cc/project", "session_id": SID,
        "tools": ["Task", "Bash", "Edit", "Read", "Skill", "Write"], "mcp_servers": [], "model": "claude-opus-4-8[1m]",
        "permissionMode": "bypassPermissions", "apiKeySource": "ANTHROPIC_API_KEY", "claude_code_version": "2.1.197",
        "skills": ["hello-skill"], "analytics_disabled": True}  # fmt: skip
USAGE = {
    "input_tokens": 3187,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
    "output_tokens": 1,
}


def _use(n: int, name: str, args: dict) -> dict:
    return {"type": "assistant", "message": {"id": f"msg_scripted_000{n}", "type": "message", "role": "assistant",
            "model": "claude-opus-4-8", "content": [{"type": "tool_use", "id": f"toolu_scripted_000{n}", "name": name,
            "input": args}], "stop_reason": None, "stop_sequence": None, "usage": USAGE, "context_management": None},
            "parent_tool_use_id": None, "session_id": SID}  # fmt: skip


def _result(n: int, block: dict, tool_use_result: object) -> dict:
    return {"type": "user", "message": {"role": "user", "content": [{**block, "tool_use_id": f"toolu_scripted_000{n}"}]},
            "parent_tool_use_id": None, "session_id": SID, "tool_use_result": tool_use_result}  # fmt: skip


SKILL_USE = _use(1, "Skill", {"skill": SKILL})
SKILL_OK = _result(1, {"type": "tool_result", "content": "Launching skill: hello-skill"},
                   {"success": True, "commandName": "hello-skill"})  # fmt: skip
#: The skill's body follows as a synthetic user message (no tool_result).
SKILL_BODY = {"type": "user", "message": {"role": "user", "content": [{"type": "text", "text":
              "Base directory for this skill: /tmp/cc/project/.claude/skills/hello-skill\n\n# Hello skill\n"}]},
              "parent_tool_use_id": None, "session_id": SID, "isSynthetic": True}  # fmt: skip
#: The baseline: no skill installed.
SKILL_UNKNOWN = _result(1, {"type": "tool_result", "content": "<tool_use_error>Unknown skill: hello-skill</tool_use_error>",
                            "is_error": True}, "Error: Unknown skill: hello-skill")  # fmt: skip
BASH_USE = _use(2, "Bash", {"command": "printf 'HELLO-FROM-SKILL\\n' > hello.txt"})
BASH_OK = _result(2, {"type": "tool_result", "content": "(Bash completed with no output)", "is_error": False},
                  {"stdout": "", "stderr": "", "interrupted": False, "isImage": False, "noOutputExpected": False})  # fmt: skip
CAT_USE = _use(2, "Bash", {"command": "cat .claude/skills/hello-skill/SKILL.md"})
CAT_FAILED = _result(2, {"type": "tool_result", "content": "Exit code 1\ncat: .claude/skills/hello-skill/SKILL.md: "
                         "No such file or directory", "is_error": True},
                     "Error: Exit code 1\ncat: .claude/skills/hello-skill/SKILL.md: No such file or directory")  # fmt: skip
ANSWER = {"type": "assistant", "message": {"id": "msg_scripted_0003", "type": "message", "role": "assistant",
          "model": "claude-opus-4-8", "content": [{"type": "text", "text": "Done: the file is written."}],
          "stop_reason": None, "stop_sequence": None, "usage": USAGE}, "parent_tool_use_id": None, "session_id": SID}  # fmt: skip
#: A run with CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC unset: ``usage`` leaves out the side call
#: (a title) that ``modelUsage`` and ``total_cost_usd`` count.
RESULT = {"type": "result", "subtype": "success", "is_error": False, "api_error_status": None, "duration_ms": 232,
          "num_turns": 4, "result": "Done: the file is written.", "stop_reason": "end_turn", "session_id": SID,
          "total_cost_usd": 0.053805,
          "usage": {"input_tokens": 9916, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                    "output_tokens": 72, "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
                    "service_tier": "standard"},
          "modelUsage": {"claude-opus-4-8[1m]": {"inputTokens": 10346, "outputTokens": 83, "cacheReadInputTokens": 0,
                                                 "cacheCreationInputTokens": 0, "webSearchRequests": 0,
                                                 "costUSD": 0.053805, "contextWindow": 1000000,
                                                 "maxOutputTokens": 64000}},
          "permission_denials": [], "terminal_reason": "completed"}  # fmt: skip
#: A wrong key: the API's 401 is retried (CLAUDE_CODE_MAX_RETRIES, 10 by default), then this.
RETRY_401 = {"type": "system", "subtype": "api_retry", "attempt": 1, "max_retries": 1, "retry_delay_ms": 615.06,
             "error_status": 401, "error": "authentication_failed", "session_id": SID}  # fmt: skip
RESULT_401 = {"type": "result", "subtype": "success", "is_error": True, "api_error_status": 401, "duration_ms": 795,
              "num_turns": 1, "result": "Invalid API key · Fix external API key", "stop_reason": "stop_sequence",
              "session_id": SID, "total_cost_usd": 0,
              "usage": {"input_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                        "output_tokens": 0}, "modelUsage": {}, "terminal_reason": "completed"}  # fmt: skip


def _stream(*events: dict) -> str:
    return "\n".join(json.dumps(e, ensure_ascii=False) for e in events) + "\n"


def _results(run) -> list[tuple[str, object, bool]]:
    return [(e.name, e.result, e.error) for e in run.transcript.events]


# --------------------------------------------------------------------------- recorded output


def test_only_a_successful_skill_call_loads_the_skill():
    """With the skill installed the Skill tool's result is a success; in the baseline the real
    line is ``is_error: true`` (Unknown skill): no load, and the transcript keeps the error."""
    run = ADAPTER.parse(_stream(INIT, SKILL_USE, SKILL_OK, SKILL_BODY, BASH_USE, BASH_OK, ANSWER, RESULT))
    assert skill_usage(run) == ([SKILL], [f"{SKILL}/SKILL.md"])
    assert (run.text, run.tool_calls, run.model) == ("Done: the file is written.", 2, "claude-opus-4-8[1m]")
    run = ADAPTER.parse(_stream(INIT, SKILL_USE, SKILL_UNKNOWN, BASH_USE, BASH_OK, ANSWER, RESULT))
    assert run.skill_tool == [] and skill_usage(run) == ([], [])
    assert run.commands == ["printf 'HELLO-FROM-SKILL\\n' > hello.txt"]  # that call succeeded
    assert _results(run)[0] == ("Skill", "<tool_use_error>Unknown skill: hello-skill</tool_use_error>", True)


def test_a_failed_cat_of_a_skill_md_is_no_load_and_no_command_run():
    run = ADAPTER.parse(_stream(INIT, CAT_USE, CAT_FAILED, ANSWER, RESULT))
    assert run.commands == [] and skill_usage(run) == ([], [])
    assert _results(run) == [
        ("Bash", "Exit code 1\ncat: .claude/skills/hello-skill/SKILL.md: No such file or directory", True)
    ]


def test_a_call_without_any_result_never_counts():
    run = ADAPTER.parse(_stream(INIT, SKILL_USE, BASH_USE, ANSWER, RESULT))
    assert run.skill_tool == [] and run.commands == [] and run.tool_calls == 2


def test_tokens_are_those_the_cost_pays_for():
    """``modelUsage`` (what ``total_cost_usd`` prices, side calls included), not ``usage``."""
    run = ADAPTER.parse(_stream(INIT, SKILL_USE, SKILL_OK, ANSWER, RESULT))
    assert (run.input_tokens, run.output_tokens, run.cached_tokens, run.cost_usd) == (10346, 83, 0, 0.053805)
    two = {**RESULT, "modelUsage": {
        "claude-opus-4-8[1m]": {"inputTokens": 100, "outputTokens": 10, "cacheReadInputTokens": 40,
                                "cacheCreationInputTokens": 5},
        "claude-haiku-4-5": {"inputTokens": 7, "outputTokens": 3, "cacheReadInputTokens": 0,
                             "cacheCreationInputTokens": 0}}}  # fmt: skip
    run = ADAPTER.parse(_stream(INIT, two))
    assert (run.input_tokens, run.output_tokens, run.cached_tokens) == (152, 13, 40)


def test_an_api_error_names_its_status_and_the_variable_to_check():
    run = ADAPTER.parse(_stream(INIT, RETRY_401, RESULT_401))
    assert run.error is not None and "\n" not in run.error
    assert "reported an error: Invalid API key" in run.error and "success" not in run.error
    assert "HTTP 401 (authentication_failed)" in run.error and "ANTHROPIC_API_KEY" in run.error


# --------------------------------------------------------------------------- prepare


def _setup(tmp_path: Path, env: dict[str, str], real_home: bool = False) -> CallSetup:
    home = tmp_path / "home"
    home.mkdir()
    return CallSetup(home=home, project=tmp_path, env=env, model=None, real_home=real_home)


@pytest.mark.parametrize("euid, sandbox", [(0, "1"), (1000, None)])
def test_prepare_says_sandbox_only_as_root_and_stays_off_the_network(tmp_path, monkeypatch, euid, sandbox):
    monkeypatch.setattr(os, "geteuid", lambda: euid, raising=False)
    call = _setup(tmp_path, {"ANTHROPIC_API_KEY": API_KEY})
    ADAPTER.prepare(call)
    assert call.env.get("IS_SANDBOX") == sandbox
    assert (
        call.env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1" and call.env["DISABLE_AUTOUPDATER"] == "1"
    )
    assert list(call.home.iterdir()) == []  # the empty throwaway home is enough


def test_prepare_keeps_passed_values(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 0, raising=False)
    call = _setup(
        tmp_path, {"IS_SANDBOX": "0", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "0"}, real_home=True
    )
    ADAPTER.prepare(call)
    assert (call.env["IS_SANDBOX"], call.env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"]) == ("0", "0")
    assert call.env["DISABLE_AUTOUPDATER"] == "1"  # what was not passed is still set


# --------------------------------------------------------------------------- the real CLI


_script = script_for(".claude/skills")


def _point_at(env, url: str) -> None:
    """Only the provider's documented variables."""
    env.setenv("ANTHROPIC_API_KEY", API_KEY)
    env.setenv("ANTHROPIC_BASE_URL", url)


def _eval_options(tmp_path: Path, harness: HarnessOptions) -> EvalOptions:
    return EvalOptions(agents=["claude-code"], output_dir=tmp_path / "runs", cache_dir=tmp_path / "cache",
                       plots=False, concurrency=1, harness=harness)  # fmt: skip


@pytest.mark.slow
def test_real_claude_eval_with_skill_passes_and_baseline_fails_to_load(clean_env, hello_skill, tmp_path):
    cli_bin("claude")
    with running_agent_server(_script(), protocols=[PROTOCOL]) as server:
        _point_at(clean_env, server.url)
        result = run_eval(hello_skill, [], _eval_options(tmp_path, HarnessOptions(timeout=120)))
    with_skill, baseline = lift_rows(result)
    # The failed load attempt stays in the baseline's transcript, with its error.
    (failed,) = [e for e in _events(baseline) if e.name == "Skill"]
    assert failed.error is True and "Unknown skill: hello-skill" in str(failed.result)
    (loaded,) = [e for e in _events(with_skill) if e.name == "Skill"]
    assert loaded.error is False and "Launching skill" in str(loaded.result)
    # The real artifacts: the file the command wrote, nothing the CLI keeps for itself.
    for row in (with_skill, baseline):
        assert row.input_tokens and row.output_tokens and row.cost_usd  # modelUsage and total_cost_usd
    # The model's turns (3 per condition, streamed) and the CLI's warm-up HEAD of the base URL
    # reached the server, nothing else (no side question: nonessential traffic is off).
    turns = [r for r in server.requests if r.method == "POST"]
    assert len(turns) == 6 and all(
        r.path == "/v1/messages?beta=true" and r.body["stream"] is True for r in turns
    )
    assert {(r.method, r.path) for r in server.requests if r.method != "POST"} <= {("HEAD", "/")}


@pytest.mark.slow
def test_real_claude_triggers_count_only_a_successful_load(clean_env, tmp_path):
    cli_bin("claude")
    check_triggers("claude-code", _script, lambda server: _point_at(clean_env, server.url), PROTOCOL, tmp_path)


@pytest.mark.slow
def test_real_claude_with_a_wrong_key_is_an_error_row_naming_the_cause(clean_env, hello_skill, tmp_path):
    """The server refuses the key (401): one line with the CLI's words, the status and what to check.
    (``CLAUDE_CODE_MAX_RETRIES=0``: by default the CLI retries a 401 ten times, minutes.)"""
    cli_bin("claude")
    with running_llm_server(api_key="sk-another-key-0000000000") as server:
        _point_at(clean_env, server.url)
        harness = HarnessOptions(timeout=120, agent_env=["CLAUDE_CODE_MAX_RETRIES=0"])
        result = run_eval(hello_skill, [], _eval_options(tmp_path, harness))
    errors = [r.error for r in result.rows]
    assert len(errors) == 2 and all(e is not None and "\n" not in e for e in errors), errors
    for e in errors:
        assert "reported an error: Failed to authenticate" in e and "HTTP 401" in e, e
        assert "check ANTHROPIC_API_KEY" in e and API_KEY not in e, e
