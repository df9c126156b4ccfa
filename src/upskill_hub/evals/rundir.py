"""The eval run folder's one home: every read and write of ``<output>/<run_id>/`` goes here.

A run folder holds:

* ``run.json``       the :class:`RunPlan` (run id, skill, models, conditions, fingerprint);
* ``results.jsonl``  one :class:`ResultRow` per line, appended as each call finishes;
* ``summary.json``   the :class:`RunSummary` (written when the run ends);
* plots (``pass_rate.png``, ``tokens.png``, ``report.html``) and a ``.lock``.

The runner writes it, ``runs`` and the Space read it, push turns it into parquet shards
and pull turns those back into the same types. Keeping all of that in one module means
the file names, the torn-line rule, the lock and the parquet columns cannot drift apart.
The parquet schemas are derived from the dataclasses in :mod:`.schema`, so a new field
becomes a new column without a second declaration.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import queue
import re
import threading
import types
import typing
from collections.abc import Callable, Iterator
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

from upskill_hub.errors import PathError, UpskillError
from upskill_hub.evals.schema import ResultRow, RunPlan, RunSummary
from upskill_hub.fsutil import write_bytes_atomic, write_json_atomic
from upskill_hub.redact import redact, secret_values

RUN_FILE = "run.json"
RESULTS_FILE = "results.jsonl"
SUMMARY_FILE = "summary.json"
#: The ``results`` shard, written by the runner when a run ends (push uploads it as is).
RESULTS_PARQUET = "results.parquet"
LOCK_FILE = ".lock"

#: Rows per parquet row group: small enough for the dataset viewer to page through.
ROW_GROUP_SIZE = 10_000

CallKey = tuple[str, str, str, int]


# --------------------------------------------------------------------------- plan
def read_plan(run_dir: Path) -> RunPlan | None:
    """The run's ``run.json``; ``None`` when it has none, ``UpskillError`` when it is unreadable."""
    path = Path(run_dir) / RUN_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError, OSError) as exc:
        raise PathError(path, f"cannot be read as JSON ({exc})") from None
    if not isinstance(data, dict):
        raise PathError(path, "expected a JSON object")
    try:
        return RunPlan.from_dict(data)
    except (TypeError, AttributeError) as exc:
        raise PathError(path, f"not a valid run plan ({exc})") from None


