"""Load a skills-and-results dataset (Hub repo or local folder) for the Space, with caching.

The layout is the one ``upskill-hub push`` writes (see :mod:`upskill_hub.hub.dataset_repo`):
``data/skills/*.parquet``, ``data/results/*.parquet`` (and ``data/results/<run_id>/*.parquet``
for runs sharded over Jobs), ``data/runs/*.parquet`` and the skills' files under ``skills/<name>/``.

Why this shape:

* Only the table shards (``data/<table>/*.parquet``) and the card are downloaded up
  front, and only once the repo's listing shows they fit the limits of
  :mod:`upskill_hub.space.intake`; parquet footers and the decompressed batches are
  measured as they are read. A library of 1,000 skills has thousands of skill files a
  visitor never opens; those come per skill, on demand, from the same commit.
* A loaded library is kept in memory keyed by ``(repo, commit sha)``, at most
  ``MAX_CACHED_LIBRARIES`` of them and ``MAX_CACHED_BYTES`` together: a page load asks the
  Hub for the current sha (one small request) and reuses everything, aggregates included,
  while the repo has not changed. The downloaded files sit in the ordinary HF cache.
* Only the result columns the aggregates need are read (not the model outputs), so
  100,000 rows load in a fraction of a second.
* Tokens: the operator's repo (``SKILLS_REPO``) is read with the Space's own token; any
  other repo a visitor types is read anonymously, so a visitor can never use the Space's
  token to read a private repo of its owner.
"""

from __future__ import annotations

import functools
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from upskill_hub._util.limits import env_int
from upskill_hub.errors import UpskillError

# The repo layout is hub/layout.py's (a run sharded over Hugging Face Jobs has one file per
# Job under data/results/<run_id>/: SHARDED_RESULTS_GLOB).
from upskill_hub.hub.layout import (
    RESULTS_GLOB,
    ROUTING_GLOB,
    RUNS_GLOB,
    SECURITY_COLUMNS,
    SECURITY_GLOB,
    SHARDED_RESULTS_GLOB,
    SKILLS_GLOB,
)
from upskill_hub.space.intake import MB, ReadBudget, plan_download

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from upskill_hub.space.aggregate import Aggregates
    from upskill_hub.space.security import SkillScan


#: Result columns the browse views need; model outputs and assertion details stay on disk.
RESULT_COLUMNS = (
    "run_id",
    "timestamp",
    "skill_name",
    "skill_version",
    "model",
    "provider",
    "condition",
    "case_id",
    "repeat",
    "passed",
    "error",
    "cached",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "mode",  # catalog answers are shown apart from injected ones (null in older shards: inject)
)
SKILL_COLUMNS = (
    "name",
    "description",
    "version",
    "license",
    "frontmatter",
    "body",
    "token_estimate",
    "n_cases",
    "files",
)


