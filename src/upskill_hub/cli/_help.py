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

Typer also showed arguments as ``{paths}...`` (braces read as a set, or a template to fill)
and values as Python annotations (``<list[Path]>``). Arguments now read as Click and man
pages write them (``PATHS...``, ``[SKILL_DIRS]...`` when optional), and a repeatable option
shows the type of one value (``<path>``, ``<str>``) with ``[repeatable]`` after its help
(unless the help already says how it repeats).

All are applied by :func:`install`, which ``cli/app.py`` calls once; it changes only how
help is shown, never how options parse.
"""

from __future__ import annotations

import inspect
import re
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


_LIST_TYPE = re.compile(r"<list\[(.+)\]>")


def element_type(shown: str) -> str:
    """``<list[Path]>`` → ``<path>``, ``<list[str]>`` → ``<str>``: one value's type (others unchanged)."""
    m = _LIST_TYPE.fullmatch(shown)
    if m is None:
        return shown
    inner = m.group(1)
    return f"<{'path' if inner == 'Path' else inner}>"


def _display_type(original: Any) -> Any:
    def display_type(self: Any, ctx: Any) -> str:
        return element_type(original(self, ctx))

    display_type.__doc__ = original.__doc__
    display_type.upskill_elements = True  # type: ignore[attr-defined]
    return display_type


def _argument_name(self: Any) -> str:
    """``PATHS``: an argument's name as usage lines write it (its metavar when it has one)."""
    return self.metavar if self.metavar is not None else (self.name or "").upper()


def _usage_display_name(self: Any) -> str:
    """``PATHS...`` when required, ``[SKILL_DIRS]...`` when not (Typer wrote ``{paths}...``)."""
    name = _argument_name(self) if self.required else f"[{_argument_name(self)}]"
    return name + ("..." if self.nargs != 1 else "")


def _parameter_help(original: Any) -> Any:
    """Typer's help cell of a parameter, with ``[repeatable]`` for an option given many times."""

    def get_parameter_help(*, param: Any, ctx: Any, markup_mode: Any) -> Any:
        cell = original(param=param, ctx=ctx, markup_mode=markup_mode)
        if getattr(param, "multiple", False) and "repeat" not in (getattr(param, "help", None) or "").lower():
            from rich.text import Text
            from typer.rich_utils import STYLE_OPTION_DEFAULT

            cell.renderables.append(Text("[repeatable]", style=STYLE_OPTION_DEFAULT))
        return cell

    get_parameter_help.upskill_repeatable = True  # type: ignore[attr-defined]
    return get_parameter_help


def install() -> None:
    """Apply these rules to Typer's Rich help (idempotent; a Typer without these hooks is left as is)."""
    from typer import core, rich_utils

    for cls in (core.TyperArgument, core.TyperOption):
        shown = getattr(cls, "display_type", None)
        if shown is not None and not getattr(shown, "upskill_elements", False):
            cls.display_type = _display_type(shown)
    if hasattr(core.TyperArgument, "_usage_display_name"):
        core.TyperArgument._usage_display_name = _usage_display_name
    if hasattr(core.TyperArgument, "display_name_raw"):  # the Arguments panel and error hints
        core.TyperArgument.display_name_raw = property(_argument_name)
    parameter_help = getattr(rich_utils, "_get_parameter_help", None)
    if parameter_help is not None and not getattr(parameter_help, "upskill_repeatable", False):
        rich_utils._get_parameter_help = _parameter_help(parameter_help)

    current = getattr(core.TyperOption, "display_type_rich", None)
    if current is not None and not getattr(current, "upskill_switches", False):
        core.TyperOption.display_type_rich = _display_type_rich(current)
    if hasattr(rich_utils, "_fix_linebreaks"):
        rich_utils._fix_linebreaks = _fix_linebreaks
    summary = getattr(rich_utils, "_make_command_help", None)
    if summary is not None and not getattr(summary, "upskill_flowed", False):
        rich_utils._make_command_help = _command_help(summary)
