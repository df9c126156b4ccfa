"""Layout and tables of a skills-and-results dataset repo on the Hub.

The repo (see ARCHITECTURE.md, "Hub dataset repo for skills and results")::

    README.md                      dataset card; YAML configs skills / results / runs
    skills/<name>/...              the skill's files, verbatim, installable
    data/skills/<name>.parquet     one row per skill, with a sha256 per file
    data/results/<run_id>.parquet  append-only: one shard per eval run
    data/results/<run_id>/shard-<i>.parquet   or, for a run on Hugging Face Jobs, one per Job
    data/runs/<run_id>.parquet     the run's summary
    data/triggers/<run_id>.parquet the run's trigger queries (catalog mode), when it has any
    data/routing/<run_id>.parquet  a library routing run's confusion matrices (triggers --library)
    data/security/<name>.parquet   the skill's scan (upskill_hub.trust): one row, replaced with the skill
    jobs/<run_id>/...              what a run's Jobs need (plan, cases, skill); not a table

Everything we upload is built here, deterministically: the same skill or run always gives
the same parquet bytes, so a re-push can tell "unchanged" from the file hashes alone.
Result and run text is passed through :func:`redact` before it is written, because model
outputs and error messages may echo a key; skill files must be pushed verbatim, so a skill
file holding something token-shaped is refused instead.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from upskill_hub import rundir
from upskill_hub._util.hashing import sha256_hex
from upskill_hub._util.redact import redact
from upskill_hub.errors import PathError, UpskillError
from upskill_hub.hub import layout
from upskill_hub.rundir.routing_rows import ROUTING_FILE, RoutingRow, read_routing, routing_records
from upskill_hub.rundir.schema import RunPlan, RunSummary, TriggerRow, duplicate_key, record_problem
from upskill_hub.rundir.trigger_rows import TRIGGERS_FILE, read_trigger_rows
from upskill_hub.skill import Skill


def skill_dir_path(name: str) -> str:
    return f"{layout.SKILLS_DIR}/{name}"


def skill_table_path(name: str) -> str:
    return f"{layout.SKILLS_TABLE_DIR}/{name}.parquet"


def security_table_path(name: str) -> str:
    return f"{layout.SECURITY_TABLE_DIR}/{name}.parquet"


def results_path(run_id: str) -> str:
    return f"{layout.RESULTS_TABLE_DIR}/{run_id}.parquet"


def runs_path(run_id: str) -> str:
    return f"{layout.RUNS_TABLE_DIR}/{run_id}.parquet"


def triggers_path(run_id: str) -> str:
    return f"{layout.TRIGGERS_TABLE_DIR}/{run_id}.parquet"


def routing_path(run_id: str) -> str:
    return f"{layout.ROUTING_TABLE_DIR}/{run_id}.parquet"


def results_shard_dir(run_id: str) -> str:
    """Folder of a sharded run's ``results`` files (one per Job)."""
    return f"{layout.RESULTS_TABLE_DIR}/{run_id}"


def results_shard_path(run_id: str, index: int) -> str:
    """``data/results/<run_id>/shard-<i>.parquet``: the rows shard ``index`` (0-based) wrote."""
    return f"{results_shard_dir(run_id)}/shard-{index}.parquet"


def shard_index(path: str, run_id: str) -> int | None:
    """The shard number of ``path`` when it is one of ``run_id``'s shard files, else ``None``."""
    prefix = results_shard_dir(run_id) + "/"
    if not path.startswith(prefix):
        return None
    m = layout.SHARD_FILE_RE.match(path[len(prefix) :])
    return int(m.group(1)) if m else None


def run_results_paths(paths: Iterable[str], run_id: str) -> list[str]:
    """The files holding ``run_id``'s rows among the repo's ``paths``, in either layout.

    A run pushed from one machine has one file; a run on Jobs has one per shard (listed in
    shard order). A repo never holds both for one run: push keeps a sharded run's rows
    where the shards put them.
    """
    listed = set(paths)
    if results_path(run_id) in listed:
        return [results_path(run_id)]
    shards = [(shard_index(p, run_id), p) for p in listed]
    return [p for i, p in sorted((i, p) for i, p in shards if i is not None)]


