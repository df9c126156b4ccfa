"""Where rendered artifacts go: the judge's ``<artifacts>`` section and the run folder.

Both are budgeted: the judge section to
:data:`~upskill_hub.artifacts.budgets.MAX_PROMPT_CHARS` characters (a judge's context is
finite and paid for), the run folder's copy to
:data:`~upskill_hub.artifacts.budgets.MAX_ROW_CHARS` per row. Whatever does not fit is
replaced by a "… truncated" line saying how much, so a reader never takes a cut file for
a short one.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Sequence
from pathlib import Path

from upskill_hub._util.fsutil import write_json_atomic, write_text_atomic
from upskill_hub._util.printable import escape_controls
from upskill_hub._util.redact import redact
from upskill_hub.artifacts import budgets
from upskill_hub.artifacts.changes import ChangedFile, ChangeSet
from upskill_hub.artifacts.render import Rendered
from upskill_hub.artifacts.safeio import human_size

#: Line breaks :func:`escape_controls` leaves alone (they are not controls) but a reader obeys.
_SEPARATORS = {"\u2028": "\\u2028", "\u2029": "\\u2029"}


def _one_line(text: str) -> str:
    """``text`` on one line: every control and line break shown as an escape (``\\x0a``)."""
    shown = escape_controls(text, one_line=True)
    for sep, esc in _SEPARATORS.items():
        shown = shown.replace(sep, esc)
    return shown


def header(f: ChangedFile) -> str:
    """``=== out/report.xlsx (created, xlsx, 5.1 KB, sha256 1f2e…) ===``, on one line whatever
    the file's name holds (a name with a line break would start a block of its own)."""
    bits = [f.status, f.kind]
    if f.size is not None:
        bits.append(human_size(f.size))
    if f.sha256:
        bits.append(f"sha256 {f.sha256[:12]}…")
    return f"=== {_one_line(f.path)} ({', '.join(bits)}) ==="


def _unheadered(body: str) -> str:
    """``body`` with no line a reader could take for a block header: a file's own line that
    starts with ``===`` (after any blanks) is shown with a backslash before it (``\\=== …``).
    Lines are split as :meth:`str.splitlines` does, so a ``\\r`` or ``\\u2028`` counts too."""
    lines = body.splitlines(keepends=True)
    return "".join("\\" + ln if ln.lstrip().startswith("===") else ln for ln in lines)


def _fit(text: str, room: int) -> str:
    if len(text) <= room:
        return text
    room = max(room, 0)
    return text[:room] + f"\n… truncated: {len(text) - room} more characters"


def judge_section(
    changes: ChangeSet,
    rendered: Sequence[Rendered],
    max_chars: int | None = None,
    secrets: Sequence[str] = (),
) -> str:
    """The body of the judge prompt's ``<artifacts>`` section ("" when the run changed nothing),
    masked like answers (the rendered texts already are; paths and notes are here)."""
    if not changes.files and not changes.omitted:
        return ""
    cap = budgets.MAX_PROMPT_CHARS if max_chars is None else max_chars
    by_path = {r.path: r for r in rendered}
    parts: list[str] = []
    used = 0
    for i, f in enumerate(changes.files):
        r = by_path.get(f.path)
        if r is not None:
            body = r.shown
        elif i >= budgets.MAX_RENDERED:
            body = f"(not rendered: only the first {budgets.MAX_RENDERED} changed files are rendered)"
        else:
            body = "(not rendered)"
        if f.status == "deleted":
            body = "(deleted by the run)"
        block = f"{header(f)}\n{_unheadered(body)}"
        room = cap - used
        if room < 200:
            rest = len(changes.files) - i
            parts.append(
                f"… truncated: {rest} more changed files not shown (artifact budget {cap} characters)"
            )
            break
        block = _fit(block, room - 60)
        parts.append(block)
        used += len(block) + 2
    if changes.omitted:
        parts.append(f"… truncated: {changes.omitted} more changed files not listed")
    if changes.cut:
        parts.append("(workspace snapshot cut: " + "; ".join(changes.cut) + ")")
    return redact("\n\n".join(parts), extra=list(secrets))


def _file_name(i: int, path: str) -> str:
    return f"{i:03d}-" + re.sub(r"[^A-Za-z0-9_.-]+", "_", path)[-100:] + ".txt"


def write_rendered(
    folder: Path,
    changes: ChangeSet,
    rendered: Sequence[Rendered],
    max_chars: int | None = None,
    secrets: Sequence[str] = (),
) -> None:
    """``changes.json`` (the change set, each file's rendering note and text file) and one
    ``rendered/NNN-<path>.txt`` per rendered file, within the row's character budget; paths
    and notes masked like answers. Best effort: a full disk costs the copy, never the row."""
    cap = budgets.MAX_ROW_CHARS if max_chars is None else max_chars
    by_path = {r.path: r for r in rendered}
    shown = changes.masked(secrets).files
    entries = []
    used = 0
    with contextlib.suppress(OSError):
        for i, f in enumerate(changes.files):
            entry = shown[i].to_dict()
            r = by_path.get(f.path)
            if r is not None and r.note:
                entry["rendered_note"] = r.note
            elif r is not None:
                text = _fit(r.text, cap - used)
                used += len(text)
                name = _file_name(i, shown[i].path)
                write_text_atomic(folder / "rendered" / name, text + "\n", fsync=False)
                entry["rendered"] = f"rendered/{name}"
            entries.append(entry)
        write_json_atomic(
            folder / "changes.json",
            {
                "files": entries,
                "omitted": changes.omitted,
                "cut": [redact(c, extra=list(secrets)) for c in changes.cut],
            },
            fsync=False,
        )