def write_plan(run_dir: Path, plan: RunPlan) -> None:
    write_json_atomic(Path(run_dir) / RUN_FILE, plan.to_dict())


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
    if not path.exists():
        return None
    try:
        return RunSummary.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (json.JSONDecodeError, TypeError, KeyError, UnicodeDecodeError, AttributeError, OSError) as exc:
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
    if not path.exists():
        return rows
    with path.open("r", encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                rows.append(ResultRow.from_dict(json.loads(line)))
            except (json.JSONDecodeError, TypeError):
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
        self._fh = self.path.open("a", encoding="utf-8")
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
            if lines:
                try:
                    self._fh.write("".join(lines))
                    self._fh.flush()
                    os.fsync(self._fh.fileno())
                except OSError as exc:  # disk full etc.: surface it to the run
                    self._error = exc
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
    fh = (Path(run_dir) / LOCK_FILE).open("w")
    try:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UpskillError(f"run {run_dir} is being written by another upskill-hub process") from None
        yield
    finally:
        fh.close()


# --------------------------------------------------------------------------- arrow
def _arrow_type(tp: Any, meta: typing.Mapping[str, Any]):  # -> pyarrow.DataType
    """The parquet column type of a dataclass field's annotation.

    ``X | None`` is a nullable ``X``; a dict (parameters, pass@k, holdout) is JSON text so
    the viewer shows it and the schema stays flat; a list of dataclasses is a list of
    structs; integers are 32-bit unless the field's metadata asks for 64.
    """
    import pyarrow as pa

    args = [a for a in typing.get_args(tp) if a is not type(None)]
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return _arrow_type(args[0], meta)
    origin = typing.get_origin(tp) or tp
    if origin is list:
        return pa.list_(_arrow_type(args[0], {}))
    if origin is dict:
        return pa.string()
    if is_dataclass(origin):
        return arrow_struct(origin)
    simple = {str: pa.string(), float: pa.float64(), bool: pa.bool_()}
    if origin is int:
        return pa.int64() if meta.get("arrow") == "int64" else pa.int32()
    return simple[origin]


def _arrow_fields(cls: type) -> list:
    hints = typing.get_type_hints(cls)
    return [(f.name, _arrow_type(hints[f.name], f.metadata)) for f in fields(cls)]


def arrow_struct(cls: type):  # -> pyarrow.StructType
    import pyarrow as pa

    return pa.struct(_arrow_fields(cls))


def arrow_schema(cls: type):  # -> pyarrow.Schema
    """The parquet schema of a dataclass: one column per field, in field order."""
    import pyarrow as pa

    return pa.schema(_arrow_fields(cls))


def result_arrow_schema():  # -> pyarrow.Schema
    """Schema of the ``results`` table (one column per :class:`ResultRow` field)."""
    return arrow_schema(ResultRow)


def runs_arrow_schema():  # -> pyarrow.Schema
    """Schema of the ``runs`` table (one row per :class:`RunSummary`)."""
    return arrow_schema(RunSummary)


def _results_buffer(run_dir: Path):  # -> pyarrow.Buffer | None
    """The raw bytes of ``results.jsonl`` (memory-mapped), ``None`` when it is empty."""
    import pyarrow as pa

    path = Path(run_dir) / RESULTS_FILE
    if not has_results(run_dir):
        return None
    try:
        # Zero-copy: the returned buffer keeps the mapping alive for as long as it is used.
        return pa.memory_map(str(path), "r").read_buffer()
    except OSError as exc:
        raise PathError(path, f"cannot be read ({exc})") from None


def read_results_raw(run_dir: Path):  # -> pyarrow.Buffer | None
    """``results.jsonl``'s bytes, for callers that scan them besides parsing (push's secret check)."""
    return _results_buffer(run_dir)


def read_results_table(run_dir: Path, data=None):  # -> pyarrow.Table
    """``results.jsonl`` (or its bytes ``data``) as an Arrow table.

    Arrow's JSON reader handles 100,000 rows in a second or two; a file it cannot read
    (typically a torn last line left by a killed run) goes through :func:`read_results`,
    which skips such lines.
    """
    import pyarrow as pa
    import pyarrow.json as pj

    schema = result_arrow_schema()
    data = data if data is not None else _results_buffer(run_dir)
    if data is None:
        return schema.empty_table()
    try:
        table = pj.read_json(
            pa.BufferReader(data),
            parse_options=pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"),
        )
        if table.schema != schema:
            table = table.select(schema.names).cast(schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        rows = [r.to_dict() for r in read_results(run_dir)]
        table = pa.Table.from_pylist(rows, schema=schema)
    return table


def rows_from_table(table) -> list[ResultRow]:
    """Result rows of a ``results`` table (a pushed shard read back)."""
    return [ResultRow.from_dict(r) for r in table.to_pylist()]


# --------------------------------------------------------------------------- runs table
def _json_columns(cls: type) -> set[str]:
    hints = typing.get_type_hints(cls)
    return {
        f.name
        for f in fields(cls)
        if dict in (typing.get_origin(hints[f.name]), *map(typing.get_origin, typing.get_args(hints[f.name])))
    }


def _to_record(obj: Any) -> dict[str, Any]:
    """A dataclass as a parquet row: dict fields become JSON text, nested dataclasses recurse."""
    out: dict[str, Any] = {}
    as_json = _json_columns(type(obj))
    for f in fields(obj):
        value = getattr(obj, f.name)
        if f.name in as_json:
            value = None if value is None else json.dumps(value, sort_keys=True)
        elif isinstance(value, list) and value and is_dataclass(value[0]):
            value = [_to_record(v) for v in value]
        out[f.name] = value
    return out


def summary_record(summary: RunSummary) -> dict[str, Any]:
    """The ``runs`` table row of ``summary``."""
    record = _to_record(summary)
    for c in record["conditions"]:
        c["pass_at_k"] = c["pass_at_k"] or "{}"
    record["params"] = record["params"] or "{}"
    return record


def summary_from_record(row: dict[str, Any]) -> RunSummary:
    """A ``runs`` table row read back from parquet, as the :class:`RunSummary` it was."""
    d = dict(row)
    if isinstance(d.get("holdout"), str):
        d["holdout"] = json.loads(d["holdout"])
    d["conditions"] = [
        dict(c, pass_at_k=json.loads(c["pass_at_k"]) if isinstance(c.get("pass_at_k"), str) else c.get("pass_at_k") or {})
        for c in d.get("conditions") or []
    ]
    d["lifts"] = [dict(x) for x in d.get("lifts") or []]
    return RunSummary.from_dict(d)


# --------------------------------------------------------------------------- results shard
def table_parquet_bytes(table) -> bytes:
    """Deterministic parquet bytes of an Arrow table (same rows, same bytes).

    Chunks are combined first, so a table parsed from JSON (many chunks) and one built
    from rows in memory (one chunk) give the very same file.
    """
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(
        table.combine_chunks(), buf, compression="zstd", row_group_size=ROW_GROUP_SIZE, write_statistics=True
    )
    return buf.getvalue()


def rows_table(rows: list[ResultRow]):  # -> pyarrow.Table
    """``rows`` as a ``results`` table, column by column (no per-row dicts)."""
    import pyarrow as pa

    schema = result_arrow_schema()
    return pa.Table.from_arrays(
        [pa.array([getattr(r, f.name) for r in rows], type=f.type) for f in schema], schema=schema
    )


def write_results_parquet(run_dir: Path, rows: list[ResultRow]) -> None:
    """Write the run's ``results`` shard from the rows the runner holds, in file order.

    ``rows`` must be in ``results.jsonl``'s order: then the bytes equal what push would
    build from the file, and push uploads them without parsing 100 MB of JSON again.
    """
    write_bytes_atomic(Path(run_dir) / RESULTS_PARQUET, table_parquet_bytes(redact_table(rows_table(rows))))


def _jsonl_rows(raw) -> int:  # raw: pyarrow.Buffer
    """Lines in ``results.jsonl`` (one per row): a byte count, no parsing."""
    return bytes(raw).count(b"\n")


def _whole(raw):  # -> pyarrow.Array of one large_binary value viewing ``raw`` (no copy)
    import pyarrow as pa

    offsets = pa.array([0, raw.size], type=pa.int64()).buffers()[1]
    return pa.Array.from_buffers(pa.large_binary(), 1, [None, offsets, raw])


def read_results_shard(run_dir: Path, raw=None) -> bytes | None:
    """The runner's ``results.parquet`` when it still matches ``results.jsonl``; else ``None``.

    It is current when written after the file's last change (any append or compaction
    moves the file's time past it) under this version's schema; when both times are equal
    (one clock tick) its row count must match the file's lines too. A resumed or killed
    run, or an older run without it, fails that and push falls back to reading the JSON.
    ``raw`` is ``results.jsonl``'s bytes when the caller has them already.
    """
    import pyarrow.parquet as pq

    shard, jsonl = Path(run_dir) / RESULTS_PARQUET, Path(run_dir) / RESULTS_FILE
    try:
        shard_time, jsonl_time = shard.stat().st_mtime_ns, jsonl.stat().st_mtime_ns
        if shard_time < jsonl_time:
            return None
        data = shard.read_bytes()
        meta = pq.read_metadata(io.BytesIO(data))
    except (OSError, ValueError):  # missing, unreadable, not parquet (ArrowInvalid)
        return None
    if not meta.schema.to_arrow_schema().equals(result_arrow_schema()):
        return None
    if shard_time > jsonl_time:
        return data
    raw = raw if raw is not None else _results_buffer(run_dir)
    return data if raw is not None and _jsonl_rows(raw) == meta.num_rows else None


#: Literal text every token-shaped match of :func:`redact` contains (its patterns start so).
_TOKEN_MARKERS = ("hf_", "sk-")
#: A JSON escape of an ASCII character (``\\u0068`` for ``h``) could hide a marker from a
#: scan of the raw file; Python's ``json`` only writes these for control characters.
_ASCII_ESCAPE = r"\\u00[0-7]"


def may_hold_secret(raw) -> bool:
    """False only when the raw ``results.jsonl`` bytes certainly hold nothing to mask.

    One RE2 pass over the raw bytes (Arrow's regex kernel, no Python loop) lets the common
    case, a run with no token-shaped text at all, skip the per-cell scan entirely.
    """
    import pyarrow.compute as pc

    if raw is None:
        return False
    needles = [re.escape(m) for m in _TOKEN_MARKERS] + ["(?i:bearer)", _ASCII_ESCAPE]
    for value in secret_values():
        needles += [re.escape(value), re.escape(json.dumps(value)[1:-1])]
    return bool(pc.match_substring_regex(_whole(raw), "|".join(needles))[0].as_py())


def redact_table(table):  # -> pyarrow.Table
    """``table`` with :func:`redact` applied to every string cell that could hold a secret.

    A cell can only change under ``redact`` if it contains a known secret value or one of
    the literal starts of its patterns (``hf_``, ``sk-``, ``bearer``). Such cells are found
    with one vectorised search per string column; only they go through ``redact`` itself.
    The result equals redacting every cell, at a small fraction of the cost on
    100,000-row runs; a table with nothing to mask is returned as it is.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if table.num_rows == 0:
        return table
    needles = "|".join([re.escape(m) for m in (*_TOKEN_MARKERS, *secret_values())] + ["(?i:bearer)"])
    columns = list(table.columns)
    changed = False
    for i, fld in enumerate(table.schema):
        if not pa.types.is_string(fld.type):
            continue
        hit = pc.fill_null(pc.match_substring_regex(columns[i], needles), False)
        rows = pc.indices_nonzero(hit).to_pylist()
        if not rows:
            continue
        values = columns[i].to_pylist()
        for r in rows:
            values[r] = redact(values[r])
        columns[i] = pa.chunked_array([pa.array(values, type=fld.type)])
        changed = True
    return pa.Table.from_arrays(columns, schema=table.schema) if changed else table