def results_globs(paths: Iterable[str]) -> list[str]:
    """The ``results`` config's ``data_files`` patterns for a repo holding ``paths``.

    ``datasets`` refuses a pattern that matches nothing, and ``*`` does not cross folders,
    so the flat and the sharded layout each get their pattern, only when used.
    """
    flat = nested = False
    for p in paths:
        if not p.startswith(layout.RESULTS_TABLE_DIR + "/") or not p.endswith(".parquet"):
            continue
        depth = p.count("/") - layout.RESULTS_TABLE_DIR.count("/")
        flat, nested = flat or depth == 1, nested or depth == 2
    return [
        g
        for g, used in ((layout.CONFIG_GLOBS["results"], flat), (layout.SHARDED_RESULTS_GLOB, nested))
        if used
    ]


def jobs_dir(run_id: str) -> str:
    """Where a sharded run's bundle (plan, cases, skill) lives in the repo."""
    return f"{layout.JOBS_DIR}/{run_id}"


def check_run_id(run_id: Any) -> str:
    """A run id usable as a file name in the repo (it names the append-only shard)."""
    if not isinstance(run_id, str) or not layout.RUN_ID_RE.match(run_id) or ".." in run_id:
        raise UpskillError(f"invalid run id {run_id!r}: use letters, digits, '.', '_' and '-' only")
    return run_id


# --------------------------------------------------------------------------- schemas
def skills_arrow_schema():  # -> pyarrow.Schema
    """Schema of the ``skills`` table: one row per skill, files listed with their sha256."""
    import pyarrow as pa

    file_struct = pa.struct([("path", pa.string()), ("size", pa.int64()), ("sha256", pa.string())])
    return pa.schema(
        [
            ("name", pa.string()),
            ("description", pa.string()),
            ("version", pa.string()),
            ("content_hash", pa.string()),
            ("license", pa.string()),
            ("compatibility", pa.string()),
            ("frontmatter", pa.string()),  # JSON text
            ("body", pa.string()),
            ("token_estimate", pa.int32()),
            ("n_cases", pa.int32()),
            ("files", pa.list_(file_struct)),
        ]
    )


def triggers_arrow_schema():  # -> pyarrow.Schema
    """Schema of the ``triggers`` table (one column per :class:`TriggerRow` field)."""
    return rundir.arrow_schema(TriggerRow)


def security_arrow_schema():  # -> pyarrow.Schema
    """Schema of the ``security`` table: :data:`layout.SECURITY_COLUMNS`, one row per skill."""
    import pyarrow as pa

    counts = {"critical", "high", "medium", "low", "info", "acknowledged"}
    return pa.schema([(c, pa.int32() if c in counts else pa.string()) for c in layout.SECURITY_COLUMNS])


def config_schemas() -> dict[str, Any]:
    """Each config's full parquet schema, as the card declares it (``dataset_info.features``).

    ``datasets`` otherwise takes a config's columns from its first file and refuses files
    with others, so a repo holding shards written before a column was added (no ``mode``,
    no ``triggers``) could not load once a newer shard joins them. Declared features make
    it read every shard, filling the columns an older one lacks with nulls.
    """
    return {
        "skills": skills_arrow_schema(),
        "results": rundir.result_arrow_schema(),
        "runs": rundir.runs_arrow_schema(),
        "triggers": triggers_arrow_schema(),
        "routing": rundir.arrow_schema(RoutingRow),
        "security": security_arrow_schema(),
    }


def parquet_bytes(rows: list[dict[str, Any]], schema) -> bytes:
    """Deterministic parquet bytes for ``rows`` under ``schema`` (same rows -> same bytes).

    Rows are checked on read (:func:`check_records`) before they get here; a value Arrow
    still cannot store is one :class:`UpskillError` line, never a pyarrow traceback.
    """
    import pyarrow as pa

    try:
        table = pa.Table.from_pylist(rows, schema=schema)
    except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
        reason = " ".join(str(exc).split())[:200] or type(exc).__name__
        raise UpskillError(f"cannot build a table of these rows ({reason}); nothing was pushed") from None
    return rundir.table_parquet_bytes(table)


