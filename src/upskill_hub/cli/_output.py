"""Consoles for the CLI: terminal-width on a terminal, never wrapped when piped or redirected.

Rich lays text out for 80 columns when stdout is not a terminal, so ``skills validate |
grep`` split ✓ lines, ``skills list > file`` broke words and ``skills show`` cut
descriptions. Output going to a pipe or a file is for programs and other tools: one line
stays one line, however long: a ✓ verdict, an ``Error:``, the ``export HF_ENDPOINT=…``
line ``hub serve`` prints for scripts, a table row.

Free prose is the exception: a table cell holding a 600-character description made
1,700-character lines. Piped, such text does not go in a cell: it is printed under its
row's line, wrapped between words at :func:`reading_width` (``$COLUMNS``, else 80, the
width ``--help`` uses there too), never cut. Programs read ``--format tsv|json|agent|quiet``.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable

from rich.console import Console
from rich.segment import Segment

from upskill_hub._util.printable import escape_controls

#: Line width used when output is not a terminal: wide enough that nothing wraps.
UNWRAPPED_WIDTH = 100_000


class SafeConsole(Console):
    """A console that never writes a terminal control it did not make itself.

    Tables and lines show text from strangers (a trigger query, a scenario id, a model's
    name): an ESC/OSC sequence, a C1 ``\\x9b`` or a U+202E in a cell would retitle, clear or
    reorder the user's terminal. Escaping cell by cell left each new table to remember it
    (the failing-queries table did not); here every segment of text is escaped
    (:func:`~upskill_hub._util.printable.escape_controls`) as it is written, whatever
    printed it. Rich's own styles and cursor moves are control segments, left as they are.
    """

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(
            seg if seg.control else Segment(escape_controls(seg.text), seg.style) for seg in buffer
        )


def make_console(*, stderr: bool = False, highlight: bool = False) -> Console:
    """A console for stdout (or stderr) that only wraps on a terminal and escapes controls in text."""
    console = SafeConsole(stderr=stderr, highlight=highlight)
    if console.is_terminal:
        return console
    return SafeConsole(stderr=stderr, highlight=highlight, width=UNWRAPPED_WIDTH, soft_wrap=True)


def is_terminal(console: Console) -> bool:
    """Whether ``console`` writes to a terminal (tables may then fold long cells)."""
    return console.is_terminal


def reading_width(console: Console) -> int:
    """The width prose is wrapped at: the terminal's, else ``$COLUMNS``, else 80."""
    if console.is_terminal:
        return console.width
    return shutil.get_terminal_size(fallback=(80, 24)).columns
