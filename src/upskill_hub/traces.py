"""Read exported agent traces and condense them for a teacher model.

``upskill-hub generate --from TRACE`` turns a session in which an agent solved (or
struggled with) a task into a skill. Traces come in many shapes, so this module reads the
common ones into one list of :class:`TraceEvent` s:

* JSON: a list of messages (``[{"role", "content"}]``), an object with ``messages``
  (OpenAI chat / Anthropic Messages style; content as a string or a list of blocks:
  ``text``, ``tool_use``, ``tool_result`` with ``is_error``, OpenAI ``tool_calls``);
* JSONL: Claude Code session files (one event a line, the message under ``message``),
  Codex-style lines (under ``payload``), or one plain message per line;
* Markdown / plain text: split into paragraphs-sized chunks.

Long traces do not fit a prompt. :func:`render_trace` keeps what teaches the most within a
token budget: the beginning (the task and the first plan), the end (the solution that
worked) and, from the middle, the tool errors (what went wrong and was fixed), marking
what was left out. Every text is passed through :func:`redact` first: traces often hold
API keys printed by a tool, and they must never reach a model provider.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from upskill_hub._util import safejson
from upskill_hub._util.redact import redact
from upskill_hub.errors import UpskillError
from upskill_hub.skill import estimate_tokens

#: Default size of the condensed trace sent to the teacher.
DEFAULT_BUDGET_TOKENS = 12_000
#: No single event may take more than this share of the budget (long tool outputs).
_EVENT_SHARE = 0.15
#: Lines that look like a failure in tool output or text.
_ERROR_RE = re.compile(
    r"(Traceback \(most recent call last\)|\berror\b[:\[]|\bError\b|\bFAILED\b|\bfailed\b|"
    r"exit (code|status) [1-9]|command not found|No such file or directory|Exception\b|"
    r"undefined reference|segmentation fault)",
)
_MD_SUFFIXES = {".md", ".markdown", ".txt", ".log", ""}


@dataclass(frozen=True)
class TraceEvent:
    """One step of a trace: who said or did what, and whether it was a failure."""

    role: str  # "user" | "assistant" | "tool" | "system" | "text"
    text: str
    kind: str = "text"  # "text" | "tool_use" | "tool_result"
    is_error: bool = False

    def render(self) -> str:
        label = {"tool_use": f"{self.role} -> tool", "tool_result": "tool result"}.get(self.kind, self.role)
        if self.is_error:
            label += " (ERROR)"
        return f"[{label}]\n{self.text.strip()}"


@dataclass
class Trace:
    """A parsed trace and the format it was read as."""

    events: list[TraceEvent]
    format: str
    source: str = ""

    @property
    def n_errors(self) -> int:
        return sum(1 for e in self.events if e.is_error)


# ----------------------------------------------------------------------------- parsing
def _block_text(block: Any) -> list[TraceEvent]:
    """Events for one content block (Anthropic / Claude Code / OpenAI 'parts')."""
    if isinstance(block, str):
        return [TraceEvent("", block)] if block.strip() else []
    if not isinstance(block, dict):
        return []
    btype = block.get("type")
    if btype in ("text", "input_text", "output_text") and isinstance(block.get("text"), str):
        return [TraceEvent("", block["text"])]
    if btype == "thinking" and isinstance(block.get("thinking"), str):
        return [TraceEvent("", "(thinking) " + block["thinking"])]
    if btype == "tool_use":
        args = json.dumps(block.get("input", {}), ensure_ascii=False)
        return [TraceEvent("", f"{block.get('name', 'tool')}({args})", kind="tool_use")]
    if btype == "tool_result":
        inner = block.get("content")
        if isinstance(inner, list):
            text = "\n".join(e.text for b in inner for e in _block_text(b))
        else:
            text = "" if inner is None else str(inner)
        return [TraceEvent("tool", text, kind="tool_result", is_error=bool(block.get("is_error")))]
    if isinstance(block.get("text"), str):
        return [TraceEvent("", block["text"])]
    return []


def _message_events(msg: dict[str, Any]) -> list[TraceEvent]:
    """Events for one chat message in any of the supported shapes."""
    role = str(msg.get("role") or msg.get("type") or "text")
    content = msg.get("content")
    events: list[TraceEvent] = []
    if isinstance(content, str):
        if content.strip():
            kind = "tool_result" if role in ("tool", "function") else "text"
            events.append(TraceEvent(role, content, kind=kind))
    elif isinstance(content, list):
        for block in content:
            for ev in _block_text(block):
                events.append(TraceEvent(ev.role or role, ev.text, ev.kind, ev.is_error))
    for call in msg.get("tool_calls") or []:  # OpenAI assistant tool calls
        fn = call.get("function", {}) if isinstance(call, dict) else {}
        events.append(
            TraceEvent(role, f"{fn.get('name', 'tool')}({fn.get('arguments', '')})", kind="tool_use")
        )
    # Flag failures the exporter did not mark: tool output that reads like an error.
    return [
        TraceEvent(
            e.role, e.text, e.kind, e.is_error or (e.kind == "tool_result" and bool(_ERROR_RE.search(e.text)))
        )
        for e in events
    ]


def _find_message(obj: Any) -> dict[str, Any] | None:
    """The chat message inside one JSON(L) record, wherever the exporter put it."""
    if not isinstance(obj, dict):
        return None
    if "role" in obj and "content" in obj:
        return obj
    for key in ("message", "payload", "item", "data"):
        inner = obj.get(key)
        if isinstance(inner, dict) and ("content" in inner or "tool_calls" in inner):
            found = dict(inner)
            found.setdefault("role", obj.get("type") or inner.get("type") or "text")
            return found
    return None


def _events_from_records(records: list[Any]) -> list[TraceEvent]:
    events: list[TraceEvent] = []
    for rec in records:
        msg = _find_message(rec)
        if msg is not None:
            events += _message_events(msg)
        elif isinstance(rec, dict) and rec.get("type") == "summary" and isinstance(rec.get("summary"), str):
            events.append(TraceEvent("system", "(session summary) " + rec["summary"]))
    return events


#: Traces nest tool calls inside messages, but never hundreds deep; past this is hostile or broken.
TRACE_MAX_DEPTH = 256


def _parse_json_text(text: str, source: str) -> Trace:
    try:
        data = safejson.loads(text, max_depth=TRACE_MAX_DEPTH)
    except safejson.JSONTooDeep as exc:
        raise UpskillError(f"{source}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise UpskillError(
            f"{source}: not valid JSON ({exc.msg} at line {exc.lineno}); "
            "export the trace as JSON, JSONL or Markdown"
        ) from None
    if isinstance(data, dict):
        for key in ("messages", "conversation", "events", "items", "trace"):
            if isinstance(data.get(key), list):
                data = data[key]
                break
        else:
            data = [data]
    if not isinstance(data, list):
        raise UpskillError(f"{source}: expected a list of messages or an object with 'messages'")
    fmt = "json-messages"
    return Trace(_events_from_records(data), fmt, source)


def _parse_jsonl_text(text: str, source: str) -> Trace:
    records: list[Any] = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(safejson.loads(line, max_depth=TRACE_MAX_DEPTH))
        except safejson.JSONTooDeep as exc:
            raise UpskillError(f"{source}: line {n}: {exc}") from None
        except json.JSONDecodeError as exc:
            raise UpskillError(f"{source}: line {n} is not valid JSON ({exc.msg})") from None
    claude = any(isinstance(r, dict) and "message" in r and "sessionId" in r for r in records)
    return Trace(_events_from_records(records), "claude-code-jsonl" if claude else "jsonl", source)


def _parse_markdown(text: str, source: str) -> Trace:
    """Paragraph-sized chunks (code fences kept whole); error-looking chunks are marked."""
    chunks: list[str] = []
    current: list[str] = []
    in_fence = False

    def flush() -> None:
        if current and any(line.strip() for line in current):
            chunks.append("\n".join(current))
        current.clear()

    for line in text.splitlines():
        is_fence = line.lstrip().startswith("```")
        if not in_fence and not is_fence:
            if not line.strip():
                flush()
                continue
            if line.startswith("#"):
                flush()
        current.append(line)
        if is_fence:
            in_fence = not in_fence
    flush()
    events = [TraceEvent("text", c, is_error=bool(_ERROR_RE.search(c))) for c in chunks]
    return Trace(events, "markdown", source)


def parse_trace_text(text: str, source: str = "trace", suffix: str = "") -> Trace:
    """Parse trace text; ``suffix`` (``.json``, ``.jsonl``, ``.md``) hints at the format."""
    text = text.removeprefix("\ufeff")
    stripped = text.lstrip()
    if suffix == ".jsonl" or (suffix not in (".json",) and stripped.startswith("{") and "\n{" in stripped):
        trace = _parse_jsonl_text(text, source)
    elif suffix == ".json" or (suffix not in _MD_SUFFIXES and stripped[:1] in "[{"):
        trace = _parse_json_text(text, source)
    elif stripped[:1] == "[" and suffix not in (".md", ".markdown"):
        try:
            trace = _parse_json_text(text, source)
        except UpskillError:
            trace = _parse_markdown(text, source)
    else:
        trace = _parse_markdown(text, source)
    if not trace.events:
        raise UpskillError(f"{source}: no messages found in the trace ({trace.format})")
    return trace


def load_trace(path: str | Path) -> Trace:
    """Read and parse a trace file; bad input is a one-line :class:`UpskillError`."""
    p = Path(path)
    if not p.is_file():
        raise UpskillError(f"trace {p} not found (give a JSON, JSONL or Markdown file, or a skill folder)")
    try:
        text = p.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UpskillError(
            f"{p}: not UTF-8 text (byte at offset {exc.start}); is this a trace export?"
        ) from None
    except OSError as exc:
        raise UpskillError(f"{p}: cannot be read ({exc.strerror})") from None
    return parse_trace_text(text, str(p), p.suffix.lower())


# ----------------------------------------------------------------------------- condensing
def _clip(text: str, max_tokens: int) -> str:
    """Keep the head and the tail of an over-long text (errors usually sit at the end)."""
    if estimate_tokens(text) <= max_tokens:
        return text
    keep = max(80, max_tokens * 4)
    head, tail = text[: keep * 2 // 5], text[-(keep * 3 // 5) :]
    return f"{head}\n[... {len(text) - len(head) - len(tail)} characters omitted ...]\n{tail}"


def render_trace(trace: Trace, budget_tokens: int = DEFAULT_BUDGET_TOKENS) -> str:
    """The trace as text within ``budget_tokens``: beginning, end and tool errors kept.

    Under budget, everything is kept (each event clipped to a share of the budget so one
    huge tool output cannot crowd out the rest). Over budget: events from the start fill
    ~35% of the budget, events from the end ~35%, and the errors in between get the rest;
    each gap says how many events were left out.
    """
    per_event = max(64, int(budget_tokens * _EVENT_SHARE))
    rendered = [redact(_clip(e.render(), per_event)) for e in trace.events]
    costs = [estimate_tokens(r) + 1 for r in rendered]
    if sum(costs) <= budget_tokens:
        return "\n\n".join(rendered)

    n = len(rendered)
    keep: set[int] = set()

    def take(indices: range | list[int], allowance: int) -> int:
        used = 0
        for i in indices:
            if i in keep:
                continue
            if used + costs[i] > allowance:
                break
            keep.add(i)
            used += costs[i]
        return used

    head_used = take(range(n), int(budget_tokens * 0.35))
    tail_used = take(range(n - 1, -1, -1), int(budget_tokens * 0.35))
    left = budget_tokens - head_used - tail_used
    errors = [i for i, e in enumerate(trace.events) if e.is_error and i not in keep]
    for i in errors:
        c = costs[i]
        if c > left:
            clipped = redact(_clip(trace.events[i].render(), max(32, left - 16)))
            if estimate_tokens(clipped) + 1 > left:
                break
            rendered[i] = clipped
            c = estimate_tokens(clipped) + 1
        keep.add(i)
        left -= c

    parts: list[str] = []
    skipped = 0
    for i in range(n):
        if i in keep:
            if skipped:
                parts.append(f"[... {skipped} events omitted ...]")
                skipped = 0
            parts.append(rendered[i])
        else:
            skipped += 1
    if skipped:
        parts.append(f"[... {skipped} events omitted ...]")
    return "\n\n".join(parts)