def check_records(
    path: Path, cls: type, records: list[dict[str, Any]], key: tuple[str, ...] | None = None
) -> list[dict[str, Any]]:
    """``records`` (rows of ``cls`` read from ``path``), when every one can be published.

    The one check before rows become a Hub table: each row's types and finite numbers
    (:func:`record_problem`), its size (:data:`rundir.files.MAX_ROW_BYTES`, before Arrow
    allocates for it) and, with ``key``, one row per key. The first problem is a
    :class:`PathError` naming the file and the row (rows count from 1, in file order).
    """
    cap = rundir.files.MAX_ROW_BYTES
    for number, rec in enumerate(records, 1):
        problem = record_problem(cls, rec)
        if problem is not None:
            raise PathError(path, f"row {number} is not a valid row ({problem}); nothing was pushed")
        size = sum(len(v) for v in rec.values() if isinstance(v, str))
        if size > cap:
            raise PathError(path, f"row {number} {rundir.files.too_long_row(size)}; nothing was pushed")
    if key is not None:
        found = duplicate_key(tuple(rec.get(k) for k in key) for rec in records)
        if found is not None:
            shown = ", ".join(f"{k} {v!r}" for k, v in zip(key, found[1], strict=True))[:200]  # type: ignore[arg-type]
            raise PathError(path, f"row {found[0] + 1} repeats an earlier row ({shown}); nothing was pushed")
    return records


def read_parquet_rows(data: bytes, where: str = "a parquet file") -> list[dict[str, Any]]:
    """Rows of a parquet file held in memory; a file that is not parquet is one ``UpskillError`` line.

    Tables come from other people's repos: garbage bytes named ``*.parquet`` raise
    ``ArrowInvalid`` deep inside pyarrow, which must not reach the user as a traceback.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.read_table(io.BytesIO(data)).to_pylist()
    except (pa.ArrowException, OSError, ValueError) as exc:
        reason = " ".join(str(exc).split())[:200] or type(exc).__name__
        raise UpskillError(f"{where} is not a readable parquet table ({reason})") from None


# --------------------------------------------------------------------------- secrets
def find_secret(text: str) -> bool:
    """True when ``text`` holds a known secret value or something token-shaped."""
    return redact(text) != text


_BOMS = (
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)


def redact_summary(summary: RunSummary) -> RunSummary:
    """``summary`` with :func:`redact` applied to every text in it (notes, params, model names)."""

    def clean(value: Any) -> Any:
        if isinstance(value, str):
            return redact(value)
        if isinstance(value, list):
            return [clean(v) for v in value]
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()}
        return value

    return RunSummary.from_dict(clean(summary.to_dict()))


def decoded_texts(data: bytes) -> list[str]:
    """``data`` as text in every encoding it plausibly uses, for the secret scan.

    A token saved by a Windows editor as UTF-16 is ``h\0f\0_\0…`` in bytes: read as UTF-8
    it matches no pattern, yet anyone who downloads the file sees the token. So besides
    UTF-8, text with a UTF-16/32 byte-order mark is decoded accordingly, and bytes with
    many NULs (UTF-16 without a mark) are read in both byte orders.
    """
    texts = [data.decode("utf-8", errors="replace")]
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            texts.append(data[len(bom) :].decode(encoding, errors="replace"))
            break
    else:
        if data.count(b"\0") * 4 >= len(data) > 0:
            for encoding in ("utf-16-le", "utf-16-be"):
                texts.append(data[: len(data) // 2 * 2].decode(encoding, errors="replace"))
                texts.append(data[1 : 1 + (len(data) - 1) // 2 * 2].decode(encoding, errors="replace"))
    return texts


def check_skill_secrets(skill: Skill) -> None:
    """Refuse a skill whose files (names or contents) carry a token or key: they are pushed verbatim."""
    for rel in sorted(skill.files):
        if find_secret(rel):
            raise UpskillError(
                f"a file name in skill {skill.name!r} looks like an access token or API key; "
                "rename it before pushing (file names are published too)"
            )
        if any(find_secret(text) for text in decoded_texts(skill.files[rel])):
            raise UpskillError(
                f"{skill.name}/{rel} looks like it contains an access token or API key; "
                "remove it before pushing (skill files are published verbatim)"
            )


# --------------------------------------------------------------------------- skills table
def skill_record(skill: Skill) -> dict[str, Any]:
    """The ``skills`` table row of ``skill``, including each file's size and sha256."""
    fm = skill.frontmatter
    comp = fm.get("compatibility")
    return {
        "name": skill.name,
        "description": skill.description,
        "version": skill.version,
        "content_hash": skill.full_hash,
        "license": skill.license,
        "compatibility": comp if isinstance(comp, str) else None,
        "frontmatter": json.dumps(fm, sort_keys=True, ensure_ascii=False, default=str),
        "body": skill.body,
        "token_estimate": skill.token_estimate,
        "n_cases": len(skill.meta.cases),
        "files": [
            {"path": rel, "size": len(skill.files[rel]), "sha256": sha256_hex(skill.files[rel])}
            for rel in sorted(skill.files)
        ],
    }


