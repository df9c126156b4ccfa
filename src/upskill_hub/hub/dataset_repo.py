"""Layout and tables of a skills-and-results dataset repo on the Hub.

The repo (see ARCHITECTURE.md, "Hub dataset repo for skills and results")::

    README.md                      dataset card; YAML configs skills / results / runs
    skills/<name>/...              the skill's files, verbatim, installable
    data/skills/<name>.parquet     one row per skill, with a sha256 per file
    data/results/<run_id>.parquet  append-only: one shard per eval run
    data/runs/<run_id>.parquet     the run's summary

Everything we upload is built here, deterministically: the same skill or run always gives
the same parquet bytes, so a re-push can tell "unchanged" from the file hashes alone.
Result and run text is passed through :func:`redact` before it is written, because model
outputs and error messages may echo a key; skill files must be pushed verbatim, so a skill
file holding something token-shaped is refused instead.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from upskill_hub.errors import UpskillError
from upskill_hub.redact import redact
from upskill_hub.skill import Skill

SKILLS_DIR = "skills"
SKILLS_TABLE_DIR = "data/skills"
RESULTS_TABLE_DIR = "data/results"
RUNS_TABLE_DIR = "data/runs"
CARD_PATH = "README.md"

#: Config name -> data_files glob (the card's YAML ``configs``).
CONFIG_GLOBS = {
    "skills": f"{SKILLS_TABLE_DIR}/*.parquet",
    "results": f"{RESULTS_TABLE_DIR}/*.parquet",
    "runs": f"{RUNS_TABLE_DIR}/*.parquet",
}

RUN_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-]{0,127}$")

#: Rows per parquet row group: small enough for the dataset viewer to page through.
ROW_GROUP_SIZE = 10_000


def skill_dir_path(name: str) -> str:
    return f"{SKILLS_DIR}/{name}"


def skill_table_path(name: str) -> str:
    return f"{SKILLS_TABLE_DIR}/{name}.parquet"


def results_path(run_id: str) -> str:
    return f"{RESULTS_TABLE_DIR}/{run_id}.parquet"


def runs_path(run_id: str) -> str:
    return f"{RUNS_TABLE_DIR}/{run_id}.parquet"


def check_run_id(run_id: Any) -> str:
    """A run id usable as a file name in the repo (it names the append-only shard)."""
    if not isinstance(run_id, str) or not RUN_ID_RE.match(run_id) or ".." in run_id:
        raise UpskillError(f"invalid run id {run_id!r}: use letters, digits, '.', '_' and '-' only")
    return run_id


# --------------------------------------------------------------------------- hashing
def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def git_blob_sha1(data: bytes) -> str:
    """The git object id of a file (what the Hub reports as ``oid`` for non-LFS files)."""
    h = hashlib.sha1()
    h.update(b"blob " + str(len(data)).encode() + b"\0")
    h.update(data)
    return h.hexdigest()


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


def _condition_struct():
    import pyarrow as pa

    return pa.struct(
        [
            ("model", pa.string()),
            ("condition", pa.string()),
            ("n", pa.int32()),
            ("passed", pa.int32()),
            ("errors", pa.int32()),
            ("pass_rate", pa.float64()),
            ("ci_low", pa.float64()),
            ("ci_high", pa.float64()),
            ("mean_assertions", pa.float64()),
            ("mean_input_tokens", pa.float64()),
            ("mean_output_tokens", pa.float64()),
            ("mean_total_tokens", pa.float64()),
            ("mean_latency_s", pa.float64()),
            ("total_cost_usd", pa.float64()),
            ("pass_at_k", pa.string()),  # JSON text {"1": 0.5, ...}
            ("cached_calls", pa.int32()),
        ]
    )


def _lift_struct():
    import pyarrow as pa

    return pa.struct(
        [
            ("model", pa.string()),
            ("lift", pa.float64()),
            ("ci_low", pa.float64()),
            ("ci_high", pa.float64()),
            ("p_value", pa.float64()),
            ("n_cases", pa.int32()),
            ("method", pa.string()),
            ("token_savings", pa.float64()),
            ("conclusive", pa.bool_()),
            ("note", pa.string()),
        ]
    )


def runs_arrow_schema():  # -> pyarrow.Schema
    """Schema of the ``runs`` table: one row per eval run (its :class:`RunSummary`)."""
    import pyarrow as pa

    return pa.schema(
        [
            ("run_id", pa.string()),
            ("timestamp", pa.string()),
            ("tool_version", pa.string()),
            ("skill_name", pa.string()),
            ("skill_version", pa.string()),
            ("models", pa.list_(pa.string())),
            ("runs_per_case", pa.int32()),
            ("n_cases", pa.int32()),
            ("judge_model", pa.string()),
            ("params", pa.string()),  # JSON text
            ("holdout", pa.string()),  # JSON text or null
            ("n_results", pa.int64()),
            ("conditions", pa.list_(_condition_struct())),
            ("lifts", pa.list_(_lift_struct())),
        ]
    )


def parquet_bytes(rows: list[dict[str, Any]], schema) -> bytes:
    """Deterministic parquet bytes for ``rows`` under ``schema`` (same rows -> same bytes)."""
    import pyarrow as pa

    return table_parquet_bytes(pa.Table.from_pylist(rows, schema=schema))


def table_parquet_bytes(table) -> bytes:
    """Deterministic parquet bytes of an Arrow table (same table, same bytes)."""
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd", row_group_size=ROW_GROUP_SIZE, write_statistics=True)
    return buf.getvalue()


def read_parquet_rows(data: bytes) -> list[dict[str, Any]]:
    """Rows of a parquet file held in memory."""
    import pyarrow.parquet as pq

    return pq.read_table(io.BytesIO(data)).to_pylist()


# --------------------------------------------------------------------------- secrets
def find_secret(text: str) -> bool:
    """True when ``text`` holds a known secret value or something token-shaped."""
    return redact(text) != text


def _redact_value(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [_redact_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _redact_value(v) for k, v in value.items()}
    return value


_BOMS = (
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)


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
    summary: dict[str, Any] | None = None
    _results: Any = None  # pyarrow.Table once loaded

    def load_results(self):  # -> pyarrow.Table
        """The run's rows (checked to belong to this run, secrets masked), read once."""
        if self._results is None:
            from concurrent.futures import ThreadPoolExecutor

            import pyarrow.compute as pc

            data = _results_buffer(self.path)
            # The secret pre-scan and the JSON parse both run in Arrow's C++ without the GIL:
            # overlap them.
            with ThreadPoolExecutor(max_workers=1) as pool:
                may_hold = pool.submit(_may_hold_secret, data)
                table = _read_results_table(self.path, data)
                needs_redaction = may_hold.result()
            ids = set(pc.unique(table.column("run_id")).to_pylist())
            if ids - {self.run_id}:
                others = ", ".join(sorted(map(str, ids | {self.run_id})))
                raise UpskillError(f"{self.path}: rows belong to several runs ({others})")
            self._results = redact_table(table) if needs_redaction else table
            if self.summary is not None:
                self.summary["n_results"] = self._results.num_rows
        return self._results

    @property
    def n_results(self) -> int:
        return self.load_results().num_rows

    @property
    def skill_name(self) -> str | None:
        if self.summary:
            return self.summary.get("skill_name")
        table = self.load_results()
        return table.column("skill_name")[0].as_py() if table.num_rows else None


