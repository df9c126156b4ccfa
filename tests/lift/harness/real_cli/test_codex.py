"""Codex (``@openai/codex``): its real output read by the adapter, its per-call config, and the
real CLI driven through ``eval --agent codex`` and ``triggers --agent codex`` against the
scripted OpenAI Responses server, with only ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL`` set.

The recorded lines below are codex-cli 0.171.0's own ``exec --json`` output (ids and thread
ids shortened), from runs against that server. The real-CLI tests name a model
(``codex:scripted-model``): Codex's default model runs its tools through a JavaScript
"code mode" tool, which a scripted server cannot play.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from _real_cli_kit import API_KEY, SKILL, call_setup, check_triggers, cli_bin, lift_rows, script_for
from _real_cli_kit import events as _events

from upskill_hub.lift.api import run_eval
from upskill_hub.lift.harness import HarnessOptions
from upskill_hub.lift.harness.base import UnknownOutput
from upskill_hub.lift.harness.codex import ADAPTER, NOTE, OPENAI_API_URL, PROVIDER_ID
from upskill_hub.lift.harness.run import skill_usage
from upskill_hub.lift.prepare import EvalOptions
from upskill_hub.testing.agent_server import running_agent_server, sse_reply
from upskill_hub.testing.agent_wire.responses import PROTOCOL, Responses

AGENT = "codex:scripted-model"

THREAD = {"type": "thread.started", "thread_id": "01a2237b-62f3"}
TURN = {"type": "turn.started"}
METADATA = {"type": "item.completed", "item": {"id": "item_0", "type": "error", "message": "Model metadata for "
            "`scripted-model` not found. Defaulting to fallback metadata; this can degrade performance and cause "
            "issues."}}  # fmt: skip
CAT = "/bin/bash -lc 'cat .agents/skills/hello-skill/SKILL.md'"
CAT_STARTED = {"type": "item.started", "item": {"id": "item_1", "type": "command_execution", "command": CAT,
               "aggregated_output": "", "exit_code": None, "status": "in_progress"}}  # fmt: skip
CAT_OK = {"type": "item.completed", "item": {"id": "item_1", "type": "command_execution", "command": CAT,
          "aggregated_output": "---\nname: hello-skill\ndescription: says hello\n---\nWrite hello.txt\n",
          "exit_code": 0, "status": "completed"}}  # fmt: skip
#: The baseline: the skill is absent, ``cat`` fails.
CAT_MISSING = {"type": "item.completed", "item": {"id": "item_1", "type": "command_execution", "command": CAT,
               "aggregated_output": "cat: .agents/skills/hello-skill/SKILL.md: No such file or directory\n",
               "exit_code": 1, "status": "failed"}}  # fmt: skip
WRITE = "/bin/bash -lc \"printf 'HELLO-FROM-SKILL\\\\n' > hello.txt\""
WRITE_STARTED = {"type": "item.started", "item": {"id": "item_2", "type": "command_execution", "command": WRITE,
                 "aggregated_output": "", "exit_code": None, "status": "in_progress"}}  # fmt: skip
WRITE_OK = {"type": "item.completed", "item": {"id": "item_2", "type": "command_execution", "command": WRITE,
            "aggregated_output": "", "exit_code": 0, "status": "completed"}}  # fmt: skip
ANSWER = {"type": "item.completed", "item": {"id": "item_3", "type": "agent_message",
          "text": "Done: the file is written."}}  # fmt: skip
DONE = {"type": "turn.completed", "usage": {"input_tokens": 16554, "cached_input_tokens": 0,
        "cache_write_input_tokens": 0, "output_tokens": 147, "reasoning_output_tokens": 0}}  # fmt: skip
#: A dropped stream, retried (the server closed two streams before ``response.completed``).
DROPPED = "stream disconnected before completion: stream closed before response.completed"
RETRIES = [{"type": "error", "message": f"Reconnecting... {n}/5 ({DROPPED})"} for n in (1, 2)]
#: The built-in provider: WebSocket attempts refused, then the fallback to HTTPS.
WS = "unexpected status 404 Not Found: not found, url: ws://127.0.0.1:18777/v1/responses"
WS_RETRIES = [{"type": "error", "message": f"Reconnecting... {n}/5 ({WS})"} for n in (2, 3, 4, 5)]
WS_FALLBACK = {"type": "item.completed", "item": {"id": "item_1", "type": "error",
               "message": f"Falling back from WebSockets to HTTPS transport. {WS}"}}  # fmt: skip
WS_ANSWER = {
    "type": "item.completed",
    "item": {"id": "item_2", "type": "agent_message", "text": "Hello there"},
}
FAILED = {"type": "turn.failed", "error": {"message": DROPPED}}
NO_NETWORK = {"type": "error", "message": "Reconnecting... waiting for network (Connection failed: error sending "
              "request)"}  # fmt: skip


def _stream(*events: dict) -> str:
    return "\n".join(json.dumps(e, ensure_ascii=False) for e in events) + "\n"


def _calls(run) -> list[tuple[str, object, bool]]:
    return [(e.name, e.result, e.error) for e in run.transcript.events]


# --------------------------------------------------------------------------- recorded output


def test_a_cat_of_the_skill_md_loads_the_skill_only_when_it_exited_0():
    run = ADAPTER.parse(
        _stream(THREAD, METADATA, TURN, CAT_STARTED, CAT_OK, WRITE_STARTED, WRITE_OK, ANSWER, DONE)
    )
    assert skill_usage(run) == ([SKILL], [f"{SKILL}/SKILL.md"])
    assert (run.error, run.text, run.tool_calls, run.input_tokens, run.output_tokens) == (
        None, "Done: the file is written.", 2, 16554, 147,
    )  # fmt: skip
    # The baseline's real line: `cat` of the absent SKILL.md exits 1. No load, no file read.
    run = ADAPTER.parse(
        _stream(THREAD, METADATA, TURN, CAT_STARTED, CAT_MISSING, WRITE_STARTED, WRITE_OK, ANSWER, DONE)
    )
    assert skill_usage(run) == ([], [])
    # The write succeeded; the failed cat is no command run.
    assert run.commands == [WRITE] and run.error is None
    cat = next(c for c in _calls(run) if c[0] == "command_execution")
    assert cat == (
        "command_execution",
        "cat: .agents/skills/hello-skill/SKILL.md: No such file or directory\n\n(exit code 1)",
        True,
    )


def test_a_command_that_never_completed_counts_as_nothing():
    run = ADAPTER.parse(_stream(THREAD, TURN, CAT_STARTED, ANSWER, DONE))
    assert run.commands == [] and skill_usage(run) == ([], [])


def test_reconnecting_errors_followed_by_turn_completed_are_a_passing_run_with_the_retries_kept():
    """A Codex stream with ``Reconnecting...`` errors followed by ``turn.completed``: no error,
    the retries in the transcript, the work counted."""
    run = ADAPTER.parse(_stream(THREAD, METADATA, TURN, *RETRIES, CAT_STARTED, CAT_OK, WRITE_STARTED, WRITE_OK,
                                ANSWER, DONE))  # fmt: skip
    assert run.error is None and run.text == "Done: the file is written."
    assert skill_usage(run)[0] == [SKILL] and run.tool_calls == 2
    notes = [(c[1], c[2]) for c in _calls(run) if c[0] == NOTE]
    assert notes[1:] == [(f"Reconnecting... {n}/5 ({DROPPED})", True) for n in (1, 2)]
    assert "Model metadata" in str(notes[0][0])
    # The built-in provider's WebSocket attempts and fallback to HTTPS (the run).
    run = ADAPTER.parse(_stream(THREAD, METADATA, TURN, *WS_RETRIES, WS_FALLBACK, WS_ANSWER, DONE))
    assert run.error is None and run.text == "Hello there"
    notes = [c[1] for c in _calls(run) if c[0] == NOTE]
    assert len(notes) == 6 and str(notes[-1]).startswith("Falling back from WebSockets to HTTPS")


def test_a_failed_turn_is_an_error_with_codexs_own_words():
    retries = [{"type": "error", "message": f"Reconnecting... {n}/5 ({DROPPED})"} for n in range(1, 6)]
    run = ADAPTER.parse(
        _stream(THREAD, METADATA, TURN, *retries, {"type": "error", "message": DROPPED}, FAILED)
    )
    assert run.error == f"codex: {DROPPED}"
    # No turn.completed and no turn.failed, but Codex said why: its last error, not an unknown shape.
    run = ADAPTER.parse(_stream(THREAD, TURN, NO_NETWORK))
    assert run.error is not None and "waiting for network" in run.error
    with pytest.raises(UnknownOutput):
        ADAPTER.parse(_stream(THREAD, TURN))


def test_a_wait_for_the_network_is_named_with_its_fix():
    stuck = _stream(THREAD, METADATA, TURN, NO_NETWORK, NO_NETWORK, NO_NETWORK).encode()
    reason = ADAPTER.stalled(stuck)
    assert reason is not None and "OPENAI_BASE_URL" in reason and "cannot connect" in reason
    # One such line may be a blip Codex recovers from; transient retries never stop a call.
    assert ADAPTER.stalled(_stream(THREAD, METADATA, TURN, NO_NETWORK).encode()) is None
    assert ADAPTER.stalled(_stream(THREAD, TURN, *RETRIES).encode()) is None


# --------------------------------------------------------------------------- prepare


_setup = call_setup


def test_prepare_points_codex_at_openai_base_url_with_the_key_from_the_environment(tmp_path):
    url = 'http://127.0.0.1:9/v1"\nmodel_provider = "evil'  # TOML-escaped, never read as another key
    call = _setup(tmp_path, {"OPENAI_API_KEY": API_KEY, "OPENAI_BASE_URL": url})
    ADAPTER.prepare(call)
    assert call.env["CODEX_HOME"] == str(call.home / ".codex")
    text = (call.home / ".codex" / "config.toml").read_text()
    config = tomllib.loads(text)
    assert config["model_provider"] == PROVIDER_ID
    provider = config["model_providers"][PROVIDER_ID]
    assert (provider["base_url"], provider["env_key"], provider["wire_api"], provider["supports_websockets"]) == (
        url, "OPENAI_API_KEY", "responses", False,
    )  # fmt: skip
    assert config["check_for_update_on_startup"] is False and config["analytics"] == {"enabled": False}
    assert config["feedback"] == {"enabled": False}
    assert API_KEY not in text  # the key stays in the environment
    # Only CODEX_API_KEY: the OpenAI API, with that key.
    call = _setup(tmp_path / "k", {"CODEX_API_KEY": API_KEY})
    ADAPTER.prepare(call)
    provider = tomllib.loads((call.home / ".codex" / "config.toml").read_text())["model_providers"][
        PROVIDER_ID
    ]
    assert (provider["base_url"], provider["env_key"]) == (OPENAI_API_URL, "CODEX_API_KEY")


def test_prepare_leaves_the_users_own_codex_home_alone(tmp_path):
    call = _setup(tmp_path, {"OPENAI_API_KEY": API_KEY, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}, True)
    ADAPTER.prepare(call)
    assert "CODEX_HOME" not in call.env and not (call.home / ".codex").exists()
    mine = tmp_path / "my-codex"
    call = _setup(tmp_path / "b", {"OPENAI_API_KEY": API_KEY, "CODEX_HOME": str(mine)})
    ADAPTER.prepare(call)
    assert call.env["CODEX_HOME"] == str(mine) and not mine.exists() and not (call.home / ".codex").exists()


# --------------------------------------------------------------------------- the real CLI


_script = script_for(".agents/skills")


def _point_at(env, server) -> None:
    """Only the provider's documented variables."""
    env.setenv("OPENAI_API_KEY", API_KEY)
    env.setenv("OPENAI_BASE_URL", server.openai_base_url)


