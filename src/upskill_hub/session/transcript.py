"""What an agent did on its way to the answer: its tool calls, in order, bounded.

Both ways an eval lets a model act record one: catalog mode's own loop (``load_skill``,
``read_skill_file``) and every agent CLI adapter, from what its JSON output shows of each
tool call (:mod:`upskill_hub.lift.harness`). A row keeps it as JSON text, graders
(``tool-called``, ``skill-loaded``, ``file-read``) and the judge read it.

It is bounded however the agent behaved: at most :data:`MAX_CALLS` calls are kept (the
names of the others are counted, the first :data:`MAX_DROPPED_NAMES` of them by name, and
the kind of every one of them: :data:`TOOL_KINDS` is short and fixed, so ``tool-not-called``
can always tell a ``shell`` call past the cap), each call's arguments (as JSON) to
:data:`MAX_ARG_BYTES` and its result to :data:`MAX_RESULT_BYTES`; whatever was cut says so.
Agent output is untrusted: a 50 MB argument is never copied whole, 100,000 calls keep 100.

Secrets: a transcript is only ever written out through :meth:`Transcript.to_dict`, which
masks every known secret (:func:`~upskill_hub._util.redact.redact`, with the caller's own
``secrets`` too) *before* cutting; the window read at parse time is longer than the cut by
:data:`_MARGIN` characters, and a text cut there loses any tail that begins a secret, so a
key straddling a cut never leaks half of itself.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from upskill_hub._util import safejson
from upskill_hub._util.limits import env_int
from upskill_hub._util.redact import redact, secret_values

#: Tool calls a row keeps (``UPSKILL_TRANSCRIPT_MAX_CALLS``); later ones are counted by name.
MAX_CALLS = env_int("UPSKILL_TRANSCRIPT_MAX_CALLS", 100)
#: Bytes of one call's arguments (as JSON) a row keeps (``UPSKILL_TRANSCRIPT_MAX_ARG_BYTES``).
MAX_ARG_BYTES = env_int("UPSKILL_TRANSCRIPT_MAX_ARG_BYTES", 2_000)
#: Bytes of one call's result a row keeps (``UPSKILL_TRANSCRIPT_MAX_RESULT_BYTES``).
MAX_RESULT_BYTES = env_int("UPSKILL_TRANSCRIPT_MAX_RESULT_BYTES", 1_000)
#: Distinct names of calls not kept that are still counted (the rest are summed as :data:`LUMPED`).
MAX_DROPPED_NAMES = 50
#: The ``dropped`` entry counting calls not kept whose names were past :data:`MAX_DROPPED_NAMES`:
#: whether one of them was a given tool is unknown, which graders must say, never pass.
LUMPED = "(other)"
#: Characters of a tool name kept.
MAX_NAME_CHARS = 100
#: How much longer than the cut the text read at parse time is: secrets up to this long that
#: start before the cut are masked whole before it is made.
_MARGIN = 512
#: Deepest nesting of arguments walked (safejson already refuses deeper than 64).
_MAX_DEPTH = 32
CUT_MARK = "…[cut]"

#: What kind of action a tool is, by its lower-cased name, across the CLIs: ``tool-called``
#: accepts a kind as well as a name (``shell`` matches Claude's Bash, Gemini's
#: run_shell_command, Codex's command executions and OpenCode's bash).
KINDS: dict[str, str] = {
    **dict.fromkeys(("bash", "shell", "run_shell_command", "command_execution", "local_shell"), "shell"),
    **dict.fromkeys(("read", "notebookread", "read_file", "read_many_files", "read_skill_file"), "read"),
    **dict.fromkeys(("write", "write_file"), "write"),
    **dict.fromkeys(("edit", "multiedit", "notebookedit", "replace", "patch", "apply_patch", "file_change"), "edit"),
    **dict.fromkeys(("glob", "grep", "ls", "list", "list_directory", "search_file_content"), "search"),
    **dict.fromkeys(("webfetch", "websearch", "web_fetch", "google_web_search", "web_search"), "web"),
    **dict.fromkeys(("skill", "activate_skill", "load_skill"), "skill"),
    **dict.fromkeys(("task", "agent"), "task"),
    **dict.fromkeys(("todowrite", "todoread", "write_todos", "todo_list"), "todo"),
}  # fmt: skip
TOOL_KINDS = ("shell", "read", "write", "edit", "search", "web", "skill", "task", "todo", "mcp", "other")


def tool_kind(name: str) -> str:
    """The kind of action ``name`` is (one of :data:`TOOL_KINDS`)."""
    low = name.lower()
    if low.startswith("mcp__") or low.startswith("mcp:"):
        return "mcp"
    return KINDS.get(low, "other")


@dataclass(frozen=True)
class ToolEvent:
    """One tool call: its name, arguments (JSON text) and result, each possibly cut."""

    name: str
    kind: str
    arguments: str
    result: str | None = None
    #: The tool said it failed (an error result, a non-zero exit status).
    error: bool = False
    arguments_cut: bool = False
    result_cut: bool = False
    #: Characters of the whole result, before any cut (``None``: no result shown).
    result_chars: int | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "kind": self.kind, "arguments": self.arguments}
        if self.result is not None:
            d["result"] = self.result
            d["result_chars"] = self.result_chars
        if self.error:
            d["error"] = True
        if self.arguments_cut:
            d["arguments_cut"] = True
        if self.result_cut:
            d["result_cut"] = True
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ToolEvent:
        def text(key: str) -> str:
            v = d.get(key)
            return v if isinstance(v, str) else ""

        result = d.get("result")
        chars = d.get("result_chars")
        return cls(
            name=text("name")[:MAX_NAME_CHARS], kind=text("kind") or tool_kind(text("name")),
            arguments=text("arguments"), result=result if isinstance(result, str) else None,
            error=d.get("error") is True, arguments_cut=d.get("arguments_cut") is True,
            result_cut=d.get("result_cut") is True,
            result_chars=chars if isinstance(chars, int) and not isinstance(chars, bool) else None,
        )  # fmt: skip

    def argument_values(self) -> list[str]:
        """The string values inside the arguments, unescaped (when the JSON was kept whole)."""
        if self.arguments_cut:
            return []
        try:
            data = safejson.loads(self.arguments)
        except ValueError:
            return []
        out: list[str] = []
        stack = [data]
        while stack and len(out) < 1000:
            v = stack.pop()
            if isinstance(v, str):
                out.append(v)
            elif isinstance(v, dict):
                stack += list(v.values())
            elif isinstance(v, list):
                stack += v
        return out


@dataclass(frozen=True)
class Transcript:
    """The tool calls one answer made, in order (at most :data:`MAX_CALLS` kept).

    ``total`` counts every call seen; ``dropped`` names the calls not kept, with counts
    (names past :data:`MAX_DROPPED_NAMES` are summed under :data:`LUMPED`), and
    ``dropped_kinds`` counts every call not kept by its kind (never lumped).
    ``missing`` says why there is no transcript at all (a ``cmd:`` agent prints only its
    answer; Claude Code's lone ``result`` object shows no calls): graders then say so
    instead of reading "no calls".
    """

    events: tuple[ToolEvent, ...] = ()
    total: int = 0
    dropped: tuple[tuple[str, int], ...] = ()
    missing: str | None = None
    dropped_kinds: tuple[tuple[str, int], ...] = ()

    @classmethod
    def unavailable(cls, why: str) -> Transcript:
        return cls(missing=why)

    @property
    def cut(self) -> bool:
        """Whether any call, argument or result was left out or shortened."""
        return self.total > len(self.events) or any(e.arguments_cut or e.result_cut for e in self.events)

    def notes(self) -> list[str]:
        """One line per kind of cut, for evidence and the judge."""
        out = []
        if self.total > len(self.events):
            out.append(
                f"{self.total - len(self.events):,} of {self.total:,} tool calls not kept "
                f"(UPSKILL_TRANSCRIPT_MAX_CALLS={MAX_CALLS})"
            )
        n_args = sum(e.arguments_cut for e in self.events)
        if n_args:
            out.append(
                f"arguments of {n_args} call(s) cut at {MAX_ARG_BYTES:,} bytes (UPSKILL_TRANSCRIPT_MAX_ARG_BYTES)"
            )
        n_res = sum(e.result_cut for e in self.events)
        if n_res:
            out.append(
                f"results of {n_res} call(s) cut at {MAX_RESULT_BYTES:,} bytes (UPSKILL_TRANSCRIPT_MAX_RESULT_BYTES)"
            )
        return out

    def redacted(self, secrets: Iterable[str] = (), folders: Mapping[str, str] | None = None) -> Transcript:
        """Every text masked (env secrets, token shapes and ``secrets``), then cut to the limits.

        ``folders`` maps folder paths to how they are shown (``{"/tmp/upskill-…/project": "."}``):
        an agent's absolute paths then read the same in every run (and the judge's prompt,
        a cache key, stays the same).
        """
        extra = [s for s in secrets if s]
        known = secret_values(extra)
        moves = _moves(folders or {})
        return replace(
            self,
            events=tuple(_finish(_moved(e, moves), extra, known) for e in self.events),
            dropped=tuple((_mask(n, extra, known, cut=False)[:MAX_NAME_CHARS], c) for n, c in self.dropped),
            missing=redact(self.missing, extra=extra) if self.missing else self.missing,
        )

    def to_dict(
        self, secrets: Iterable[str] = (), folders: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """The row's form: masked and cut (see :meth:`redacted`)."""
        t = self.redacted(secrets, folders)
        d: dict[str, Any] = {"calls": [e.to_dict() for e in t.events], "total": t.total}
        if t.dropped:
            d["dropped"] = dict(t.dropped)
        if t.dropped_kinds:
            d["dropped_kinds"] = dict(t.dropped_kinds)
        if t.missing:
            d["missing"] = t.missing
        notes = t.notes()
        if notes:
            d["cut"] = notes
        return d

    def to_json(self, secrets: Iterable[str] = (), folders: Mapping[str, str] | None = None) -> str:
        return json.dumps(self.to_dict(secrets, folders), ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: Any) -> Transcript:
        """A transcript read back from a row (anything unreadable is left out, never raised)."""
        if not isinstance(data, dict):
            return cls.unavailable("no transcript recorded")
        calls = data.get("calls") if isinstance(data.get("calls"), list) else []
        events = tuple(ToolEvent.from_dict(c) for c in calls[:MAX_CALLS] if isinstance(c, dict))
        total = data.get("total")
        missing = data.get("missing")
        return cls(
            events=events,
            total=max(total, len(events))
            if isinstance(total, int) and not isinstance(total, bool)
            else len(events),
            # The names, plus the LUMPED entry the builder adds after them.
            dropped=_counts(data.get("dropped"), MAX_DROPPED_NAMES + 1),
            dropped_kinds=tuple(
                (k, n) for k, n in _counts(data.get("dropped_kinds"), 100) if k in TOOL_KINDS
            ),
            missing=missing if isinstance(missing, str) else None,
        )

    @classmethod
    def from_json(cls, text: str | None) -> Transcript:
        if not text:
            return cls.unavailable("no transcript recorded")
        try:
            return cls.from_dict(safejson.loads(text))
        except ValueError:
            return cls.unavailable("the recorded transcript is not readable JSON")


