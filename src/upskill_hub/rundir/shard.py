"""The ``results`` shard: rows as Arrow and parquet, the runner's ``results.parquet``, masking.

Push uploads the bytes made here; the runner writes the same bytes when a run ends, with
a record of what they were built from and checked for, so a push of a current run reads
neither the JSON nor the rows: it checks the record and uploads.
"""

from __future__ import annotations

import contextlib
import io
import json
import mmap
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from upskill_hub._util import limits
from upskill_hub._util.fsutil import FileRefused, kind_of, too_big, write_bytes_atomic
from upskill_hub._util.redact import redact, secret_values
from upskill_hub.errors import PathError
from upskill_hub.rundir import files as _files
from upskill_hub.rundir.columns import result_arrow_schema
from upskill_hub.rundir.files import (
    RESULTS_FILE,
    RESULTS_PARQUET,
    longest_line,
    read_results,
    read_run_file,
    too_long_row,
)
from upskill_hub.rundir.schema import ResultRow, required_fields
from upskill_hub.rundir.shardcheck import ShardRecord, jsonl_stamp, read_record, write_record

#: Rows per parquet row group: small enough for the dataset viewer to page through.
ROW_GROUP_SIZE = 10_000


def read_results_raw(run_dir: Path):  # -> pyarrow.Buffer | None
    """``results.jsonl``'s bytes, memory-mapped (``None`` when absent or empty).

    One mapping serves the JSON parse, the secret scan and the line count. Opened like
    every run-folder file (:func:`.files.read_run_file`): never through a symlink, never a
    FIFO or a device, never over ``UPSKILL_MAX_RESULTS_MB``; and no line may be longer than
    :data:`.files.MAX_ROW_BYTES`, checked before Arrow builds a single buffer from it.
    """
    import pyarrow as pa

    path = Path(run_dir) / RESULTS_FILE
    if not os.path.lexists(path):
        return None
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if os.path.islink(path):
            raise FileRefused(path, "is a symlink; run-folder files are never followed") from None
        raise FileRefused(path, f"cannot be read ({exc.strerror or exc})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FileRefused(path, f"is {kind_of(st.st_mode)}; only regular files are read")
        if st.st_size == 0:
            return None
        if st.st_size > limits.MAX_RESULTS_BYTES:
            raise FileRefused(
                path,
                too_big(st.st_size, limits.MAX_RESULTS_BYTES).replace(
                    "UPSKILL_MAX_FILE_MB", "UPSKILL_MAX_RESULTS_MB"
                ),
            )
        mapped = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    except OSError as exc:
        raise FileRefused(path, f"cannot be read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    number, longest = longest_line(mapped)
    if longest > _files.MAX_ROW_BYTES:
        mapped.close()
        raise PathError(path, f"line {number} {too_long_row(longest)}")
    # Zero-copy: the buffer keeps the mapping alive for as long as it is used.
    return pa.py_buffer(mapped)


def read_results_table(run_dir: Path, data=None, *, strict: bool = False):  # -> pyarrow.Table
    """``results.jsonl`` (or its bytes ``data``) as an Arrow table.

    Arrow's JSON reader handles 100,000 rows in a second or two; a file it cannot read
    (typically a torn last line left by a killed run, or a value of the wrong type) goes
    through :func:`read_results`, which skips such lines, or with ``strict`` (push)
    refuses the first one that is not a torn last line, naming it. ``strict`` also checks
    the table Arrow built (:func:`results_table_problem`: finite numbers, no missing
    field, one row per call), finding the exact line again when it is not.
    """
    import pyarrow as pa
    import pyarrow.json as pj

    schema = result_arrow_schema()
    data = data if data is not None else read_results_raw(run_dir)
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
        rows = [r.to_dict() for r in read_results(run_dir, strict=strict)]
        return pa.Table.from_pylist(rows, schema=schema)  # strict rows are checked: this cannot fail
    if strict and (problem := results_table_problem(table)) is not None:
        read_results(run_dir, strict=True)  # names the line
        raise PathError(Path(run_dir) / RESULTS_FILE, problem)
    return table


#: The columns of a call's key (:attr:`ResultRow.key`), and those a row cannot lack.
_KEY_COLUMNS = ("model", "mode", "condition", "case_id", "repeat")
_REQUIRED = required_fields(ResultRow)


def results_table_problem(table) -> str | None:
    """Why a ``results`` table cannot be published, or ``None``: checked column by column.

    A value missing where a row needs one, NaN or an infinity in a number column (a cost,
    a latency), or two rows for the same call (model, mode, condition, case, repeat).
    Vectorised, so a 100,000-row run costs milliseconds; types are the schema's already.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    names = set(table.schema.names)
    for name in _REQUIRED:
        if name in names and table.column(name).null_count:
            return f"a row has no {name!r}"
    for fld in table.schema:
        if pa.types.is_floating(fld.type):
            col = table.column(fld.name)
            bad = pc.sum(pc.invert(pc.is_finite(col))).as_py() if len(col) else 0
            if bad:
                return f"{bad} row(s) hold NaN or Infinity in {fld.name!r}"
    if not set(_KEY_COLUMNS) <= names or table.num_rows < 2:
        return None
    keys = table.select(list(_KEY_COLUMNS))
    keys = keys.set_column(1, "mode", pc.fill_null(keys.column("mode"), "inject"))
    counts = keys.group_by(list(_KEY_COLUMNS)).aggregate([([], "count_all")])
    if len(counts) != table.num_rows:
        return f"{table.num_rows - len(counts)} row(s) repeat a call already in the run"
    return None


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
    """Write the run's ``results`` shard from the rows the runner holds, in file order, and its record.

    ``rows`` must be in ``results.jsonl``'s order: then the bytes equal what push would
    build from the file, and push uploads them without reading the JSON again. The record
    (:mod:`.shardcheck`) notes the jsonl's size and time and the secrets masked now, so
    push can tell, from a ``stat`` and a few hashes, that the bytes are current and clean.
    """
    stamp = jsonl_stamp(run_dir)  # the runner holds the lock: nothing appends meanwhile
    values = secret_values()
    data = table_parquet_bytes(redact_table(rows_table(rows)))
    write_bytes_atomic(Path(run_dir) / RESULTS_PARQUET, data)
    write_record(run_dir, ShardRecord.new(stamp, data, values))


@dataclass
class RunnerShard:
    """The runner's ``results.parquet``, found current by its record (see :func:`read_results_shard`)."""

    data: bytes
    #: The rows masked again, when a secret unknown at run time had to be masked now
    #: (a ``pyarrow.Table``; ``data`` is then not what push uploads).
    masked: Any = None


def read_results_shard(run_dir: Path) -> RunnerShard | None:
    """The runner's ``results.parquet`` when its record shows it still matches ``results.jsonl``.

    Reads the small record, ``stat``s the jsonl and reads the parquet (about 1.5 MB for
    100,000 rows): no work proportional to the JSON. ``None`` (so push reads the JSON,
    as for runs made before runs wrote the shard) when the parquet or its record is
    missing, unreadable or of another schema, or the jsonl changed since (a resumed run,
    an append). When a secret value is set now that was not masked at run time, the
    rows are checked again and :attr:`RunnerShard.masked` holds them if anything had to
    be masked; if nothing had, the record notes the new value so the next push skips
    the check (best effort: a read-only run folder only costs the check again).
    """
    import pyarrow.parquet as pq

    record = read_record(run_dir)
    if record is None:
        return None
    try:
        data = read_run_file(
            Path(run_dir) / RESULTS_PARQUET, limits.MAX_RESULTS_BYTES
        )  # never a FIFO, a symlink
        if not record.describes(jsonl_stamp(run_dir), data):
            return None
        if not pq.read_schema(io.BytesIO(data)).equals(result_arrow_schema()):
            return None
        values = secret_values()
        if record.covers(values):
            return RunnerShard(data)
        table = pq.read_table(io.BytesIO(data))
    except (OSError, ValueError, FileRefused):  # unreadable, not parquet (ArrowInvalid), not a regular file
        return None
    masked = redact_table(table)
    if masked is not table:
        return RunnerShard(data, masked)
    with contextlib.suppress(OSError):
        write_record(run_dir, record.adding(values))
    return RunnerShard(data)


def shard_run_ids(data: bytes) -> set[str] | None:
    """The distinct ``run_id`` values of a ``results`` parquet, read from its statistics alone.

    A shard is written with per-row-group min/max statistics: when every row group has
    ``min == max`` and no nulls, those values are all the run ids there are, found without
    decompressing a single page. ``None`` when the statistics cannot tell (absent, or a row
    group holding several ids): the caller reads the column then.
    """
    import pyarrow.parquet as pq

    meta = pq.read_metadata(io.BytesIO(data))
    col = meta.schema.names.index("run_id")
    ids: set[str] = set()
    for i in range(meta.num_row_groups):
        stats = meta.row_group(i).column(col).statistics
        if stats is None or not stats.has_min_max or stats.null_count != 0 or stats.min != stats.max:
            return None
        ids.add(stats.min)
    return ids


def _whole(raw):  # -> pyarrow.Array of one large_binary value viewing ``raw`` (no copy)
    import pyarrow as pa

    offsets = pa.array([0, raw.size], type=pa.int64()).buffers()[1]
    return pa.Array.from_buffers(pa.large_binary(), 1, [None, offsets, raw])


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
        masked = 0
        for r in rows:
            clean = redact(values[r])
            masked += clean != values[r]
            values[r] = clean
        if masked:  # a cell with only a marker ("hf_hub") or an earlier mask needs no new column
            columns[i] = pa.chunked_array([pa.array(values, type=fld.type)])
            changed = True
    return pa.Table.from_arrays(columns, schema=table.schema) if changed else table
