"""What every agent CLI adapter provides, and what it reads out of the CLI's output.

An adapter knows one CLI: its executable, the command line its documentation gives for
scripting, where it looks for skills, which environment variables carry its provider key,
and how to read its JSON output into a :class:`ParsedRun`. Anything in that output it does
not recognise raises :class:`UnknownOutput`, which becomes an error row naming the CLI and
its version: a CLI update that changes the format must not pass for a wrong answer.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from upskill_hub._util import limits, safejson
from upskill_hub.models.base import ImplausibleUsage, token_count
from upskill_hub.session.transcript import Transcript


class UnknownOutput(Exception):
    """The CLI printed something this adapter cannot read (one line, no secrets)."""


class PromptRefused(Exception):
    """A case's text cannot be handed to this CLI without it being read as an option (one line)."""


#: How a CLI takes the case's text. ``stdin``: written to its standard input, never on the
#: command line; ``after-dashes``: the last argument, after ``--`` (the POSIX end of options);
#: ``option-value``: glued to a long option as ``--prompt=TEXT``, which parsers keep as one value.
PROMPT_VIA = ("stdin", "after-dashes", "option-value")


@dataclass(frozen=True)
class Invocation:
    """The command line and standard input of one CLI run."""

    argv: list[str]
    stdin: bytes | None = None


def clean_text(text: str) -> str:
    """``text`` as a command line or a pipe can carry it: lone surrogates (invalid JSON escapes
    such as ``\\ud800``) become U+FFFD instead of a UnicodeEncodeError at spawn time."""
    return text.encode("utf-8", "replace").decode("utf-8")


def pass_untrusted(options: list[str], text: str, via: str, *, option: str | None = None) -> Invocation:
    """The one way untrusted text (a case's prompt) reaches an agent CLI: never as an option.

    ``options`` is the trusted part of the command line (executable, flags, model). The text
    goes to stdin, after ``--``, or as ``OPTION=TEXT``; there it cannot start a flag such as
    ``--dangerously-bypass-approvals-and-sandbox`` or a subcommand, whatever it begins with.
    A NUL character cannot be carried by a command line at all and is refused.
    """
    text = clean_text(text)
    if via == "stdin":
        return Invocation(list(options), text.encode("utf-8"))
    if "\0" in text:
        raise PromptRefused("the case's text holds a NUL character, which no command line can carry")
    if via == "after-dashes":
        return Invocation([*options, "--", text])
    if via == "option-value" and option is not None and option.startswith("--"):
        return Invocation([*options, f"{option}={text}"])
    raise ValueError(f"unknown way to pass a prompt: {via!r}")  # a programming error, not input


#: The transcript of a run whose output shows no tool calls: what ``cmd:`` agents print.
NO_TRANSCRIPT = "no transcript for cmd: agents (the command prints only its answer, not its tool calls)"


@dataclass
class ParsedRun:
    """What one CLI run reported about itself."""

    text: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    cost_usd: float | None = None
    tool_calls: int | None = None
    turns: int | None = None
    #: Skills loaded through the CLI's own skill tool (Claude Code ``Skill``, Gemini ``activate_skill``...).
    skill_tool: list[str] = field(default_factory=list)
    #: Paths the agent read (read tools), and shell commands it ran: skill reads are found in both.
    reads: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    #: Every tool call the output shows, in order, bounded (name, arguments, result):
    #: :mod:`upskill_hub.session.transcript`. Its ``missing`` says when the output shows none.
    transcript: Transcript = field(default_factory=lambda: Transcript.unavailable(NO_TRANSCRIPT))
    model: str | None = None
    #: The CLI says the run failed (its own words).
    error: str | None = None

    @property
    def tokens_unavailable(self) -> bool:
        return self.input_tokens is None and self.output_tokens is None


#: Calls awaiting their result that :class:`PendingCalls` holds at most (a stream of calls
#: that never get one cannot grow without bound).
MAX_PENDING_CALLS = 10_000


class PendingCalls:
    """Tool calls seen but not yet answered, by call id.

    A call counts (a skill loaded, a file read, a command run) only once the CLI reports its
    result as a success: ARCHITECTURE.md's "a tool call counts only when its result says it
    succeeded". An adapter :meth:`add` s each call when the CLI shows it and :meth:`settle` s
    it when the result arrives; a call that never gets a result never counts.
    """

    def __init__(self) -> None:
        self._calls: dict[str, tuple[str, dict[str, Any]]] = {}

    def add(self, call_id: Any, name: str, args: dict[str, Any]) -> None:
        if isinstance(call_id, str) and call_id and len(self._calls) < MAX_PENDING_CALLS:
            self._calls.setdefault(call_id, (name, args))

    def settle(self, call_id: Any, ok: bool) -> tuple[str, dict[str, Any]] | None:
        """The call's ``(name, arguments)`` when it succeeded; ``None`` when it failed or is unknown."""
        got = self._calls.pop(call_id, None) if isinstance(call_id, str) else None
        return got if ok else None


