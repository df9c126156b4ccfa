"""The run folder's ``triggers.jsonl``: one :class:`TriggerRow` per trigger call, and its guards.

Written by ``upskill-hub triggers`` (and ``--library`` routing runs) as calls finish; read
back by resume, ``runs`` and ``push`` (the ``triggers`` config). A run folder may come from
anyone (a pulled archive, a shared disk), so every read and write of its files goes through
this module:

* :class:`RowLines` / :func:`read_run_json` read without blocking (a FIFO is refused, not
  waited on), without following a symlinked file out of the folder, and within a size cap
  (:data:`MAX_ROWS_BYTES`, :data:`MAX_RUN_JSON_BYTES`); rows are streamed line by line, so a
  resume of a large run never holds the file in memory;
* :func:`check_trigger_row` is the row schema, checked on every read: types (a ``"no"``
  where a boolean belongs is refused, never counted as a load), finite numbers (no NaN or
  Infinity), ``loaded`` a JSON list of names; a bad row is one line naming the file and line;
* :class:`RowResolver` gives each call one row: a later answer replaces a failed attempt (a
  resume retries those), and a second *answer* for the same call (model, skill, query,
  repeat) is refused (duplicated rows counted twice turned n = 3 into 150);
* :data:`QUERIES_FILE` holds each query's trigger rate over its repeats and its verdict at
  the run's threshold (:class:`QueryRate`), written whole at the end of a run and checked
  field by field when read back (:func:`read_query_rates`);
* :class:`RowAppender` only ever appends (``O_APPEND``, never ``open(..., "w")``): under a
  file-size limit or on a full disk the rows already there stay; a row that cannot be
  written whole is cut back off, so the file never ends half-written.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import stat
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from upskill_hub._util import limits
from upskill_hub._util.fsutil import FileRefused, kind_of, storage_error, write_json_atomic
from upskill_hub._util.sizes import size_and_limit
from upskill_hub.rundir import files as run_files
from upskill_hub.rundir.schema import TriggerRow, record_problem

#: A run folder's trigger rows (one :class:`TriggerRow` per line).
TRIGGERS_FILE = "triggers.jsonl"
#: Largest ``triggers.jsonl`` read back (``UPSKILL_MAX_RESULTS_MB``, as for ``results.jsonl``):
#: rows are streamed, so this bounds time, not memory.
MAX_ROWS_BYTES = limits.MAX_RESULTS_BYTES
#: Longest single row (bytes). A real row is well under 100 KB (the query is the long part).
MAX_ROW_BYTES = limits.env_int("UPSKILL_MAX_TRIGGER_ROW_KB", 1024) * 1000
#: Largest plan or report JSON of a trigger, routing or tune run folder (``UPSKILL_MAX_CONFIG_MB``).
MAX_RUN_JSON_BYTES = limits.MAX_CONFIG_BYTES

_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
_APPEND_FLAGS = (
    os.O_WRONLY
    | os.O_APPEND
    | os.O_CREAT
    | os.O_NONBLOCK
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NOFOLLOW", 0)
)


def _refusal(path: Path, exc: OSError, verb: str = "read") -> FileRefused:
    if exc.errno == errno.ELOOP:
        return FileRefused(path, "is a symlink; run-folder files are not followed through symlinks")
    if exc.errno == errno.ENXIO:  # O_WRONLY|O_NONBLOCK on a FIFO nobody reads
        return FileRefused(path, "is a FIFO (named pipe); only regular files are read or written")
    return FileRefused(path, f"cannot be {verb} ({exc.strerror or exc})")


def check_run_dir(run_dir: Path) -> Path:
    """``run_dir`` when it is a real folder; a symlinked run folder is refused (it would be
    resumed, and written, wherever it points, outside ``--output``)."""
    try:
        st = os.lstat(run_dir)
    except OSError as exc:
        raise FileRefused(run_dir, f"cannot be read ({exc.strerror or exc})") from None
    if stat.S_ISLNK(st.st_mode):
        raise FileRefused(run_dir, "is a symlink; run folders are not followed through symlinks")
    if not stat.S_ISDIR(st.st_mode):
        raise FileRefused(run_dir, f"is {kind_of(st.st_mode)}, not a run folder")
    return run_dir


def read_run_json(path: Path, max_bytes: int | None = None) -> Any:
    """The JSON document of a run-folder file (plans, ``routing.json``): the run folder's one
    JSON reader (:func:`upskill_hub.rundir.read_run_json`: no symlink, no blocking on a
    FIFO, capped at :data:`MAX_RUN_JSON_BYTES`, nesting bounded; else :class:`FileRefused`)."""
    return run_files.read_run_json(path, MAX_RUN_JSON_BYTES if max_bytes is None else max_bytes)


class RowLines:
    """The complete lines of a JSON-lines run file, streamed: ``for number, line in RowLines(path)``.

    Opened with ``O_NONBLOCK | O_NOFOLLOW`` and checked with ``fstat`` on the open descriptor:
    a FIFO, device or symlink is a :class:`FileRefused`, as is a file over ``max_bytes`` (before
    a byte is read) or a line over :data:`MAX_ROW_BYTES`. What follows the last newline is a
    line a killed writer left unfinished: it is not yielded, and ``complete_bytes`` (set once
    the iteration ends) is where it starts. A missing file yields nothing.
    """

    def __init__(self, path: Path, max_bytes: int | None = None) -> None:
        self.path = Path(path)
        self.max_bytes = MAX_ROWS_BYTES if max_bytes is None else max_bytes
        self.complete_bytes = 0
        self.torn = False

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        try:
            fd = os.open(self.path, _READ_FLAGS)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise _refusal(self.path, exc) from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise FileRefused(self.path, f"is {kind_of(st.st_mode)}; only regular files are read")
            if st.st_size > self.max_bytes:
                size, limit = size_and_limit(st.st_size, self.max_bytes)
                raise FileRefused(
                    self.path,
                    f"is {size}; row files over {limit} are not read (raise UPSKILL_MAX_RESULTS_MB to allow more)",
                )
            os.set_blocking(fd, True)
            pending = b""
            offset = number = 0
            while True:
                try:
                    chunk = os.read(fd, 1 << 20)
                except OSError as exc:
                    raise FileRefused(self.path, f"cannot be read ({exc.strerror or exc})") from None
                if not chunk:
                    break
                offset += len(chunk)
                if offset > self.max_bytes:
                    raise FileRefused(self.path, "grew past the size cap while being read")
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    number += 1
                    self.complete_bytes += len(line) + 1
                    yield number, line
                if len(pending) > MAX_ROW_BYTES:
                    raise FileRefused(
                        self.path,
                        f"line {number + 1} is longer than {MAX_ROW_BYTES // 1000} KB (UPSKILL_MAX_TRIGGER_ROW_KB)",
                    )
            self.torn = bool(pending)
        finally:
            os.close(fd)


# --------------------------------------------------------------------------- the row schema
_NONEMPTY = ("run_id", "skill_name", "model", "query_id")
_COUNTS = ("input_tokens", "output_tokens")
_FIGURES = ("latency_s", "cost_usd")
#: Repeats of one query a run may hold (``--runs`` is capped far below).
MAX_REPEAT = 1_000_000
#: Skills one call may have loaded (a catalog turn loads a few).
MAX_LOADED = 1000


def check_trigger_row(data: object) -> TriggerRow:
    """``data`` (one parsed line) as a :class:`TriggerRow`, or ``ValueError`` saying which field is wrong.

    Types are exact: ``true``/``false`` where a boolean belongs (``"no"`` is not false), text
    where text belongs (a list is refused before it can reach a set or a dict), whole numbers
    for counts, finite non-negative numbers for latency and cost. ``loaded`` must be the JSON
    text of a list of names. Unknown keys are ignored (files written by newer versions load).
    """
    # Types first, by the one row schema every run-folder reader shares (the dataclass's
    # annotations: text, true/false, whole numbers, finite numbers, required fields).
    why = record_problem(TriggerRow, data)
    if why is not None:
        raise ValueError(why)
    assert isinstance(data, dict)
    # Then what the annotations cannot say.
    for k in _NONEMPTY:
        if not data[k]:
            raise ValueError(f"field '{k}' must not be empty")
    if not 0 <= data["repeat"] < MAX_REPEAT:
        raise ValueError(f"field 'repeat' must be from 0 to {MAX_REPEAT - 1}")
    for k in _COUNTS:
        v = data.get(k)
        if v is not None and not 0 <= v <= limits.MAX_TOKENS_PER_CALL:
            raise ValueError(f"field '{k}' must be from 0 to {limits.MAX_TOKENS_PER_CALL:,}")
    for k in _FIGURES:
        v = data.get(k)
        if v is not None and v < 0:
            raise ValueError(f"field '{k}' must not be negative")
    mode = data.get("mode", "catalog")
    if mode not in ("catalog", "harness"):
        raise ValueError(f"field 'mode' must be 'catalog' or 'harness', not {json.dumps(mode)[:40]}")
    try:
        names = json.loads(data.get("loaded", "[]"))
    except ValueError:
        raise ValueError("field 'loaded' is not JSON text") from None
    if not isinstance(names, list) or len(names) > MAX_LOADED or not all(isinstance(n, str) for n in names):
        raise ValueError(f"field 'loaded' must be the JSON text of a list of at most {MAX_LOADED} names")
    if data.get("error") is None and data.get("triggered") is None:
        raise ValueError("field 'triggered' is null but the row has no 'error'")
    return TriggerRow.from_dict(data)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def parse_row_line(path: Path, number: int, line: bytes) -> TriggerRow | None:
    """Line ``number`` of ``path`` as a row (``None`` for a blank line); a bad one is a one-line :class:`FileRefused`."""
    if not line.strip():
        return None
    try:
        data = json.loads(line.decode("utf-8"), parse_constant=_reject_constant)
        return check_trigger_row(data)
    except (ValueError, TypeError, RecursionError) as exc:
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise FileRefused(path, f"line {number} is not a trigger row ({why[:200]})") from None


def row_key(row: TriggerRow) -> tuple[str, str, str, int]:
    """One call's identity in any trigger or routing run: model, skill, query, repeat."""
    return (row.model, row.skill_name, row.query_id, row.repeat)


