"""Safe file-system writes shared by install, pull, generate, runs, caches and kernel builds.

Two rules: a relative path coming from a skill or a Hub repo never escapes its target
(no absolute paths, no ``..``, no backslashes), and a folder is replaced atomically: we
fill a temporary sibling and rename it into place, so a failure leaves the old state;
the same holds for single files (:func:`write_bytes_atomic` and its text/JSON forms).

Reading is guarded too. Folders from strangers (a skill, a run folder, a kernel project)
may hold a FIFO (``open`` blocks forever), a character device (``/dev/zero`` never ends), a
symlink loop or a name that is not UTF-8. :func:`scan_tree` walks with ``lstat`` and lists
each such entry as a :class:`Refusal` naming its path; :func:`read_capped` reads one regular
file without ever blocking and without reading past a size cap. :func:`name_problem` is the
one policy for file names that validate, install, push and pull share.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from upskill_hub._util import limits
from upskill_hub._util.sizes import size_and_limit
from upskill_hub.errors import UpskillError

#: Longest file or folder name most file systems accept (bytes of UTF-8).
MAX_NAME_BYTES = 255
#: Longest relative path accepted from a skill or a repo.
MAX_PATH_CHARS = 1024


#: Characters that reorder how text is displayed (bidirectional embeddings, overrides and
#: isolates): ``evil\u202egpj.sh`` shows as ``evilhs.jpg``.
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def name_problem(rel: str) -> str | None:
    """Why the file name or relative path ``rel`` may not be written or shown, or ``None``.

    The one name policy of validate, install, push, pull and the Space: no C0 or C1 control
    characters (``\x1b``, ``\n``, ``\x9b`` rewrite a terminal), no bidirectional overrides
    (they make a name read as something else), and only text that is valid UTF-8 (a name read
    from a disk with another encoding arrives here with lone surrogates).
    """
    for c in rel:
        o = ord(c)
        if o < 0x20 or 0x7F <= o <= 0x9F:
            return "control characters are not allowed in names"
        if c in BIDI_CONTROLS:
            return f"bidirectional control character U+{o:04X} is not allowed in names"
        if 0xD800 <= o <= 0xDFFF:
            return "names must be valid UTF-8"
    return None


def shown_path(path: str | os.PathLike[str]) -> str:
    """``path`` as one printable line: undecodable bytes, controls and bidi marks escaped."""
    text = os.fspath(path)
    text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return "".join(c if name_problem(c) is None else c.encode("unicode_escape").decode("ascii") for c in text)


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
    problem = name_problem(rel)
    if problem is not None:
        raise UpskillError(f"unsafe path {shown_path(rel)!r}: {problem}")
    if len(rel) > MAX_PATH_CHARS or any(
        len(p.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES for p in rel.split("/")
    ):
        raise UpskillError(
            f"unsafe path {rel[:60]!r}…: names are limited to {MAX_NAME_BYTES} bytes and paths to {MAX_PATH_CHARS} characters"
        )
    return rel


#: File-system faults a user fixes outside the program: full disk, quota, size limit, read-only.
STORAGE_ERRNOS = frozenset(
    e for e in (errno.ENOSPC, getattr(errno, "EDQUOT", None), errno.EFBIG, errno.EROFS) if e is not None
)


class StorageError(UpskillError, OSError):
    """Writing ``path`` failed for a reason on the user's side of the disk; says what to do.

    ``errno`` is one of :data:`STORAGE_ERRNOS`. Writes are atomic, so nothing half-written
    is left behind; ``hint`` tells how to go on (``eval --resume``, run again). Still an
    ``OSError``, so code that handled the raw error keeps handling this one.
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> StorageError:
        return OSError.__new__(cls)  # OSError would read our arguments as (errno, strerror, ...)

    def __init__(self, path: str | os.PathLike[str] | None, err: int, hint: str = "") -> None:
        self.path = None if path is None else os.fspath(path)
        self.hint = hint
        self.errno = err
        UpskillError.__init__(self, self.describe())
        self.errno, self.strerror, self.filename = err, os.strerror(err), self.path

    def __str__(self) -> str:
        return UpskillError.__str__(self)

    def describe(self) -> str:
        where = f" {shown_path(self.path)}" if self.path else ""
        if self.errno == errno.EROFS:
            what, todo = "the file system is read-only", "write somewhere writable"
        elif self.errno == errno.EFBIG:
            what, todo = "the file is over the size limit (ulimit -f or the file system's)", "raise the limit"
        else:
            what, todo = (
                "the disk is full" + (" (or over quota)" if self.errno != errno.ENOSPC else ""),
                "free some space",
            )
        hint = self.hint or "then run the command again"
        return f"cannot write{where}: {what}; nothing was half-written. {todo.capitalize()}, {hint}"


