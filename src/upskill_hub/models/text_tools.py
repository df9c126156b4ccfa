"""Tool calling as plain text, for models whose runtime has no tool-call support (the local model).

The protocol, documented in docs/skill-loading-modes.md, is what the model is told in its
system prompt:

* to call a tool, reply with one line and nothing else: ``CALL <tool> {"arg": "value"}``;
* the result comes back as the next user turn, starting ``RESULT of <tool>:``.

:func:`protocol_system` adds the instructions and the tool list, :func:`render_messages`
turns tool-call / tool-result turns into those text turns, and :func:`parse_calls` reads
calls back out of the reply. A reply with no well-formed ``CALL`` line is a final answer.
"""

from __future__ import annotations

import json
import re

from upskill_hub.models.base import Message, ToolCall, ToolSpec

_CALL = re.compile(r"^\s*CALL\s+([A-Za-z_][\w-]*)\s*(\{.*\})?\s*$", re.M)

INSTRUCTIONS = (
    "You can use tools. To call one, reply with exactly one line and nothing else:\n"
    'CALL <tool> {"argument": "value"}\n'
    "The result comes back in the next message, starting with 'RESULT of <tool>:'. "
    "When you have what you need, answer normally (no CALL line).\nTools:"
)


def protocol_system(system: str, tools: list[ToolSpec]) -> str:
    """``system`` followed by the protocol and one line per tool (name, arguments, purpose)."""
    lines = [system.rstrip(), "", INSTRUCTIONS]
    for t in tools:
        args = ", ".join(f'"{k}": "..."' for k in (t.parameters.get("properties") or {}))
        lines.append(f"- CALL {t.name} {{{args}}}: {t.description}")
    return "\n".join(lines) + "\n"


def render_messages(messages: list[Message]) -> list[Message]:
    """The conversation with tool turns as plain text (results merged into one user turn)."""
    names: dict[str, str] = {}
    out: list[Message] = []
    for m in messages:
        if m.tool_calls:
            for c in m.tool_calls:
                names[c.id] = c.name
            text = "\n".join(f"CALL {c.name} {json.dumps(c.arguments)}" for c in m.tool_calls)
            out.append(Message("assistant", text))
        elif m.role == "tool":
            text = f"RESULT of {names.get(m.tool_call_id or '', 'tool')}:\n{m.content}"
            if out and out[-1].role == "user" and out[-1].content.startswith("RESULT of "):
                out[-1] = Message("user", out[-1].content + "\n\n" + text)
            else:
                out.append(Message("user", text))
        else:
            out.append(m)
    return out


def parse_calls(text: str, tools: list[ToolSpec], first_id: int = 1) -> tuple[ToolCall, ...]:
    """The ``CALL`` lines of ``text`` that name an offered tool (arguments that are not a JSON object: {})."""
    offered = {t.name for t in tools}
    calls = []
    for match in _CALL.finditer(text):
        name, raw = match.group(1), match.group(2)
        if name not in offered:
            continue
        try:
            args = json.loads(raw) if raw else {}
        except ValueError:
            args = {}
        calls.append(ToolCall(f"text_call_{first_id + len(calls)}", name, args if isinstance(args, dict) else {}))
    return tuple(calls)
