"""Catalog mode: the model sees only skill names and descriptions and loads skills itself.

This is how agents load skills (the Agent Skills integration guide): the system prompt
carries an ``<available_skills>`` catalog, and two tools give the model the rest on demand:

* ``load_skill(name)``: the SKILL.md body, without its frontmatter;
* ``read_skill_file(name, path)``: one text file of that skill, from the files the skill
  loader listed (and read) and nothing else. The path is written by the model, so the read
  is refused (a one-line tool error, and the conversation goes on) for ``..``, absolute
  paths, binary files and files over :data:`MAX_FILE_BYTES`; a path the loader did not list
  (``.git/config``, a symlink out, a file written since) answers "no file" with the
  skill's file list, so the model can correct itself.

:func:`run_catalog_conversation` answers tool calls until the model gives a final answer,
at most ``max_turns`` model turns and ``token_cap`` tokens in all, and reports what it
loaded and read, and its transcript (every tool call served, with its arguments and result,
bounded); usage and latency sum over the turns. The caps never trust the server
alone: a server that reports no usage (or implausibly little) is counted from the request
and reply sizes, and a turn asking for too many tool calls, tool results that add up to
too much, or a request grown too large end the answer as an error (see
:class:`CatalogOutcome.error`) instead of sending hundreds of megabytes.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from html import escape

from upskill_hub._util.fsutil import check_relpath
from upskill_hub._util.limits import SKILL_FILE_MAX_BYTES, env_int
from upskill_hub._util.sizes import size_and_limit
from upskill_hub.errors import UpskillError
from upskill_hub.models.base import Completion, Message, ToolCall, ToolSpec, Usage
from upskill_hub.session.transcript import Transcript, TranscriptBuilder
from upskill_hub.skill import Skill

#: Largest skill file ``read_skill_file`` returns (bytes); bigger files are a tool error
#: (``UPSKILL_SKILL_FILE_MAX_BYTES``; set in limits.py, which ``skills validate`` reads too).
MAX_FILE_BYTES = SKILL_FILE_MAX_BYTES
#: Model turns one catalog answer may take (each tool round trip is one turn).
DEFAULT_MAX_TURNS = 8
#: Tokens (input + output, summed over turns) one catalog answer may spend; each turn counts the
#: server's figure, or the local estimate where the server reports none or implausibly few.
DEFAULT_TOKEN_CAP = env_int("UPSKILL_CATALOG_TOKEN_CAP", 200_000)
#: Files listed when a path is wrong (a skill with thousands of files must not flood the turn).
MAX_LISTED_FILES = 50
#: Tool calls one model turn may ask for (``UPSKILL_CATALOG_MAX_TOOL_CALLS``): more ends the
#: answer as an error. A turn of 5,000 calls once made the next request 301 MB.
MAX_TOOL_CALLS_PER_TURN = env_int("UPSKILL_CATALOG_MAX_TOOL_CALLS", 32)
#: Bytes all tool results of one answer may add up to (``UPSKILL_CATALOG_MAX_TOOL_OUTPUT_KB``).
MAX_TOOL_OUTPUT_BYTES = env_int("UPSKILL_CATALOG_MAX_TOOL_OUTPUT_KB", 2_000) * 1000
#: Largest request one turn may send: system prompt, conversation and tool schemas
#: (``UPSKILL_CATALOG_MAX_REQUEST_MB``; a 1M-token context is about 4 MB of text).
MAX_REQUEST_BYTES = env_int("UPSKILL_CATALOG_MAX_REQUEST_MB", 8) * 1_000_000
#: Bytes per token of the local estimate (about 4 for English prose and code).
BYTES_PER_TOKEN = 4
#: A server's count is believed unless it is under 1/this of the local estimate: tokenizers
#: differ by well under 4x on text, while "0" or a constant 1 would lift every cap.
PLAUSIBLE_FACTOR = 4

CATALOG_INSTRUCTION = (
    "The skills above extend what you can do. When a request matches a skill's description, "
    "call load_skill with its name to read its instructions before answering, and "
    "read_skill_file for files the skill refers to."
)

TOOLS = [
    ToolSpec(
        "load_skill",
        "Load an available skill: returns its full instructions (SKILL.md without frontmatter).",
        {
            "type": "object",
            "properties": {"name": {"type": "string", "description": "the skill's name from the catalog"}},
            "required": ["name"],
        },
    ),
    ToolSpec(
        "read_skill_file",
        "Read a text file inside a skill, by its path relative to the skill folder (e.g. references/guide.md).",
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "the skill's name"},
                "path": {"type": "string", "description": "path relative to the skill folder"},
            },
            "required": ["name", "path"],
        },
    ),
]


class ToolRefusal(Exception):
    """A tool call that cannot be served; its one-line message goes back to the model."""


@dataclass(frozen=True)
class CatalogSkill:
    """One catalog entry and what its tools serve.

    ``files`` is the skill loader's own file list (:attr:`Skill.files`: what
    :func:`~upskill_hub.skill.scan_skill` found, with the bytes read then), and it is the
    only thing ``read_skill_file`` serves: ``.git/``, editor litter, install markers, a
    symlink out of the folder and anything written after loading are "not found" to the
    model exactly as they are absent from the listing. A read from the folder on disk
    served whatever was there, ``.git/config`` and its token included. Serving the loaded
    bytes also keeps the answer tied to the skill version (the hash of those bytes). The
    skill's test material (``skill_meta.json``, ``evals/``) is left out: the model must not
    read the expected answers it is graded on.
    """

    name: str
    description: str
    body: str
    files: dict[str, bytes] = field(default_factory=dict, repr=False)

    @property
    def location(self) -> str:
        # A stable, machine-independent location: the same catalog gives the same prompt
        # (and cache key) wherever the run happens.
        return f"skills/{self.name}/SKILL.md"

    @classmethod
    def from_skill(cls, skill: Skill) -> CatalogSkill:
        return cls(skill.name, skill.description, skill.body, dict(skill.without_tests().files))

    def file_list(self) -> str:
        names = sorted(self.files)
        shown = ", ".join(names[:MAX_LISTED_FILES])
        more = f" (+{len(names) - MAX_LISTED_FILES} more)" if len(names) > MAX_LISTED_FILES else ""
        return shown + more

    def read(self, path: object) -> str:
        """The text of ``path`` inside this skill, or :class:`ToolRefusal`."""
        if not isinstance(path, str) or not path.strip():
            raise ToolRefusal(f"read_skill_file needs a 'path'; files in {self.name}: {self.file_list()}")
        try:
            check_relpath(path)
        except UpskillError:
            raise ToolRefusal(
                f"refused path {path[:200]!r}: paths must be relative to the skill folder, without '..'"
            ) from None
        data = self.files.get(path)
        if data is None:
            raise ToolRefusal(f"no file {path!r} in skill {self.name}; files: {self.file_list()}")
        if len(data) > MAX_FILE_BYTES:
            size, limit = size_and_limit(len(data), MAX_FILE_BYTES)
            raise ToolRefusal(
                f"refused {path!r}: {size}, over the {limit} limit per file read (UPSKILL_SKILL_FILE_MAX_BYTES)"
            )
        if b"\0" in data:
            raise ToolRefusal(f"refused {path!r}: a binary file, not text")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolRefusal(f"refused {path!r}: a binary file, not UTF-8 text") from None


@dataclass(frozen=True)
class Catalog:
    """The skills a model may load, in catalog order."""

    skills: tuple[CatalogSkill, ...]

    def __post_init__(self) -> None:
        # The model names a skill to load it: two entries of one name would make the
        # catalog ambiguous (and the second one unreachable), so it is refused, whoever
        # builds the catalog (eval, triggers, tune, routing).
        seen: set[str] = set()
        for s in self.skills:
            if s.name in seen:
                raise UpskillError(
                    f"two skills named {s.name!r} in the catalog: a model loads skills by name, "
                    "so names must be unique (drop or rename one)"
                )
            seen.add(s.name)

    @classmethod
    def of(cls, skills: list[Skill]) -> Catalog:
        return cls(tuple(CatalogSkill.from_skill(s) for s in skills))

    def names(self) -> list[str]:
        return [s.name for s in self.skills]

    def without(self, name: str) -> Catalog:
        """The same catalog minus ``name`` (the baseline condition)."""
        return Catalog(tuple(s for s in self.skills if s.name != name))

    def block(self) -> str:
        """The ``<available_skills>`` block the integration guide shows."""
        lines = ["<available_skills>"]
        for s in self.skills:
            lines += [
                "<skill>",
                f"<name>{escape(s.name)}</name>",
                f"<description>{escape(' '.join(s.description.split()))}</description>",
                f"<location>{escape(s.location)}</location>",
                "</skill>",
            ]
        lines.append("</available_skills>")
        return "\n".join(lines)

    def system_prompt(self, base: str) -> str:
        """``base`` + the catalog + one sentence on how to load a skill."""
        return f"{base}\n{self.block()}\n\n{CATALOG_INSTRUCTION}\n"

    def _skill(self, name: object) -> CatalogSkill:
        for s in self.skills:
            if s.name == name:
                return s
        shown = repr(name)[:100]
        raise ToolRefusal(f"no skill named {shown}; available: {', '.join(self.names()) or 'none'}")

    def run_tool(self, call: ToolCall) -> tuple[str, str | None]:
        """Serve one tool call: (result text, or a one-line error; what it loaded/read for the record).

        The second value is ``"load:<name>"`` or ``"read:<name>/<path>"`` on success, else None.
        """
        args = call.arguments
        if call.name == "load_skill":
            skill = self._skill(args.get("name"))
            return skill.body, f"load:{skill.name}"
        if call.name == "read_skill_file":
            skill = self._skill(args.get("name"))
            text = skill.read(args.get("path"))
            return text, f"read:{skill.name}/{args['path']}"
        raise ToolRefusal(f"unknown tool {call.name[:60]!r}; tools: load_skill, read_skill_file")


@dataclass
class CatalogOutcome:
    """What one catalog conversation did."""

    text: str = ""
    loaded: list[str] = field(default_factory=list)
    files_read: list[str] = field(default_factory=list)
    turns: int = 0
    tool_calls: int = 0
    #: Usage as the server reported it, summed over turns (what the row records and prices).
    usage: Usage = field(default_factory=Usage)
    #: Tokens counted for the caps: the server's figure per turn, or the local estimate from
    #: the request and reply sizes where the server gave none or implausibly few.
    counted_tokens: int = 0
    #: Bytes of the largest request sent (system prompt, conversation, tool schemas).
    max_request_bytes: int = 0
    #: Bytes of all tool results served.
    tool_output_bytes: int = 0
    latency_s: float = 0.0
    finish_reason: str | None = None
    #: Every turn came from the response cache.
    cached: bool = True
    #: "max_turns" or "token_cap" when the loop stopped before a final answer.
    stopped: str | None = None
    #: A cap the conversation broke (too many tool calls in a turn, tool results or a
    #: request too large): one line; the call is recorded as an error row, not graded.
    error: str | None = None
    tool_errors: list[str] = field(default_factory=list)
    #: Every tool call served, in order, with its arguments and result (bounded, see
    #: :mod:`upskill_hub.session.transcript`); the calls of a turn refused whole are not in it.
    calls: TranscriptBuilder = field(default_factory=TranscriptBuilder, repr=False)

    @property
    def transcript(self) -> Transcript:
        return self.calls.build()

    def transcript_json(self, secrets: list[str] | tuple[str, ...] = ()) -> str:
        """The transcript as a row keeps it: JSON text, secrets masked, cut to its limits."""
        return self.transcript.to_json(secrets)

    def triggered(self, skill_name: str) -> bool:
        return skill_name in self.loaded

    def row_fields(self) -> dict[str, object]:
        return {
            "loaded": json.dumps(self.loaded),
            "files_read": json.dumps(self.files_read),
            "turns": self.turns,
            "tool_calls": self.tool_calls,
            "transcript": self.transcript_json(),
        }


def _add(a: int | None, b: int | None) -> int | None:
    return a if b is None else (b if a is None else a + b)


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def message_bytes(m: Message) -> int:
    """About what ``m`` adds to a request on the wire: its text and its tool calls' JSON."""
    n = _utf8_len(m.content)
    for c in m.tool_calls:
        n += _utf8_len(c.id) + _utf8_len(c.name) + _utf8_len(json.dumps(c.arguments, default=str))
    return n