def _counts(data: Any, most: int) -> tuple[tuple[str, int], ...]:
    """``{name: count}`` read back from a row: at most ``most`` entries, whole counts >= 0."""
    if not isinstance(data, dict):
        return ()
    items = list(data.items())[:most]
    return tuple((str(k), v) for k, v in items if type(v) is int and v >= 0)


@dataclass
class TranscriptBuilder:
    """Collects calls as a stream shows them: :meth:`call`, then :meth:`result` by call id.

    Never holds more than :data:`MAX_CALLS` calls, each at most a window a little longer
    than its limits, whatever the stream holds.
    """

    max_calls: int = field(default_factory=lambda: MAX_CALLS)
    _events: list[ToolEvent] = field(default_factory=list)
    _by_id: dict[str, int] = field(default_factory=dict)
    _dropped: dict[str, int] = field(default_factory=dict)
    _dropped_kinds: dict[str, int] = field(default_factory=dict)
    _total: int = 0
    _missing: str | None = None

    def call(self, name: Any, arguments: Any, call_id: Any = None, *, kind: str | None = None) -> int | None:
        """Record a call (``kind``: see :data:`TOOL_KINDS`, by default from its name); returns
        its index, or ``None`` when it was not kept (over the count)."""
        name = name if isinstance(name, str) and name else "(unnamed)"
        self._total += 1
        kind = kind if kind in TOOL_KINDS else tool_kind(name)
        if len(self._events) >= self.max_calls:
            key = name[:MAX_NAME_CHARS]
            if key not in self._dropped and len(self._dropped) >= MAX_DROPPED_NAMES:
                key = LUMPED
            self._dropped[key] = self._dropped.get(key, 0) + 1
            self._dropped_kinds[kind] = self._dropped_kinds.get(kind, 0) + 1  # at most len(TOOL_KINDS) keys
            return None
        args, cut = bounded_json(arguments, MAX_ARG_BYTES + _MARGIN)
        self._events.append(ToolEvent(name=name[: MAX_NAME_CHARS + _MARGIN], kind=kind, arguments=args,
                                      arguments_cut=cut))  # fmt: skip
        index = len(self._events) - 1
        if isinstance(call_id, str) and call_id and len(self._by_id) < self.max_calls:
            self._by_id[call_id] = index
        return index

    def known(self, call_id: Any) -> bool:
        return isinstance(call_id, str) and call_id in self._by_id

    def result(self, call_id: Any, output: Any, *, error: bool = False, index: int | None = None) -> None:
        """Attach a result to the call ``call_id`` (or at ``index``); a result of a call not kept is ignored."""
        if index is None:
            if not isinstance(call_id, str) or call_id not in self._by_id:
                return
            index = self._by_id[call_id]
        if not 0 <= index < len(self._events):
            return
        text, chars = result_text(output, MAX_RESULT_BYTES + _MARGIN)
        ev = self._events[index]
        self._events[index] = replace(ev, result=text, result_chars=chars, error=ev.error or error,
                                      result_cut=len(text) < chars)  # fmt: skip

    def set_missing(self, why: str) -> None:
        self._missing = why

    def build(self) -> Transcript:
        return Transcript(
            events=tuple(self._events),
            total=self._total,
            dropped=tuple(self._dropped.items()),
            missing=self._missing,
            dropped_kinds=tuple(self._dropped_kinds.items()),
        )