class RowResolver:
    """One row per call, decided the same way on every read (resume, ``runs``, ``push``).

    A failed attempt (``error`` set) is replaced by a later answer for the same call; a
    second answer for a call is refused, naming both lines (rows are appended once per
    call, so two answers mean a file that was edited or concatenated).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rows: dict[tuple[str, str, str, int], tuple[int, TriggerRow]] = {}

    def add(self, number: int, row: TriggerRow) -> None:
        key = row_key(row)
        seen = self.rows.get(key)
        if seen is not None and seen[1].error is None:
            if row.error is None:
                raise FileRefused(
                    self.path,
                    f"line {number} answers the same call as line {seen[0]} (model {row.model!r}, query "
                    f"{row.query_id!r}, repeat {row.repeat}); a run holds one answer per call",
                )
            return  # an answered call is never asked again; a later failure changes nothing
        self.rows[key] = (number, row)


def iter_trigger_rows(path: Path) -> Iterator[tuple[int, TriggerRow]]:
    """``(line number, row)`` for every checked row of ``path``, streamed (the torn tail skipped)."""
    for number, line in RowLines(path):
        row = parse_row_line(path, number, line)
        if row is not None:
            yield number, row


def read_trigger_rows(run_dir: Path, *, run_id: str | None = None) -> list[TriggerRow]:
    """The rows of ``run_dir/triggers.jsonl``, one per call (see :class:`RowResolver`); none when absent.

    Every row is checked (:func:`check_trigger_row`); a bad row, a row of another run, a
    symlinked or special file is one :class:`FileRefused` line naming the file.
    """
    path = Path(run_dir) / TRIGGERS_FILE
    resolver = RowResolver(path)
    for number, row in iter_trigger_rows(path):
        if run_id is not None and row.run_id != run_id:
            raise FileRefused(path, f"line {number} belongs to run {row.run_id!r}, not {run_id!r}")
        resolver.add(number, row)
    return [row for _, row in sorted(resolver.rows.values(), key=lambda x: x[0])]


# --------------------------------------------------------------------------- writing
def _finite_or_none(v: float | None) -> float | None:
    return v if v is None or math.isfinite(v) else None


def row_line(row: TriggerRow) -> bytes:
    """``row`` as one JSON line; a NaN or infinite figure is stored as null, never as ``NaN``."""
    data = row.to_dict()
    for k in _FIGURES:
        data[k] = _finite_or_none(data.get(k))
    return (json.dumps(data, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")


class RowAppender:
    """Appends rows to a run's ``triggers.jsonl``; never truncates a row that is there.

    Opened ``O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK``: a symlinked file (which would
    write outside the run folder) and a FIFO are refused. ``trim_to`` cuts a torn tail left
    by a killed run (what :class:`RowLines` did not yield) before the first append, so it
    cannot glue onto the next row. A row that cannot be written whole (file-size limit, full
    disk) is cut back off and the error says so: the rows before it are all kept.
    """

    def __init__(
        self, path: Path, *, trim_to: int | None = None, fsync: bool = False, hint: str = ""
    ) -> None:
        self.path = Path(path)
        self.fsync = fsync
        self.hint = hint or "then run the same command with --resume: the rows written so far are kept"
        try:
            self.fd = os.open(self.path, _APPEND_FLAGS, 0o644)
        except OSError as exc:
            raise storage_error(exc, self.path, self.hint) or _refusal(self.path, exc, "written") from None
        try:
            st = os.fstat(self.fd)
            if not stat.S_ISREG(st.st_mode):
                raise FileRefused(self.path, f"is {kind_of(st.st_mode)}; only regular files are written")
            os.set_blocking(self.fd, True)
            if trim_to is not None and st.st_size > trim_to:
                os.ftruncate(self.fd, trim_to)
        except BaseException:
            os.close(self.fd)
            raise

    def write(self, row: TriggerRow) -> None:
        data = row_line(row)
        start = os.fstat(self.fd).st_size
        try:
            view = memoryview(data)
            while view:
                n = os.write(self.fd, view)
                view = view[n:]
            if self.fsync:
                os.fsync(self.fd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, start)  # no half row left behind
            raise storage_error(exc, self.path, self.hint) or exc from None

    def close(self) -> None:
        os.close(self.fd)

    def __enter__(self) -> RowAppender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --------------------------------------------------------------------------- per-query verdicts
#: A trigger run's per-query figures (:class:`QueryRate` per model and query, and the threshold).
QUERIES_FILE = "trigger-queries.json"
#: The verdict rule, as stored next to the figures (skill-creator's run_eval applies the same).
VERDICT_RULE = "a should-trigger query passes when its trigger rate >= threshold; a should-not-trigger query when it is < threshold"


@dataclass(frozen=True, slots=True)
class QueryRate:
    """One query on one model over its repeats: how often it loaded the skill, and whether that passes.

    ``runs`` counts the answered calls and ``triggered`` those that loaded the skill; a failed
    call is in ``errors``, never in the rate. ``rate`` has its 95% Wilson interval; ``passed``
    applies :data:`VERDICT_RULE` at the run's threshold. With no answered call, the rate, its
    interval and the verdict are ``None``.
    """

    model: str
    query_id: str
    query: str
    should_trigger: bool
    runs: int
    triggered: int
    rate: float | None
    ci_low: float | None
    ci_high: float | None
    passed: bool | None
    errors: int = 0

    @property
    def share(self) -> str:
        """The rate as counted: ``"2/3"``."""
        return f"{self.triggered}/{self.runs}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def write_query_rates(run_dir: Path, doc: dict[str, Any], rates: list[QueryRate]) -> Path:
    """Write ``doc`` (run id, threshold, rule, description) with ``rates`` as its ``queries`` to :data:`QUERIES_FILE`."""
    path = Path(run_dir) / QUERIES_FILE
    write_json_atomic(path, {**doc, "rule": VERDICT_RULE, "queries": [r.to_dict() for r in rates]}, indent=1)
    return path


def read_query_rates(run_dir: Path) -> tuple[dict[str, Any], list[QueryRate]]:
    """The document of :data:`QUERIES_FILE` (without its queries) and its checked :class:`QueryRate` rows.

    Read like every run-folder file (no symlink, no FIFO wait, capped); a query whose fields
    do not match the schema, or whose counts do not add up, is one :class:`FileRefused` line.
    """
    path = Path(run_dir) / QUERIES_FILE
    data = read_run_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("queries"), list):
        raise FileRefused(path, "is not a per-query trigger file (an object with a 'queries' list)")
    threshold = data.get("threshold")
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0 < threshold <= 1:
        raise FileRefused(path, "field 'threshold' must be a number above 0 and at most 1")
    rates = []
    for i, item in enumerate(data["queries"]):
        why = record_problem(QueryRate, item)
        if why is None and not 0 <= item["triggered"] <= item["runs"]:
            why = "counts more triggers than answered runs"
        if why is None and min(item["runs"], item.get("errors", 0)) < 0:
            why = "holds a negative count"
        if why is not None:
            raise FileRefused(path, f"query {i + 1} {why}")
        rates.append(QueryRate(**{k: item[k] for k in QueryRate.__dataclass_fields__ if k in item}))
    return {k: v for k, v in data.items() if k != "queries"}, rates