def _eval(hello_skill: Path, tmp_path: Path, name: str = "runs"):
    opts = EvalOptions(agents=[AGENT], output_dir=tmp_path / name, cache_dir=tmp_path / "cache", plots=False,
                       concurrency=1, harness=HarnessOptions(timeout=120))  # fmt: skip
    return run_eval(hello_skill, [], opts)


@pytest.mark.slow
def test_real_codex_eval_with_skill_passes_and_baseline_fails_to_load(clean_env, hello_skill, tmp_path):
    cli_bin("codex")
    with running_agent_server(_script(), protocols=[PROTOCOL]) as server:
        _point_at(clean_env, server)
        result = _eval(hello_skill, tmp_path)
    with_skill, baseline = lift_rows(result)
    # The failed load attempt stays in the baseline's transcript, with its error.
    cat = next(e for e in _events(baseline) if e.name == "command_execution" and "cat " in str(e.arguments))
    assert cat.error is True and "No such file or directory" in str(cat.result)
    assert sum(r.path == "/v1/responses" for r in server.requests) == 6  # 3 turns per condition


class _DropsFirstStreams(Responses):
    """The Responses protocol, but the first ``drops`` streams end before ``response.completed``."""

    def __init__(self, drops: int) -> None:
        self.drops = drops

    def reply(self, step, turn, n):
        if self.drops > 0:
            self.drops -= 1
            return sse_reply(
                [("response.created", {"type": "response.created", "response": {"id": f"r{n}"}})]
            )
        return super().reply(step, turn, n)


