"""OpenAI Chat Completions (``POST /v1/chat/completions``), the wire protocol of OpenCode
through an OpenAI-compatible provider (``@ai-sdk/openai-compatible``).

A request with ``"stream": true`` gets the API's server-sent events: a first chunk with the
assistant's ``role``, then the step as a ``delta`` (``content`` for an answer;
``tool_calls: [{index, id, type: "function", function: {name, arguments}}]`` for a call),
a chunk with the ``finish_reason`` (``stop`` / ``tool_calls``), a usage chunk (empty
``choices``) when ``stream_options.include_usage`` asks for it, and ``data: [DONE]``.
Without ``stream`` the same completion comes back as one JSON object.

Tools are read from ``tools[].function.{name, parameters}``; the tool results so far are the
conversation's ``role: "tool"`` messages. This protocol takes every chat request of a
:class:`~upskill_hub.testing.agent_server.ScriptedAgentServer` it is given, tools or not:
OpenCode sends its side questions (the session title) the same way as its turns.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from upskill_hub.testing.agent_server import AgentTurn, Answer, Step, ToolCall, sse_reply

#: The paths it answers: a base URL with ``/v1`` (the usual) or without it.
_PATHS = ("/v1/chat/completions", "/chat/completions")


@dataclass
class ChatTurn(AgentTurn):
    """An :class:`AgentTurn` plus what the reply's shape depends on."""

    stream: bool = False
    #: ``stream_options.include_usage``: the stream ends with a usage chunk.
    include_usage: bool = False
    #: A rough prompt size (characters / 4), for ``usage.prompt_tokens``.
    prompt_tokens: int = 1


def _tools(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``name -> parameters`` of the ``function`` tools offered."""
    tools: dict[str, dict[str, Any]] = {}
    raw = body.get("tools")
    for t in raw if isinstance(raw, list) else []:
        fn = t.get("function") if isinstance(t, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            params = fn.get("parameters")
            tools[fn["name"]] = params if isinstance(params, dict) else {}
    return tools


def _results(body: dict[str, Any]) -> int:
    """Tool results so far: the ``role: "tool"`` messages."""
    msgs = body.get("messages")
    return (
        sum(1 for m in msgs if isinstance(m, dict) and m.get("role") == "tool")
        if isinstance(msgs, list)
        else 0
    )


def _message(step: Step, n: int) -> tuple[dict[str, Any], str]:
    """The assistant message for ``step`` and its ``finish_reason``."""
    if isinstance(step, ToolCall):
        call = {"id": f"call_scripted_{n:04d}", "type": "function",
                "function": {"name": step.name, "arguments": json.dumps(step.arguments)}}  # fmt: skip
        return {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
    assert isinstance(step, Answer)
    return {"role": "assistant", "content": step.text}, "stop"


def _chunks(
    head: dict[str, Any], message: dict[str, Any], reason: str, usage: dict[str, Any] | None
) -> list[Any]:
    """``message`` as the API streams it: role, the content or calls, the finish, usage, ``[DONE]``."""

    def chunk(delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]}

    chunks: list[Any] = [chunk({"role": "assistant", "content": ""}, None)]
    if "tool_calls" in message:
        calls = [{"index": i, **c} for i, c in enumerate(message["tool_calls"])]
        chunks.append(chunk({"tool_calls": calls}, None))
    else:
        chunks.append(chunk({"content": message["content"]}, None))
    chunks.append(chunk({}, reason))
    if usage is not None:
        chunks.append({**head, "choices": [], "usage": usage})
    chunks.append("[DONE]")
    return chunks


class ChatCompletions:
    """:class:`~upskill_hub.testing.agent_server.WireProtocol` for ``/v1/chat/completions``."""

    name = "openai-chat"

    def matches(self, method: str, path: str) -> bool:
        return method == "POST" and path in _PATHS

    def read(self, body: dict[str, Any], path: str) -> AgentTurn:
        model = body.get("model")
        opts = body.get("stream_options")
        size = len(json.dumps(body.get("messages"), ensure_ascii=False, default=str)) // 4
        return ChatTurn(
            tools=_tools(body),
            results=_results(body),
            model=model if isinstance(model, str) and model else "scripted-model",
            stream=body.get("stream") is True,
            include_usage=isinstance(opts, dict) and opts.get("include_usage") is True,
            prompt_tokens=max(1, size),
        )

    def reply(self, step: Step, turn: AgentTurn, n: int) -> tuple[int, list[tuple[str, str]], bytes]:
        chat = turn if isinstance(turn, ChatTurn) else ChatTurn(model=turn.model)
        message, reason = _message(step, n)
        n_out = max(1, len(json.dumps(message)) // 4)
        usage = {"prompt_tokens": chat.prompt_tokens, "completion_tokens": n_out,
                 "total_tokens": chat.prompt_tokens + n_out, "prompt_tokens_details": {"cached_tokens": 0}}  # fmt: skip
        head = {"id": f"chatcmpl-scripted-{n:04d}", "created": 0, "model": chat.model}
        if chat.stream:
            chunks = _chunks({**head, "object": "chat.completion.chunk"}, message, reason,
                             usage if chat.include_usage else None)  # fmt: skip
            return sse_reply([(None, c) for c in chunks])
        body = {**head, "object": "chat.completion",
                "choices": [{"index": 0, "message": message, "finish_reason": reason, "logprobs": None}],
                "usage": usage}  # fmt: skip
        return 200, [("content-type", "application/json")], json.dumps(body).encode()


PROTOCOL = ChatCompletions()