@dataclass
class Library:
    """A loaded dataset: tables plus the aggregates every view reads."""

    source: str  # "owner/name" or a local folder
    revision: str | None  # commit sha on the Hub, None for a local folder
    root: Path  # local folder holding data/...
    skills: pd.DataFrame
    results: pd.DataFrame
    runs: pd.DataFrame
    aggregates: Aggregates
    is_local: bool = False
    #: Decompressed bytes its tables took when read (what the cache's byte budget counts).
    nbytes: int = 0
    token: str | bool | None = None  # what to send when fetching skill files (never shown)
    #: Every file of the repo at ``revision`` with its size (Hub only): skill downloads are measured first.
    file_sizes: dict[str, int | None] = field(default_factory=dict, repr=False)
    _files_cache: dict[str, Path] = field(default_factory=dict, repr=False)
    #: The ``routing`` table (empty when the repo has none).
    routing: Any = None
    #: Views computed for this commit (figures, leaderboard pages): the data cannot change under them.
    memo: dict[Any, Any] = field(default_factory=dict, repr=False)
    #: What reading the tables left out (values of the wrong type read as missing), shown with the library.
    notes: list[str] = field(default_factory=list)
    #: Skill name -> its scan (the ``security`` table); a skill not in it was not scanned.
    security: dict[str, SkillScan] = field(default_factory=dict)

    def cached(self, key: Any, compute):
        """``compute()`` once per key for this library (bounded; figures are not small).

        Handlers run concurrently: the value is returned from hand, not read back from
        ``memo``, which another thread may just have cleared.
        """
        value = self.memo.get(key, _MISSING)
        if value is _MISSING:
            value = compute()
            if len(self.memo) > 256:
                self.memo.clear()
            self.memo[key] = value
        return value

    @property
    def skill_names(self) -> list[str]:
        return list(self.skills["name"])

    def skill_row(self, name: str) -> dict[str, Any]:
        """The ``skills`` table row of ``name`` as a dict; ``UpskillError`` if unknown."""
        idx = self.aggregates.skill_index.get(name)
        if idx is None:
            raise UpskillError(f"skill {name!r} is not in {self.source}")
        return self.skills.iloc[idx].to_dict()

    def skill_dir(self, name: str) -> Path:
        """Local folder with the skill's files (downloaded on first use, same commit)."""
        from upskill_hub._util.fsutil import check_relpath

        self.skill_row(name)  # unknown names never reach the file system or the Hub
        check_relpath(name)
        if name in self._files_cache:
            return self._files_cache[name]
        if self.is_local:
            path = self.root / "skills" / name
        else:
            from huggingface_hub import snapshot_download

            from upskill_hub.space.intake import check_skill_download

            check_skill_download(self.source, name, self.file_sizes)
            try:
                local = snapshot_download(
                    self.source,
                    repo_type="dataset",
                    revision=self.revision,
                    allow_patterns=[f"skills/{name}/**"],
                    token=self.token,
                )
            except Exception as exc:  # network / auth: one line for the UI
                raise UpskillError(f"cannot download the files of skill {name!r}: {_one_line(exc)}") from None
            path = Path(local) / "skills" / name
        self._files_cache[name] = path
        return path


def _one_line(exc: BaseException) -> str:
    from upskill_hub._util.redact import redact

    text = str(exc).strip().splitlines()
    return redact(text[0] if text else type(exc).__name__)