def skill_table_bytes(skill: Skill) -> bytes:
    return parquet_bytes([skill_record(skill)], skills_arrow_schema())


# --------------------------------------------------------------------------- security table
#: Findings kept per row (worst first, unacknowledged before acknowledged); the counts
#: always cover every finding. A skill with thousands of findings must not make a huge row.
MAX_SECURITY_FINDINGS = 200
SCANNER_NAME = "cisco-ai-skill-scanner"


def security_record(skill: Skill, report: Any) -> dict[str, Any]:
    """The ``security`` row of ``skill`` from its scan (an ``upskill_hub.trust.ScanReport``).

    Snippets and messages quote the skill's files (already checked for secrets) or the
    scanner's words about them; they are masked again anyway, as every table's text is.
    """
    counts = report.counts
    kept = report.worst(MAX_SECURITY_FINDINGS)
    findings = []
    for f in kept:
        d = f.to_dict()
        d["snippet"] = redact(d["snippet"]) if d.get("snippet") else d.get("snippet")
        d["message"] = redact(d["message"] or "")
        findings.append(d)
    return {
        "name": skill.name,
        "version": skill.version,
        "scanner": SCANNER_NAME,
        "scanner_version": report.scanner_version,
        "scanned_at": report.scanned_at,
        "max_severity": report.max_severity or "",
        **{level: int(counts.get(level, 0)) for level in ("critical", "high", "medium", "low", "info")},
        "acknowledged": int(counts.get("acknowledged", 0)),
        "findings": json.dumps(findings, sort_keys=True, ensure_ascii=False),
    }


def security_table_bytes(record: dict[str, Any]) -> bytes:
    return parquet_bytes([record], security_arrow_schema())