def storage_error(
    exc: OSError, path: str | os.PathLike[str] | None = None, hint: str = ""
) -> StorageError | None:
    """A :class:`StorageError` for ``exc`` when it is a disk-side fault, else ``None``."""
    if exc.errno not in STORAGE_ERRNOS:
        return None
    return StorageError(path if path is not None else exc.filename, exc.errno, hint)


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
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if backup is not None and backup.exists() and not dest.exists():
            os.replace(backup, dest)
        if isinstance(exc, OSError) and (err := storage_error(exc, dest)) is not None:
            raise err from None
        raise
    if backup is not None:
        if backup.is_dir() and not backup.is_symlink():
            shutil.rmtree(backup, ignore_errors=True)
        else:
            backup.unlink(missing_ok=True)


def claim_folder(
    folder: str | os.PathLike[str],
    *,
    option: str,
    maker: str,
    ours: Callable[[Path], bool] | None = None,
    shown: str | None = None,
    then: str | None = None,
    force: str | None = None,
) -> bool:
    """Check, before a byte is written, that a command may write into the user-named ``folder``.

    The one rule of ``--workdir``, ``--out`` and ``--output`` folders: a command never
    deletes or overwrites what it did not make. An absent or empty folder is taken (returns
    ``False``); one the command made before, as ``ours`` tells (a marker file, or files only
    it writes), is reused (returns ``True``); anything else, a file or a symlink in its
    place included, is refused in one line that names ``option``, a few of the entries and
    how to go on (``then``; ``force`` names the option that replaces it, where one exists).
    """
    path = Path(folder)
    shown = shown if shown is not None else shown_path(path)
    tail = then or "name a new or empty folder" + (f", or pass {force} to replace it" if force else "")
    if path.is_symlink() or (os.path.lexists(path) and not path.is_dir()):
        what = "a symlink" if path.is_symlink() else "a file"
        raise UpskillError(f"{option} {shown} is not a folder (it is {what}); {tail}")
    if not path.is_dir():
        return False
    entries = sorted(os.listdir(path))
    if not entries:
        return False
    if ours is not None and ours(path):
        return True
    listed = ", ".join(shown_path(e) for e in entries[:3]) + (", ..." if len(entries) > 3 else "")
    raise UpskillError(
        f"{option} {shown} already exists and is not empty: it holds files {maker} did not make ({listed}); {tail}"
    )


