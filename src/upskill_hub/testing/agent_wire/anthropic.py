"""Anthropic Messages (``POST /v1/messages``), the wire protocol of Claude Code.

A request with ``"stream": true`` gets the API's server-sent events, in the API's order:
``message_start``, per content block ``content_block_start`` / ``content_block_delta``
(``text_delta`` for text, ``input_json_delta`` for a ``tool_use`` block's input) /
``content_block_stop``, then ``message_delta`` (``stop_reason`` and the output ``usage``)
and ``message_stop``. Without ``stream`` the same message comes back as one JSON object.
This protocol takes every ``/v1/messages`` request of a
:class:`~upskill_hub.testing.agent_server.ScriptedAgentServer`, streamed or not: Claude Code
sends its side questions (titles, quota probes) the same way as its turns.

``POST /v1/messages/count_tokens`` (which Claude Code may call to size a prompt) gets
``{"input_tokens": N}``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from upskill_hub.testing.agent_server import AgentTurn, Answer, Step, ToolCall, sse_reply

_MESSAGES = "/v1/messages"
_COUNT_TOKENS = "/v1/messages/count_tokens"


@dataclass
class AnthropicTurn(AgentTurn):
    """An :class:`AgentTurn` plus what the reply's shape depends on."""

    stream: bool = False
    #: A rough prompt size (characters / 4), for ``usage.input_tokens``.
    input_tokens: int = 1
    #: ``count_tokens`` asks only for the prompt's size, never for a step.
    count_only: bool = False


def _tools(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Client tools (``name`` + ``input_schema``); server tools such as web search have a
    ``type`` but no schema and are offered too (by name), with an empty schema."""
    tools: dict[str, dict[str, Any]] = {}
    raw = body.get("tools")
    for t in raw if isinstance(raw, list) else []:
        if isinstance(t, dict) and isinstance(t.get("name"), str):
            schema = t.get("input_schema")
            tools[t["name"]] = schema if isinstance(schema, dict) else {}
    return tools


def _results(body: dict[str, Any]) -> int:
    """``tool_result`` blocks in the conversation's user messages."""
    n = 0
    msgs = body.get("messages")
    for m in msgs if isinstance(msgs, list) else []:
        content = m.get("content") if isinstance(m, dict) and m.get("role") == "user" else None
        if isinstance(content, list):
            n += sum(1 for b in content if isinstance(b, dict) and b.get("type") == "tool_result")
    return n


def _size(body: dict[str, Any]) -> int:
    text = json.dumps([body.get("system"), body.get("messages")], ensure_ascii=False, default=str)
    return max(1, len(text) // 4)


def _blocks(step: Step, n: int) -> tuple[list[dict[str, Any]], str]:
    """The assistant's content blocks for ``step`` and its ``stop_reason``."""
    if isinstance(step, ToolCall):
        return [
            {"type": "tool_use", "id": f"toolu_scripted_{n:04d}", "name": step.name, "input": step.arguments}
        ], "tool_use"
    assert isinstance(step, Answer)
    return [{"type": "text", "text": step.text}], "end_turn"


def _out_tokens(blocks: list[dict[str, Any]]) -> int:
    return max(1, len(json.dumps(blocks)) // 4)


def _events(message: dict[str, Any]) -> list[tuple[str | None, Any]]:
    """``message`` as the Messages API streams it."""
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None,
             "usage": {**message["usage"], "output_tokens": 1}}  # fmt: skip
    events: list[tuple[str | None, Any]] = [("message_start", {"type": "message_start", "message": start})]
    for i, block in enumerate(message["content"]):
        if block["type"] == "tool_use":
            opened = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            opened = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        events += [
            ("content_block_start", {"type": "content_block_start", "index": i, "content_block": opened}),
            ("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": i}),
        ]
    events += [
        ("message_delta", {"type": "message_delta",
                           "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                           "usage": {"output_tokens": message["usage"]["output_tokens"]}}),
        ("message_stop", {"type": "message_stop"}),
    ]  # fmt: skip
    return events


class AnthropicMessages:
    """:class:`~upskill_hub.testing.agent_server.WireProtocol` for ``/v1/messages``."""

    name = "anthropic-messages"

    def matches(self, method: str, path: str) -> bool:
        return method == "POST" and path in (_MESSAGES, _COUNT_TOKENS)

    def read(self, body: dict[str, Any], path: str) -> AgentTurn:
        model = body.get("model")
        return AnthropicTurn(
            tools=_tools(body),
            results=_results(body),
            model=model if isinstance(model, str) and model else "scripted-model",
            stream=body.get("stream") is True,
            input_tokens=_size(body),
            count_only=path.split("?", 1)[0].rstrip("/") == _COUNT_TOKENS,
        )

    def reply(self, step: Step, turn: AgentTurn, n: int) -> tuple[int, list[tuple[str, str]], bytes]:
        stream = isinstance(turn, AnthropicTurn) and turn.stream
        n_in = turn.input_tokens if isinstance(turn, AnthropicTurn) else 1
        if isinstance(turn, AnthropicTurn) and turn.count_only:
            return 200, [("content-type", "application/json")], json.dumps({"input_tokens": n_in}).encode()
        blocks, reason = _blocks(step, n)
        message = {
            "id": f"msg_scripted_{n:04d}", "type": "message", "role": "assistant", "model": turn.model,
            "content": blocks, "stop_reason": reason, "stop_sequence": None,
            "usage": {"input_tokens": n_in, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                      "output_tokens": _out_tokens(blocks)},
        }  # fmt: skip
        if stream:
            return sse_reply(_events(message))
        return 200, [("content-type", "application/json")], json.dumps(message).encode()


PROTOCOL = AnthropicMessages()