def _results_buffer(root: Path):  # -> pyarrow.Buffer | None
    """The raw bytes of ``results.jsonl``, read once for both parsing and the secret scan."""
    import pyarrow as pa

    from upskill_hub.evals.schema import RESULTS_FILE

    path = root / RESULTS_FILE
    if not path.is_file() or path.stat().st_size == 0:
        return None
    try:
        # Zero-copy: the returned buffer keeps the mapping alive for as long as it is used.
        return pa.memory_map(str(path), "r").read_buffer()
    except OSError as exc:
        raise UpskillError(f"{path}: cannot be read ({exc})") from None


def _read_results_table(root: Path, data=None):  # -> pyarrow.Table
    """``results.jsonl`` (or its bytes ``data``) as an Arrow table.

    Arrow's JSON reader handles 100,000 rows in a second or two; a file it cannot read
    (typically a torn last line left by a killed run) goes through ``read_results``, which
    skips such lines.
    """
    import pyarrow as pa
    import pyarrow.json as pj

    from upskill_hub.evals.schema import read_results, result_arrow_schema

    schema = result_arrow_schema()
    data = data if data is not None else _results_buffer(root)
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
        rows = [r.to_dict() for r in read_results(root)]
        table = pa.Table.from_pylist([{k: r.get(k) for k in schema.names} for r in rows], schema=schema)
    return table