def write_bytes_atomic(path: Path, data: bytes, *, mode: int | None = None, fsync: bool = True) -> None:
    """Write ``data`` to ``path`` via a temporary sibling and a rename: never a half-written file.

    Readers (a concurrent ``runs``, the Space, a resumed run, the local Hub serving a file)
    see the old content or the new, nothing in between. ``mode`` keeps a replaced file's
    permissions; ``fsync=False`` is for caches, where losing a write costs only a refetch.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.tmp-")
    except OSError as exc:
        raise storage_error(exc, path) or exc from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError) and (err := storage_error(exc, path)) is not None:
            raise err from None
        raise


def write_text_atomic(path: Path, text: str, **kwargs: Any) -> None:
    """:func:`write_bytes_atomic` for UTF-8 text."""
    write_bytes_atomic(path, text.encode("utf-8"), **kwargs)


def write_json_atomic(
    path: Path, data: Any, *, indent: int | None = 2, sort_keys: bool = False, fsync: bool = True
) -> None:
    """:func:`write_bytes_atomic` for JSON (UTF-8, non-ASCII kept readable, a final newline)."""
    text = json.dumps(data, indent=indent, sort_keys=sort_keys, ensure_ascii=False)
    write_text_atomic(path, text + ("\n" if indent is not None else ""), fsync=fsync)


# --------------------------------------------------------------------------- reading

#: What an ``lstat`` mode is, in words, for the entries we refuse to read.
_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def kind_of(mode: int) -> str:
    """What a file of ``mode`` is, in words (``"a FIFO (named pipe)"``, ``"a regular file"``)."""
    if stat.S_ISREG(mode):
        return "a regular file"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISLNK(mode):
        return "a symlink"
    return next((word for test, word in _KINDS if test(mode)), "not a regular file")


#: ``open`` flags for a folder itself and for a file in it: never a symlink's target
#: (``O_NOFOLLOW``), never blocking on a FIFO, not inherited by child processes.
DIR_NOFOLLOW = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
FILE_NOFOLLOW = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


class FolderReplaced(OSError):
    """The folder opened is not the one expected (its ``(st_dev, st_ino)`` differ)."""


def open_folder_fd(path: str | os.PathLike[str], identity: tuple[int, int] | None = None) -> int:
    """A descriptor of the folder ``path`` itself, never of a symlink's target.

    Raises ``OSError`` (``ELOOP`` / ``ENOTDIR`` for a symlink or a file), and
    :class:`FolderReplaced` when ``identity`` is given and the folder is another one (an
    agent swapped it): each caller words these its own way.
    """
    fd = os.open(path, DIR_NOFOLLOW)
    st = os.fstat(fd)
    if identity is not None and (st.st_dev, st.st_ino) != tuple(identity):
        os.close(fd)
        raise FolderReplaced(f"{path} was replaced by another folder")
    return fd


class FileRefused(UpskillError):
    """A file we were asked to read is not a regular file, is too big or cannot be opened."""

    def __init__(self, path: str | os.PathLike[str], problem: str) -> None:
        self.path = os.fspath(path)
        self.problem = problem
        super().__init__(f"{shown_path(self.path)}: {problem}")


def too_big(size: int, cap: int) -> str:
    """The refusal text for a file of ``size`` bytes over ``cap`` (names the variable to lift it)."""
    shown, limit = size_and_limit(size, cap)
    return f"is {shown}; files over {limit} are not read (raise UPSKILL_MAX_FILE_MB to allow more)"


def read_capped(
    path: str | os.PathLike[str], max_bytes: int | None = None, *, follow_symlinks: bool = True
) -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes`` of them, never blocking.

    Opened with ``O_NONBLOCK`` (a FIFO's open returns at once instead of waiting for a
    writer), then checked with ``fstat`` on the open descriptor (no race with a swap), so a
    FIFO, a device or a socket is refused with :class:`FileRefused` naming it. A file over
    the cap (``UPSKILL_MAX_FILE_MB`` by default; a sparse 1 GiB file counts as 1 GiB) is
    refused before any byte is read, and one that grows while read is refused too.
    """
    cap = limits.MAX_FILE_BYTES if max_bytes is None else max_bytes
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise FileRefused(path, "is a symlink (or a symlink loop); not followed") from None
        raise FileRefused(path, f"cannot be read ({exc.strerror or exc})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FileRefused(path, f"is {kind_of(st.st_mode)}; only regular files are read")
        if st.st_size > cap:
            raise FileRefused(path, too_big(st.st_size, cap))
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        got = 0
        while got <= cap:
            chunk = os.read(fd, min(1 << 20, cap + 1 - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        if got > cap:
            raise FileRefused(path, too_big(got, cap))
        return b"".join(chunks)
    except OSError as exc:
        raise FileRefused(path, f"cannot be read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)


def read_text_capped(path: str | os.PathLike[str], max_bytes: int | None = None) -> str:
    """:func:`read_capped` decoded as UTF-8 (a BOM kept); bad bytes are a :class:`FileRefused`."""
    data = read_capped(path, max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileRefused(
            path, f"is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from None


@dataclass(frozen=True)
class Entry:
    """A regular file found by :func:`scan_tree`.

    ``path`` is what to read: the file itself, or for a symlink that stays inside the root,
    the resolved target. ``size`` is its size, ``mode`` its permission bits.
    """

    rel: str
    path: Path
    size: int
    mode: int
    symlink: bool = False


@dataclass(frozen=True)
class Refusal:
    """An entry :func:`scan_tree` will not read, and why (one line, for the user)."""

    rel: str
    reason: str

    def __str__(self) -> str:
        return f"{shown_path(self.rel)}: {self.reason}"


def scan_tree(
    root: str | os.PathLike[str],
    *,
    ignore: Collection[str] = (),
    follow_inner_symlinks: bool = True,
    max_file_bytes: int | None = None,
    max_depth: int = 64,
) -> tuple[list[Entry], list[Refusal]]:
    """Regular files under ``root`` (sorted by relative path) and the entries refused.

    Walks with ``lstat``, never following a symlinked folder, so the walk always ends. Each
    entry that is not a folder or a regular file becomes a :class:`Refusal` naming its path:
    FIFOs, devices and sockets; names that break :func:`name_problem` (not UTF-8, controls,
    bidi overrides); files over ``max_file_bytes`` (``UPSKILL_MAX_FILE_MB``); symlinks that
    loop, dangle, leave ``root`` or point at a folder. A symlink to a regular file inside
    ``root`` is read through (``follow_inner_symlinks``), as skills ship them. Names in
    ``ignore`` are skipped silently (``.git``, editor litter).
    """
    cap = limits.MAX_FILE_BYTES if max_file_bytes is None else max_file_bytes
    base = Path(root)
    real_root = base.resolve()
    files: list[Entry] = []
    refused: list[Refusal] = []

    def visit(folder: Path, prefix: str, depth: int) -> None:
        try:
            with os.scandir(folder) as it:
                names = sorted(e.name for e in it)
        except OSError as exc:
            refused.append(Refusal(prefix.rstrip("/") or ".", f"cannot be listed ({exc.strerror or exc})"))
            return
        for name in names:
            if name in ignore:
                continue
            rel = prefix + name
            problem = name_problem(name)
            if problem is not None:
                refused.append(Refusal(rel, problem))
                continue
            path = folder / name
            try:
                st = os.lstat(path)
            except OSError as exc:
                refused.append(Refusal(rel, f"cannot be read ({exc.strerror or exc})"))
                continue
            if stat.S_ISDIR(st.st_mode):
                if depth >= max_depth:
                    refused.append(Refusal(rel, f"folders nest deeper than {max_depth} levels"))
                else:
                    visit(path, rel + "/", depth + 1)
                continue
            link = stat.S_ISLNK(st.st_mode)
            target = path
            if link:
                if not follow_inner_symlinks:
                    refused.append(Refusal(rel, "is a symlink; symlinks are not read here"))
                    continue
                try:
                    target = path.resolve(strict=True)
                    st = os.stat(target)
                except RuntimeError:
                    refused.append(Refusal(rel, "symlink loop"))
                    continue
                except OSError as exc:
                    why = "symlink loop" if exc.errno == errno.ELOOP else "symlink points to nothing"
                    refused.append(Refusal(rel, why))
                    continue
                if not target.is_relative_to(real_root):
                    refused.append(Refusal(rel, "symlink points outside the folder"))
                    continue
                if stat.S_ISDIR(st.st_mode):
                    refused.append(Refusal(rel, "symlinked folders are not supported"))
                    continue
            if not stat.S_ISREG(st.st_mode):
                refused.append(
                    Refusal(rel, f"is {kind_of(st.st_mode)}; only regular files and folders are read")
                )
                continue
            if st.st_size > cap:
                refused.append(Refusal(rel, too_big(st.st_size, cap)))
                continue
            files.append(Entry(rel, target, st.st_size, st.st_mode & 0o777, link))

    visit(base, "", 0)
    files.sort(key=lambda e: e.rel)
    return files, refused


def require_clean_tree(root: str | os.PathLike[str], **kwargs: Any) -> list[Entry]:
    """:func:`scan_tree` for callers that cannot go on past a refusal: the first one is raised."""
    files, refused = scan_tree(root, **kwargs)
    if refused:
        more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
        raise FileRefused(Path(root) / refused[0].rel, refused[0].reason + more)
    return files