# --------------------------------------------------------------------------- run folders
@dataclass
class RunBundle:
    """One local eval run folder, ready to become a ``results`` and a ``runs`` shard.

    The small files (``run.json``, ``summary.json``) are read at once; the result rows,
    which can be 100 MB of JSON, only when a push needs them (:meth:`load_results`), so
    re-pushing a run already in the repo costs nothing.
    """

    run_id: str
    path: Path
    summary: RunSummary | None = None
    _results: Any = None  # pyarrow.Table once loaded
    _shard: bytes | None = None  # the runner's parquet of exactly these rows, when usable
    _n_rows: int | None = None  # set once the rows are checked
    _triggers: list[dict[str, Any]] | None = None  # ``triggers.jsonl`` rows, checked and masked

    def prepare(self) -> None:
        """Check the rows once (one run id, secrets masked), reading as little as possible.

        The runner's ``results.parquet`` is used when its record shows it current and
        masked for today's secrets (:func:`rundir.read_results_shard`): its bytes are
        uploaded as they are and only its footer is read (the run ids are in the row-group
        statistics; the ``run_id`` column when they are not). Otherwise the rows
        are loaded (the shard re-masked, or the JSON parsed for runs made before runs
        wrote it, or changed since) and masked cell by cell.
        """
        if self._n_rows is not None:
            return
        import pyarrow.parquet as pq

        shard = rundir.read_results_shard(self.path)
        if shard is not None:
            # The runner wrote it, but anyone may have edited the folder since: its numbers
            # and keys are checked like the JSON's (the schema already fixes the types).
            checked = shard.masked if shard.masked is not None else _check_columns(shard.data)
            if (problem := rundir.results_table_problem(checked)) is not None:
                raise PathError(self.path / rundir.RESULTS_PARQUET, f"{problem}; nothing was pushed")
        if shard is not None and shard.masked is None:
            self._shard = shard.data
            found = rundir.shard_run_ids(shard.data)
            if found is None:
                found = set(
                    _distinct(pq.read_table(io.BytesIO(shard.data), columns=["run_id"]).column("run_id"))
                )
            n_rows = pq.read_metadata(io.BytesIO(shard.data)).num_rows
        else:
            table = (
                shard.masked if shard is not None else self._parse_jsonl(rundir.read_results_raw(self.path))
            )
            self._results, n_rows = table, table.num_rows
            found = set(_distinct(table.column("run_id")))
        if found - {self.run_id}:
            others = ", ".join(sorted(map(str, found | {self.run_id})))
            raise PathError(self.path, f"rows belong to several runs ({others})")
        self._n_rows = n_rows
        if self.summary is not None:
            self.summary.n_results = n_rows

    def load_results(self):  # -> pyarrow.Table
        """The run's rows (checked to belong to this run, secrets masked), read once."""
        self.prepare()
        if self._results is None:
            import pyarrow.parquet as pq

            self._results = pq.read_table(io.BytesIO(self._shard))
        return self._results

    @property
    def uses_runner_shard(self) -> bool:
        """True when push uploads the runner's ``results.parquet`` bytes unchanged."""
        self.prepare()
        return self._shard is not None

    def _parse_jsonl(self, data):  # -> pyarrow.Table
        from concurrent.futures import ThreadPoolExecutor

        # The secret pre-scan and the JSON parse both run in Arrow's C++ without the GIL:
        # overlap them.
        with ThreadPoolExecutor(max_workers=1) as pool:
            may_hold = pool.submit(rundir.may_hold_secret, data)
            table = rundir.read_results_table(self.path, data, strict=True)
            needs_redaction = may_hold.result()
        return rundir.redact_table(table) if needs_redaction else table

    def trigger_records(self) -> list[dict[str, Any]]:
        """The run's trigger rows (``triggers.jsonl``) as ``triggers`` table rows, masked.

        A torn last line (a killed writer) is skipped, as for ``results.jsonl``; any other
        unreadable line, or a row of another run, is an error naming the file.
        """
        if self._triggers is None:
            rows = [row.to_dict() for row in read_trigger_rows(self.path, run_id=self.run_id)]
            key = ("model", "skill_name", "query_id", "repeat")
            check_records(self.path / TRIGGERS_FILE, TriggerRow, rows, key)
            self._triggers = [{k: redact(v) if isinstance(v, str) else v for k, v in r.items()} for r in rows]
        return self._triggers

    def routing_records(self) -> list[dict[str, Any]]:
        """The run's ``routing`` rows (from ``routing.json``), masked; none without the file."""
        found = read_routing(self.path)
        if found is None:
            return []
        run_id, timestamp, reports = found
        if run_id != self.run_id:
            raise PathError(self.path / ROUTING_FILE, f"belongs to run {run_id!r}, not {self.run_id!r}")
        records = [asdict(row) for report in reports for row in routing_records(report, run_id, timestamp)]
        check_records(self.path / ROUTING_FILE, RoutingRow, records, ("model", "skill", "loaded"))
        return [{k: redact(v) if isinstance(v, str) else v for k, v in rec.items()} for rec in records]

    @property
    def n_results(self) -> int:
        self.prepare()
        assert self._n_rows is not None
        return self._n_rows

    @property
    def skill_name(self) -> str | None:
        if self.summary:
            return self.summary.skill_name
        table = self.load_results()
        return table.column("skill_name")[0].as_py() if table.num_rows else None