# --------------------------------------------------------------------------- bounding
def _shrink(value: Any, room: list[int], depth: int, cut: list[bool]) -> Any:
    """A copy of ``value`` whose JSON is at most about ``room[0]`` characters."""
    if room[0] <= 0:
        cut[0] = True
        return CUT_MARK
    if isinstance(value, str):
        if len(value) > room[0]:
            cut[0] = True
            kept = value[: room[0]] + CUT_MARK
            room[0] = 0
            return kept
        room[0] -= len(value) + 2
        return value
    if depth >= _MAX_DEPTH and isinstance(value, dict | list):
        cut[0] = True
        room[0] -= len(CUT_MARK)
        return CUT_MARK
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for i, (k, v) in enumerate(value.items()):
            if room[0] <= 0:
                cut[0] = True
                out[CUT_MARK] = f"{len(value) - i} more"
                break
            key = str(k)[: max(1, room[0])]
            room[0] -= len(key) + 4
            out[key] = _shrink(v, room, depth + 1, cut)
        return out
    if isinstance(value, list | tuple):
        items: list[Any] = []
        for i, v in enumerate(value):
            if room[0] <= 0:
                cut[0] = True
                items.append(f"{CUT_MARK} {len(value) - i} more")
                break
            items.append(_shrink(v, room, depth + 1, cut))
            room[0] -= 2
        return items
    if value is None or isinstance(value, bool | int | float):
        room[0] -= 8
        return value
    text = str(value)[: room[0]]
    room[0] -= len(text) + 2
    return text


