"""The run folder's files: the plan, the rows as they are appended, the summary, the lock.

What the runner writes while a run is under way, and how ``runs``, ``--resume`` and push
read it back; one module, so the file names, the torn-line rule and the lock agree.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import fields
from pathlib import Path
from typing import Any

from upskill_hub._util import limits, safejson
from upskill_hub._util.boundedread import read_json_file
from upskill_hub._util.fsutil import read_capped, storage_error, write_bytes_atomic, write_json_atomic
from upskill_hub.errors import PathError, UpskillError
from upskill_hub.evals.schema import CallKey, ResultRow, RunPlan, RunSummary

RUN_FILE = "run.json"
RESULTS_FILE = "results.jsonl"
SUMMARY_FILE = "summary.json"
#: The ``results`` shard, written by the runner when a run ends (push uploads it as is).
RESULTS_PARQUET = "results.parquet"
#: What ``results.parquet`` was built from and checked for (local only, see :mod:`.shardcheck`).
RESULTS_CHECK = ".results.parquet.check"
LOCK_FILE = ".lock"



# --------------------------------------------------------------------------- plan
def read_plan(run_dir: Path) -> RunPlan | None:
    """The run's ``run.json``; ``None`` when it has none, ``UpskillError`` when it is unreadable."""
    path = Path(run_dir) / RUN_FILE
    if not os.path.lexists(path):
        return None
    # A FIFO, a device, a huge or deeply nested run.json is a one-line refusal, not a hang.
    data = read_json_file(path)
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
    data = read_json_file(path)
    try:
        return RunSummary.from_dict(data)
    except (TypeError, KeyError, AttributeError, ValueError) as exc:
        raise PathError(path, f"not a valid run summary ({exc})") from None


def write_summary(run_dir: Path, summary: RunSummary) -> None:
    write_json_atomic(Path(run_dir) / SUMMARY_FILE, summary.to_dict())


# --------------------------------------------------------------------------- rows
_ROW_FIELDS = tuple(f.name for f in fields(ResultRow))


def row_line(row: ResultRow) -> str:
    """One ``results.jsonl`` line.

    Rows are flat, so a getattr dict is enough (``dataclasses.asdict`` deep-copies:
    measurably slower at hundreds of rows per second).
    """
    return json.dumps({k: getattr(row, k) for k in _ROW_FIELDS}, ensure_ascii=False) + "\n"


def read_results(run_dir: Path) -> list[ResultRow]:
    """Rows of a run folder; a torn last line (from a killed run) is ignored."""
    path = Path(run_dir) / RESULTS_FILE
    rows: list[ResultRow] = []
    if not os.path.lexists(path):
        return rows
    # Only a regular file, and never more than the cap (a FIFO here used to hang ``runs``).
    data = read_capped(path, limits.MAX_RESULTS_BYTES)
    for raw in data.splitlines():
        line = raw.strip()
        if not line:
            continue
        try:
            rows.append(ResultRow.from_dict(safejson.loads(line.decode("utf-8"))))
        except (ValueError, TypeError, AttributeError):  # torn, not UTF-8, too deep, not a row
            continue
    return rows


def has_results(run_dir: Path) -> bool:
    path = Path(run_dir) / RESULTS_FILE
    return path.is_file() and path.stat().st_size > 0


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
        try:
            self._fh = self.path.open("a", encoding="utf-8")
        except OSError as exc:
            raise storage_error(exc, self.path) or exc from None
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
    try:
        fh = path.open("w")
    except OSError as exc:
        raise storage_error(exc, path, "then run again (a run folder must be writable to resume it)") or exc from None
    try:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UpskillError(f"run {run_dir} is being written by another upskill-hub process") from None
        yield
    finally:
        fh.close()
