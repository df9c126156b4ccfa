"""OpenCode (``opencode-ai``): its real output read by the adapter, the config ``prepare`` writes,
and the real CLI driven through ``eval --agent opencode:openai-compatible/...`` and
``triggers --agent`` against the scripted Chat Completions server, with only
``OPENAI_API_KEY`` and ``OPENAI_BASE_URL`` set.

The recorded lines below are OpenCode 1.18.33's own ``run --format json`` output (ids,
timestamps and the workspace path shortened), from runs against that server.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _real_cli_kit import API_KEY, COMMAND, SKILL, check_triggers, cli_bin, lift_rows, script_for
from _real_cli_kit import events as _events

from upskill_hub.lift.api import run_eval
from upskill_hub.lift.harness import HarnessOptions
from upskill_hub.lift.harness.base import CallSetup
from upskill_hub.lift.harness.opencode import ADAPTER
from upskill_hub.lift.harness.run import skill_usage
from upskill_hub.lift.prepare import EvalOptions
from upskill_hub.testing.agent_server import running_agent_server
from upskill_hub.testing.agent_wire.chat import PROTOCOL

MODEL = "openai-compatible/scripted-model"
SID = "ses_ddc87d64"


def _tool(n: int, tool: str, state: dict) -> dict:
    return {"type": "tool_use", "timestamp": 1795891409639, "sessionID": SID,
            "part": {"type": "tool", "tool": tool, "callID": f"call_scripted_000{n}", "state": state,
                     "id": f"prt_{n}", "sessionID": SID, "messageID": f"msg_{n}"}}  # fmt: skip


TIME = {"start": 1795891409305, "end": 1795891409361}
SKILL_OK = _tool(2, "skill", {"status": "completed", "input": {"name": SKILL},
    "output": '<skill_content name="hello-skill">\n# Skill: hello-skill\n\n# Hello\nWrite hello.txt\n\nBase '
              "directory for this skill: /tmp/oc/p/.opencode/skills/hello-skill\n</skill_content>",
    "metadata": {"name": SKILL, "dir": "/tmp/oc/p/.opencode/skills/hello-skill", "truncated": False},
    "title": "Loaded skill: hello-skill", "time": TIME})  # fmt: skip
#: The baseline: no skill installed.
SKILL_ABSENT = _tool(2, "skill", {"status": "error", "input": {"name": SKILL},
    "error": 'Skill "hello-skill" not found. Available skills: customize-opencode', "time": TIME})  # fmt: skip
#: With the skill installed but no ``rg`` on PATH.
SKILL_NO_RG = _tool(2, "skill", {"status": "error", "input": {"name": SKILL}, "error": "ripgrep execution failed",
                                 "time": TIME})  # fmt: skip
BASH_OK = _tool(3, "bash", {"status": "completed", "input": {"command": COMMAND}, "output": "(no output)",
    "metadata": {"output": "(no output)", "exit": 0, "truncated": False}, "title": COMMAND, "time": TIME})  # fmt: skip
CAT = "cat .opencode/skills/hello-skill/SKILL.md"
CAT_FAILED = _tool(3, "bash", {"status": "completed", "input": {"command": CAT},
    "output": "cat: .opencode/skills/hello-skill/SKILL.md: No such file or directory\n",
    "metadata": {"output": "cat: .opencode/skills/hello-skill/SKILL.md: No such file or directory\n", "exit": 1,
                 "truncated": False}, "title": CAT, "time": TIME})  # fmt: skip


def _finish(reason: str, n_in: int, n_out: int) -> dict:
    return {"type": "step_finish", "timestamp": 1795891409639, "sessionID": SID,
            "part": {"id": "prt_f", "reason": reason, "messageID": "msg_1", "sessionID": SID, "type": "step-finish",
                     "tokens": {"total": n_in + n_out, "input": n_in, "output": n_out, "reasoning": 0,
                                "cache": {"write": 0, "read": 0}}, "cost": 0}}  # fmt: skip


START = {"type": "step_start", "timestamp": 1795891409350, "sessionID": SID,
         "part": {"id": "prt_s", "messageID": "msg_1", "sessionID": SID, "type": "step-start"}}  # fmt: skip
TEXT = {"type": "text", "timestamp": 1795891410085, "sessionID": SID,
        "part": {"id": "prt_t", "messageID": "msg_3", "sessionID": SID, "type": "text",
                 "text": "Done: the file is written.", "time": TIME}}  # fmt: skip
#: Connection refused at the base URL: OpenCode retries for about a minute, then this.
CANNOT_CONNECT = {"type": "error", "timestamp": 1795892018546, "sessionID": SID, "error": {"name": "APIError",
    "data": {"message": "Cannot connect to API: Unable to connect. Is the computer able to access the url?",
             "isRetryable": True, "metadata": {"url": "http://127.0.0.1:9/v1/responses"}}}}  # fmt: skip
#: An unknown model, or a provider without its key ("Model not found" only in the log on stderr).
UNEXPECTED = {"type": "error", "timestamp": 1795891885443, "sessionID": SID, "error": {"name": "UnknownError",
    "data": {"message": "Unexpected server error. Check server logs for details.", "ref": "err_884b2517"}}}  # fmt: skip


def _stream(*events: dict) -> str:
    return "\n".join(json.dumps(e, ensure_ascii=False) for e in events) + "\n"


def _run(*tools: dict) -> str:
    steps = [e for t in tools for e in (START, t, _finish("tool-calls", 2510, 44))]
    return _stream(*steps, START, TEXT, _finish("stop", 2731, 15))


def _results(run) -> list[tuple[str, object, bool]]:
    return [(e.name, e.result, e.error) for e in run.transcript.events]


# --------------------------------------------------------------------------- recorded output


def test_only_a_completed_skill_call_loads_the_skill():
    run = ADAPTER.parse(_run(SKILL_OK, BASH_OK))
    assert skill_usage(run) == ([SKILL], [f"{SKILL}/SKILL.md"])
    assert (run.text, run.tool_calls, run.turns, run.error) == ("Done: the file is written.", 2, 3, None)
    assert (run.input_tokens, run.output_tokens) == (2510 * 2 + 2731, 44 * 2 + 15)
    run = ADAPTER.parse(_run(SKILL_ABSENT, BASH_OK))
    assert run.skill_tool == [] and skill_usage(run) == ([], []) and run.error is None
    assert run.commands == [COMMAND]  # that call succeeded
    assert _results(run)[0] == (
        "skill",
        'Skill "hello-skill" not found. Available skills: customize-opencode',
        True,
    )


def test_a_bash_call_with_a_nonzero_exit_is_no_load_and_no_command_run():
    """OpenCode reports the call ``completed`` whatever the exit status: ``metadata.exit`` decides."""
    run = ADAPTER.parse(_run(CAT_FAILED))
    assert run.commands == [] and skill_usage(run) == ([], [])
    ((name, result, error),) = _results(run)
    assert name == "bash" and error is True and "No such file or directory" in str(result)


def test_a_skill_tool_without_ripgrep_ends_the_row_with_the_cause_and_fix():
    run = ADAPTER.parse(_run(SKILL_NO_RG, BASH_OK))
    assert run.error is not None and "\n" not in run.error
    assert "ripgrep execution failed" in run.error and "apt-get install ripgrep" in run.error
    assert skill_usage(run) == ([], [])


def test_error_events_name_the_url_or_the_usual_cause():
    run = ADAPTER.parse(_stream(CANNOT_CONNECT))
    assert run.error == (
        "opencode: Cannot connect to API: Unable to connect. Is the computer able to access the url? "
        "(http://127.0.0.1:9/v1/responses)"
    )
    run = ADAPTER.parse(_stream(UNEXPECTED))
    assert run.error is not None and "\n" not in run.error
    assert "key variable" in run.error and "stderr.tail" in run.error


# --------------------------------------------------------------------------- prepare


def _prepared(
    tmp_path: Path, model: str | None, env: dict[str, str], real_home: bool = False
) -> tuple[CallSetup, dict]:
    home = tmp_path / "home"
    home.mkdir()
    env = {"XDG_CONFIG_HOME": str(home / ".config"), **env}
    call = CallSetup(home=home, project=tmp_path, env=env, model=model, real_home=real_home)
    ADAPTER.prepare(call)
    path = Path(call.env["OPENCODE_CONFIG"]) if real_home else home / ".config" / "opencode" / "opencode.json"
    return call, json.loads(path.read_text(encoding="utf-8"))


def test_prepare_writes_an_unattended_offline_config_in_the_throwaway_home(tmp_path):
    call, cfg = _prepared(tmp_path, "anthropic/claude-sonnet-4-5",
                          {"ANTHROPIC_API_KEY": API_KEY, "ANTHROPIC_BASE_URL": "http://127.0.0.1:5/"})  # fmt: skip
    assert cfg["autoupdate"] is False and cfg["share"] == "disabled"
    assert cfg["permission"] == {"edit": "allow", "bash": "allow", "skill": "allow"}
    # Anthropic's convention has no /v1; OpenCode's provider wants it.
    assert cfg["provider"] == {"anthropic": {"options": {"baseURL": "http://127.0.0.1:5/v1"}}}
    assert call.env["OPENCODE_DISABLE_MODELS_FETCH"] == "1" and call.env["OPENCODE_DISABLE_AUTOUPDATE"] == "1"
    assert API_KEY not in json.dumps(cfg)


def test_prepare_points_the_openai_compatible_provider_at_openai_base_url(tmp_path):
    _, cfg = _prepared(
        tmp_path, MODEL, {"OPENAI_API_KEY": API_KEY, "OPENAI_BASE_URL": "http://127.0.0.1:5/v1"}
    )
    assert cfg["provider"]["openai-compatible"] == {
        "npm": "@ai-sdk/openai-compatible", "name": "OpenAI-compatible (upskill-hub)",
        "options": {"apiKey": "{env:OPENAI_API_KEY}", "baseURL": "http://127.0.0.1:5/v1"},
        "models": {"scripted-model": {"name": "scripted-model", "tool_call": True}},
    }  # fmt: skip


def test_prepare_leaves_the_real_home_alone_and_keeps_passed_values(tmp_path):
    call, cfg = _prepared(tmp_path, "openai/gpt-5", {"OPENAI_BASE_URL": "http://127.0.0.1:5/v1",
                                                     "OPENCODE_DISABLE_MODELS_FETCH": "0"}, real_home=True)  # fmt: skip
    assert Path(call.env["OPENCODE_CONFIG"]).parent == call.home
    assert cfg["provider"] == {"openai": {"options": {"baseURL": "http://127.0.0.1:5/v1"}}}
    assert call.env["OPENCODE_DISABLE_MODELS_FETCH"] == "0"


# --------------------------------------------------------------------------- the real CLI


_script = script_for(".opencode/skills")


def _point_at(env, url: str) -> None:
    """Only the provider's documented variables."""
    env.setenv("OPENAI_API_KEY", API_KEY)
    env.setenv("OPENAI_BASE_URL", f"{url}/v1")


