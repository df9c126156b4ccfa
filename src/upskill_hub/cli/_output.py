"""Consoles for the CLI: terminal-width on a terminal, never wrapped when piped or redirected.

Rich lays text out for 80 columns when stdout is not a terminal, so ``skills validate |
grep`` split ✓ lines, ``skills list > file`` broke words and ``skills show`` cut
descriptions. Output going to a pipe or a file is for programs and other tools: one line
stays one line, however long.
"""

from __future__ import annotations

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