# --------------------------------------------------------------------------- reading tables
def _read_parquets(
    files: list[Path],
    columns: tuple[str, ...] | None,
    schema=None,
    *,
    budget: ReadBudget | None = None,
    table: str = "",
    notes: list[str] | None = None,
) -> pd.DataFrame:
    """Read and stack parquet files, keeping ``columns`` (older shards may lack some).

    With the table's known ``schema`` the files are scanned as one ``pyarrow.dataset``
    (multi-threaded; a column missing from a shard reads as nulls): 1,000 one-row skill
    shards load several times faster than file by file. A shard that does not fit the
    schema falls back to the file-by-file path, which unifies what it finds (pandas stacks
    shards whose types arrow cannot merge); every value is then checked against the schema
    (:func:`conform`): a value of the wrong type reads as missing, and ``notes`` says so.

    With a ``budget`` the files' footers are checked first, and the data is read in
    batches whose real decompressed size counts against it too (a footer can lie): a
    hostile shard stops the load after one batch, not after filling memory.
    """
    import pandas as pd
    import pyarrow as pa
    import pyarrow.dataset as pads
    import pyarrow.parquet as pq

    files = sorted(files)
    if not files:
        return pd.DataFrame({c: [] for c in columns or ()})
    if budget is not None:
        budget.take(files, columns, table)
    table_out = None
    if schema is not None:
        try:
            cols = [c for c in columns if c in schema.names] if columns else None
            dataset = pads.dataset([str(f) for f in files], format="parquet", schema=schema)
            if not all(_types_fit(frag.physical_schema, schema) for frag in dataset.get_fragments()):
                raise pa.ArrowTypeError(
                    "a shard's column types differ from the table's"
                )  # arrow would cast "0.5"
            batches = dataset.to_batches(columns=cols)
            table_out = pa.Table.from_batches(_metered(batches, budget, table), schema=_project(schema, cols))
        except (OSError, pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            table_out = None
    fits = table_out is not None
    if table_out is None:
        tables = []
        for f in files:
            try:
                pf = pq.ParquetFile(f)
                names = pf.schema_arrow.names
                cols = [c for c in columns if c in names] if columns else None
                batches = list(_metered(pf.iter_batches(columns=cols), budget, table))
                tables.append(pa.Table.from_batches(batches, schema=_project(pf.schema_arrow, cols)))
            except (OSError, pa.ArrowInvalid) as exc:
                raise UpskillError(f"{f.name}: not a readable parquet file ({_one_line(exc)})") from None
        try:
            table_out = pa.concat_tables(tables, promote_options="permissive")
        except (
            pa.ArrowInvalid,
            pa.ArrowTypeError,
        ):  # shards disagree on a column's type: let pandas stack them
            table_out = None
    if table_out is not None:
        df = table_out.to_pandas()
    else:
        df = pd.concat([t.to_pandas() for t in tables], ignore_index=True)
    if schema is not None and not fits:  # read as it is: check each value against the schema
        df = conform(df, schema, table, notes)
    for c in columns or ():
        if c not in df.columns:
            df[c] = None
    return df


def _types_fit(physical, expected) -> bool:
    """Whether a shard's own schema reads as ``expected`` without turning text into numbers.

    The dataset scan casts each shard to the table's schema, and arrow casts the text
    ``"0.5"`` to the number 0.5 (and fails on ``"x"``): a string column where a figure belongs
    must take the checked path (:func:`conform`) instead, so one shard reads the same
    whatever the text holds. Widening (int to float), nulls and absent fields fit.
    """
    import pyarrow as pa

    def fits(p, e) -> bool:
        if p == e or pa.types.is_null(p):
            return True
        if pa.types.is_dictionary(p):
            return fits(p.value_type, e)
        numeric = (pa.types.is_integer, pa.types.is_floating)
        if any(t(p) for t in numeric) and any(t(e) for t in numeric):
            return True
        strings = (pa.types.is_string, pa.types.is_large_string)
        if any(t(p) for t in strings) and any(t(e) for t in strings):
            return True
        lists = (pa.types.is_list, pa.types.is_large_list)
        if any(t(p) for t in lists) and any(t(e) for t in lists):
            return fits(p.value_type, e.value_type)
        if pa.types.is_struct(p) and pa.types.is_struct(e):
            names = {f.name: f.type for f in e}
            return all(fits(f.type, names[f.name]) for f in p if f.name in names)
        return False

    names = {f.name: f.type for f in expected}
    return all(fits(f.type, names[f.name]) for f in physical if f.name in names)


def conform(df: pd.DataFrame, schema, table: str, notes: list[str] | None = None) -> pd.DataFrame:
    """``df`` with every value the table's ``schema`` types wrongly read as missing, and a note saying so.

    A visitor's table is anyone's data: a shard that does not fit the schema is read file by
    file, as it is, and a benchmark figure may then arrive as the text ``"0.5"``. Checked here,
    where the table is read, every view and formatter downstream gets a number or ``None``
    (in lists of structs too, field by field), never a string where a number belongs.
    """
    import pandas as pd

    wrong: dict[str, int] = {}
    out = df
    for name in schema.names:
        if name not in df.columns:
            continue
        typ = schema.field(name).type
        bad: dict[str, int] = {}
        values = list(df[name])
        fixed = [_fit(v, typ, name, bad) for v in values]
        if bad or any(a is not b for a, b in zip(fixed, values, strict=True)):  # a NaN list became None
            out = out if out is not df else df.copy()
            out[name] = pd.Series(fixed, index=df.index)
            for k, n in bad.items():
                wrong[k] = wrong.get(k, 0) + n
    _note(notes, table, "of the wrong type", wrong)
    return out


def _note(notes: list[str] | None, table: str, why: str, counts: dict[str, int]) -> None:
    """Add ``"<table> table: N values <why> read as missing: a.b (n), …"`` to ``notes`` (nothing when none)."""
    if not counts or notes is None:
        return
    shown = ", ".join(f"{k} ({n:,})" for k, n in list(counts.items())[:4]) + (
        ", …" if len(counts) > 4 else ""
    )
    notes.append(f"{table} table: {sum(counts.values()):,} values {why} read as missing: {shown}")


def _fit(value: Any, typ, path: str, bad: dict[str, int]) -> Any:
    """``value`` when it has the Python type ``typ`` (an arrow type) reads as; else ``None``, counted in ``bad``."""
    import numbers

    import numpy as np
    import pyarrow as pa

    if value is None or (isinstance(value, float) and value != value):
        # A null stays a null; pandas stacks a shard without the column as NaN, which is None
        # where a list or text belongs (views take len() of a list cell).
        return value if pa.types.is_integer(typ) or pa.types.is_floating(typ) else None
    ok: bool
    if pa.types.is_integer(typ) or pa.types.is_floating(typ):
        ok = isinstance(value, numbers.Real) and not isinstance(value, bool)  # numpy's bool is no Real
    elif pa.types.is_boolean(typ):
        ok = isinstance(value, (bool, np.bool_))
    elif pa.types.is_string(typ) or pa.types.is_large_string(typ):
        ok = isinstance(value, str)
    elif pa.types.is_list(typ) or pa.types.is_large_list(typ):
        if not isinstance(value, (list, tuple)) and type(value).__name__ != "ndarray":
            ok = False
        else:
            return [_fit(v, typ.value_type, path, bad) for v in value]
    elif pa.types.is_struct(typ):
        if not isinstance(value, dict):
            ok = False
        else:
            return {f.name: _fit(value.get(f.name), f.type, f"{path}.{f.name}", bad) for f in typ}
    else:
        return value  # timestamps, binary: nothing a formatter reads as a number
    if not ok:
        bad[path] = bad.get(path, 0) + 1
        return None
    return value


#: One field of a range plan: (name, "num", its metadata) for a figure with a ``range``;
#: (name, "one" or "list", the nested plan) for a dataclass or a list of them.
_PlanItem = tuple[str, str, Any]


@functools.cache
def _range_plan(cls: type) -> tuple[_PlanItem, ...]:
    """The fields of dataclass ``cls`` (nested ones too) whose figures have a ``range``, from their metadata.

    Derived from the dataclasses themselves (:mod:`upskill_hub.rundir.schema` declares the
    ranges once), computed once per class. ``X | None`` is ``X``; dict fields are JSON text
    in the tables and carry no figure to check.
    """
    import types
    import typing
    from dataclasses import fields, is_dataclass

    hints = typing.get_type_hints(cls)
    plan: list[_PlanItem] = []
    for f in fields(cls):
        tp = hints[f.name]
        if typing.get_origin(tp) in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            tp = args[0] if len(args) == 1 else None
        if typing.get_origin(tp) is list and is_dataclass(item := (typing.get_args(tp) or (None,))[0]):
            if sub := _range_plan(item):
                plan.append((f.name, "list", sub))
        elif isinstance(tp, type) and is_dataclass(tp):
            if sub := _range_plan(tp):
                plan.append((f.name, "one", sub))
        elif tp in (int, float) and "range" in f.metadata:
            plan.append((f.name, "num", f.metadata))
    return tuple(plan)


def in_range(df: pd.DataFrame, cls: type, table: str, notes: list[str] | None = None) -> pd.DataFrame:
    """``df`` with every figure outside the range its ``cls`` field declares read as missing, and a note.

    A visitor's table is anyone's data: a ``runs`` row whose benchmark pass rate is 7.0 would
    show as 700 %, a trigger recall of 3.0 as 300 %, a lift of 9.0 as +900 pts. The range is
    the one :func:`upskill_hub.rundir.schema.range_problem` applies to run folders (NaN is a
    null and stays; an infinity is out of every range, as run folders refuse it too).
    Checked here, where the table is read, every view downstream gets a figure in range or
    ``None``, top-level columns and fields inside lists of structs alike.

    Cost: every figure the plan names is visited once; the ``runs`` table holds one row per
    run, so the walk is small beside reading the table (and the result is cached per commit).
    """
    import pandas as pd

    bad: dict[str, int] = {}
    out = df
    for name, kind, sub in _range_plan(cls):
        if name not in df.columns:
            continue
        before = sum(bad.values())
        fixed = [_check_range(v, kind, sub, name, bad) for v in df[name]]
        if sum(bad.values()) != before:
            out = out if out is not df else df.copy()
            out[name] = pd.Series(fixed, index=df.index, dtype=object)
    _note(notes, table, "out of range", bad)
    return out


def _figure_ok(value: Any, meta) -> bool:
    """Whether a numeric ``value`` lies in the ``range`` of ``meta`` (finite, and ``range_problem`` finds nothing)."""
    import math

    from upskill_hub.rundir.schema import range_problem

    v = float(value)
    return math.isfinite(v) and range_problem(v, meta) is None


def _check_range(value: Any, kind: str, sub: Any, path: str, bad: dict[str, int]) -> Any:
    """``value`` checked against its plan item; an out-of-range figure becomes ``None``, counted in ``bad``.

    Containers are copied only when something inside them changes.
    """
    import numbers

    if kind == "num":
        if not isinstance(value, numbers.Real) or isinstance(value, bool) or type(value).__name__ == "bool_":
            return value  # not a figure (conform already made wrong types None)
        if value != value or _figure_ok(value, sub):
            return value  # NaN is how pandas spells a null
        bad[path] = bad.get(path, 0) + 1
        return None
    if kind == "one":
        if not isinstance(value, dict):
            return value
        out = value
        for name, k, s in sub:
            if name in value:
                new = _check_range(value[name], k, s, f"{path}.{name}", bad)
                if new is not value[name]:
                    out = out if out is not value else dict(value)
                    out[name] = new
        return out
    if not isinstance(value, (list, tuple)) and type(value).__name__ != "ndarray":
        return value  # a null list
    items = list(value)
    fixed = [_check_range(v, "one", sub, path, bad) for v in items]
    return fixed if any(a is not b for a, b in zip(fixed, items, strict=True)) else value


def _project(schema, cols: list[str] | None):
    """``schema`` restricted to ``cols`` (in that order); all of it when ``cols`` is None."""
    import pyarrow as pa

    if cols is None:
        return schema
    return pa.schema([schema.field(c) for c in cols])


def _metered(batches, budget: ReadBudget | None, table: str):
    """Pass record batches through, counting their real size against ``budget``."""
    for batch in batches:
        if budget is not None:
            budget.spend(batch.nbytes, table)
        yield batch


def _normalise_skills(df: pd.DataFrame) -> pd.DataFrame:
    """Fill what older or hand-made skill rows lack, so every view can rely on the columns."""
    import numpy as np

    from upskill_hub.skill import estimate_tokens

    df = df.copy()
    df["name"] = df["name"].astype(str)
    df["description"] = df["description"].fillna("").astype(str)
    df["version"] = df["version"].fillna("").astype(str)
    df["body"] = df["body"].fillna("").astype(str)
    tokens = df["token_estimate"]
    missing = tokens.isna()
    if missing.any():
        df.loc[missing, "token_estimate"] = [estimate_tokens(b) for b in df.loc[missing, "body"]]
    df["token_estimate"] = df["token_estimate"].astype(np.int64)
    df["n_cases"] = df["n_cases"].fillna(0).astype(np.int64)
    df = df.drop_duplicates("name", keep="last").sort_values("name", kind="stable").reset_index(drop=True)
    return df


def load_library_dir(root: str | Path, *, source: str | None = None, revision: str | None = None) -> Library:
    """Load the tables under ``root`` (a local copy of the dataset layout) and aggregate them."""
    from upskill_hub.space.aggregate import compute_aggregates

    root = Path(root)
    if not (root / "data").is_dir():
        raise UpskillError(
            f"{source or root} has no data/ folder: is it a dataset made by 'upskill-hub push'?"
        )
    from upskill_hub.hub.dataset_repo import skills_arrow_schema
    from upskill_hub.rundir import result_arrow_schema, runs_arrow_schema
    from upskill_hub.rundir.schema import RunSummary

    budget = ReadBudget(source or str(root))
    notes: list[str] = []
    skills = _normalise_skills(
        _read_parquets(
            list(root.glob(SKILLS_GLOB)),
            SKILL_COLUMNS,
            skills_arrow_schema(),
            budget=budget,
            table="skills",
            notes=notes,
        )
    )
    results = _read_parquets(
        [*root.glob(RESULTS_GLOB), *root.glob(SHARDED_RESULTS_GLOB)],
        RESULT_COLUMNS,
        result_arrow_schema(),
        budget=budget,
        table="results",
        notes=notes,
    )
    runs = _read_parquets(
        list(root.glob(RUNS_GLOB)), None, runs_arrow_schema(), budget=budget, table="runs", notes=notes
    )
    runs = in_range(runs, RunSummary, "runs", notes)  # a pass rate of 7.0 is no figure: missing, noted
    from upskill_hub.rundir import arrow_schema
    from upskill_hub.rundir.routing_rows import RoutingRow

    routing = _read_parquets(
        list(root.glob(ROUTING_GLOB)),
        None,
        arrow_schema(RoutingRow),
        budget=budget,
        table="routing",
        notes=notes,
    )
    from upskill_hub.hub.dataset_repo import security_arrow_schema
    from upskill_hub.space.security import read_scans

    # Repos pushed before scans have no security table: every skill then reads "not scanned".
    security = read_scans(
        _read_parquets(
            list(root.glob(SECURITY_GLOB)),
            SECURITY_COLUMNS,
            security_arrow_schema(),
            budget=budget,
            table="security",
            notes=notes,
        ),
        known=set(skills["name"]),
    )
    aggregates = compute_aggregates(skills, results, runs, security)
    return Library(
        source=source or str(root),
        revision=revision,
        root=root,
        skills=skills,
        results=results,
        runs=runs,
        aggregates=aggregates,
        routing=routing,
        is_local=source is None,
        nbytes=budget.used_bytes,
        notes=notes,
        security=security,
    )


# --------------------------------------------------------------------------- Hub + cache
#: Libraries kept in memory (a visitor can type any repo: bounded, least recently loaded dropped).
MAX_CACHED_LIBRARIES = 8
#: Decompressed table bytes all cached libraries may hold together (the newest always stays).
MAX_CACHED_BYTES = env_int("UPSKILL_SPACE_CACHE_MB", 512) * MB
_CACHE: dict[tuple[str, str | None], Library] = {}
_CHECKED: dict[str, float] = {}  # repo -> when its current commit was last looked up
_LOCK = threading.Lock()
#: Held while one source is read, so concurrent first page views load it once, not once each
#: (striped: a visitor typing many repos cannot grow a table of locks).
_LOAD_LOCKS = tuple(threading.Lock() for _ in range(16))
_MISSING = object()


def _load_lock(key: str) -> threading.Lock:
    return _LOAD_LOCKS[hash(key) % len(_LOAD_LOCKS)]


def _remember(key: tuple[str, str | None], lib: Library) -> None:
    """Store ``lib`` under ``key`` (replacing older commits of the same source); call with _LOCK held."""
    for k in [k for k in _CACHE if k[0] == key[0]]:
        del _CACHE[k]
    _CACHE[key] = lib
    while len(_CACHE) > MAX_CACHED_LIBRARIES or (
        len(_CACHE) > 1 and sum(x.nbytes for x in _CACHE.values()) > MAX_CACHED_BYTES
    ):
        del _CACHE[next(iter(_CACHE))]


def clear_cache() -> None:
    with _LOCK:
        _CACHE.clear()
        _CHECKED.clear()


def check_source(source: str) -> str:
    """``source`` when it is a local library folder or a valid ``OWNER/NAME``; else one-line error."""
    from upskill_hub.hub.client import check_repo_id

    if Path(source).expanduser().is_dir():
        return source
    return check_repo_id(source)


def _folder_signature(root: Path) -> str:
    """Cheap change detector for a local dataset folder: names, sizes and mtimes of data/."""
    import hashlib
    import os

    h = hashlib.sha1()
    for sub in ("skills", "results", "runs", "security"):
        folder = root / "data" / sub
        if not folder.is_dir():
            continue
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            # A sharded run's folder (data/results/<run_id>/) counts by its files, as the globs read them.
            inner = sorted(os.scandir(entry.path), key=lambda e: e.name) if entry.is_dir() else [entry]
            for e in inner:
                st = e.stat()
                h.update(f"{os.path.relpath(e.path, folder)}:{sub}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def load_library(
    source: str,
    *,
    token: str | bool | None = False,
    refresh: bool = True,
    allow_local: bool = True,
    max_age_s: float = 0.0,
) -> Library:
    """The library at ``source``: a local folder, or a Hub dataset repo ``OWNER/NAME``.

    ``token`` is what reads the repo: ``False`` (anonymous) unless the caller is the
    operator's own configuration. With ``refresh`` the current commit is looked up and a
    cached library is reused only when it is still current; if the Hub cannot be reached
    the last loaded copy is served. ``allow_local=False`` (what a Space visitor gets)
    accepts Hub repo ids only, so nobody can make the Space read its own disk.
    ``max_age_s`` skips the commit lookup when the last one is that recent (page loads
    of a busy Space then cost no Hub request at all).
    """
    source = (source or "").strip()
    if not source:
        raise UpskillError("no skills repo given: set SKILLS_REPO or pass --repo OWNER/NAME")
    path = Path(source).expanduser()
    if allow_local and path.is_dir():
        resolved = str(path.resolve())
        if not refresh:  # as for a Hub repo: the copy in memory, without looking the folder over
            with _LOCK:
                held = [lib for (r, _), lib in _CACHE.items() if r == resolved]
            if held:
                return held[-1]
        key = (resolved, _folder_signature(path))
        with _LOCK:
            if key in _CACHE:
                return _CACHE[key]
        with _load_lock(key[0]):
            with _LOCK:
                if key in _CACHE:  # loaded by another request while this one waited
                    return _CACHE[key]
            lib = load_library_dir(path)
            with _LOCK:
                _remember(key, lib)
        return lib

    from upskill_hub.hub.client import check_repo_id

    repo = check_repo_id(source)
    sha: str | None = None
    listing: list[tuple[str, int | None]] = []
    if refresh and max_age_s > 0 and time.monotonic() - _CHECKED.get(repo, -1e9) < max_age_s:
        refresh = False
    with _LOCK:  # iterated under the lock: another request may be storing a library
        cached = any(k[0] == repo for k in _CACHE)
    if refresh or not cached:
        from huggingface_hub import HfApi
        from huggingface_hub.errors import RepositoryNotFoundError

        try:
            info = HfApi().dataset_info(repo, token=token, files_metadata=True)
            sha = info.sha
            listing = [(s.rfilename, s.size) for s in info.siblings or []]
            if len(_CHECKED) > 4 * MAX_CACHED_LIBRARIES:  # visitors can type any number of repos
                _CHECKED.clear()
            _CHECKED[repo] = time.monotonic()
        except RepositoryNotFoundError:
            raise UpskillError(f"dataset repo {repo!r} not found (or it is private)") from None
        except Exception as exc:
            with _LOCK:
                stale = [lib for (r, _), lib in _CACHE.items() if r == repo]
            if stale:
                return stale[-1]
            raise UpskillError(f"cannot reach dataset repo {repo!r}: {_one_line(exc)}") from None
    with _LOCK:
        if sha is None:
            return next(lib for (r, _), lib in _CACHE.items() if r == repo)
        if (repo, sha) in _CACHE:
            return _CACHE[(repo, sha)]

    with _load_lock(repo):
        with _LOCK:
            if (repo, sha) in _CACHE:  # loaded by another request while this one waited
                return _CACHE[(repo, sha)]
        return _download_and_load(repo, sha, listing, token)


def _download_and_load(repo: str, sha: str, listing: list[tuple[str, int | None]], token) -> Library:
    from huggingface_hub import snapshot_download

    patterns = plan_download(repo, listing)  # refuses a repo too big before a byte is fetched
    try:
        local = snapshot_download(
            repo, repo_type="dataset", revision=sha, allow_patterns=patterns, token=token
        )
    except Exception as exc:
        raise UpskillError(f"cannot download dataset repo {repo!r}: {_one_line(exc)}") from None
    lib = load_library_dir(Path(local), source=repo, revision=sha)
    lib.token = token
    lib.file_sizes = dict(listing)
    with _LOCK:
        _remember((repo, sha), lib)
    return lib


# --------------------------------------------------------------------------- skill details
#: Largest skill_meta.json the Space parses for display.
MAX_META_BYTES = 2 * MB


def skill_files(lib: Library, name: str) -> list[dict[str, Any]]:
    """The skill's files (path, size) as pushed; from the table, so no download is needed."""
    row = lib.skill_row(name)
    files = row.get("files")
    if files is None:
        return []
    return [{"path": f["path"], "size": int(f["size"])} for f in list(files)]


def read_skill_file(lib: Library, name: str, rel: str, *, limit: int = 200_000) -> str:
    """Text of one file of a skill (safe path, size-limited, binary files described)."""
    from upskill_hub._util.fsutil import check_relpath

    check_relpath(rel)
    known = {f["path"] for f in skill_files(lib, name)}
    if known and rel not in known:
        raise UpskillError(f"skill {name!r} has no file {rel!r}")
    path = lib.skill_dir(name) / rel
    if not path.is_file():
        raise UpskillError(f"file {rel!r} of skill {name!r} is missing from {lib.source}")
    with open(path, "rb") as fh:  # never more than the page shows
        data = fh.read(limit + 1)
    try:
        text = data[:limit].decode("utf-8")
    except UnicodeDecodeError:
        return f"(binary file, {path.stat().st_size} bytes)"
    return text + ("\n… (truncated)" if len(data) > limit else "")


def load_library_skill(lib: Library, name: str, workdir: Path):
    """The skill ``name`` as a :class:`~upskill_hub.skill.Skill`, validated.

    The HF cache holds files as symlinks into its blob store, which the skill loader
    rightly refuses (links out of the folder), so the files are copied (links followed)
    into ``workdir/<name>`` first.
    """
    import shutil

    from upskill_hub.skill import load_skill

    src = lib.skill_dir(name)
    if not src.is_dir():
        raise UpskillError(f"the files of skill {name!r} are missing from {lib.source}")
    dest = Path(workdir) / name
    shutil.copytree(src, dest, symlinks=False)
    res = load_skill(dest)
    if not res.ok:
        raise UpskillError(f"skill {name!r} in {lib.source} is invalid: {res.errors[0]}")
    return res.skill


def skill_md_text(lib: Library, name: str) -> str:
    """SKILL.md as pushed; rebuilt from the table row if the file cannot be fetched."""
    try:
        return read_skill_file(lib, name, "SKILL.md")
    except UpskillError:
        from upskill_hub.skill import render_skill_md

        row = lib.skill_row(name)
        from upskill_hub._util import safejson

        try:
            raw = row.get("frontmatter")  # a null cell reads as NaN: no text to parse
            fm = safejson.loads(
                raw if isinstance(raw, str) and raw else "{}"
            )  # a visitor's repo: bounded nesting
        except ValueError:
            fm = {}
        fm = (fm if isinstance(fm, dict) else {}) or {"name": name, "description": row.get("description", "")}
        return render_skill_md(fm, row.get("body") or "")


def skill_cases(lib: Library, name: str) -> list[dict[str, Any]]:
    """The skill's test cases (from its skill_meta.json), as plain dicts for display."""
    from upskill_hub.cases import CasesError, load_meta_text

    names = {f["path"] for f in skill_files(lib, name)}
    if names and "skill_meta.json" not in names:
        return []
    try:
        path = lib.skill_dir(name) / "skill_meta.json"
    except UpskillError:
        return []
    if not path.is_file():
        return []
    if path.stat().st_size > MAX_META_BYTES:
        raise UpskillError(
            f"skill {name!r}: skill_meta.json is larger than {MAX_META_BYTES // MB} MB; not shown"
        )
    try:
        meta = load_meta_text(path.read_bytes())
    except CasesError as exc:
        raise UpskillError(f"skill {name!r}: skill_meta.json is invalid ({exc})") from None
    return [c.to_dict() for c in meta.cases]
