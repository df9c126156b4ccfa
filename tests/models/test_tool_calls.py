"""Tool calling through the real openai / anthropic SDKs against the scripted server.

The scripted server's deterministic tool use (load a catalog skill whose description shares
a word with the request, read a file the loaded body names, then answer) must round-trip
through both wire formats: tool specs out, tool calls back, tool results in the next turn.
"""

from __future__ import annotations

import asyncio

import pytest

from upskill_hub.models.base import GenerationParams, Message, ToolCall, ToolSpec
from upskill_hub.models.factory import create_client
from upskill_hub.session.cache import cache_key
from upskill_hub.testing.llm_server import running_llm_server

KEY = "sk-" + "test-0123456789abcdefghijklmnop"
TOOLS = [
    ToolSpec("load_skill", "Load a skill", {"type": "object", "properties": {"name": {"type": "string"}}}),
    ToolSpec("read_skill_file", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}}),
]
SYSTEM = (
    "Base.\n<available_skills>\n<skill>\n<name>pdf</name>\n<description>Extract tables from PDF documents"
    "</description>\n<location>/s/pdf/SKILL.md</location>\n</skill>\n</available_skills>"
)


def _client(provider: str, srv):
    if provider == "openai":
        return create_client("openai:gpt-4.1-mini", base_url=srv.openai_base_url, api_key=KEY, max_retries=0)
    return create_client("anthropic:claude-haiku-4-5", base_url=srv.anthropic_base_url, api_key=KEY, max_retries=0)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_tool_round_trip(provider: str) -> None:
    def script(system, messages, params):
        return "ANSWER with " + ("BODY" if "Use references/tables.md" in system else "nothing")

    async def go(srv):
        client = _client(provider, srv)
        params = GenerationParams(max_tokens=200)
        msgs = [Message("user", "Please extract the tables here")]
        first = await client.complete(SYSTEM, msgs, params, tools=TOOLS)
        assert [(c.name, c.arguments) for c in first.tool_calls] == [("load_skill", {"name": "pdf"})]
        msgs += [Message("assistant", first.text, tool_calls=first.tool_calls),
                 Message("tool", "# PDF\nUse references/tables.md for tables.", tool_call_id=first.tool_calls[0].id)]
        second = await client.complete(SYSTEM, msgs, params, tools=TOOLS)
        assert [(c.name, c.arguments) for c in second.tool_calls] == [
            ("read_skill_file", {"name": "pdf", "path": "references/tables.md"})
        ]
        msgs += [Message("assistant", "", tool_calls=second.tool_calls),
                 Message("tool", "no such file", tool_call_id=second.tool_calls[0].id, is_error=True)]
        third = await client.complete(SYSTEM, msgs, params, tools=TOOLS)
        assert third.tool_calls == ()
        assert third.text == "ANSWER with BODY"  # the loaded body reached the answer script
        # Without tools the same request is a plain answer, as before.
        plain = await client.complete(SYSTEM, msgs[:1], params)
        assert plain.tool_calls == () and plain.text == "ANSWER with nothing"
        await client.aclose()

    with running_llm_server(script) as srv:
        asyncio.run(go(srv))
        sent = [r.body for r in srv.completion_requests]
    if provider == "openai":
        assert sent[0]["tools"][0]["function"]["name"] == "load_skill"
        assert sent[1]["messages"][-1]["role"] == "tool"
    else:
        assert sent[0]["tools"][0]["input_schema"]["type"] == "object"
        assert sent[1]["messages"][-1]["content"][0]["type"] == "tool_result"
        assert sent[2]["messages"][-1]["content"][0]["is_error"] is True
    assert "tools" not in sent[3]


def test_no_matching_description_answers_without_tools() -> None:
    async def go(srv):
        client = _client("openai", srv)
        out = await client.complete(SYSTEM, [Message("user", "Bake a cake")], GenerationParams(), tools=TOOLS)
        await client.aclose()
        return out

    with running_llm_server(lambda s, m, p: "cake") as srv:
        out = asyncio.run(go(srv))
    assert out.tool_calls == () and out.text == "cake"


def test_cache_key_includes_tools_and_tool_turns() -> None:
    base = {"provider": "p", "endpoint": "e", "model": "m", "system": "s", "params": {}, "repeat": 0}
    msgs = [Message("user", "hi")]
    plain = cache_key(messages=msgs, **base)
    assert cache_key(messages=msgs, tools=None, **base) == plain  # old keys unchanged
    assert cache_key(messages=msgs, tools=TOOLS, **base) != plain
    assert cache_key(messages=msgs, tools=TOOLS[:1], **base) != cache_key(messages=msgs, tools=TOOLS, **base)
    call = ToolCall("c1", "load_skill", {"name": "a"})
    other = ToolCall("c1", "load_skill", {"name": "b"})
    k1 = cache_key(messages=[*msgs, Message("assistant", "", tool_calls=(call,))], tools=TOOLS, **base)
    k2 = cache_key(messages=[*msgs, Message("assistant", "", tool_calls=(other,))], tools=TOOLS, **base)
    r1 = cache_key(messages=[*msgs, Message("tool", "x", tool_call_id="c1")], tools=TOOLS, **base)
    r2 = cache_key(messages=[*msgs, Message("tool", "y", tool_call_id="c1")], tools=TOOLS, **base)
    assert len({k1, k2, r1, r2}) == 4