#: Literal text every token-shaped match of :func:`redact` contains (its patterns start so).
_TOKEN_MARKERS = ("hf_", "sk-")
#: A JSON escape of an ASCII character (``\\u0068`` for ``h``) could hide a marker from a
#: scan of the raw file; Python's ``json`` only writes these for control characters.
_ASCII_ESCAPE = r"\\u00[0-7]"


def _may_hold_secret(raw) -> bool:
    """False only when the raw ``results.jsonl`` bytes certainly hold nothing to mask.

    One RE2 pass over the raw bytes (Arrow's regex kernel, no Python loop) lets the common
    case, a run with no token-shaped text at all, skip the per-cell scan entirely.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    from upskill_hub.redact import secret_values

    if raw is None:
        return False
    offsets = pa.array([0, raw.size], type=pa.int64()).buffers()[1]
    whole = pa.Array.from_buffers(pa.large_binary(), 1, [None, offsets, raw])
    needles = [re.escape(m) for m in _TOKEN_MARKERS] + ["(?i:bearer)", _ASCII_ESCAPE]
    for value in secret_values():
        needles += [re.escape(value), re.escape(json.dumps(value)[1:-1])]
    return bool(pc.match_substring_regex(whole, "|".join(needles))[0].as_py())


def redact_table(table):  # -> pyarrow.Table
    """``table`` with :func:`redact` applied to every string cell that could hold a secret.

    A cell can only change under ``redact`` if it contains a known secret value or one of
    the literal starts of its patterns (``hf_``, ``sk-``, ``bearer``). Such cells are found
    with one vectorised search per string column; only they go through ``redact`` itself.
    The result equals redacting every cell, at a small fraction of the cost on
    100,000-row runs.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    from upskill_hub.redact import secret_values

    if table.num_rows == 0:
        return table
    needles = "|".join([re.escape(m) for m in (*_TOKEN_MARKERS, *secret_values())] + ["(?i:bearer)"])
    columns = list(table.columns)
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
    return pa.Table.from_arrays(columns, schema=table.schema)


def _run_id_of(root: Path, plan: dict[str, Any], summary: Any) -> str:
    """The run id named by ``run.json`` / ``summary.json`` (or, failing both, by the rows)."""
    ids = set()
    if plan.get("run_id"):
        ids.add(plan["run_id"])
    if summary is not None:
        ids.add(summary.run_id)
    if not ids:
        import pyarrow.compute as pc

        ids = set(pc.unique(_read_results_table(root).column("run_id")).to_pylist())
    if len(ids) != 1:
        shown = ", ".join(sorted(map(str, ids))) or "none"
        raise UpskillError(f"{root}: cannot tell which run this is (run ids: {shown})")
    return check_run_id(ids.pop())


