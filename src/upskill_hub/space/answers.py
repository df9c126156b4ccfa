"""Per-case answers of one skill on one model, baseline beside with-skill (the promptfoo view).

The library load reads no model outputs (they are most of a results table's bytes), so
this reads them on demand for one skill: only the result shards of runs that measured
it, only the rows of that skill and model, under a byte budget of its own (a visitor's
dataset can hold anything). Each answer is cut to ``ANSWER_CHARS`` and each case shows
one answer per condition: the latest run's first repeat, the one a reader would check.
An answer given in catalog mode also says which skills the model loaded and which of
their files it read, in order: that is what decided whether the skill could help.
"""

from __future__ import annotations

import html
import json
from typing import TYPE_CHECKING, Any

from upskill_hub.errors import UpskillError
from upskill_hub.space.charts import empty
from upskill_hub.space.intake import MB, ReadBudget

if TYPE_CHECKING:  # pragma: no cover
    from upskill_hub.space.data import Library

#: Characters of one answer shown; the rest is cut (and says so).
ANSWER_CHARS = 2000
#: Cases shown per page; a skill with more shows the first ones.
MAX_CASES = 100
#: Assertions shown per answer.
MAX_ASSERTIONS = 12
#: Decompressed bytes read for one skill's answers.
MAX_READ_BYTES = 64 * MB
COLUMNS = (
    "run_id", "timestamp", "skill_name", "skill_version", "model", "condition", "case_id", "repeat",
    "passed", "error", "cached", "output", "assertion_details", "mode", "triggered", "loaded", "files_read",
)  # fmt: skip
#: Skills / files listed per answer, and the longest ``loaded`` / ``files_read`` text parsed.
MAX_LOADED = 20
MAX_LOADED_CHARS = 20_000


def answer_rows(lib: Library, name: str, model: str):
    """The rows of ``name`` x ``model`` with outputs, current skill version first (DataFrame).

    ``model`` is a label of the views: ``"m (catalog)"`` reads model ``m``'s catalog answers.
    """
    import pyarrow.compute as pc
    import pyarrow.dataset as pads

    from upskill_hub.rundir import result_arrow_schema
    from upskill_hub.space.data import RESULTS_GLOB

    model, mode = lib.aggregates.labels.get(model, (model, "inject"))
    res = lib.results
    mine = res[(res["skill_name"] == name) & (res["model"] == model)]
    if not len(mine):
        return None
    runs = set(mine["run_id"].astype(str))
    files = [f for f in lib.root.glob(RESULTS_GLOB) if f.stem in runs] or list(lib.root.glob(RESULTS_GLOB))
    budget = ReadBudget(lib.source, max_bytes=MAX_READ_BYTES)
    schema = result_arrow_schema()
    cols = [c for c in COLUMNS if c in schema.names]
    try:
        dataset = pads.dataset([str(f) for f in sorted(files)], format="parquet", schema=schema)
        flt = (pc.field("skill_name") == name) & (pc.field("model") == model)
        batches = []
        for batch in dataset.to_batches(columns=cols, filter=flt):
            budget.spend(batch.nbytes, "results")
            batches.append(batch)
    except UpskillError:
        raise
    except Exception as exc:  # a shard that does not fit the schema: say so in one line
        raise UpskillError(f"cannot read the answers of {name!r}: {str(exc).splitlines()[0] if str(exc) else exc}") from None
    import pyarrow as pa

    df = pa.Table.from_batches(batches, schema=pa.schema([schema.field(c) for c in cols])).to_pandas()
    if "cached" in df.columns:
        df = df[~df["cached"].fillna(False).astype(bool)]
    if "mode" in df.columns:
        df = df[df["mode"].where(df["mode"].notna(), "inject") == mode]
    version = lib.skill_row(name).get("version")
    current = df[df["skill_version"] == version]
    return current if len(current) else df


def _pick(df) -> dict[tuple[str, str], dict[str, Any]]:
    """Per (case, condition): the latest run's lowest repeat."""
    df = df.sort_values(["timestamp", "run_id", "repeat"], ascending=[False, False, True], kind="stable")
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for row in df.to_dict("records"):
        out.setdefault((str(row["case_id"]), str(row["condition"])), row)
    return out


#: Longest assertion_details text parsed (a hostile one can be any size or depth).
MAX_DETAILS_CHARS = 100_000