@pytest.mark.slow
def test_real_opencode_eval_with_skill_passes_and_baseline_fails_to_load(clean_env, hello_skill, tmp_path):
    cli_bin("opencode")
    options = EvalOptions(agents=[f"opencode:{MODEL}"], output_dir=tmp_path / "runs", cache_dir=tmp_path / "cache",
                          plots=False, concurrency=1, harness=HarnessOptions(timeout=120))  # fmt: skip
    with running_agent_server(_script(), protocols=[PROTOCOL]) as server:
        _point_at(clean_env, server.url)
        result = run_eval(hello_skill, [], options)
    with_skill, baseline = lift_rows(result)
    (failed,) = [e for e in _events(baseline) if e.name == "skill"]
    assert failed.error is True and 'Skill "hello-skill" not found' in str(failed.result)
    (loaded,) = [e for e in _events(with_skill) if e.name == "skill"]
    assert loaded.error is False and "hello-skill" in str(loaded.result)
    # The real artifacts: the file the command wrote, not OpenCode's .opencode/.gitignore.
    for row in (with_skill, baseline):
        assert row.input_tokens and row.output_tokens
    # Every request was a streamed Chat Completion to the base URL.
    assert server.requests and all(
        r.path == "/v1/chat/completions" and r.body["stream"] for r in server.requests
    )


@pytest.mark.slow
def test_real_opencode_triggers_count_only_a_successful_load(clean_env, tmp_path):
    cli_bin("opencode")
    check_triggers(f"opencode:{MODEL}", _script, lambda server: _point_at(clean_env, server.url), PROTOCOL, tmp_path)
