"""Free text from strangers (descriptions, metadata, case inputs) made safe to show and to keep.

A skill's description reaches a terminal (``skills list``, ``skills show``), a model's prompt
and other people's files. An ESC, an OSC sequence or a C1 ``\\x9b`` in it rewrites the
terminal that prints it; a right-to-left override (U+202E) makes the text read as something
it is not. :func:`text_problem` is the validation rule for such text (the same characters
:func:`upskill_hub._util.fsutil.name_problem` refuses in names, except that tabs and line
breaks are ordinary in prose) and :func:`escape_controls` is how any such text is shown:
each offending character as a visible ``\\x1b`` / ``\\u202e`` escape, everything else as written.
"""

from __future__ import annotations

from upskill_hub._util.fsutil import BIDI_CONTROLS

#: Whitespace controls that prose may hold: they lay text out, they do not command a terminal.
PROSE_WHITESPACE = frozenset("\t\n\r")


def _offends(c: str) -> bool:
    o = ord(c)
    return (o < 0x20 and c not in PROSE_WHITESPACE) or 0x7F <= o <= 0x9F or c in BIDI_CONTROLS


def text_problem(text: str) -> str | None:
    """Why ``text`` may not be kept as prose, naming its first offending character, or ``None``."""
    for c in text:
        if _offends(c):
            kind = "bidirectional control character" if c in BIDI_CONTROLS else "control character"
            return f"{kind} U+{ord(c):04X} is not allowed (it rewrites or reorders what a terminal shows)"
    return None


def escape_controls(text: str, *, one_line: bool = False) -> str:
    """``text`` with every terminal control and bidi mark escaped (``\\x1b``, ``\\u202e``).

    ``one_line`` also escapes line breaks and tabs, for a cell or a line that must stay one.
    """
    out = []
    for c in text:
        if _offends(c) or (one_line and c in PROSE_WHITESPACE):
            o = ord(c)
            out.append(f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}")
        else:
            out.append(c)
    return "".join(out)
