"""Anthropic Messages API through the official ``anthropic`` SDK.

Token usage is normalised to OpenAI's convention so results compare across providers:
``input_tokens`` is the whole prompt (Anthropic reports uncached input, cache reads and
cache writes separately; we add them up) and ``cached_tokens`` is the cache-read part.
"""

from __future__ import annotations

from typing import Any

from upskill_hub.models.base import (
    Completion,
    GenerationParams,
    Message,
    ToolCall,
    ToolSpec,
    Usage,
    token_count,
)
from upskill_hub.models.retry import RetryingClient, RetryPolicy
from upskill_hub.models.transport import bind_sdk, malformed, post_json

#: Calls in flight per model when the run does not say (``--concurrency``): this client's own.
DEFAULT_CONCURRENCY = 8


class AnthropicClient(RetryingClient):
    """A :class:`~upskill_hub.models.base.ModelClient` over ``/v1/messages``."""

    provider = "anthropic"

    def __init__(
        self,
        *,
        model: str,
        base_url: str,
        api_key: str,
        policy: RetryPolicy,
        default_concurrency: int | None = None,
        connections: int | None = None,
    ) -> None:
        import anthropic

        bind_sdk(self, anthropic, anthropic.AsyncAnthropic, model=model, base_url=base_url, api_key=api_key,
                 policy=policy, concurrency=default_concurrency or DEFAULT_CONCURRENCY, connections=connections)

    def _request(
        self, system: str, messages: list[Message], params: GenerationParams, tools: list[ToolSpec] | None = None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": params.max_tokens,
            "messages": anthropic_messages(messages),
        }
        if tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools
            ]
        if system:  # the API rejects an empty system text block
            body["system"] = system
        if params.stop:
            body["stop_sequences"] = list(params.stop)
        # The current Messages API (SDK 2.x) takes no temperature / top_p / seed: the
        # parameters are still recorded with each result row, but not sent.
        return body

    async def _attempt(self, body: dict[str, Any]) -> Completion:
        # The SDK's generic ``post``, as for OpenAI: no typed ``messages.create`` walk of the
        # request, no unvalidated pydantic models of the reply (~0.5 ms of CPU per call).
        return await post_json(self._client, self._sdk, "/v1/messages", body, read_message)


def anthropic_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Messages in Messages-API form: tool calls become ``tool_use`` blocks, and tool results
    ``tool_result`` blocks in one user turn (the API wants consecutive results together)."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "tool":
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": m.tool_call_id or "", "content": m.content}
            if m.is_error:
                block["is_error"] = True
            prev = out[-1] if out else None
            if prev and prev["role"] == "user" and isinstance(prev["content"], list):
                prev["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        elif m.tool_calls:
            blocks: list[dict[str, Any]] = [{"type": "text", "text": m.content}] if m.content else []
            blocks += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in m.tool_calls]
            out.append({"role": m.role, "content": blocks})
        else:
            out.append({"role": m.role, "content": m.content})
    return out


def read_message(data: object, latency: float) -> Completion:
    """A :class:`Completion` from a decoded ``/v1/messages`` reply.

    The text is the concatenation of the text blocks (other block types carry none).
    Raises ``malformed`` when the reply is not a JSON object with a ``content`` list.
    """
    if not isinstance(data, dict) or not isinstance(data.get("content"), list):
        raise malformed("no content")
    text = "".join(
        b["text"] for b in data["content"] if isinstance(b, dict) and isinstance(b.get("text"), str)
    )
    u = data.get("usage")
    input_tokens = output_tokens = cache_read = None
    if isinstance(u, dict):
        uncached = token_count(u.get("input_tokens"), "input_tokens")
        cache_read = token_count(u.get("cache_read_input_tokens"), "cache_read_input_tokens") or 0
        cache_write = token_count(u.get("cache_creation_input_tokens"), "cache_creation_input_tokens") or 0
        input_tokens = None if uncached is None else uncached + cache_read + cache_write
        output_tokens = token_count(u.get("output_tokens"), "output_tokens")
    calls = tuple(
        ToolCall(b.get("id") if isinstance(b.get("id"), str) else f"toolu_{i}", b["name"],
                 b["input"] if isinstance(b.get("input"), dict) else {})
        for i, b in enumerate(data["content"])
        if isinstance(b, dict) and b.get("type") == "tool_use" and isinstance(b.get("name"), str)
    )  # fmt: skip
    stop, model = data.get("stop_reason"), data.get("model")
    return Completion(
        text=text,
        usage=Usage(input_tokens=input_tokens, output_tokens=output_tokens, cached_tokens=cache_read),
        latency_s=latency,
        finish_reason=stop if isinstance(stop, str) else None,
        model=model if isinstance(model, str) else None,
        tool_calls=calls,
    )
