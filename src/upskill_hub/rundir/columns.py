"""Parquet columns derived from the run's dataclasses, and the ``runs`` table's rows.

A new field of :class:`ResultRow` or :class:`RunSummary` becomes a new column without a
second declaration; dicts become JSON text so the schema stays flat for the viewer.
"""

from __future__ import annotations

import functools
import json
import types
import typing
from dataclasses import fields, is_dataclass
from typing import Any

from upskill_hub._util import safejson
from upskill_hub.rundir.schema import ResultRow, RunSummary, record_problem


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


@functools.cache  # schemas are immutable; deriving one walks the type hints (about a millisecond)
def arrow_struct(cls: type):  # -> pyarrow.StructType
    import pyarrow as pa

    return pa.struct(_arrow_fields(cls))


@functools.cache
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


def rows_from_table(table) -> list[ResultRow]:
    """Result rows of a ``results`` table (a pushed shard read back)."""
    return [ResultRow.from_dict(r) for r in table.to_pylist()]


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
    """A ``runs`` table row read back from parquet, as the :class:`RunSummary` it was.

    A Hub table is anyone's to write: its figures are checked as ``summary.json``'s are
    (:func:`record_problem`: types, finite numbers, shares in [0, 1], lifts in [-1, 1],
    counts not negative), so a pass rate of 7.0 or a lift of 1e308 is a ``ValueError``
    naming the field, never a "700 %" or a "+inf pts" shown or republished.
    """
    d = dict(row)
    if isinstance(d.get("holdout"), str):
        d["holdout"] = safejson.loads(d["holdout"])  # a pulled table: bounded nesting
    d["conditions"] = [
        dict(
            c,
            pass_at_k=safejson.loads(c["pass_at_k"])
            if isinstance(c.get("pass_at_k"), str)
            else c.get("pass_at_k") or {},
        )
        for c in d.get("conditions") or []
    ]
    d["lifts"] = [dict(x) for x in d.get("lifts") or []]
    d["triggers"] = [dict(x) for x in d.get("triggers") or []]
    if (problem := record_problem(RunSummary, d)) is not None:
        raise ValueError(f"not a valid run summary ({problem})")
    return RunSummary.from_dict(d)