def bounded_json(value: Any, limit: int) -> tuple[str, bool]:
    """``value`` as JSON text of at most ``limit`` characters, and whether anything was cut.

    Walks only as much of ``value`` as fits: a 50 MB string costs one slice, a list of a
    million items stops at the first items that fill the room.
    """
    cut = [False]
    shrunk = _shrink(value, [limit], 0, cut)
    text = json.dumps(shrunk, ensure_ascii=False, default=str)
    if len(text) > limit:
        text, cut[0] = text[:limit], True
    return text, cut[0]


def result_text(output: Any, limit: int) -> tuple[str, int]:
    """A tool result as text (at most ``limit`` characters) and its whole length in characters.

    Text blocks (``[{"type": "text", "text": ...}]``, MCP ``{"content": [...]}``) are joined;
    anything else is its bounded JSON.
    """
    if isinstance(output, str):
        return output[:limit], len(output)
    blocks = (
        output.get("content")
        if isinstance(output, dict) and isinstance(output.get("content"), list)
        else output
    )
    if (
        isinstance(blocks, list)
        and blocks
        and all(isinstance(b, dict) and b.get("type") for b in blocks[:100])
    ):
        # One pass, counting as it goes: 200,000 empty blocks cost 200,000 steps, not 200,000².
        parts: list[str] = []
        size = kept = 0
        for i, b in enumerate(blocks):
            if not isinstance(b, dict):  # past the first 100 checked above
                t = f"[{type(b).__name__}]"
            else:
                t = b.get("text") if isinstance(b.get("text"), str) else f"[{str(b.get('type'))[:40]}]"
            size += len(t) + (1 if i else 0)
            if kept < limit:
                parts.append(t[: limit - kept])
                kept += len(parts[-1]) + 1
        return "\n".join(parts)[:limit], size
    if output is None:
        return "", 0
    text, cut = bounded_json(output, limit)
    return text, len(text) + (1 if cut else 0)


