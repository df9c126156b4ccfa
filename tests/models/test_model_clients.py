"""The provider clients through the real openai / anthropic SDKs against the scripted server."""

from __future__ import annotations

import asyncio
import time

import pytest

from upskill_hub.models import GenerationParams, Message, ModelClient, create_client
from upskill_hub.testing.llm_server import Reply, count_tokens, running_llm_server

KEY = "sk-" + "test-secret-0123456789abcdefghij"
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
    with running_llm_server(hold_after=0) as srv:  # every call waits for release()

        async def go():
            client = _client("openai", srv, timeout=60, max_retries=0)
            try:
                calls = asyncio.gather(
                    *(client.complete("", [Message("user", f"q{i}")], GenerationParams()) for i in range(16))
                )
                deadline = time.monotonic() + 60
                while srv.max_in_flight < 16:  # all 16 in flight at once, none answered yet
                    assert time.monotonic() < deadline, srv.max_in_flight
                    await asyncio.sleep(0.01)
                srv.release()
                return await calls
            finally:
                await client.aclose()

        outs = asyncio.run(go())
        assert srv.max_in_flight == 16
    assert [o.text for o in outs] == [f"You said: q{i}" for i in range(16)]


# --------------------------------------------------------------------------- reading replies
# The clients take the SDKs' decoded JSON (``cast_to=object``) and read the few fields they
# use: a reply of the wrong shape is a retryable "malformed" attempt, never a crash or a
# wrong row; usage of the wrong type is unknown (None), not a failed answer.
_OK = {"choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}], "model": "m"}


@pytest.mark.parametrize(
    "data",
    [
        "<html>bad gateway</html>",
        [],
        {},
        {"choices": []},
        {"choices": ["x"]},
        {"choices": [{"message": {"content": [{"type": "text", "text": "hi"}]}}]},
    ],
)
def test_openai_reply_of_the_wrong_shape_is_malformed(data: object) -> None:
    from upskill_hub.models.openai_client import read_chat_completion
    from upskill_hub.models.retry import AttemptError

    with pytest.raises(AttemptError) as info:
        read_chat_completion(data, 0.1)
    assert info.value.retryable and "malformed response" in str(info.value)


def test_openai_reply_fields_are_read_and_odd_usage_is_unknown() -> None:
    from upskill_hub.models.openai_client import read_chat_completion

    full = {
        **_OK,
        "usage": {"prompt_tokens": 7, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 3}},
    }
    c = read_chat_completion(full, 0.25)
    assert (c.text, c.finish_reason, c.model, c.latency_s) == ("hi", "stop", "m", 0.25)
    assert (c.usage.input_tokens, c.usage.output_tokens, c.usage.cached_tokens) == (7, 2, 3)
    odd = {**_OK, "usage": {"prompt_tokens": "7", "completion_tokens": -1, "prompt_tokens_details": None}}
    u = read_chat_completion(odd, 0.1).usage
    assert (u.input_tokens, u.output_tokens, u.cached_tokens) == (None, None, None)
    refusal = {"choices": [{"message": {"content": None, "refusal": "no"}, "finish_reason": "stop"}]}
    assert read_chat_completion(refusal, 0.1).text == ""


def test_anthropic_reply_shapes() -> None:
    from upskill_hub.models.anthropic_client import read_message
    from upskill_hub.models.retry import AttemptError

    data = {
        "content": [
            {"type": "text", "text": "a"},
            {"type": "tool_use", "id": "t"},
            {"type": "text", "text": "b"},
        ],
        "usage": {
            "input_tokens": 5,
            "output_tokens": 2,
            "cache_read_input_tokens": 3,
            "cache_creation_input_tokens": 1,
        },
        "stop_reason": "end_turn",
        "model": "claude",
    }
    c = read_message(data, 0.1)
    assert (c.text, c.finish_reason, c.model) == ("ab", "end_turn", "claude")
    assert (c.usage.input_tokens, c.usage.output_tokens, c.usage.cached_tokens) == (9, 2, 3)
    for bad in ("oops", {}, {"content": "text"}):
        with pytest.raises(AttemptError):
            read_message(bad, 0.1)
