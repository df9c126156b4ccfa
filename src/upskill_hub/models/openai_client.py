"""OpenAI chat completions through the official ``openai`` SDK.

One class serves three providers that speak the same wire format: OpenAI itself, any
OpenAI-compatible server (llama.cpp, vLLM, LM Studio, Ollama: ``--base-url``) and the
Hugging Face Inference Providers router (``hf:ORG/MODEL``, authenticated with ``HF_TOKEN``).
The SDK's own retries are off; :func:`call_with_retries` does them so they are explicit.
"""

from __future__ import annotations

import json
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

#: Concurrency that stays clear of typical rate limits (hosted) or saturates a local box.
DEFAULT_CONCURRENCY = {"openai": 16, "hf": 8, "openai-compatible": 8}


class OpenAIChatClient(RetryingClient):
    """A :class:`~upskill_hub.models.base.ModelClient` over ``/v1/chat/completions``."""

    def __init__(
        self,
        *,
        provider: str,
        model: str,
        base_url: str,
        api_key: str,
        policy: RetryPolicy,
        default_concurrency: int | None = None,
        connections: int | None = None,
    ) -> None:
        import openai

        self.provider = provider
        concurrency = default_concurrency or DEFAULT_CONCURRENCY.get(provider, 8)
        bind_sdk(self, openai, openai.AsyncOpenAI, model=model, base_url=base_url, api_key=api_key,
                 policy=policy, concurrency=concurrency, connections=connections)

    def _request(
        self, system: str, messages: list[Message], params: GenerationParams, tools: list[ToolSpec] | None = None
    ) -> dict[str, Any]:
        wire: list[dict[str, Any]] = []
        if system:
            wire.append({"role": "system", "content": system})
        wire.extend(openai_message(m) for m in messages)
        body: dict[str, Any] = {"model": self.model, "messages": wire, "temperature": params.temperature}
        if tools:
            body["tools"] = [
                {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
                for t in tools
            ]
        # OpenAI's newer models only take max_completion_tokens; self-hosted servers
        # (llama.cpp, older vLLM) only know max_tokens.
        if self.provider == "openai":
            body["max_completion_tokens"] = params.max_tokens
        else:
            body["max_tokens"] = params.max_tokens
        if params.top_p is not None:
            body["top_p"] = params.top_p
        if params.seed is not None:
            body["seed"] = params.seed
        if params.stop:
            body["stop"] = list(params.stop)
        return body

    async def _attempt(self, body: dict[str, Any]) -> Completion:
        # The SDK's generic (documented) ``post``; see :func:`post_json` for why.
        return await post_json(self._client, self._sdk, "/chat/completions", body, read_chat_completion)


def openai_message(m: Message) -> dict[str, Any]:
    """One :class:`Message` in chat-completions form (tool calls and tool results included)."""
    if m.role == "tool":
        return {"role": "tool", "tool_call_id": m.tool_call_id or "", "content": m.content}
    if m.tool_calls:
        calls = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
            for c in m.tool_calls
        ]
        return {"role": m.role, "content": m.content or None, "tool_calls": calls}
    return {"role": m.role, "content": m.content}


def _read_tool_calls(message: object) -> tuple[ToolCall, ...]:
    """The ``tool_calls`` of a reply message; arguments that are not a JSON object read as {}."""
    raw = message.get("tool_calls") if isinstance(message, dict) else None
    if not isinstance(raw, list):
        return ()
    calls = []
    for i, c in enumerate(raw):
        fn = c.get("function") if isinstance(c, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            continue
        try:
            args = json.loads(fn.get("arguments") or "{}")
        except (TypeError, ValueError):
            args = {}
        cid = c.get("id")
        calls.append(ToolCall(cid if isinstance(cid, str) else f"call_{i}", fn["name"], args if isinstance(args, dict) else {}))
    return tuple(calls)


def _text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def read_chat_completion(data: object, latency: float) -> Completion:
    """A :class:`Completion` from a decoded ``/chat/completions`` reply.

    Raises ``malformed`` when the reply has no readable first choice (a body that is not a
    JSON object, no ``choices``, a message whose content is neither text nor null); usage
    fields of the wrong type count as unknown rather than failing an answered call.
    """
    if not isinstance(data, dict):
        raise malformed("not a JSON object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise malformed("no choices")
    choice = choices[0]
    message = choice.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if content is not None and not isinstance(content, str):
        raise malformed("message content is not text")
    usage = data.get("usage")
    if not isinstance(usage, dict):
        usage = {}
    details = usage.get("prompt_tokens_details")
    return Completion(
        text=content or "",
        usage=Usage(
            input_tokens=token_count(usage.get("prompt_tokens"), "prompt_tokens"),
            output_tokens=token_count(usage.get("completion_tokens"), "completion_tokens"),
            cached_tokens=token_count(details.get("cached_tokens"), "prompt_tokens_details.cached_tokens") if isinstance(details, dict) else None,
        ),
        latency_s=latency,
        finish_reason=_text_or_none(choice.get("finish_reason")),
        model=_text_or_none(data.get("model")),
        tool_calls=_read_tool_calls(message),
    )
