"""Opening a file inside the agent's folder without ever leaving it.

The agent may have planted symlinks anywhere (``report.xlsx -> /etc/shadow``, a folder
``out -> /``) or swapped a file after the snapshot. Every component of a path is opened
here with ``openat`` and ``O_NOFOLLOW`` starting from the folder itself, so a symlink on
the way is refused instead of followed, and the file is checked with ``fstat`` on the open
descriptor (a FIFO or device is refused, and its size is known before a byte is read: a
2 GB sparse file is refused by its size).
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from upskill_hub._util.fsutil import DIR_NOFOLLOW, FILE_NOFOLLOW, FolderReplaced, open_folder_fd
from upskill_hub._util.sizes import human_size


class Refused(Exception):
    """The file cannot be read safely; ``str(exc)`` is one line saying why."""


@dataclass(frozen=True)
class Opened:
    """An open regular file inside the folder: its descriptor and ``fstat``."""

    fd: int
    size: int


def _open_root(root: Path, identity: tuple[int, int] | None) -> int:
    try:
        return open_folder_fd(root, identity)
    except FolderReplaced:
        raise Refused("the workspace folder was replaced; nothing in it is read") from None
    except OSError as exc:
        raise Refused(f"the workspace folder cannot be opened ({exc.strerror or exc})") from None


def _parent(root: Path, rel: str, identity: tuple[int, int] | None) -> tuple[int, str]:
    """An open descriptor of the folder holding ``root/rel``, reached without following a
    link, and the last name of ``rel``; the caller closes the descriptor."""
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise Refused(f"{rel}: not a path inside the workspace")
    fd = _open_root(root, identity)
    for part in parts[:-1]:
        try:
            nxt = os.open(part, DIR_NOFOLLOW, dir_fd=fd)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise Refused(f"{rel}: {part}/ is a symlink or not a folder; not followed") from None
            raise Refused(f"{rel}: cannot be opened ({exc.strerror or exc})") from None
        os.close(fd)
        fd = nxt
    return fd, parts[-1]


def open_inside(root: Path, rel: str, identity: tuple[int, int] | None = None) -> Opened:
    """Open ``root/rel`` for reading, following no symlink anywhere; the caller closes ``fd``."""
    fd, name = _parent(root, rel, identity)
    try:
        ffd = os.open(name, FILE_NOFOLLOW, dir_fd=fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Refused(f"{rel}: is a symlink; not followed") from None
        if exc.errno == errno.ENOENT:
            raise Refused(f"{rel}: no longer exists") from None
        raise Refused(f"{rel}: cannot be opened ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    st = os.fstat(ffd)
    if not stat.S_ISREG(st.st_mode):
        os.close(ffd)
        raise Refused(f"{rel}: not a regular file; not read")
    os.set_blocking(ffd, True)
    return Opened(ffd, st.st_size)


def exists_inside(root: Path, rel: str, identity: tuple[int, int] | None = None) -> bool:
    """Whether ``root/rel`` is there (any kind of entry), looked up without following links."""
    try:
        fd, name = _parent(root, rel, identity)
    except Refused:
        return False
    try:
        os.stat(name, dir_fd=fd, follow_symlinks=False)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def read_head(opened: Opened, n: int) -> bytes:
    """The first ``n`` bytes (fewer for a shorter file), from the start."""
    return os.pread(opened.fd, n, 0)


def read_all(opened: Opened, cap: int) -> bytes:
    """The whole file, which must hold at most ``cap`` bytes (checked first, and while reading:
    a file that grows past its ``fstat`` size is cut at ``cap``)."""
    if opened.size > cap:
        raise Refused(f"{human_size(opened.size)}, over the {human_size(cap)} rendering limit; not read")
    chunks: list[bytes] = []
    got, offset = 0, 0
    while got < cap:
        block = os.pread(opened.fd, min(1 << 20, cap - got), offset)
        if not block:
            break
        chunks.append(block)
        got += len(block)
        offset += len(block)
    return b"".join(chunks)
