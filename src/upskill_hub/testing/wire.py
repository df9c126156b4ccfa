"""The OpenAI and Anthropic wire formats of the scripted server: request bodies in, reply bodies out.

:mod:`.llm_server` moves bytes, queues faults and runs the script; this module is only what
each API puts on the wire, kept apart so the two formats read side by side. A request of
either API becomes ``(system, messages, params)`` (tool calls and tool results as their own
turns), so a script is written once for both; an answer becomes that API's reply body, with
usage counted by :func:`count_tokens` so token sums in results can be checked exactly.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Reply:
    """What a script may return instead of plain text, to control the other fields."""

    text: str
    finish_reason: str | None = None  # None: "stop"/"end_turn", or "length" when truncated
    cached_tokens: int = 0
    #: Usage fields sent as given, over the computed ones (a server reporting nonsense).
    usage: dict[str, Any] | None = None


def count_tokens(text: str) -> int:
    """The server's token count: whitespace-separated words (deterministic, easy to predict)."""
    return len(text.split())


def _content_text(content: Any) -> str:
    """Flatten OpenAI/Anthropic message content (a string or a list of blocks) to text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
    return "" if content is None else str(content)


def _normalize(api: str, body: dict[str, Any]) -> tuple[str, list[dict[str, Any]], dict[str, Any]]:
    """Split a request body into (system prompt, messages, parameters), whatever the API."""
    raw_messages = body.get("messages") or []
    if not isinstance(raw_messages, list):
        raise ValueError("'messages' must be a list")
    system_parts: list[str] = []
    messages: list[dict[str, Any]] = []
    if api == "anthropic" and body.get("system") is not None:
        system_parts.append(_content_text(body["system"]))
    for m in raw_messages:
        if not isinstance(m, dict) or "role" not in m:
            raise ValueError("each message needs a 'role'")
        text = _content_text(m.get("content"))
        if m["role"] in ("system", "developer"):
            system_parts.append(text)
        else:
            messages.extend(_tool_turns(api, m, text))
    stop = body.get("stop") if api == "openai" else body.get("stop_sequences")
    if isinstance(stop, str):
        stop = [stop]
    max_tokens = body.get("max_tokens", body.get("max_completion_tokens"))
    params = {
        "model": body.get("model"),
        "temperature": body.get("temperature"),
        "top_p": body.get("top_p"),
        "max_tokens": max_tokens,
        "seed": body.get("seed"),
        "stop": list(stop or []),
    }
    params["tools"] = _tool_names(body.get("tools"))
    return "\n".join(system_parts), messages, params


def _tool_turns(api: str, m: dict[str, Any], text: str) -> list[dict[str, Any]]:
    """One wire message as normalised turns: tool calls and tool results become their own
    shapes (``tool_calls`` on an assistant turn; a ``tool`` turn per result), whatever the API."""
    role, content = str(m["role"]), m.get("content")
    if api == "openai":
        if role == "tool":
            return [{"role": "tool", "content": text, "tool_call_id": m.get("tool_call_id")}]
        calls = [
            {"name": c["function"].get("name"), "arguments": _json_object(c["function"].get("arguments"))}
            for c in m.get("tool_calls") or []
            if isinstance(c, dict) and isinstance(c.get("function"), dict)
        ]
        return [{"role": role, "content": text, **({"tool_calls": calls} if calls else {})}]
    if not isinstance(content, list):
        return [{"role": role, "content": text}]
    results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
    if results:
        return [
            {"role": "tool", "content": _content_text(b.get("content")), "tool_call_id": b.get("tool_use_id")}
            for b in results
        ]
    calls = [
        {"name": b.get("name"), "arguments": b.get("input") if isinstance(b.get("input"), dict) else {}}
        for b in content
        if isinstance(b, dict) and b.get("type") == "tool_use"
    ]
    return [{"role": role, "content": text, **({"tool_calls": calls} if calls else {})}]


def _json_object(text: Any) -> dict[str, Any]:
    try:
        value = json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _tool_names(tools: Any) -> list[str]:
    """Names of the tools a request offers (OpenAI ``function`` wrappers or Anthropic's flat form)."""
    names = []
    for t in tools if isinstance(tools, list) else []:
        if isinstance(t, dict):
            fn = t.get("function") if isinstance(t.get("function"), dict) else t
            if isinstance(fn.get("name"), str):
                names.append(fn["name"])
    return names


def _shape_answer(reply: Reply, params: dict[str, Any]) -> tuple[str, bool, bool]:
    """Apply stop sequences and max_tokens; return (text, hit_stop, truncated)."""
    text = reply.text
    hit_stop = False
    for s in params["stop"]:
        if s and s in text:
            text = text[: text.index(s)]
            hit_stop = True
    words = text.split()
    limit = params["max_tokens"]
    if isinstance(limit, int) and len(words) > limit:
        return " ".join(words[:limit]), hit_stop, True
    return text, hit_stop, False


def _json(status: int, obj: Any) -> tuple[int, list[tuple[str, str]], bytes]:
    return status, [("content-type", "application/json")], json.dumps(obj).encode()


def _error(api: str, status: int, kind: str, message: str) -> tuple[int, list[tuple[str, str]], bytes]:
    if api == "anthropic":
        return _json(status, {"type": "error", "error": {"type": kind, "message": message}})
    return _json(status, {"error": {"message": message, "type": kind, "code": None}})


def _answer(
    api: str, reply: Reply, system: str, messages: list[dict[str, str]], params: dict[str, Any]
) -> dict[str, Any]:
    text, hit_stop, truncated = _shape_answer(reply, params)
    if api == "anthropic":
        reason = reply.finish_reason or (
            "max_tokens" if truncated else "stop_sequence" if hit_stop else "end_turn"
        )
        out: Any = [{"type": "text", "text": text}]
    else:
        reason = reply.finish_reason or ("length" if truncated else "stop")
        out = {"role": "assistant", "content": text}
    return _reply_body(
        api, out, reason, count_tokens(text), system, messages, params, reply.cached_tokens, reply.usage
    )


def _tool_answer(
    api: str, step: tuple[str, dict[str, Any]], n: int, system: str, messages: list[dict[str, Any]], params: dict[str, Any]
) -> dict[str, Any]:
    """A reply that calls one tool (ids ``call_<n>`` / ``toolu_<n>``, n counting the conversation's calls)."""
    name, args = step
    if api == "anthropic":
        out: Any = [{"type": "tool_use", "id": f"toolu_{n}", "name": name, "input": args}]
        return _reply_body(api, out, "tool_use", count_tokens(json.dumps(args)), system, messages, params)
    call = {"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
    out = {"role": "assistant", "content": None, "tool_calls": [call]}
    return _reply_body(api, out, "tool_calls", count_tokens(json.dumps(args)), system, messages, params)


def _reply_body(
    api: str,
    out: Any,
    reason: str,
    n_out: int,
    system: str,
    messages: list[dict[str, Any]],
    params: dict[str, Any],
    cached: int = 0,
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``api``'s reply around ``out`` (Anthropic's content blocks, or OpenAI's message), with the
    prompt counted by :func:`count_tokens`; ``usage`` fields go out as given, over the counted ones."""
    n_in = count_tokens(system) + sum(count_tokens(m["content"]) for m in messages)
    cached = min(cached, n_in)
    model = params["model"] or "scripted-model"
    if api == "anthropic":
        return {
            "id": "msg_scripted", "type": "message", "role": "assistant", "model": model,
            "content": out, "stop_reason": reason, "stop_sequence": None,
            "usage": {"input_tokens": n_in - cached, "output_tokens": n_out, "cache_read_input_tokens": cached,
                      "cache_creation_input_tokens": 0, **(usage or {})},
        }  # fmt: skip
    return {
        "id": "chatcmpl-scripted", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "message": out, "finish_reason": reason, "logprobs": None}],
        "usage": {"prompt_tokens": n_in, "completion_tokens": n_out, "total_tokens": n_in + n_out,
                  "prompt_tokens_details": {"cached_tokens": cached}, **(usage or {})},
    }  # fmt: skip
