"""Safe file-system writes shared by install, pull, generate, runs, caches and kernel builds.

Two rules: a relative path coming from a skill or a Hub repo never escapes its target
(no absolute paths, no ``..``, no backslashes), and a folder is replaced atomically: we
fill a temporary sibling and rename it into place, so a failure leaves the old state;
the same holds for single files (:func:`write_bytes_atomic` and its text/JSON forms).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

from upskill_hub.errors import UpskillError

#: Longest file or folder name most file systems accept (bytes of UTF-8).
MAX_NAME_BYTES = 255
#: Longest relative path accepted from a skill or a repo.
MAX_PATH_CHARS = 1024


def check_relpath(rel: str) -> str:
    """Return ``rel`` when it is a safe relative POSIX path, else raise ``UpskillError``.

    Besides escaping the target (absolute, ``..``, backslashes, drive letters), a path is
    refused when writing it would fail or mislead: a control character (a terminal escape
    in a name rewrites what the user sees), a name longer than the file system allows.
    """
    if not isinstance(rel, str):
        raise UpskillError(f"unsafe path {rel!r}: not a string")
    bad = (
        not rel
        or "\\" in rel
        or PurePosixPath(rel).is_absolute()
        or (len(rel) > 1 and rel[1] == ":")
        or any(part in ("", ".", "..") for part in rel.split("/"))
    )
    if bad:
        raise UpskillError(f"unsafe path {rel!r}: paths must be relative and must not contain '..'")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in rel):
        raise UpskillError(f"unsafe path {rel!r}: control characters are not allowed in names")
    if len(rel) > MAX_PATH_CHARS or any(len(p.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES for p in rel.split("/")):
        raise UpskillError(
            f"unsafe path {rel[:60]!r}…: names are limited to {MAX_NAME_BYTES} bytes and paths to {MAX_PATH_CHARS} characters"
        )
    return rel


def atomic_replace_dir(dest: Path, fill: Callable[[Path], None]) -> None:
    """Create or replace folder ``dest`` with what ``fill(tmp)`` writes into a temporary folder.

    The temporary folder is a sibling of ``dest`` (same file system), so the final step is
    a rename. An existing ``dest`` is moved aside first and removed only once the new one
    is in place; on any failure the old folder is restored and the temporary one removed.
    """
    dest = Path(dest)
    parent = dest.parent
    parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.tmp-", dir=parent))
    backup: Path | None = None
    try:
        fill(tmp)
        if dest.exists() or dest.is_symlink():
            backup = Path(tempfile.mkdtemp(prefix=f".{dest.name}.old-", dir=parent))
            backup.rmdir()
            os.replace(dest, backup)
        os.replace(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if backup is not None and backup.exists() and not dest.exists():
            os.replace(backup, dest)
        raise
    if backup is not None:
        if backup.is_dir() and not backup.is_symlink():
            shutil.rmtree(backup, ignore_errors=True)
        else:
            backup.unlink(missing_ok=True)


def write_bytes_atomic(path: Path, data: bytes, *, mode: int | None = None, fsync: bool = True) -> None:
    """Write ``data`` to ``path`` via a temporary sibling and a rename: never a half-written file.

    Readers (a concurrent ``runs``, the Space, a resumed run, the local Hub serving a file)
    see the old content or the new, nothing in between. ``mode`` keeps a replaced file's
    permissions; ``fsync=False`` is for caches, where losing a write costs only a refetch.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.tmp-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text_atomic(path: Path, text: str, **kwargs: Any) -> None:
    """:func:`write_bytes_atomic` for UTF-8 text."""
    write_bytes_atomic(path, text.encode("utf-8"), **kwargs)


def write_json_atomic(path: Path, data: Any, *, indent: int | None = 2, sort_keys: bool = False, fsync: bool = True) -> None:
    """:func:`write_bytes_atomic` for JSON (UTF-8, non-ASCII kept readable, a final newline)."""
    text = json.dumps(data, indent=indent, sort_keys=sort_keys, ensure_ascii=False)
    write_text_atomic(path, text + ("\n" if indent is not None else ""), fsync=fsync)
