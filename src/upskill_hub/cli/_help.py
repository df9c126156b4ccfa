"""How ``--help`` renders: switches without a type, paragraphs that wrap where they land.

Two habits of Typer's Rich help (0.2x) misled readers, on a terminal and piped alike:

* Every option got a type column, so a switch read ``--strict <bool>`` (and ``--help
  <bool>``), as if it took a value. A flag takes none: its type column stays empty.
* Help paragraphs (and a command's summary in its group's list) kept the source's line
  breaks and were then wrapped again for the screen (80 columns when piped), so a
  sentence broke twice: ``… Repo types: model,`` / ``dataset, space, kernel.``. A
  paragraph is one flow of text: single line breaks join, and it wraps once, for the
  width it is shown at. A paragraph whose first line is ``\\b`` (Click's "do not rewrap"
  marker: commands, examples) keeps its lines as written.

Both are applied by :func:`install`, which ``cli/app.py`` calls once; it changes only how
help is shown, never how options parse.
"""

from __future__ import annotations

import inspect
from typing import Any

#: Click's marker for a paragraph whose line breaks are kept (the marker line is not shown).
KEEP_LINES = "\b"


def flow(paragraph: str) -> str:
    """One help paragraph as Rich should get it: lines joined, or kept after a ``\\b`` line."""
    if paragraph.startswith(KEEP_LINES):
        return paragraph[len(KEEP_LINES) :].lstrip("\n").rstrip()
    return " ".join(line.strip() for line in paragraph.splitlines() if line.strip())


def _fix_linebreaks(paragraphs: list[str], markup_mode: Any) -> str:
    """Typer's hook for the paragraphs after the first: each one flowed, blank lines between."""
    return "\n\n".join(flow(p) for p in paragraphs)


def _command_help(original: Any) -> Any:
    """Typer's one-paragraph summary in a group's command list, with that paragraph flowed."""

    def make_command_help(*, help_text: str, markup_mode: Any) -> Any:
        first, sep, rest = inspect.cleandoc(help_text).partition("\n\n")
        return original(help_text=flow(first) + sep + rest, markup_mode=markup_mode)

    make_command_help.upskill_flowed = True  # type: ignore[attr-defined]
    return make_command_help


def _display_type_rich(original: Any) -> Any:
    def display_type_rich(self: Any, ctx: Any) -> str | None:
        if getattr(self, "is_flag", False) and self.metavar is None:
            return None  # a switch takes no value: no "<bool>"
        return original(self, ctx)

    display_type_rich.__doc__ = original.__doc__
    display_type_rich.upskill_switches = True  # type: ignore[attr-defined]
    return display_type_rich


def install() -> None:
    """Apply both rules to Typer's Rich help (idempotent; a Typer without these hooks is left as is)."""
    from typer import core, rich_utils

    current = getattr(core.TyperOption, "display_type_rich", None)
    if current is not None and not getattr(current, "upskill_switches", False):
        core.TyperOption.display_type_rich = _display_type_rich(current)
    if hasattr(rich_utils, "_fix_linebreaks"):
        rich_utils._fix_linebreaks = _fix_linebreaks
    summary = getattr(rich_utils, "_make_command_help", None)
    if summary is not None and not getattr(summary, "upskill_flowed", False):
        rich_utils._make_command_help = _command_help(summary)
