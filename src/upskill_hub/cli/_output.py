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

from rich.console import Console

#: Line width used when output is not a terminal: wide enough that nothing wraps.
UNWRAPPED_WIDTH = 100_000


def make_console(*, stderr: bool = False, highlight: bool = False) -> Console:
    """A console for stdout (or stderr) that only wraps on a terminal."""
    console = Console(stderr=stderr, highlight=highlight)
    if console.is_terminal:
        return console
    return Console(stderr=stderr, highlight=highlight, width=UNWRAPPED_WIDTH, soft_wrap=True)


def is_terminal(console: Console) -> bool:
    """Whether ``console`` writes to a terminal (tables may then fold long cells)."""
    return console.is_terminal


def reading_width(console: Console) -> int:
    """The width prose is wrapped at: the terminal's, else ``$COLUMNS``, else 80."""
    if console.is_terminal:
        return console.width
    return shutil.get_terminal_size(fallback=(80, 24)).columns
