"""Walking and removing a folder an agent has had its hands on, without trusting it.

An agent runs as the user, in ``project/``: it may plant symlinks (``project -> /proc/self``),
nest folders thousands deep, make a million files, leave FIFOs or read-only folders behind.
Both walks here work on open folder descriptors (``openat`` with ``O_NOFOLLOW``), so no
symlink is ever followed and no path grows past ``PATH_MAX``; neither recurses in Python,
so depth cannot raise ``RecursionError``.

* :func:`walk_files` lists regular files and symlinks under a folder for a snapshot, within
  a depth, an entry count, a byte budget for hashing and a deadline; what it did not look
  at is said in its ``cut`` notes, which go into the grading evidence.
* :func:`remove_tree` deletes a folder whatever it holds, at any depth, with at most two
  descriptors open: a deep subfolder is first moved up to the top (a rename), then emptied.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from upskill_hub._util.fsutil import DIR_NOFOLLOW, FILE_NOFOLLOW, FolderReplaced, open_folder_fd, shown_path


class NotAFolder(Exception):
    """The folder to walk is a symlink, is gone, or is not the folder it was (one line)."""


@dataclass
class Budget:
    """What one walk may spend; ``cut`` collects what it left out because of it."""

    max_depth: int
    max_entries: int
    max_hash_bytes: int
    max_file_hash_bytes: int
    deadline: float  # time.monotonic() value
    cut: list[str] = field(default_factory=list)
    entries: int = 0
    hashed: int = 0
    odd_names: int = 0  # entries skipped for a name that is not UTF-8

    def note(self, text: str) -> None:
        if text not in self.cut and len(self.cut) < 20:
            self.cut.append(text)


def open_folder(path: Path, identity: tuple[int, int] | None = None) -> int:
    """A descriptor of the folder ``path`` itself (never of a symlink's target).

    ``identity`` (``(st_dev, st_ino)``) must match when given: a folder swapped for another
    is refused like a symlink.
    """
    try:
        return open_folder_fd(path, identity)
    except FolderReplaced:
        raise NotAFolder(f"{path.name}/ was replaced by another folder") from None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise NotAFolder(f"{path.name}/ was replaced by a symlink or a file") from None
        raise NotAFolder(f"{path.name}/ cannot be opened ({exc.strerror or exc})") from None


def _digest(dir_fd: int, name: str, st: os.stat_result, budget: Budget) -> str:
    """Content hash of a regular file (opened without following links, checked to be the file
    listed); over the per-file or total byte budget, size and mtime stand in for it."""
    if st.st_size > budget.max_file_hash_bytes:
        return f"size:{st.st_size}:mtime:{st.st_mtime_ns}"
    if budget.hashed + st.st_size > budget.max_hash_bytes:
        budget.note(
            f"hashing stopped after {budget.max_hash_bytes // 1_000_000} MB: later files compared by size and time"
        )
        return f"size:{st.st_size}:mtime:{st.st_mtime_ns}"
    try:
        fd = os.open(name, FILE_NOFOLLOW, dir_fd=dir_fd)
    except OSError:
        return f"unreadable:{st.st_mtime_ns}"
    try:
        fst = os.fstat(fd)
        if not stat.S_ISREG(fst.st_mode) or (fst.st_dev, fst.st_ino) != (st.st_dev, st.st_ino):
            return f"unreadable:{st.st_mtime_ns}"
        os.set_blocking(fd, True)
        h = hashlib.sha256()
        left = st.st_size  # never more than it said it holds (a file that grows is still bounded)
        while left > 0:
            if time.monotonic() > budget.deadline:
                return f"size:{st.st_size}:mtime:{st.st_mtime_ns}"
            block = os.read(fd, min(1 << 20, left))
            if not block:
                break
            h.update(block)
            left -= len(block)
            budget.hashed += len(block)
        return h.hexdigest()
    except OSError:
        return f"unreadable:{st.st_mtime_ns}"
    finally:
        os.close(fd)


def _utf8(name: str) -> bool:
    """Whether a name read from the disk is UTF-8 (otherwise it holds lone surrogates)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def walk_files(root_fd: int, budget: Budget) -> dict[str, str]:
    """``relative path -> digest`` of the regular files (and ``symlink:TARGET`` of the symlinks)
    under the folder ``root_fd``, within ``budget``. ``root_fd`` stays open (the caller's).

    An entry whose name is not UTF-8 (and all under it) is skipped and named, escaped, in the
    ``cut`` notes: no such name can be shown, stored or graded, and one must not turn the
    whole call into an error."""
    files: dict[str, str] = {}
    # Each frame: (descriptor, relative prefix, depth, subfolder names still to visit).
    stack: list[tuple[int, str, int, list[str]]] = []

    def enter(fd: int, prefix: str, depth: int) -> None:
        subdirs: list[str] = []
        try:
            with os.scandir(fd) as it:
                names = []
                for entry in it:
                    budget.entries += 1
                    if budget.entries > budget.max_entries:
                        budget.note(f"stopped after {budget.max_entries} entries")
                        break
                    if time.monotonic() > budget.deadline:
                        break
                    names.append(entry.name)
        except OSError:
            names = []
        for name in sorted(names):
            if time.monotonic() > budget.deadline:
                break
            rel = prefix + name
            if not _utf8(name):  # every later sink (JSON, parquet, a prompt) writes UTF-8
                budget.odd_names += 1
                if budget.odd_names == 1:
                    budget.note(f"names that are not UTF-8 not read (first: {shown_path(rel)})")
                continue
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                if depth + 1 > budget.max_depth:
                    budget.note(f"folders deeper than {budget.max_depth} levels not read (first: {rel}/)")
                else:
                    subdirs.append(name)
            elif stat.S_ISLNK(st.st_mode):
                try:
                    files[rel] = "symlink:" + os.readlink(name, dir_fd=fd)
                except OSError:
                    files[rel] = "symlink:?"
            elif stat.S_ISREG(st.st_mode):
                files[rel] = _digest(fd, name, st, budget)
        subdirs.reverse()  # popped from the end: visited in sorted order
        stack.append((fd, prefix, depth, subdirs))

    enter(os.dup(root_fd), "", 0)
    while stack:
        if time.monotonic() > budget.deadline:
            budget.note("time budget ran out: the rest of the workspace was not read")
            break
        fd, prefix, depth, subdirs = stack[-1]
        if not subdirs:
            os.close(fd)
            stack.pop()
            continue
        name = subdirs.pop()
        try:
            child = os.open(name, DIR_NOFOLLOW, dir_fd=fd)
        except OSError:
            continue
        enter(child, f"{prefix}{name}/", depth + 1)
    for fd, *_ in stack:
        os.close(fd)
    return files


def _make_writable(dir_fd: int, name: str | None = None) -> None:
    with contextlib.suppress(OSError):
        if name is None:
            os.fchmod(dir_fd, 0o700)
        else:  # a folder (checked with lstat by the caller): following is harmless here
            os.chmod(name, 0o700, dir_fd=dir_fd)


def remove_tree(path: Path, identity: tuple[int, int] | None = None, *, deadline_s: float = 120.0) -> bool:
    """Delete ``path`` and everything under it; ``True`` when nothing is left.

    Never follows a symlink (one at ``path`` itself is unlinked, not its target), never
    recurses, and holds at most two folder descriptors: a subfolder found while emptying a
    folder is renamed to the top of ``path`` and emptied later, so depth costs nothing.
    Read-only folders are made writable first. ``identity`` guards against ``path`` having
    been swapped for another folder: then only the swapped-in entry is unlinked if it is a
    symlink, and nothing else is touched.
    """
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode):
        with contextlib.suppress(OSError):
            os.unlink(path)
        return not os.path.lexists(path)
    if identity is not None and (st.st_dev, st.st_ino) != identity:
        return False
    try:
        top = os.open(path, DIR_NOFOLLOW)
    except OSError:
        _make_writable_path(path)
        try:
            top = os.open(path, DIR_NOFOLLOW)
        except OSError:
            return False
    deadline = time.monotonic() + deadline_s
    counter = 0
    try:
        _make_writable(top)
        for _ in range(3):  # again if a straggler added entries meanwhile
            # Folders directly under the top still to empty (``None``: the top itself).
            queue: list[str | None] = [None]
            while queue and time.monotonic() < deadline:
                name = queue.pop()
                if name is not None:
                    _make_writable(top, name)
                try:
                    fd = os.dup(top) if name is None else os.open(name, DIR_NOFOLLOW, dir_fd=top)
                except OSError:
                    continue
                try:
                    _make_writable(fd)
                    counter = _empty(fd, top, name, queue, counter)
                finally:
                    os.close(fd)
                if name is not None:
                    with contextlib.suppress(OSError):
                        os.rmdir(name, dir_fd=top)
            with os.scandir(top) as it:
                if next(it, None) is None:
                    break
    except OSError:
        pass
    finally:
        os.close(top)
    with contextlib.suppress(OSError):
        os.rmdir(path)
    return not os.path.lexists(path)


def _make_writable_path(path: Path) -> None:
    with contextlib.suppress(OSError):
        if stat.S_ISDIR(os.lstat(path).st_mode):
            os.chmod(path, 0o700)


def _empty(fd: int, top: int, name: str | None, queue: list[str | None], counter: int) -> int:
    """Unlink every non-folder in ``fd``; move each subfolder up to ``top`` and queue it."""
    with os.scandir(fd) as it:
        entries = [(e.name, e.is_dir(follow_symlinks=False)) for e in it]
    for child, is_dir in entries:
        if not is_dir:
            with contextlib.suppress(OSError):
                os.unlink(child, dir_fd=fd)
            continue
        if name is None:  # already directly under the top
            queue.append(child)
            continue
        while True:
            counter += 1
            moved = f".upskill-rm-{counter}"
            try:
                os.rename(child, moved, src_dir_fd=fd, dst_dir_fd=top)
                break
            except FileExistsError:
                continue
            except OSError as exc:
                if exc.errno in (errno.EEXIST, errno.ENOTEMPTY):
                    continue
                moved = ""
                break
        if moved:
            queue.append(moved)
    return counter
