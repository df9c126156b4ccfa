"""``--format auto|human|agent|json|quiet``: one set of output modes for every command.

The meanings follow ``hf`` (huggingface_hub's CLI), because agents that use both tools
should not learn two conventions:

* ``human``: the Rich tables and ✓ lines each command draws for a person;
* ``agent``: compact and stable, no colour, no boxes: tables as tab-separated lines with
  a header row, results as ``key=value`` pairs on one line;
* ``json``: the command's JSON document (``--json`` is an alias, as in ``hf``);
* ``quiet``: one id per line (skill names, run ids, repo ids), nothing else;
* ``auto`` (the default): ``agent`` when huggingface_hub's agent detection says an AI
  coding agent runs us, else ``human``.

Commands keep their human rendering; this module only owns the choice of mode and the
three machine renderings, so each command's file stays about what it shows.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence
from enum import StrEnum
from typing import Any

import typer

from upskill_hub.errors import UpskillError


class OutputFormat(StrEnum):
    """The output modes; values are what users type after ``--format``."""

    auto = "auto"
    human = "human"
    agent = "agent"
    json = "json"
    quiet = "quiet"


FORMAT_HELP = "Output format: auto (agent when an AI agent runs this, else human), human, agent, json or quiet."


def format_option() -> Any:
    """The ``--format`` option, shared so every command spells and documents it the same."""
    return typer.Option(OutputFormat.auto, "--format", help=FORMAT_HELP, case_sensitive=False)


def json_option() -> Any:
    """``--json``: the alias of ``--format json`` that ``hf`` also keeps."""
    return typer.Option(False, "--json", help="Alias of --format json.")


def _detect_agent() -> bool:
    # huggingface_hub's detection (the same one `hf` uses); best-effort, never raises.
    # Only asked when stdout is not a terminal: agents read pipes, a terminal is a person.
    if sys.stdout.isatty():
        return False
    try:
        from huggingface_hub.utils import is_agent
    except ImportError:  # pragma: no cover - huggingface_hub is a core dependency
        return False
    try:
        return bool(is_agent())
    except Exception:  # detection must never make a command fail
        return False


def resolve_format(fmt: OutputFormat | str | None, as_json: bool = False) -> OutputFormat:
    """The mode a command prints in: ``--json`` is ``--format json``; ``auto`` is decided here.

    ``--json`` together with another explicit ``--format`` is a contradiction, reported as
    one line rather than silently picking one.
    """
    try:
        chosen = OutputFormat(fmt.value if isinstance(fmt, OutputFormat) else (fmt or "auto").lower())
    except ValueError:
        valid = ", ".join(m.value for m in OutputFormat)
        raise UpskillError(f"unknown --format {fmt!r}; use one of: {valid}") from None
    if as_json:
        if chosen not in (OutputFormat.auto, OutputFormat.json):
            raise UpskillError(f"--json and --format {chosen.value} contradict each other; pass one")
        return OutputFormat.json
    if chosen is OutputFormat.auto:
        return OutputFormat.agent if _detect_agent() else OutputFormat.human
    return chosen


def agent_cell(value: Any) -> str:
    """One table cell for agent output: single line, no tabs, stable number formatting."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list | tuple):
        return ",".join(agent_cell(v) for v in value)
    text = " ".join(str(value).split())  # newlines and tabs become single spaces
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)


class Printer:
    """Prints one command's results in the chosen mode (human rendering stays the command's)."""

    def __init__(self, mode: OutputFormat, echo: Callable[[str], None] | None = None) -> None:
        self.mode = mode
        self._echo = echo or typer.echo

    @property
    def human(self) -> bool:
        """Whether the command should draw its own Rich output."""
        return self.mode is OutputFormat.human

    @property
    def machine(self) -> bool:
        """Whether stderr chatter (progress, notes) should stay off: agent, json and quiet."""
        return self.mode is not OutputFormat.human

    def table(
        self,
        rows: Sequence[Mapping[str, Any]],
        headers: Sequence[str],
        *,
        id_key: str | None = None,
        json_data: Any = None,
    ) -> None:
        """Rows as TSV (agent), ids (quiet) or JSON (``json_data`` if given, else the rows)."""
        if self.mode is OutputFormat.json:
            self.json(list(rows) if json_data is None else json_data)
        elif self.mode is OutputFormat.quiet:
            key = id_key or headers[0]
            seen: set[str] = set()
            for r in rows:  # one line per id, even when a table repeats it (run x model rows)
                ident = agent_cell(r.get(key))
                if ident not in seen:
                    seen.add(ident)
                    self._echo(ident)
        elif self.mode is OutputFormat.agent:
            self._echo("\t".join(headers))
            for r in rows:
                self._echo("\t".join(agent_cell(r.get(h)) for h in headers))

    def result(self, id_value: Any, json_data: Any = None, **fields: Any) -> None:
        """A single outcome: ``key=value`` pairs (agent), the id (quiet) or JSON."""
        if self.mode is OutputFormat.json:
            self.json(fields if json_data is None else json_data)
        elif self.mode is OutputFormat.quiet:
            if id_value is not None:
                self._echo(agent_cell(id_value))
        elif self.mode is OutputFormat.agent:
            self._echo(" ".join(f"{k}={agent_cell(v)}" for k, v in fields.items() if v is not None))

    def json(self, data: Any) -> None:
        """``data`` as indented JSON (what ``--json`` always printed)."""
        self._echo(json.dumps(data, indent=2, default=str))


def printer(fmt: OutputFormat | str | None, as_json: bool = False) -> Printer:
    """A :class:`Printer` for a command's ``--format`` / ``--json`` values."""
    return Printer(resolve_format(fmt, as_json))
