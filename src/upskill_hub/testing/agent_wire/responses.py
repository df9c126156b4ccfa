"""OpenAI Responses (``POST /v1/responses``), the wire protocol of Codex.

Codex (0.171, a ``model_providers`` entry with ``wire_api = "responses"``) posts the whole
conversation each turn with ``"stream": true`` and reads server-sent events, each named by
its ``type``: ``response.created``; per output item ``response.output_item.added``, its
deltas (``response.output_text.delta`` for a ``message``,
``response.function_call_arguments.delta`` for a ``function_call``) and
``response.output_item.done`` with the whole item; then ``response.completed`` with the
``usage`` (``input_tokens``, ``input_tokens_details.cached_tokens``, ``output_tokens``).
Codex ends the turn's request only on ``response.completed``: a stream without it is a
dropped stream, which it retries. Without ``stream`` the same response comes back as one
JSON object.

Tools are read from ``tools[]`` (``{"type": "function", "name", "parameters"}``; Codex's
shell tool is ``exec_command`` with a ``cmd`` string); the tool results so far are the
``input`` items of type ``function_call_output`` (``custom_tool_call_output`` for its
free-form tools). Requests without tools (Codex's own side questions) get the side answer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from upskill_hub.testing.agent_server import AgentTurn, Answer, Step, ToolCall, sse_reply

#: The paths it answers: a base URL with ``/v1`` (the usual) or without it.
_PATHS = ("/v1/responses", "/responses")
#: ``input`` item types that are a tool's result.
_RESULT_ITEMS = frozenset({"function_call_output", "custom_tool_call_output", "local_shell_call_output"})


@dataclass
class ResponsesTurn(AgentTurn):
    """An :class:`AgentTurn` plus what the reply's shape depends on."""

    stream: bool = True
    #: A rough prompt size (characters / 4), for ``usage.input_tokens``.
    input_tokens: int = 1


def _tools(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``name -> parameters`` of the tools offered (free-form ``custom`` tools get ``{}``)."""
    tools: dict[str, dict[str, Any]] = {}
    raw = body.get("tools")
    for t in raw if isinstance(raw, list) else []:
        if isinstance(t, dict) and t.get("type") in ("function", "custom") and isinstance(t.get("name"), str):
            params = t.get("parameters")
            tools[t["name"]] = params if isinstance(params, dict) else {}
    return tools


def _results(body: dict[str, Any]) -> int:
    """Tool results so far: the ``function_call_output`` items of ``input``."""
    items = body.get("input")
    if not isinstance(items, list):
        return 0
    return sum(1 for i in items if isinstance(i, dict) and i.get("type") in _RESULT_ITEMS)


def _item(step: Step, n: int) -> dict[str, Any]:
    """The output item for ``step``, as ``response.output_item.done`` carries it."""
    if isinstance(step, ToolCall):
        return {"type": "function_call", "id": f"fc_scripted_{n:04d}", "call_id": f"call_scripted_{n:04d}",
                "name": step.name, "arguments": json.dumps(step.arguments), "status": "completed"}  # fmt: skip
    assert isinstance(step, Answer)
    return {"type": "message", "id": f"msg_scripted_{n:04d}", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": step.text, "annotations": []}]}  # fmt: skip


def _events(response: dict[str, Any], item: dict[str, Any]) -> list[dict[str, Any]]:
    """The stream of one response holding one output item."""
    started = {**response, "status": "in_progress", "output": [], "usage": None}
    events: list[dict[str, Any]] = [{"type": "response.created", "response": started}]
    if item["type"] == "function_call":
        events.append({"type": "response.output_item.added", "output_index": 0, "item": {**item, "arguments": "",
                       "status": "in_progress"}})  # fmt: skip
        events.append({"type": "response.function_call_arguments.delta", "item_id": item["id"], "output_index": 0,
                       "delta": item["arguments"]})  # fmt: skip
        events.append({"type": "response.function_call_arguments.done", "item_id": item["id"], "output_index": 0,
                       "arguments": item["arguments"]})  # fmt: skip
    else:
        text = item["content"][0]["text"]
        events.append({"type": "response.output_item.added", "output_index": 0, "item": {**item, "content": [],
                       "status": "in_progress"}})  # fmt: skip
        where = {"item_id": item["id"], "output_index": 0, "content_index": 0}
        events.append({"type": "response.output_text.delta", **where, "delta": text})
        events.append({"type": "response.output_text.done", **where, "text": text})
    events.append({"type": "response.output_item.done", "output_index": 0, "item": item})
    events.append({"type": "response.completed", "response": response})
    return events


class Responses:
    """:class:`~upskill_hub.testing.agent_server.WireProtocol` for ``/v1/responses``."""

    name = "openai-responses"

    def matches(self, method: str, path: str) -> bool:
        return method == "POST" and path in _PATHS

    def read(self, body: dict[str, Any], path: str) -> AgentTurn:
        model = body.get("model")
        size = len(json.dumps(body.get("input"), ensure_ascii=False, default=str)) // 4
        return ResponsesTurn(
            tools=_tools(body),
            results=_results(body),
            model=model if isinstance(model, str) and model else "scripted-model",
            stream=body.get("stream") is True,
            input_tokens=max(1, size),
        )

    def reply(self, step: Step, turn: AgentTurn, n: int) -> tuple[int, list[tuple[str, str]], bytes]:
        rt = turn if isinstance(turn, ResponsesTurn) else ResponsesTurn(model=turn.model)
        item = _item(step, n)
        n_out = max(1, len(json.dumps(item)) // 4)
        usage = {"input_tokens": rt.input_tokens, "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens": n_out, "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": rt.input_tokens + n_out}  # fmt: skip
        response = {"id": f"resp_scripted_{n:04d}", "object": "response", "created_at": 0, "model": rt.model,
                    "status": "completed", "output": [item], "usage": usage}  # fmt: skip
        if rt.stream:
            return sse_reply([(e["type"], e) for e in _events(response, item)])
        return 200, [("content-type", "application/json")], json.dumps(response).encode()


PROTOCOL = Responses()