@dataclass
class CallSetup:
    """What an adapter may prepare before its CLI runs (:meth:`Adapter.prepare`).

    ``home`` is the call's throwaway home folder (the CLI's HOME unless ``real_home``): config
    files written there vanish with the workspace. ``env`` is the CLI's whole environment,
    changed in place.
    """

    home: Path
    project: Path
    env: dict[str, str]
    model: str | None
    real_home: bool = False


@dataclass(frozen=True)
class Adapter:
    """One agent CLI: how to run it and how to read what it prints."""

    name: str  # the agent label's first part ("claude-code")
    binary: str  # executable looked up on PATH ("claude")
    skills_folder: str  # where, relative to the project, the skill is installed
    user_skill_dirs: tuple[str, ...]  # user-level skill folders that would shadow the candidate
    env_keys: tuple[str, ...]  # provider keys / endpoints passed through when set
    install_hint: str
    billing: str  # one line for the docs and the report
    #: How the prompt is passed (one of :data:`PROMPT_VIA`), and the option for ``option-value``.
    prompt_via: str = "after-dashes"
    prompt_option: str | None = None
    #: Files (relative to the project) the CLI writes for itself, not as the agent's work
    #: (OpenCode's ``.opencode/.gitignore``): left out of changes, artifacts and file checks.
    bookkeeping: tuple[str, ...] = ()

    def stalled(self, stdout_tail: bytes) -> str | None:
        """Why the call can never finish, when the end of its stdout shows it (the call is then
        ended at once rather than at the timeout); ``None`` while it may. By default never."""
        return None

    def prepare(self, call: CallSetup) -> None:
        """Write what the CLI needs to run unattended against its provider (config in the
        throwaway home, variables in ``call.env``). By default nothing."""
        return None

    def options(self, exe: str, model: str | None) -> list[str]:  # pragma: no cover - abstract
        """The trusted part of the command line: executable, scripting flags, model."""
        raise NotImplementedError

    def invocation(self, exe: str, prompt: str, model: str | None) -> Invocation:
        """The whole command line and stdin for ``prompt``; the prompt never becomes an option."""
        return pass_untrusted(self.options(exe, model), prompt, self.prompt_via, option=self.prompt_option)

    def parse(self, stdout: str) -> ParsedRun:  # pragma: no cover - abstract
        raise NotImplementedError


def json_events(stdout: str, cli: str) -> list[dict[str, Any]]:
    """A JSON Lines stream (or one JSON array of events) as a list of objects.

    Blank lines are skipped; any other line that is not a JSON object is an unknown shape.
    Lines end at ``\n`` only (a ``\r`` before it is stripped): JSON text may hold U+2028,
    U+2029 or U+0085 raw inside a string (Node's ``JSON.stringify`` prints U+2028 as is),
    and ``str.splitlines`` would cut a valid event in two there.
    """
    text = stdout.strip()
    if not text:
        raise UnknownOutput(f"{cli} printed nothing on stdout")
    if text.startswith("["):
        try:
            data = safejson.loads(text)
        except ValueError:
            data = None
        if isinstance(data, list) and all(isinstance(e, dict) for e in data):
            return data
    events = []
    for n, line in enumerate(text.split("\n"), 1):
        line = line.strip()
        if not line:
            continue
        try:
            ev = safejson.loads(line)
        except ValueError:
            raise UnknownOutput(
                f"{cli} printed a line that is not JSON (line {n}: {_clip(line)!r})"
            ) from None
        if not isinstance(ev, dict):
            raise UnknownOutput(f"{cli} printed JSON that is not an event object (line {n})")
        events.append(ev)
    return events


def _clip(s: str, n: int = 60) -> str:
    return s if len(s) <= n else s[:n] + "…"


def as_int(value: Any) -> int | None:
    return token_count(value)


def add(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def as_cost(value: Any, field: str = "cost") -> float | None:
    """A cost in USD as a CLI reports it (a number >= 0); anything else is unknown.

    Like :func:`~upskill_hub.models.base.token_count`: NaN, Infinity or more than
    ``UPSKILL_MAX_COST_PER_CALL_USD`` raises :class:`ImplausibleUsage` (the call becomes an
    error row), so no such number reaches a row or a summary's sum.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    cap = limits.MAX_COST_PER_CALL_USD
    # An int such as 10**400 is compared, never turned into a float (that would overflow).
    if (isinstance(value, float) and not math.isfinite(value)) or value > cap:
        digits = str(value) if isinstance(value, int) else ""
        shown = f"{digits[:40]}… ({len(digits)} digits)" if len(digits) > 60 else repr(value)
        raise ImplausibleUsage(
            f"implausible cost in the reply: {field} = {shown} "
            f"(a cost must be a finite number up to {cap:,g} USD; UPSKILL_MAX_COST_PER_CALL_USD)"
        )
    if value < 0:
        return None
    return float(value)


def dict_of(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


#: ``…/skills/<name>/<file>`` in a path or a shell command.
_SKILL_PATH_RE = re.compile(r"skills?/([a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?)/([A-Za-z0-9_.\-/]+)")


def skill_files_in(text: str) -> Iterator[tuple[str, str]]:
    """``(skill name, relative file)`` for every skill file a path or a command names."""
    for m in _SKILL_PATH_RE.finditer(text):
        yield m.group(1), m.group(2).rstrip(".,;:)'\"")


def dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False)
