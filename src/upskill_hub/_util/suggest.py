""" "Did you mean ...?" for a path given on the command line that does not exist.

A typo in one folder name (``skils/hf-dataset-card``, ``skills/hf-datset-card``) otherwise
ends in a bare "does not exist" and the user has to list folders to find it. Each missing
component of the path is matched against its parent folder's entries with
:func:`difflib.get_close_matches`; only a corrected path that exists is suggested. A folder
can hold any number of entries: at most :data:`MAX_ENTRIES` of each are looked at.
"""

from __future__ import annotations

import difflib
import itertools
import os
from pathlib import Path

from upskill_hub._util.printable import escape_controls

#: Entries of one folder compared with a mistyped name (a huge folder is not listed whole).
MAX_ENTRIES = 1000
#: Components of a path corrected at most (each one lists a folder).
MAX_PARTS = 64
#: How alike a name must be to be suggested (difflib's ratio; its default).
CUTOFF = 0.6


def _entries(folder: Path) -> list[str]:
    try:
        with os.scandir(folder) as it:
            return [e.name for e in itertools.islice(it, MAX_ENTRIES)]
    except OSError:
        return []


def close_path(path: str | Path) -> str | None:
    """An existing path one typo per component away from ``path``, as the user would type it,
    or ``None`` (``path`` exists, or nothing close does)."""
    try:
        return _close_path(Path(path))
    except OSError:  # a name too long, a folder that cannot be read: no suggestion
        return None


def _close_path(given: Path) -> str | None:
    if given.exists() or len(given.parts) > MAX_PARTS:
        return None
    fixed: list[str] = []
    here = Path(given.anchor) if given.is_absolute() else Path()
    changed = False
    for part in given.parts[1:] if given.is_absolute() else given.parts:
        if part in (".", "..") or (here / part).exists():
            fixed.append(part)
            here = here / part
            continue
        match = difflib.get_close_matches(part, _entries(here), n=1, cutoff=CUTOFF)
        if not match:
            return None
        fixed.append(match[0])
        here = here / match[0]
        changed = True
    if not changed or not here.exists():
        return None
    return str(Path(given.anchor, *fixed)) if given.is_absolute() else str(Path(*fixed))


def missing(path: str | Path) -> str:
    """The problem text for a path that does not exist: ``does not exist``, and when a close
    sibling does, ``; did you mean 'PATH'?`` (escaped: a file name may hold controls)."""
    near = close_path(path)
    if near is None:
        return "does not exist"
    return f"does not exist; did you mean '{escape_controls(near, one_line=True)}'?"
