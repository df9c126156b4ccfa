"""The scripted Anthropic Messages protocol, read by Anthropic's own SDK: streamed (SSE) and
plain replies carry the same step, and ``count_tokens`` answers."""

from __future__ import annotations

import anthropic
import pytest

from upskill_hub.testing.agent_server import AgentScript, running_agent_server
from upskill_hub.testing.agent_wire.anthropic import PROTOCOL

SCRIPT = AgentScript(
    skill="hello-skill", skill_file=".claude/skills/hello-skill/SKILL.md", command="echo hi > a.txt"
)
TOOLS = [
    {"name": "Skill", "description": "Load a skill", "input_schema": {"type": "object",
     "properties": {"skill": {"type": "string"}, "args": {"type": "string"}}}},
    {"name": "Bash", "description": "Run a command", "input_schema": {"type": "object",
     "properties": {"command": {"type": "string"}, "timeout": {"type": "number"}}}},
]  # fmt: skip
USER = {"role": "user", "content": "Say hello in a file."}


def _after(n: int) -> list[dict]:
    """A conversation with ``n`` tool results so far."""
    msgs: list[dict] = [USER]
    for i in range(n):
        msgs.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {}}],
            }
        )
        msgs.append(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "ok"}]}
        )
    return msgs


@pytest.fixture
def client():
    with running_agent_server(SCRIPT, protocols=[PROTOCOL]) as server:
        yield anthropic.Anthropic(base_url=server.url, api_key="sk-test-wire-0000", max_retries=0), server


def test_the_stream_plays_the_script_as_the_sdk_reads_it(client):
    sdk, server = client
    got = []
    for n in range(3):
        with sdk.messages.stream(model="claude-x", max_tokens=100, tools=TOOLS, messages=_after(n)) as stream:
            got.append(stream.get_final_message())
    assert [(m.stop_reason, m.content[0].type) for m in got] == [
        ("tool_use", "tool_use"), ("tool_use", "tool_use"), ("end_turn", "text")
    ]  # fmt: skip
    # The tool input arrives as input_json_delta and is whole once parsed.
    assert (got[0].content[0].name, got[0].content[0].input) == ("Skill", {"skill": "hello-skill"})
    assert (got[1].content[0].name, got[1].content[0].input) == ("Bash", {"command": "echo hi > a.txt"})
    assert got[2].content[0].text == SCRIPT.answer and got[2].model == "claude-x"
    assert all(m.usage.input_tokens > 0 and m.usage.output_tokens > 0 for m in got)


def test_a_plain_request_gets_the_same_step_as_one_json_message(client):
    sdk, _ = client
    msg = sdk.messages.create(model="claude-x", max_tokens=100, tools=TOOLS, messages=_after(0))
    assert (msg.stop_reason, msg.content[0].name, msg.content[0].input) == (
        "tool_use",
        "Skill",
        {"skill": "hello-skill"},
    )
    side = sdk.messages.create(model="claude-x", max_tokens=100, messages=[USER])  # no tools: a side question
    assert (side.stop_reason, side.content[0].text) == ("end_turn", SCRIPT.side_answer)


def test_count_tokens_answers_a_size(client):
    sdk, _ = client
    counted = sdk.messages.count_tokens(model="claude-x", tools=TOOLS, messages=_after(1))
    assert counted.input_tokens > 0