def counted_tokens(reported: int | None, estimate: int) -> int:
    """Tokens to count for a cap: the server's ``reported`` figure, unless it is missing or
    under 1/:data:`PLAUSIBLE_FACTOR` of the local ``estimate`` (then the estimate)."""
    if reported is None or reported * PLAUSIBLE_FACTOR < estimate:
        return estimate
    return reported


def _tokens_of(nbytes: int) -> int:
    return (nbytes + BYTES_PER_TOKEN - 1) // BYTES_PER_TOKEN


#: ``complete(messages, tools) -> (completion, cached)``: one model turn (the runner's cache).
TurnFn = Callable[[list[Message], list[ToolSpec]], Awaitable[tuple[Completion, bool]]]


async def run_catalog_conversation(
    complete: TurnFn,
    user_text: str,
    catalog: Catalog,
    *,
    max_turns: int = DEFAULT_MAX_TURNS,
    token_cap: int = DEFAULT_TOKEN_CAP,
    system: str = "",
) -> CatalogOutcome:
    """Answer the model's tool calls until it answers in text (or a cap stops it).

    ``system`` is the system prompt ``complete`` sends (it only sizes the requests). Every
    cap counts locally: the request's bytes are summed as the conversation grows, so a
    server that reports no usage cannot run the loop for ``max_turns`` of ever larger
    requests; ``token_cap`` ends it as ``stopped``, while a turn of more than
    :data:`MAX_TOOL_CALLS_PER_TURN` calls, more than :data:`MAX_TOOL_OUTPUT_BYTES` of tool
    results or a request over :data:`MAX_REQUEST_BYTES` ends it with ``error`` set.
    """
    out = CatalogOutcome()
    messages = [Message("user", user_text)]
    fixed_bytes = _utf8_len(system) + sum(_utf8_len(json.dumps(t.to_dict())) for t in TOOLS)
    request_bytes = fixed_bytes + message_bytes(messages[0])
    while True:
        out.max_request_bytes = max(out.max_request_bytes, request_bytes)
        if request_bytes > MAX_REQUEST_BYTES:
            out.error = (
                f"catalog conversation stopped: the next request would be {request_bytes:,} bytes, over the "
                f"{MAX_REQUEST_BYTES:,}-byte limit (UPSKILL_CATALOG_MAX_REQUEST_MB)"
            )
            return out
        comp, cached = await complete(list(messages), TOOLS)
        out.turns += 1
        out.cached = out.cached and cached
        u = comp.usage
        out.usage = Usage(
            _add(out.usage.input_tokens, u.input_tokens),
            _add(out.usage.output_tokens, u.output_tokens),
            _add(out.usage.cached_tokens, u.cached_tokens),
        )
        reply = Message("assistant", comp.text, tool_calls=comp.tool_calls)
        reply_bytes = message_bytes(reply)
        out.counted_tokens += counted_tokens(u.input_tokens, _tokens_of(request_bytes))
        out.counted_tokens += counted_tokens(u.output_tokens, _tokens_of(reply_bytes))
        out.latency_s += comp.latency_s
        out.text, out.finish_reason = comp.text, comp.finish_reason
        if not comp.tool_calls:
            return out
        if len(comp.tool_calls) > MAX_TOOL_CALLS_PER_TURN:
            out.error = (
                f"catalog conversation stopped: the model asked for {len(comp.tool_calls):,} tool calls in one "
                f"turn; at most {MAX_TOOL_CALLS_PER_TURN} are served (UPSKILL_CATALOG_MAX_TOOL_CALLS)"
            )
            return out
        if out.turns >= max_turns:
            out.stopped = "max_turns"
            return out
        if out.counted_tokens >= token_cap:
            out.stopped = "token_cap"
            return out
        messages.append(reply)
        request_bytes += reply_bytes
        for call in comp.tool_calls:
            out.tool_calls += 1
            index = out.calls.call(call.name, call.arguments)
            try:
                text, did = catalog.run_tool(call)
                error = False
            except ToolRefusal as exc:
                text, did, error = "error: " + " ".join(str(exc).split()), None, True
                out.tool_errors.append(text)
            out.calls.result(None, text, error=error, index=index)
            if did is not None and did.startswith("load:"):
                name = did[5:]
                if name not in out.loaded:
                    out.loaded.append(name)
            elif did is not None:
                out.files_read.append(did[5:])
            result = Message("tool", text, tool_call_id=call.id, is_error=error)
            size = message_bytes(result)
            out.tool_output_bytes += size
            if out.tool_output_bytes > MAX_TOOL_OUTPUT_BYTES:
                out.error = (
                    f"catalog conversation stopped: tool results reached {out.tool_output_bytes:,} bytes, over the "
                    f"{MAX_TOOL_OUTPUT_BYTES:,}-byte limit per answer (UPSKILL_CATALOG_MAX_TOOL_OUTPUT_KB)"
                )
                return out
            messages.append(result)
            request_bytes += size + _utf8_len(call.id)