def _check_columns(data: bytes):  # -> pyarrow.Table
    """The columns of a ``results`` parquet that :func:`rundir.results_table_problem` checks."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = rundir.result_arrow_schema()
    keys = ["model", "mode", "condition", "case_id", "repeat"]
    wanted = [f.name for f in schema if pa.types.is_floating(f.type)] + keys
    return pq.read_table(io.BytesIO(data), columns=wanted)


def _distinct(column) -> list[Any]:
    """Distinct values of an Arrow column."""
    import pyarrow.compute as pc

    return pc.unique(column).to_pylist()


def _run_id_of(root: Path, plan: RunPlan | None, summary: RunSummary | None) -> str:
    """The run id named by ``run.json`` / ``summary.json`` (or, failing both, by the rows)."""
    ids = set()
    if plan is not None and plan.run_id:
        ids.add(plan.run_id)
    if summary is not None:
        ids.add(summary.run_id)
    if not ids and rundir.has_results(root):
        ids = set(_distinct(rundir.read_results_table(root).column("run_id")))
    if not ids:
        ids = {row.run_id for row in read_trigger_rows(root)}
    if not ids:
        found = read_routing(root)
        ids = {found[0]} if found else set()
    if len(ids) != 1:
        shown = ", ".join(sorted(map(str, ids))) or "none"
        raise PathError(root, f"cannot tell which run this is (run ids: {shown})")
    return check_run_id(ids.pop())


def load_run_dir(path: str | Path, *, rows: bool = True) -> RunBundle:
    """Read an eval run folder (``run.json``, ``results.jsonl``, ``summary.json``).

    Raises :class:`UpskillError` for a missing folder, a folder that is not a run, or rows
    that belong to another run. With ``rows=False`` the result rows are read later, when
    first needed. The folder itself is only read, never changed.
    """
    files = (rundir.RUN_FILE, rundir.RESULTS_FILE, rundir.SUMMARY_FILE, TRIGGERS_FILE, ROUTING_FILE)
    root = Path(path)
    if not root.is_dir():
        raise PathError(root, "does not exist", kind="run folder")
    # Every file push may read, checked before any is: a symlink in a run folder would
    # publish an outside file's rows, a FIFO would hang or be taken for an absent file.
    rundir.check_run_files(root, (*files, rundir.RESULTS_PARQUET, rundir.RESULTS_CHECK))
    if not any((root / f).is_file() for f in files):
        raise PathError(root, f"not an eval run folder (no {', '.join(files[:2])} or {files[2]})")
    plan = rundir.read_plan(root)
    summary = rundir.read_summary(root)
    has_triggers = (root / TRIGGERS_FILE).is_file() and (root / TRIGGERS_FILE).stat().st_size > 0
    if (
        not rundir.has_results(root)
        and summary is None
        and not has_triggers
        and not (root / ROUTING_FILE).is_file()
    ):
        raise PathError(
            root, f"the run has no results yet ({rundir.RESULTS_FILE} is empty and no {rundir.SUMMARY_FILE})"
        )
    run_id = _run_id_of(root, plan, summary)
    bundle = RunBundle(run_id=run_id, path=root, summary=redact_summary(summary) if summary else None)
    if rows:
        bundle.prepare()
        bundle.trigger_records()
        bundle.routing_records()
    return bundle


def results_table_bytes(bundle: RunBundle) -> bytes | None:
    """Parquet bytes of the run's ``results`` shard (``None`` when it has no rows)."""
    if not bundle.n_results:
        return None
    if bundle.uses_runner_shard:
        return bundle._shard
    return rundir.table_parquet_bytes(bundle.load_results())


def runs_table_bytes(bundle: RunBundle) -> bytes | None:
    """Parquet bytes of the run's ``runs`` shard (``None`` without a summary)."""
    if bundle.summary is None:
        return None
    bundle.prepare()  # sets n_results
    return parquet_bytes([rundir.summary_record(bundle.summary)], rundir.runs_arrow_schema())


def routing_table_bytes(bundle: RunBundle) -> bytes | None:
    """Parquet bytes of the run's ``routing`` shard (``None`` when it has no routing report)."""
    records = bundle.routing_records()
    return parquet_bytes(records, rundir.arrow_schema(RoutingRow)) if records else None


def triggers_table_bytes(bundle: RunBundle) -> bytes | None:
    """Parquet bytes of the run's ``triggers`` shard (``None`` when it has no trigger rows)."""
    records = bundle.trigger_records()
    return parquet_bytes(records, triggers_arrow_schema()) if records else None