@pytest.mark.slow
def test_real_codex_retries_that_end_in_a_completed_turn_are_a_passing_row(clean_env, hello_skill, tmp_path):
    """A Codex stream with ``Reconnecting…`` errors followed by ``turn.completed`` is a passing
    row with the retries in its transcript (the real CLI, retrying two dropped streams)."""
    cli_bin("codex")
    with running_agent_server(_script(), protocols=[_DropsFirstStreams(2)]) as server:
        _point_at(clean_env, server)
        result = _eval(hello_skill, tmp_path)
    rows = {r.condition: r for r in result.rows}
    hit = [
        r for r in result.rows if any(e.name == NOTE and "Reconnecting" in str(e.result) for e in _events(r))
    ]
    assert len(hit) == 1, [r.transcript for r in result.rows]  # the first call got the two dropped streams
    assert [r.error for r in result.rows] == [None, None]
    assert rows["with_skill"].passed is True and rows["with_skill"].triggered is True
    notes = [str(e.result) for e in _events(hit[0]) if e.name == NOTE and "Reconnecting" in str(e.result)]
    assert notes == [f"Reconnecting... {n}/5 ({DROPPED})" for n in (1, 2)]


@pytest.mark.slow
def test_real_codex_triggers_count_only_a_successful_load(clean_env, tmp_path):
    cli_bin("codex")
    check_triggers(AGENT, _script, lambda server: _point_at(clean_env, server), PROTOCOL, tmp_path)
