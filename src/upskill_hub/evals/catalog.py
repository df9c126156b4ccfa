"""Catalog mode: the model sees only skill names and descriptions and loads skills itself.

This is how agents load skills (the Agent Skills integration guide): the system prompt
carries an ``<available_skills>`` catalog, and two tools give the model the rest on demand:

* ``load_skill(name)``: the SKILL.md body, without its frontmatter;
* ``read_skill_file(name, path)``: one text file inside that skill. Skill files are written
  by strangers and the path by the model, so the read is refused (a one-line tool error,
  and the conversation goes on) for ``..``, absolute paths, symlinks that leave the skill,
  binary files and files over :data:`MAX_FILE_BYTES`. A path that does not exist answers
  with the skill's file list, so the model can correct itself.

:func:`run_catalog_conversation` answers tool calls until the model gives a final answer,
at most ``max_turns`` model turns and ``token_cap`` tokens in all, and reports what it
loaded and read; usage and latency sum over the turns.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from html import escape
from pathlib import Path

from upskill_hub._util.fsutil import check_relpath
from upskill_hub._util.limits import env_int
from upskill_hub.errors import UpskillError
from upskill_hub.models.base import Completion, Message, ToolCall, ToolSpec, Usage
from upskill_hub.skill import Skill

#: Largest skill file ``read_skill_file`` returns (bytes); bigger files are a tool error.
MAX_FILE_BYTES = env_int("UPSKILL_SKILL_FILE_MAX_BYTES", 64_000)
#: Model turns one catalog answer may take (each tool round trip is one turn).
DEFAULT_MAX_TURNS = 8
#: Tokens (input + output, summed over turns) one catalog answer may spend.
DEFAULT_TOKEN_CAP = env_int("UPSKILL_CATALOG_TOKEN_CAP", 200_000)
#: Files listed when a path is wrong (a skill with thousands of files must not flood the turn).
MAX_LISTED_FILES = 50

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
    """One catalog entry and what its tools serve."""

    name: str
    description: str
    body: str
    files: dict[str, bytes] = field(default_factory=dict, repr=False)
    root: Path | None = None  # read files from disk here (symlink checks); else from ``files``

    @property
    def location(self) -> str:
        # A stable, machine-independent location: the same catalog gives the same prompt
        # (and cache key) wherever the run happens.
        return f"skills/{self.name}/SKILL.md"

    @classmethod
    def from_skill(cls, skill: Skill) -> CatalogSkill:
        return cls(skill.name, skill.description, skill.body, dict(skill.files), skill.path)

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
        data = self._read_disk(path) if self.root is not None else self.files.get(path)
        if data is None:
            raise ToolRefusal(f"no file {path!r} in skill {self.name}; files: {self.file_list()}")
        if len(data) > MAX_FILE_BYTES:
            raise ToolRefusal(f"refused {path!r}: {len(data)} bytes, over the {MAX_FILE_BYTES}-byte limit")
        if b"\0" in data:
            raise ToolRefusal(f"refused {path!r}: a binary file, not text")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolRefusal(f"refused {path!r}: a binary file, not UTF-8 text") from None

    def _read_disk(self, path: str) -> bytes | None:
        assert self.root is not None
        root = self.root.resolve()
        full = self.root / path
        if not os.path.lexists(full):
            return None
        try:
            real = full.resolve(strict=True)
        except (OSError, RuntimeError):
            raise ToolRefusal(f"refused {path!r}: a broken or looping symlink") from None
        if not real.is_relative_to(root):
            raise ToolRefusal(f"refused {path!r}: a symlink out of the skill")
        if not real.is_file():
            return None
        size = real.stat().st_size
        if size > MAX_FILE_BYTES:
            raise ToolRefusal(f"refused {path!r}: {size} bytes, over the {MAX_FILE_BYTES}-byte limit")
        with open(real, "rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:  # grew since stat
            raise ToolRefusal(f"refused {path!r}: over the {MAX_FILE_BYTES}-byte limit")
        return data


@dataclass(frozen=True)
class Catalog:
    """The skills a model may load, in catalog order."""

    skills: tuple[CatalogSkill, ...]

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
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0
    finish_reason: str | None = None
    #: Every turn came from the response cache.
    cached: bool = True
    #: "max_turns" or "token_cap" when the loop stopped before a final answer.
    stopped: str | None = None
    tool_errors: list[str] = field(default_factory=list)

    def triggered(self, skill_name: str) -> bool:
        return skill_name in self.loaded

    def row_fields(self) -> dict[str, object]:
        return {
            "loaded": json.dumps(self.loaded),
            "files_read": json.dumps(self.files_read),
            "turns": self.turns,
            "tool_calls": self.tool_calls,
        }


def _add(a: int | None, b: int | None) -> int | None:
    return a if b is None else (b if a is None else a + b)


#: ``complete(messages, tools) -> (completion, cached)``: one model turn (the runner's cache).
TurnFn = Callable[[list[Message], list[ToolSpec]], Awaitable[tuple[Completion, bool]]]


async def run_catalog_conversation(
    complete: TurnFn,
    user_text: str,
    catalog: Catalog,
    *,
    max_turns: int = DEFAULT_MAX_TURNS,
    token_cap: int = DEFAULT_TOKEN_CAP,
) -> CatalogOutcome:
    """Answer the model's tool calls until it answers in text (or a cap stops it)."""
    out = CatalogOutcome()
    messages = [Message("user", user_text)]
    while True:
        comp, cached = await complete(list(messages), TOOLS)
        out.turns += 1
        out.cached = out.cached and cached
        u = comp.usage
        out.usage = Usage(
            _add(out.usage.input_tokens, u.input_tokens),
            _add(out.usage.output_tokens, u.output_tokens),
            _add(out.usage.cached_tokens, u.cached_tokens),
        )
        out.latency_s += comp.latency_s
        out.text, out.finish_reason = comp.text, comp.finish_reason
        if not comp.tool_calls:
            return out
        if out.turns >= max_turns:
            out.stopped = "max_turns"
            return out
        if (out.usage.total_tokens or 0) >= token_cap:
            out.stopped = "token_cap"
            return out
        messages.append(Message("assistant", comp.text, tool_calls=comp.tool_calls))
        for call in comp.tool_calls:
            out.tool_calls += 1
            try:
                text, did = catalog.run_tool(call)
                error = False
            except ToolRefusal as exc:
                text, did, error = "error: " + " ".join(str(exc).split()), None, True
                out.tool_errors.append(text)
            if did is not None and did.startswith("load:"):
                name = did[5:]
                if name not in out.loaded:
                    out.loaded.append(name)
            elif did is not None:
                out.files_read.append(did[5:])
            messages.append(Message("tool", text, tool_call_id=call.id, is_error=error))