def load_run_dir(path: str | Path, *, rows: bool = True) -> RunBundle:
    """Read an eval run folder (``run.json``, ``results.jsonl``, ``summary.json``).

    Raises :class:`UpskillError` for a missing folder, a folder that is not a run, or rows
    that belong to another run. With ``rows=False`` the result rows are read later, when
    first needed. The folder itself is only read, never changed.
    """
    from upskill_hub.evals.schema import RESULTS_FILE, RUN_FILE, SUMMARY_FILE, read_summary

    root = Path(path)
    if not root.is_dir():
        raise UpskillError(f"run folder {root} does not exist")
    if not any((root / f).is_file() for f in (RUN_FILE, RESULTS_FILE, SUMMARY_FILE)):
        raise UpskillError(
            f"{root} is not an eval run folder (no {RUN_FILE}, {RESULTS_FILE} or {SUMMARY_FILE})"
        )
    plan: dict[str, Any] = {}
    if (root / RUN_FILE).is_file():
        try:
            plan = json.loads((root / RUN_FILE).read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError, OSError) as exc:
            raise UpskillError(f"{root / RUN_FILE}: cannot be read as JSON ({exc})") from None
        if not isinstance(plan, dict):
            raise UpskillError(f"{root / RUN_FILE}: expected a JSON object")
    try:
        summary = read_summary(root)
    except (json.JSONDecodeError, TypeError, KeyError, UnicodeDecodeError, AttributeError, OSError) as exc:
        raise UpskillError(f"{root / SUMMARY_FILE}: not a valid run summary ({exc})") from None
    has_rows = (root / RESULTS_FILE).is_file() and (root / RESULTS_FILE).stat().st_size > 0
    if not has_rows and summary is None:
        raise UpskillError(
            f"{root}: the run has no results yet ({RESULTS_FILE} is empty and no {SUMMARY_FILE})"
        )
    run_id = _run_id_of(root, plan, summary)
    bundle = RunBundle(
        run_id=run_id, path=root, summary=_redact_value(summary.to_dict()) if summary else None
    )
    if rows:
        bundle.load_results()
    return bundle


def results_table_bytes(bundle: RunBundle) -> bytes | None:
    """Parquet bytes of the run's ``results`` shard (``None`` when it has no rows)."""
    table = bundle.load_results()
    if not table.num_rows:
        return None
    return table_parquet_bytes(table)


def run_record(summary: dict[str, Any]) -> dict[str, Any]:
    """The ``runs`` table row of a (redacted) :class:`RunSummary` dict."""
    conds = []
    for c in summary.get("conditions", []):
        c = dict(c)
        c["pass_at_k"] = json.dumps(c.get("pass_at_k") or {}, sort_keys=True)
        conds.append(c)
    holdout = summary.get("holdout")
    return {
        "run_id": summary["run_id"],
        "timestamp": summary.get("timestamp"),
        "tool_version": summary.get("tool_version"),
        "skill_name": summary.get("skill_name"),
        "skill_version": summary.get("skill_version"),
        "models": list(summary.get("models", [])),
        "runs_per_case": summary.get("runs_per_case"),
        "n_cases": summary.get("n_cases"),
        "judge_model": summary.get("judge_model"),
        "params": summary.get("params") or "{}",
        "holdout": json.dumps(holdout, sort_keys=True) if holdout is not None else None,
        "n_results": summary.get("n_results"),
        "conditions": conds,
        "lifts": [dict(x) for x in summary.get("lifts", [])],
    }


def runs_table_bytes(bundle: RunBundle) -> bytes | None:
    """Parquet bytes of the run's ``runs`` shard (``None`` without a summary)."""
    if bundle.summary is None:
        return None
    bundle.load_results()  # sets n_results
    return parquet_bytes([run_record(bundle.summary)], runs_arrow_schema())


def summary_from_record(row: dict[str, Any]) -> dict[str, Any]:
    """Turn a ``runs`` row read back from parquet into the dict shape the card uses."""
    out = dict(row)
    out["conditions"] = [dict(c) for c in row.get("conditions") or []]
    out["lifts"] = [dict(x) for x in row.get("lifts") or []]
    return out
