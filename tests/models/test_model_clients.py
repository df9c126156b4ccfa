"""The provider clients through the real openai / anthropic SDKs against the scripted server."""

from __future__ import annotations

import asyncio

import pytest

from upskill_hub.models import GenerationParams, Message, ModelClient, create_client
from upskill_hub.testing.llm_server import Reply, count_tokens, running_llm_server

KEY = "sk-" "test-secret-0123456789abcdefghij"
SYSTEM = "You are terse. Use the skill below.\n\n# Skill\nAlways answer in lowercase."
QUESTION = "What is the capital of France?"


def skill_script(system: str, messages: list[dict], params: dict) -> Reply:
    """Answers differently when the system prompt carries the skill; reports 2 cached tokens."""
    if "# Skill" in system:
        return Reply("paris is the capital", cached_tokens=2)
    return Reply("Paris.")


def _client(provider: str, srv, **kw) -> ModelClient:
    if provider == "anthropic":
        return create_client("haiku", base_url=srv.url, api_key=KEY, **kw)
    if provider == "openai":
        return create_client("openai:gpt-4.1-mini", base_url=srv.openai_base_url, api_key=KEY, **kw)
    if provider == "hf":
        return create_client(
            "hf:moonshotai/Kimi-K2-Thinking", base_url=srv.openai_base_url, api_key=KEY, **kw
        )
    return create_client("qwen2.5:7b", base_url=srv.openai_base_url, **kw)


@pytest.mark.parametrize("provider", ["openai", "anthropic", "hf", "openai-compatible"])
def test_text_usage_finish_reason(provider: str) -> None:
    with running_llm_server(skill_script) as srv:

        async def go():
            client = _client(provider, srv, timeout=5, max_retries=0)
            try:
                return await client.complete(
                    SYSTEM, [Message("user", QUESTION)], GenerationParams(temperature=0.0, max_tokens=64)
                )
            finally:
                await client.aclose()

        out = asyncio.run(go())
        req = srv.completion_requests[0]

    assert out.text == "paris is the capital"
    expected_in = count_tokens(SYSTEM) + count_tokens(QUESTION)
    assert out.usage.input_tokens == expected_in  # anthropic: uncached + cache reads, like OpenAI
    assert out.usage.output_tokens == 4
    assert out.usage.cached_tokens == 2
    assert out.finish_reason == ("end_turn" if provider == "anthropic" else "stop")
    assert out.latency_s > 0
    # The request carried the system prompt and the question, where each API puts them.
    assert req.system == SYSTEM
    assert req.messages == [{"role": "user", "content": QUESTION}]


def test_openai_request_parameters_and_auth() -> None:
    with running_llm_server(skill_script) as srv:

        async def go():
            client = _client("openai", srv, timeout=5, max_retries=0)
            params = GenerationParams(temperature=0.3, max_tokens=50, top_p=0.9, seed=7, stop=("END",))
            await client.complete("", [Message("user", "hi")], params)
            await client.aclose()
            compat = _client("openai-compatible", srv, timeout=5, max_retries=0)
            await compat.complete("", [Message("user", "hi")], GenerationParams(max_tokens=9))
            await compat.aclose()

        asyncio.run(go())
        openai_req, compat_req = srv.completion_requests

    body = openai_req.body
    assert body["model"] == "gpt-4.1-mini"
    assert (body["temperature"], body["top_p"], body["seed"], body["stop"]) == (0.3, 0.9, 7, ["END"])
    assert body["max_completion_tokens"] == 50  # what OpenAI's current models take
    assert body["messages"] == [{"role": "user", "content": "hi"}]  # empty system prompt not sent
    assert openai_req.headers["authorization"] == "Bearer ***"  # recorded masked
    assert compat_req.body["max_tokens"] == 9  # what self-hosted servers take
    assert compat_req.headers["authorization"] == "Bearer ***"  # a placeholder key, never a real one


@pytest.mark.parametrize(("provider", "reason"), [("openai", "length"), ("anthropic", "max_tokens")])
def test_truncation_reports_raw_finish_reason(provider: str, reason: str) -> None:
    with running_llm_server(lambda s, m, p: "one two three four five six") as srv:

        async def go():
            client = _client(provider, srv, timeout=5, max_retries=0)
            try:
                return await client.complete("", [Message("user", "count")], GenerationParams(max_tokens=3))
            finally:
                await client.aclose()

        out = asyncio.run(go())
    assert out.text == "one two three"
    assert out.finish_reason == reason
    assert out.usage.output_tokens == 3


def test_anthropic_sends_system_and_stop_sequences() -> None:
    with running_llm_server() as srv:

        async def go():
            client = _client("anthropic", srv, timeout=5, max_retries=0)
            await client.complete("sys prompt", [Message("user", "hello")], GenerationParams(stop=("X",)))
            await client.aclose()

        asyncio.run(go())
        req = srv.completion_requests[0]
    assert req.body["system"] == "sys prompt"
    assert req.body["stop_sequences"] == ["X"]
    assert req.body["model"] == "claude-haiku-4-5"
    # SDK 2.x sends the key as a bearer token; older ones as x-api-key. Either way: masked.
    sent = req.headers.get("x-api-key") or req.headers["authorization"]
    assert sent in ("***", "Bearer ***")


def test_concurrent_calls_share_one_client() -> None:
    """A client is safe to call concurrently; the server sees the calls overlap."""
    with running_llm_server(latency_s=0.2) as srv:

        async def go():
            client = _client("openai", srv, timeout=5, max_retries=0)
            try:
                return await asyncio.gather(
                    *(client.complete("", [Message("user", f"q{i}")], GenerationParams()) for i in range(16))
                )
            finally:
                await client.aclose()

        outs = asyncio.run(go())
        assert srv.max_in_flight == 16
    assert [o.text for o in outs] == [f"You said: q{i}" for i in range(16)]
