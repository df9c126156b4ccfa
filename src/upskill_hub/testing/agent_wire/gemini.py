"""The Gemini API as Gemini CLI calls it: ``POST /v1beta/models/{model}:ACTION``.

* ``:streamGenerateContent?alt=sse`` (the agent's turns): server-sent events, each ``data:``
  a ``GenerateContentResponse``: ``{candidates: [{content: {role: "model", parts: [{text} |
  {functionCall: {name, args}}]}, finishReason}], usageMetadata: {...}}``;
* ``:generateContent`` (plain JSON, same shape, one object): the CLI's side questions, such as
  its next-speaker check, which asks for JSON text matching ``generationConfig``'s
  ``responseJsonSchema`` (or ``responseSchema``); a request that asks for JSON gets an object
  built from that schema (an ``enum`` prefers ``"user"``: the turn is over);
* ``:countTokens``: ``{totalTokens}``.

Tools come from ``tools[].functionDeclarations[]`` (``parameters`` or ``parametersJsonSchema``);
the conversation's tool results are its ``functionResponse`` parts in ``contents``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from upskill_hub.testing.agent_server import AgentTurn, Answer, Step, sse_reply
from upskill_hub.testing.wire import _json, count_tokens

#: ``.../models/{model}:{action}`` (any API version prefix).
_PATH_RE = re.compile(
    r"/models/(?P<model>[^/:]+):(?P<action>streamGenerateContent|generateContent|countTokens)$"
)


@dataclass
class GeminiTurn(AgentTurn):
    """An :class:`AgentTurn` plus what decides the reply's form."""

    action: str = "streamGenerateContent"
    #: The JSON schema the reply's text must match (side questions), else ``None``.
    json_schema: dict[str, Any] | None = None
    #: Words of the request's text, for ``usageMetadata`` and ``countTokens``.
    prompt_tokens: int = 0


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _value_for(schema: dict[str, Any], text: str) -> Any:
    """A value that matches ``schema`` (JSON Schema or the Gemini ``Schema``, types in any case)."""
    enum = _list(schema.get("enum"))
    if enum:
        return "user" if "user" in enum else enum[0]
    kind = str(schema.get("type", "string")).lower()
    if kind == "object":
        props = _dict(schema.get("properties"))
        return {k: _value_for(_dict(v), text) for k, v in props.items()}
    if kind == "array":
        return []
    if kind == "boolean":
        return False
    if kind in ("integer", "number"):
        low = schema.get("minimum")
        # Gemini CLI's own scores run from 1 (its router's ``complexity_score``: 1-100).
        return low if isinstance(low, (int, float)) and not isinstance(low, bool) else 1
    return text


class GeminiProtocol:
    """Gemini ``generateContent`` / ``streamGenerateContent`` / ``countTokens``."""

    name = "gemini"

    def matches(self, method: str, path: str) -> bool:
        return method == "POST" and _PATH_RE.search(path) is not None

    def read(self, body: dict[str, Any], path: str) -> AgentTurn:
        m = _PATH_RE.search(path.split("?", 1)[0].rstrip("/"))
        action = m.group("action") if m else "generateContent"
        model = m.group("model") if m else "scripted-model"
        if action == "countTokens" and "generateContentRequest" in body:
            body = _dict(body.get("generateContentRequest"))
        tools: dict[str, dict[str, Any]] = {}
        for tool in _list(body.get("tools")):
            for decl in _list(_dict(tool).get("functionDeclarations")):
                decl = _dict(decl)
                if isinstance(decl.get("name"), str):
                    schema = decl.get("parametersJsonSchema", decl.get("parameters"))
                    tools[decl["name"]] = _dict(schema)
        results = 0
        words = 0
        for content in _list(body.get("contents")):
            for part in _list(_dict(content).get("parts")):
                part = _dict(part)
                results += "functionResponse" in part
                if isinstance(part.get("text"), str):
                    words += count_tokens(part["text"])
        config = _dict(body.get("generationConfig"))
        schema = config.get("responseJsonSchema", config.get("responseSchema"))
        wants_json = config.get("responseMimeType") == "application/json" or isinstance(schema, dict)
        return GeminiTurn(
            tools=tools, results=results, model=model, action=action,
            json_schema=_dict(schema) if wants_json else None, prompt_tokens=words,
        )  # fmt: skip

    def reply(self, step: Step, turn: AgentTurn, n: int) -> tuple[int, list[tuple[str, str]], bytes]:
        action = turn.action if isinstance(turn, GeminiTurn) else "streamGenerateContent"
        prompt_tokens = turn.prompt_tokens if isinstance(turn, GeminiTurn) else 0
        if action == "countTokens":
            return _json(200, {"totalTokens": prompt_tokens})
        if isinstance(step, Answer):
            text = step.text
            schema = turn.json_schema if isinstance(turn, GeminiTurn) else None
            if schema is not None:
                text = json.dumps(_value_for(schema or {"type": "object"}, step.text))
            part: dict[str, Any] = {"text": text}
            out_tokens = count_tokens(text)
        else:
            part = {"functionCall": {"name": step.name, "args": step.arguments}}
            out_tokens = count_tokens(json.dumps(step.arguments))
        response = {
            "candidates": [
                {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {
                "promptTokenCount": prompt_tokens,
                "candidatesTokenCount": out_tokens,
                "totalTokenCount": prompt_tokens + out_tokens,
            },
            "modelVersion": turn.model,
            "responseId": f"scripted-{n}",
        }
        if action == "generateContent":
            return _json(200, response)
        return sse_reply([(None, response)])


PROTOCOL = GeminiProtocol()
