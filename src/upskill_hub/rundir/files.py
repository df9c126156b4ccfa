"""The run folder's files: the plan, the rows as they are appended, the summary, the lock.

What the runner writes while a run is under way, and how ``runs``, ``--resume`` and push
read it back; one module, so the file names, the torn-line rule and the lock agree.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import queue
import stat
import threading
from collections.abc import Callable, Iterator
from dataclasses import fields
from pathlib import Path
from typing import Any

from upskill_hub._util import limits, safejson
from upskill_hub._util.fsutil import (
    FileRefused,
    kind_of,
    read_capped,
    storage_error,
    write_bytes_atomic,
    write_json_atomic,
    write_text_atomic,
)
from upskill_hub.errors import PathError, UpskillError
from upskill_hub.rundir.schema import CallKey, ResultRow, RunPlan, RunSummary, record_problem

RUN_FILE = "run.json"
RESULTS_FILE = "results.jsonl"
SUMMARY_FILE = "summary.json"
#: The ``results`` shard, written by the runner when a run ends (push uploads it as is).
RESULTS_PARQUET = "results.parquet"
#: What ``results.parquet`` was built from and checked for (local only, see :mod:`.shardcheck`).
RESULTS_CHECK = ".results.parquet.check"
LOCK_FILE = ".lock"
#: The spread over repeats in skill-creator's schema, and the same as Markdown (see :mod:`upskill_hub.lift.figures.benchmark`).
BENCHMARK_JSON = "benchmark.json"
BENCHMARK_MD = "benchmark.md"

#: Longest single row (one line of ``results.jsonl`` or ``triggers.jsonl``) read back to be
#: turned into an Arrow table (MB). Real rows are kilobytes; one 900 MB row used to end push
#: in ``std::bad_alloc`` (a native crash, no message) while Arrow built its buffers.
MAX_ROW_BYTES = int(limits.env_number("UPSKILL_MAX_ROW_MB", 64) * 1_000_000)


# --------------------------------------------------------------------------- reading
def read_run_file(path: Path, max_bytes: int) -> bytes:
    """The bytes of one run-folder file: the one reader for everything read back from a run.

    A run folder is ours to write, so nothing in it is a symlink (one planted there would
    publish or rewrite a file elsewhere), a FIFO (``open`` would block) or a device: each is
    a :class:`FileRefused` naming the file, as is a file over ``max_bytes``.
    """
    return read_capped(path, max_bytes, follow_symlinks=False)


def read_run_json(path: Path, max_bytes: int | None = None) -> Any:
    """A run folder's JSON file (``run.json``, ``summary.json``): capped, no symlink, bounded nesting."""
    data = read_run_file(path, limits.MAX_CONFIG_BYTES if max_bytes is None else max_bytes)
    try:
        return safejson.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise FileRefused(
            path, f"is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from None
    except safejson.JSONTooDeep as exc:
        raise FileRefused(path, str(exc)) from None
    except json.JSONDecodeError as exc:
        raise FileRefused(
            path, f"is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from None
    except ValueError as exc:  # NaN / Infinity and the like, refused by the parser
        raise FileRefused(path, f"is not valid JSON ({str(exc).splitlines()[0]})") from None


def check_run_files(run_dir: Path, names: tuple[str, ...] | list[str]) -> None:
    """Refuse, in one line naming it, the first of ``names`` in ``run_dir`` that is not a regular file.

    For a caller about to read several files of a run (push): a symlinked ``triggers.jsonl``
    or a FIFO named ``results.jsonl`` stops it before any is read, instead of publishing an
    outside file's rows, hanging, or being skipped as if absent.
    """
    for name in names:
        path = Path(run_dir) / name
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise FileRefused(path, f"cannot be read ({exc.strerror or exc})") from None
        if stat.S_ISLNK(st.st_mode):
            raise FileRefused(path, "is a symlink; run-folder files are never followed")
        if not stat.S_ISREG(st.st_mode):
            raise FileRefused(path, f"is {kind_of(st.st_mode)}; only regular files are read")


def open_run_file(path: Path, flags: int, *, hint: str = "") -> Any:
    """``path`` opened for writing (created if absent, never truncated), as a text file object.

    Like the reader: never through a symlink (appending to ``results.jsonl`` or locking
    ``.lock`` would otherwise write, or truncate, a file elsewhere) and never a FIFO or a
    device; each is a :class:`FileRefused` naming the file. A full or read-only disk is a
    :class:`~upskill_hub._util.fsutil.StorageError` saying what to do (``hint``).
    """
    mode = (
        os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    )
    try:
        fd = os.open(path, mode | flags, 0o644)
    except OSError as exc:
        if os.path.islink(path):
            raise FileRefused(path, "is a symlink; run-folder files are never followed") from None
        if exc.errno == errno.ENXIO:  # a FIFO nobody reads: O_NONBLOCK answers at once
            raise FileRefused(path, "is a FIFO (named pipe); only regular files are written") from None
        raise storage_error(exc, path, hint) or exc from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise FileRefused(path, f"is {kind_of(st.st_mode)}; only regular files are written")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "a" if flags & os.O_APPEND else "w", encoding="utf-8")


# --------------------------------------------------------------------------- plan
def read_plan(run_dir: Path) -> RunPlan | None:
    """The run's ``run.json``; ``None`` when it has none, ``UpskillError`` when it is unreadable."""
    path = Path(run_dir) / RUN_FILE
    if not os.path.lexists(path):
        return None
    # A FIFO, a device, a symlink, a huge or deeply nested run.json is a one-line refusal.
    data = read_run_json(path)
    if not isinstance(data, dict):
        raise PathError(path, "expected a JSON object")
    try:
        return RunPlan.from_dict(data)
    except (TypeError, AttributeError) as exc:
        raise PathError(path, f"not a valid run plan ({exc})") from None


def write_plan(run_dir: Path, plan: RunPlan) -> None:
    write_json_atomic(Path(run_dir) / RUN_FILE, plan.to_dict())


def create_run(output_dir: str | Path, plan: RunPlan, *, exist_ok: bool = False) -> Path:
    """Make ``<output_dir>/<plan.run_id>/`` and write its plan: the one way a run folder is born.

    A local run, a run launched on Jobs and one shard of it all start here, so they fail
    alike (one line naming the folder) when it cannot be made. ``exist_ok`` is for a shard,
    whose folder may hold the rows of an earlier attempt.
    """
    run_dir = Path(output_dir) / plan.run_id
    try:
        run_dir.mkdir(parents=True, exist_ok=exist_ok)
    except OSError as exc:
        if storage_error(exc) is not None:  # a full or read-only disk says what to do
            raise storage_error(exc, run_dir) from None
        raise UpskillError(f"cannot create run folder {run_dir}: {exc.strerror}") from None
    write_plan(run_dir, plan)
    return run_dir


def find_resumable(output_dir: Path, fingerprint: str) -> Path | None:
    """The most recent run folder under ``output_dir`` whose plan has ``fingerprint``."""
    best: tuple[str, Path] | None = None
    if not output_dir.is_dir():
        return None
    for d in output_dir.iterdir():
        try:
            plan = read_plan(d)
        except UpskillError:
            continue
        if plan is not None and plan.fingerprint == fingerprint and (best is None or plan.created > best[0]):
            best = (plan.created, d)
    return best[1] if best else None


# --------------------------------------------------------------------------- summary
def read_summary(run_dir: Path) -> RunSummary | None:
    """The run's ``summary.json``; ``None`` before the run ended, ``UpskillError`` when invalid."""
    path = Path(run_dir) / SUMMARY_FILE
    if not os.path.lexists(path):
        return None
    data = read_run_json(path)
    # Figures go to the ``runs`` table and the card: NaN, a list for a model name, "3" for
    # a count would be published or break the Arrow table, so they are refused here.
    if (problem := record_problem(RunSummary, data)) is not None:
        raise PathError(path, f"not a valid run summary ({problem})")
    try:
        return RunSummary.from_dict(data)
    except (TypeError, KeyError, AttributeError, ValueError) as exc:
        raise PathError(path, f"not a valid run summary ({exc})") from None


def write_summary(run_dir: Path, summary: RunSummary) -> None:
    write_json_atomic(Path(run_dir) / SUMMARY_FILE, summary.to_dict())


def write_benchmark(run_dir: Path, doc: dict[str, Any], text: str) -> tuple[Path, Path]:
    """``benchmark.json`` and ``benchmark.md``, each written atomically; their paths."""
    paths = (Path(run_dir) / BENCHMARK_JSON, Path(run_dir) / BENCHMARK_MD)
    write_json_atomic(paths[0], doc)
    write_text_atomic(paths[1], text)
    return paths


# --------------------------------------------------------------------------- rows
_ROW_FIELDS = tuple(f.name for f in fields(ResultRow))


def row_line(row: ResultRow) -> str:
    """One ``results.jsonl`` line.

    Rows are flat, so a getattr dict is enough (``dataclasses.asdict`` deep-copies:
    measurably slower at hundreds of rows per second).
    """
    return json.dumps({k: getattr(row, k) for k in _ROW_FIELDS}, ensure_ascii=False) + "\n"


def too_long_row(size: int) -> str:
    """The refusal text for a row of ``size`` bytes (names the variable that lifts the cap)."""
    return (
        f"is {size / 1e6:.1f} MB; rows over {MAX_ROW_BYTES / 1e6:g} MB are not read "
        "(raise UPSKILL_MAX_ROW_MB to allow more)"
    )


def longest_line(data: Any) -> tuple[int, int]:
    """``(line number, length in bytes)`` of the longest line of ``data`` (``bytes`` or an ``mmap``).

    One ``find`` per line, in C: a second or so for a 1 GB file, and no copy of it.
    """
    best, best_no, start, number, end = 0, 0, 0, 0, len(data)
    while start < end:
        number += 1
        stop = data.find(b"\n", start)
        stop = end if stop < 0 else stop
        if stop - start > best:
            best, best_no = stop - start, number
        start = stop + 1
    return best_no, best


def read_results(run_dir: Path, *, strict: bool = False) -> list[ResultRow]:
    """Rows of a run folder; a torn last line (from a killed run) is ignored.

    Lenient (``runs``, ``--compare``, resume): a line that is not a valid row (not JSON, or
    a field of the wrong type, NaN, a list for a name) is skipped, so one bad line cannot
    crash a report. ``strict`` (push, before anything is committed): every line but a torn
    last one must be a valid row, each call's key at most once, and no row over
    :data:`MAX_ROW_BYTES`; the first that is not is a :class:`PathError` naming the line.
    """
    path = Path(run_dir) / RESULTS_FILE
    rows: list[ResultRow] = []
    if not os.path.lexists(path):
        return rows
    # Only a regular file, never a symlink, never more than the cap (a FIFO here used to hang ``runs``).
    data = read_run_file(path, limits.MAX_RESULTS_BYTES)
    lines = data.split(b"\n")
    torn = len(lines) - 1 if lines[-1].strip() else None  # the text after the last newline, if any
    first_seen: dict[CallKey, int] = {}
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            continue
        if strict and len(raw) > MAX_ROW_BYTES:
            raise PathError(path, f"line {number} {too_long_row(len(raw))}")
        try:
            item = safejson.loads(line.decode("utf-8"))
        except (ValueError, TypeError):  # torn, not UTF-8, too deep
            if strict and number - 1 != torn:
                raise PathError(path, f"line {number} is not JSON") from None
            continue
        problem = record_problem(ResultRow, item)
        if problem is not None:
            if strict:
                raise PathError(path, f"line {number} is not a valid result row ({problem})")
            continue
        row = ResultRow.from_dict(item)
        if strict:
            key = _row_key(row)
            if key in first_seen:
                raise PathError(
                    path, f"line {number} repeats the call of line {first_seen[key]} {_shown_key(key)}"
                )
            first_seen[key] = number
        rows.append(row)
    return rows


def _row_key(row: ResultRow) -> CallKey:
    """The key of a row as a run plans it: rows written before modes exist are ``inject``."""
    return (row.model, row.mode or "inject", row.condition, row.case_id, row.repeat)


def _shown_key(key: CallKey) -> str:
    model, mode, condition, case_id, repeat = key
    return f"(model {model!r}, mode {mode}, {condition}, case {case_id!r}, repeat {repeat})"[:300]


def has_results(run_dir: Path) -> bool:
    """True when ``results.jsonl`` is a non-empty regular file (``lstat``: a symlink is not one)."""
    try:
        st = os.lstat(Path(run_dir) / RESULTS_FILE)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_size > 0


def compact_results(run_dir: Path, planned: set[CallKey]) -> list[ResultRow]:
    """Keep the first answered row per planned call; rewrite the file atomically.

    Drops a torn last line (a killed writer), duplicates, rows not in the plan and error
    rows (so resuming retries failed calls). Returns the rows kept.
    """
    kept: dict[CallKey, ResultRow] = {}
    for row in read_results(run_dir):
        if row.key in planned and row.error is None and row.key not in kept:
            kept[row.key] = row
    rows = list(kept.values())
    write_results(run_dir, rows)
    return rows


def write_results(run_dir: Path, rows: list[ResultRow]) -> None:
    """Replace ``results.jsonl`` with ``rows`` at once (compaction, a pulled run)."""
    write_bytes_atomic(Path(run_dir) / RESULTS_FILE, "".join(row_line(r) for r in rows).encode("utf-8"))


class ResultsWriter:
    """Appends rows to ``results.jsonl`` from a background thread: write, flush, fsync.

    Rows that finish together are written with one fsync (group commit), which keeps a
    run at 32+ concurrent calls from being limited by the disk while still making each
    row durable milliseconds after its call ended.
    """

    _STOP = object()

    def __init__(self, run_dir: Path) -> None:
        self.path = Path(run_dir) / RESULTS_FILE
        self._fh = open_run_file(self.path, os.O_APPEND)
        self._q: queue.Queue[Any] = queue.Queue()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._loop, name="results-writer", daemon=True)
        self._thread.start()

    def write(self, row: ResultRow) -> None:
        if self._error is not None:
            raise self._error
        self._q.put(row_line(row))

    def _loop(self) -> None:
        stop = False
        while not stop:
            batch = [self._q.get()]
            while True:
                try:
                    batch.append(self._q.get_nowait())
                except queue.Empty:
                    break
            lines = []
            for item in batch:
                if item is self._STOP:
                    stop = True
                elif callable(item):
                    item()
                else:
                    lines.append(item)
            if lines and self._error is None:  # after a failed write, nothing more: one torn line at most
                try:
                    self._fh.write("".join(lines))
                    self._fh.flush()
                    os.fsync(self._fh.fileno())
                except OSError as exc:  # disk full etc.: surface it to the run
                    self._error = storage_error(exc, self.path) or exc
        with contextlib.suppress(OSError):  # the buffer it could not flush is lost, as reported
            self._fh.close()

    def submit(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` on the writer thread (used for cache writes, off the event loop)."""
        self._q.put(fn)

    def close(self) -> None:
        self._q.put(self._STOP)
        self._thread.join()
        if self._error is not None:
            raise self._error


@contextlib.contextmanager
def run_lock(run_dir: Path) -> Iterator[None]:
    """Hold an exclusive lock on a run folder, so two processes never append to one run.

    ``flock`` is released by the OS when its process dies, so a killed run never leaves a
    stale lock behind (on systems without ``fcntl`` no lock is taken).
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    path = Path(run_dir) / LOCK_FILE
    fh = open_run_file(path, 0, hint="then run again (a run folder must be writable to resume it)")
    try:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UpskillError(f"run {run_dir} is being written by another upskill-hub process") from None
        yield
    finally:
        fh.close()
