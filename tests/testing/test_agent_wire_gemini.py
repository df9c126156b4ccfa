"""The scripted server's Gemini API (what Gemini CLI 0.61 sends), without the CLI."""

from __future__ import annotations

import json

from upskill_hub.testing.agent_server import AgentScript, Answer, ToolCall, next_step
from upskill_hub.testing.agent_wire.gemini import PROTOCOL

SCRIPT = AgentScript(skill="hello-skill", skill_file=".gemini/skills/hello-skill/SKILL.md", command="true")
TOOLS = [{"functionDeclarations": [
    {"name": "activate_skill", "parametersJsonSchema": {"type": "object", "properties": {"name": {"type": "string"}}}},
    {"name": "run_shell_command", "parameters": {"type": "OBJECT", "properties": {"command": {"type": "STRING"}}}},
]}]  # fmt: skip


def _turn(path: str, body: dict):
    assert PROTOCOL.matches("POST", path.split("?")[0])
    return PROTOCOL.read(body, path)


def test_stream_reads_tools_and_function_responses_and_replies_in_sse():
    path = "/v1beta/models/gemini-3.8-flash:streamGenerateContent?alt=sse"
    contents = [
        {"role": "user", "parts": [{"text": "Say hello"}]},
        {
            "role": "model",
            "parts": [{"functionCall": {"name": "activate_skill", "args": {"name": "hello-skill"}}}],
        },
        {
            "role": "user",
            "parts": [{"functionResponse": {"name": "activate_skill", "response": {"output": "ok"}}}],
        },
    ]
    turn = _turn(path, {"contents": contents, "tools": TOOLS})
    assert set(turn.tools) == {"activate_skill", "run_shell_command"} and turn.results == 1
    step = next_step(SCRIPT, turn)
    assert step == ToolCall("run_shell_command", {"command": "true"})
    status, headers, body = PROTOCOL.reply(step, turn, 2)
    assert status == 200 and ("content-type", "text/event-stream") in headers
    (line,) = [x for x in body.decode().splitlines() if x.startswith("data: ")]
    data = json.loads(line[len("data: ") :])
    part = data["candidates"][0]["content"]["parts"][0]
    assert part == {"functionCall": {"name": "run_shell_command", "args": {"command": "true"}}}
    assert data["candidates"][0]["finishReason"] == "STOP" and data["usageMetadata"]["promptTokenCount"] == 2


def test_side_questions_asking_for_json_get_json_that_fits_their_schema():
    """The CLI's router and next-speaker check: JSON text matching ``responseJsonSchema``."""
    schema = {"type": "OBJECT", "required": ["reasoning", "next_speaker"], "properties": {
        "reasoning": {"type": "STRING"}, "next_speaker": {"type": "STRING", "enum": ["model", "user"]},
        "complexity_score": {"type": "INTEGER"}}}  # fmt: skip
    body = {"contents": [{"role": "user", "parts": [{"text": "who next?"}]}],
            "generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": schema}}  # fmt: skip
    turn = _turn("/v1beta/models/gemini-3.5-flash-lite:generateContent", body)
    step = next_step(SCRIPT, turn)
    assert isinstance(step, Answer)
    status, headers, raw = PROTOCOL.reply(step, turn, 1)
    assert status == 200 and ("content-type", "application/json") in headers
    text = json.loads(raw)["candidates"][0]["content"]["parts"][0]["text"]
    # "user": the turn is over; a score within the router's 1-100.
    assert json.loads(text) == {
        "reasoning": "Scripted session",
        "next_speaker": "user",
        "complexity_score": 1,
    }


def test_count_tokens_answers_a_total():
    turn = _turn(
        "/v1beta/models/m:countTokens", {"contents": [{"role": "user", "parts": [{"text": "a b c"}]}]}
    )
    status, _, raw = PROTOCOL.reply(next_step(SCRIPT, turn), turn, 1)
    assert status == 200 and json.loads(raw) == {"totalTokens": 3}
    assert not PROTOCOL.matches("GET", "/v1beta/models/m:countTokens")
    assert not PROTOCOL.matches("POST", "/v1/chat/completions")