# --------------------------------------------------------------------------- masking
#: A token's beginning at the very end of a cut text (too short for redact's own patterns).
_TOKEN_TAIL = re.compile(r"(?:hf_|sk-(?:ant-)?|(?i:bearer\s+))[A-Za-z0-9_\-.=]*$|(?:hf|sk)$")


def _strip_tail(text: str, known: list[str]) -> str:
    """``text`` without an ending that may be the beginning of a secret or a token."""
    text = _TOKEN_TAIL.sub("", text)
    for value in known:
        for k in range(min(len(value) - 1, len(text)), 2, -1):  # 1-2 characters tell nothing
            if text.endswith(value[:k]):
                text = text[:-k]
                break
    return text


def _mask(text: str, extra: list[str], known: list[str], *, cut: bool) -> str:
    """``text`` masked; when it was cut, whatever precedes a cut (each :data:`CUT_MARK`, and
    the end) loses an ending that may begin a secret."""
    text = redact(text, extra=extra)
    if cut:
        parts = text.split(CUT_MARK)
        text = CUT_MARK.join(_strip_tail(p, known) for p in parts)
    return text


def _cut_bytes(text: str, limit: int) -> tuple[str, bool]:
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text, False
    return data[:limit].decode("utf-8", "ignore"), True


def _moves(folders: Mapping[str, str]) -> list[tuple[re.Pattern[str], str, str]]:
    """``(pattern, shown/, shown)`` per folder, longest first; a folder matches only whole
    (``/w/project`` in ``/w/project/a.txt`` or ``cd /w/project``, never in ``/w/project2``)."""
    out = []
    for folder, shown in sorted(folders.items(), key=lambda kv: len(kv[0]), reverse=True):
        folder = folder.rstrip("/")
        if len(folder) > 1:
            prefix = "" if shown == "." else shown.rstrip("/") + "/"
            out.append((re.compile(re.escape(folder) + r"(/|(?![\w.\-]))"), prefix, shown))
    return out


def _moved(e: ToolEvent, moves: list[tuple[re.Pattern[str], str, str]]) -> ToolEvent:
    if not moves:
        return e

    def move(text: str) -> str:
        for pattern, prefix, shown in moves:
            text = pattern.sub(lambda m, p=prefix, s=shown: p if m.group(1) else s, text)
        return text

    return replace(e, arguments=move(e.arguments), result=move(e.result) if e.result is not None else None)


def _finish(e: ToolEvent, extra: list[str], known: list[str]) -> ToolEvent:
    name = _mask(e.name, extra, known, cut=len(e.name) > MAX_NAME_CHARS)[:MAX_NAME_CHARS]
    args, a_cut = _cut_bytes(_mask(e.arguments, extra, known, cut=e.arguments_cut), MAX_ARG_BYTES)
    result, r_cut = None, e.result_cut
    if e.result is not None:
        result, cut_now = _cut_bytes(_mask(e.result, extra, known, cut=e.result_cut), MAX_RESULT_BYTES)
        r_cut = r_cut or cut_now
    return replace(e, name=name, arguments=args, arguments_cut=e.arguments_cut or a_cut, result=result,
                   result_cut=r_cut)  # fmt: skip