def _evidence(details: str | None) -> str:
    if not details or len(details) > MAX_DETAILS_CHARS:
        return ""
    try:
        items = json.loads(details)
    except (ValueError, RecursionError):
        items = []
    if not isinstance(items, list) or not items:
        return ""
    lis = []
    for a in items[:MAX_ASSERTIONS]:
        if not isinstance(a, dict):
            continue
        mark = "✓" if a.get("passed") else "✗"
        text = f"{mark} {a.get('type', '?')}: {str(a.get('evidence', ''))[:300]}"
        lis.append(f"<li>{html.escape(text)}</li>")
    more = f"<li>… {len(items) - MAX_ASSERTIONS} more</li>" if len(items) > MAX_ASSERTIONS else ""
    return f'<ul class="uh-evidence">{"".join(lis)}{more}</ul>'


def _text(x: Any) -> str:
    """A table cell's text; a null (None or pandas' NaN) is ''."""
    return x if isinstance(x, str) else ""


def _names(text: Any) -> list[str] | None:
    """A ``loaded`` / ``files_read`` cell (JSON list of names) as a list; ``None`` if it is not one."""
    if not isinstance(text, str) or len(text) > MAX_LOADED_CHARS:
        return None
    try:
        items = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return [str(x) for x in items] if isinstance(items, list) else None


def _loaded(row: dict[str, Any]) -> str:
    """What a catalog-mode answer loaded: ``loaded: a, b · read: a/references/x.md`` (empty for inject)."""
    mode = row.get("mode")
    if not isinstance(mode, str) or mode == "inject":
        return ""
    skills, files = _names(row.get("loaded")), _names(row.get("files_read"))
    if skills is None:
        return ""

    def shown(items: list[str]) -> str:
        more = f", … {len(items) - MAX_LOADED} more" if len(items) > MAX_LOADED else ""
        return html.escape(", ".join(i[:200] for i in items[:MAX_LOADED]) + more)

    text = f"loaded: {shown(skills)}" if skills else "loaded no skill"
    if files:
        text += f" · read: {shown(files)}"
    return f'<div class="uh-loaded">{text}</div>'


def _cell(row: dict[str, Any] | None) -> str:
    if row is None:
        return '<td class="uh-na">not run</td>'
    if _text(row.get("error")):
        return f'<td class="uh-fail"><span class="uh-badge">error</span><pre>{html.escape(str(row["error"])[:500])}</pre></td>'
    ok = bool(row.get("passed"))
    text = _text(row.get("output"))
    cut = f"\n… ({len(text) - ANSWER_CHARS} more characters)" if len(text) > ANSWER_CHARS else ""
    return (
        f'<td class="{"uh-pass" if ok else "uh-fail"}"><span class="uh-badge">{"PASS" if ok else "FAIL"}</span>'
        f"{_loaded(row)}<pre>{html.escape(text[:ANSWER_CHARS] + cut)}</pre>"
        f"{_evidence(_text(row.get('assertion_details')))}</td>"
    )


def answers_html(cases: list[dict[str, Any]], df, model: str) -> str:
    """A table: case input | baseline answer | with-skill answer, pass/fail coloured, with evidence."""
    if df is None or not len(df):
        return empty(f"No answers from {model or 'this model'} yet: run an evaluation to see them side by side.")
    picked = _pick(df)
    inputs = {str(c["id"]): str(c.get("input", "")) for c in cases}
    ids = list(dict.fromkeys([*inputs, *sorted({k[0] for k in picked})]))
    ids = [i for i in ids if (i, "baseline") in picked or (i, "with_skill") in picked]
    rows = []
    for cid in ids[:MAX_CASES]:
        prompt = inputs.get(cid, "")
        rows.append(
            f"<tr><td><b>{html.escape(cid)}</b><pre>{html.escape(prompt[:ANSWER_CHARS])}</pre></td>"
            f"{_cell(picked.get((cid, 'baseline')))}{_cell(picked.get((cid, 'with_skill')))}</tr>"
        )
    more = f"<p>Showing {MAX_CASES} of {len(ids)} cases.</p>" if len(ids) > MAX_CASES else ""
    return (
        f'<table class="uh-answers"><thead><tr><th style="width:24%">case</th><th>baseline ({html.escape(model)})</th>'
        f"<th>with skill</th></tr></thead><tbody>{''.join(rows)}</tbody></table>{more}"
    )
