"""What each view shows, as plain tables and figures (no Gradio here).

Every function reads the precomputed :class:`~upskill_hub.space.aggregate.Aggregates`,
so a search or a sort is a filter over 1,000 rows, never a pass over the results.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from upskill_hub._util.percent import count
from upskill_hub.errors import UpskillError
from upskill_hub.space.aggregate import _isnan, fmt_lift, fmt_rate
from upskill_hub.space.security import CRITICAL_MARK

__all__ = ["fmt_lift", "fmt_rate", "leaderboard", "search_skills"]

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from upskill_hub.space.aggregate import Aggregates
    from upskill_hub.space.data import Library

#: Key columns first (they must fit 1280 px with no horizontal scroll); the description last, one line.
#: ``security``: the worst unacknowledged finding and the acknowledged count (``⛔`` marks a critical skill).
BROWSE_HEADERS = [
    "name", "best lift [95% CI]", "best model", "tests", "tokens", "security", "results",
    "triggers (recall / false)", "description",
]  # fmt: skip
#: Widths for the browse table, in the order of BROWSE_HEADERS: they add up to 100%, so the
#: description is cut (one line) instead of widening the table. Phones: see charts.CSS.
BROWSE_WIDTHS = ["14%", "13%", "11%", "5.5%", "6.5%", "9%", "6.5%", "9.5%", "25%"]
SORTS = {
    "name": ("name", True),
    "best lift": ("best_lift", False),
    "tokens": ("token_estimate", True),
    "tests": ("n_cases", False),
    "results": ("n_results", False),
}


def search_skills(
    agg: Aggregates,
    query: str = "",
    *,
    min_tests: int = 0,
    with_results: bool = False,
    sort: str = "best lift",
    limit: int | None = None,
) -> pd.DataFrame:
    """Skills matching ``query`` (case-insensitive substring of name or description)."""
    df = agg.skills
    mask = None
    q = (query or "").strip().lower()
    if q:
        mask = df["haystack"].str.contains(q, regex=False)
    if min_tests:
        m = df["n_cases"] >= int(min_tests)
        mask = m if mask is None else mask & m
    if with_results:
        m = df["n_results"] > 0
        mask = m if mask is None else mask & m
    out = df if mask is None else df[mask]
    col, asc = SORTS.get(sort, SORTS["best lift"])
    out = out.sort_values([col, "name"], ascending=[asc, True], na_position="last", kind="stable")
    if limit:
        out = out.head(limit)
    return out


def browse_table(rows: pd.DataFrame) -> list[list[Any]]:
    """Display rows for the skills table (columns preformatted in the aggregates)."""
    cols = [
        "name", "best_lift_text", "best_model_text", "n_cases", "token_estimate", "security_text", "n_results",
        "triggers_text", "short_description",
    ]  # fmt: skip
    return rows[cols].to_numpy().tolist()


def skill_results_table(agg: Aggregates, name: str) -> list[dict[str, Any]]:
    """Per model: baseline and with-skill pass rates (intervals), lift, tokens."""
    cond = agg.conditions[agg.conditions["skill_name"] == name]
    lifts = agg.lifts[agg.lifts["skill_name"] == name].set_index("model")
    rows: list[dict[str, Any]] = []
    for model, grp in cond.groupby("model", sort=True):
        by = {c: r for c, r in zip(grp["condition"], grp.itertuples(index=False), strict=True)}
        row: dict[str, Any] = {"model": model}
        for c in ("baseline", "with_skill"):
            r = by.get(c)
            row[c] = fmt_rate(r.pass_rate, r.ci_low, r.ci_high) if r is not None else "–"
            row[f"{c}_n"] = int(r.n) if r is not None else 0
            row[f"{c}_tokens"] = None if r is None or _isnan(r.mean_tokens) else round(float(r.mean_tokens))
            cost = getattr(r, "mean_cost", None) if r is not None else None
            row[f"{c}_cost"] = None if _isnan(cost) else float(cost)
        if model in lifts.index:
            lf = lifts.loc[model]
            row["lift"] = fmt_lift(lf["lift"], lf["ci_low"], lf["ci_high"])
            row["lift_value"] = None if _isnan(lf["lift"]) else float(lf["lift"])
            row["paired_cases"] = int(lf["n_cases"])
        else:
            row.update(lift="–", lift_value=None, paired_cases=0)
        row["current_version"] = bool(grp["current_version"].all())
        rows.append(row)
    return rows


RESULT_HEADERS = [
    "model",
    "baseline pass rate",
    "with skill pass rate",
    "lift",
    "paired cases",
    "tokens / answer (baseline → skill)",
    "$ / answer (baseline → skill)",
]


def _pair(a: Any, b: Any, fmt: str) -> str:
    """``a → b`` for the two conditions; ``–`` for a side not measured (e.g. no known price)."""
    if a is None and b is None:
        return "–"
    return " → ".join("–" if x is None else format(x, fmt) for x in (a, b))


def _cost(x: float | None) -> str | None:
    """Dollars per answer; ``free`` for a measured zero (a local model), ``None`` when not known."""
    if x is None:
        return None
    return "free" if x == 0 else f"{x:.5f}"


def _cost_pair(a: float | None, b: float | None) -> str:
    """``a → b`` in dollars per answer; one ``free`` when both sides cost nothing."""
    if a == 0 and b == 0:
        return "free"
    return _pair(_cost(a), _cost(b), "")


def results_rows(table: list[dict[str, Any]]) -> list[list[Any]]:
    """The skill page's results table, one row per model (the charts show the same numbers)."""
    return [
        [
            r["model"],
            r["baseline"],
            r["with_skill"],
            r["lift"],
            r["paired_cases"],
            _pair(r["baseline_tokens"], r["with_skill_tokens"], "d"),
            _cost_pair(r.get("baseline_cost"), r.get("with_skill_cost")),
        ]
        for r in table
    ]


def skill_charts(agg: Aggregates, name: str) -> tuple[str, str]:
    """The skill page's two charts as markup: lift by model, pass rate per condition."""

    cond = agg.conditions[agg.conditions["skill_name"] == name]
    lifts = agg.lifts[agg.lifts["skill_name"] == name]
    return lift_chart_for(lifts), pass_chart_for(cond)


def _num(x: Any) -> float:
    """A float for a chart; None (not measured) becomes NaN."""
    return float("nan") if x is None else float(x)


def lift_chart_for(lifts: pd.DataFrame) -> str:
    """Lift chart from rows with model, lift, ci_low, ci_high (aggregates or a run's summary)."""
    from upskill_hub.space import charts

    rows = [
        (str(m), charts.Interval(_num(v), _num(lo), _num(hi)))
        for m, v, lo, hi in zip(lifts["model"], lifts["lift"], lifts["ci_low"], lifts["ci_high"], strict=True)
    ]
    return charts.lift_chart(sorted(rows))


def pass_chart_for(cond: pd.DataFrame) -> str:
    """Pass-rate chart from rows with model, condition, pass_rate, ci_low, ci_high."""
    from upskill_hub.space import charts

    by: dict[str, dict[str, Any]] = {}
    for m, c, p, lo, hi in zip(
        cond["model"], cond["condition"], cond["pass_rate"], cond["ci_low"], cond["ci_high"], strict=True
    ):
        by.setdefault(str(m), {})[c] = charts.Interval(_num(p), _num(lo), _num(hi))
    return charts.pass_rate_chart(
        [(m, v.get("baseline"), v.get("with_skill")) for m, v in sorted(by.items())]
    )


def _sorted_lifts(agg: Aggregates, sort_by: str, query: str, limit: int):
    """Filtered lifts, the models, and the skill order (numeric on lift; unmeasured last)."""
    lifts = agg.lifts
    if query and len(lifts):  # an empty frame (a library without results) has no string column to search
        lifts = lifts[lifts["skill_name"].astype(str).str.contains(query.strip().lower(), regex=False)]
    models = sorted(set(lifts["model"])) if len(lifts) else []
    if sort_by not in ("best", "name") and sort_by not in models:
        raise UpskillError(f"no results for model {sort_by!r}; pick one of: best, name, {', '.join(models)}")
    if not len(lifts):
        return lifts, models, None, []
    value = lifts.pivot(index="skill_name", columns="model", values="lift").reindex(columns=models)
    best = value.max(axis=1)
    if sort_by == "name":
        keys = value.index.sort_values()
    else:
        col = best if sort_by == "best" else value[sort_by]
        keys = col.sort_values(ascending=False, na_position="last", kind="stable").index
    return lifts, models, best, list(keys[:limit])


def leaderboard(
    agg: Aggregates, *, sort_by: str = "best", query: str = "", limit: int = 500
) -> tuple[list[str], list[list[Any]]]:
    """Skills x models matrix of lift with intervals, sorted by a model's lift or the best.

    Returns (headers, rows). Sorting is numeric on the lift (not on the formatted text),
    skills without a measurement for the sort column go last. Cell texts are formatted
    once per library (``lifts["text"]``), so this is two pivots and a sort.
    """
    lifts, models, best, keys = _sorted_lifts(agg, sort_by, query, limit)
    if not keys:
        return ["skill", "best lift", *models], []
    text = lifts.pivot(index="skill_name", columns="model", values="text").reindex(columns=models).fillna("–")
    best_text = [fmt_lift(x) for x in best.reindex(keys)]
    cells = text.reindex(keys).to_numpy().tolist()
    rows = [[k, b, *c] for k, b, c in zip(keys, best_text, cells, strict=True)]
    return ["skill", "best lift", *models], rows


def with_security(
    agg: Aggregates, headers: list[str], rows: list[list[Any]]
) -> tuple[list[str], list[list[Any]]]:
    """The leaderboard rows with each critical skill's name marked ``⛔`` (as on the heat map).

    Why a mark, not a column: ``/leaderboard`` API callers read the columns by position; the
    Browse table carries the full Security cell.
    """
    critical = (
        set(agg.skills["name"][agg.skills["security_rank"] == 5]) if "security_rank" in agg.skills else set()
    )
    return headers, [[f"{CRITICAL_MARK} {r[0]}" if r[0] in critical else r[0], *r[1:]] for r in rows]


def leaderboard_heatmap(agg: Aggregates, *, sort_by: str = "best", query: str = "", limit: int = 60) -> str:
    """The leaderboard as a heat map (same order as :func:`leaderboard`), first ``limit`` skills."""
    import numpy as np

    from upskill_hub.space import charts

    lifts, models, _best, keys = _sorted_lifts(agg, sort_by, query, 10**9)
    if not keys:
        return charts.heatmap([], [])
    cube = {c: lifts.pivot(index="skill_name", columns="model", values=c).reindex(index=keys[:limit], columns=models)
            for c in ("lift", "ci_low", "ci_high")}  # fmt: skip
    v, lo, hi = (cube[c].to_numpy(dtype=float, na_value=np.nan) for c in ("lift", "ci_low", "ci_high"))
    critical = (
        set(agg.skills["name"][agg.skills["security_rank"] == 5]) if "security_rank" in agg.skills else set()
    )
    rows = [
        (
            f"{CRITICAL_MARK} {k}" if k in critical else k,
            [charts.Interval(v[i, j], lo[i, j], hi[i, j]) for j in range(len(models))],
        )
        for i, k in enumerate(keys[:limit])
    ]
    note = (
        f"Showing the first {limit} of {len(keys)} skills; the table below lists more."
        if len(keys) > limit
        else ""
    )
    return charts.heatmap(models, rows, note=note)


def library_status(lib: Library, note: str) -> str:
    """The line above the Browse table: source, revision, and counts that agree with their nouns."""
    from upskill_hub.space.render import markdown_text

    return (
        f"**{markdown_text(lib.source)}**"
        + (f" @ `{lib.revision[:8]}`" if lib.revision else "")
        + f" · {count(len(lib.skills), 'skill')} · {count(len(lib.results), 'result row')}"
        + f" · {count(len(lib.aggregates.models), 'model')} · {note}"
        + "".join(f" · note: {markdown_text(n)}" for n in getattr(lib, "notes", ()))
    )


def skill_summary_markdown(lib: Library, name: str) -> str:
    """A short header for a skill page: description, version, size, tests, results."""
    from upskill_hub.space.render import escape, markdown_text

    row = lib.skill_row(name)
    agg_row = lib.aggregates.skills.iloc[lib.aggregates.skill_index[name]]
    lines = [
        f"## {markdown_text(name)}",
        markdown_text(row.get("description") or ""),
        "",
        f"version `{escape(row.get('version') or '')}` · ~{count(int(row['token_estimate']), 'token')} · "
        f"{count(int(row['n_cases']), 'test case')} · {count(int(agg_row['n_results']), 'result row')}"
        + (
            f" · licence {markdown_text(str(row['license']))}"
            if isinstance(row.get("license"), str) and row["license"]
            else ""
        ),
    ]
    from upskill_hub.space.security import security_banner

    lines += security_banner(getattr(lib, "security", {}).get(name))
    lines += trigger_markdown(lib.aggregates, name)
    lines += versions_markdown(lib.runs, name)
    lines += benchmark_markdown(lib.runs, name)
    lines += flagged_assertions_markdown(lib.runs, name)
    lines += [f"\n_Note: {markdown_text(n)}_" for n in getattr(lib, "notes", ())]
    return "\n".join(lines)


#: The skill page lists at most this many flagged assertions (the line above says how many there are).
MAX_FLAGS_SHOWN = 12
#: ... and at most this many benchmark rows (model x mode x condition) of one run.
MAX_BENCHMARK_ROWS = 48


def _present(value: Any) -> bool:
    """Whether a ``runs`` cell holds a value (a null cell is None or NaN: runs written before the column)."""
    return value is not None and not (isinstance(value, float) and value != value)


def newest_run_with(runs: pd.DataFrame | None, name: str, column: str) -> Any:
    """The newest run of skill ``name`` whose ``column`` was recorded (a row tuple), or ``None``."""
    if runs is None or not len(runs) or column not in runs.columns:
        return None
    mine = runs[(runs["skill_name"] == name) & runs[column].map(_present)]
    if not len(mine):
        return None
    mine = mine.assign(
        _ts=mine["timestamp"].fillna("").astype(str), _id=mine["run_id"].fillna("").astype(str)
    )
    return next(mine.sort_values(["_ts", "_id"], kind="stable").tail(1).itertuples(index=False))


def _whole(x: Any, plus: int = 0) -> str:
    """A count from a ``runs`` cell as text; ``–`` for a null (a pushed table is anyone's data)."""
    return str(int(x) + plus) if _present(x) else "–"


def _cell_text(text: str) -> str:
    """User text for a Markdown table cell, shown as written (see :func:`render.markdown_text`)."""
    from upskill_hub.space.render import markdown_text

    return markdown_text(text)


def _code_cell(text: str) -> str:
    """Text inside a Markdown code span (backslashes are literal there): HTML-escaped, ``|`` kept in the cell."""
    from upskill_hub.space.render import escape

    return escape(text).replace("|", "&#124;").replace("`", "'")


#: The skill page shows the lift of at most this many published versions (the newest ones),
#: each on at most this many models x modes.
MAX_VERSIONS_SHOWN = 20
MAX_MODELS_PER_VERSION = 8


def _structs(value: Any) -> list[dict[str, Any]]:
    """A ``runs`` cell holding a list of structs, as dicts (a null or anything else: none)."""
    if value is None or isinstance(value, (str, bytes, float)):
        return []
    try:
        return [dict(x) for x in list(value) if isinstance(x, dict)]
    except TypeError:
        return []


def _lift_cell(item: Any) -> str:
    """``+25 pts [+5, +45]`` from a ``lifts`` / ``versus`` struct of a pushed run (anyone's data)."""
    from upskill_hub._util.percent import points

    def num(key: str) -> float | None:
        x = item.get(key)
        return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and x == x else None

    return points(num("lift"), num("ci_low"), num("ci_high"))  # our own digits and signs: no escaping


def versions_markdown(runs: pd.DataFrame | None, name: str) -> list[str]:
    """The lift of each published version of skill ``name``, oldest to newest: per version, the
    newest run made with it; with ``eval --against``, also that run's lift over the old version."""
    if runs is None or not len(runs) or "skill_version" not in runs.columns:
        return []
    mine = runs[runs["skill_name"] == name]
    mine = mine.assign(
        _ts=mine["timestamp"].fillna("").astype(str), _id=mine["run_id"].fillna("").astype(str)
    )
    newest = mine.sort_values(["_ts", "_id"], kind="stable").groupby("skill_version", sort=False).tail(1)
    newest = newest.sort_values(["_ts", "_id"], kind="stable").tail(MAX_VERSIONS_SHOWN)
    if len(newest) < 1:
        return []
    lines = ["", "### Versions, oldest to newest",
             "Each version's newest run: its lift over no skill, and over the version it was run against.", "",
             "| version | run | model | lift over no skill | against | lift over it |", "|---|---|---|---|---|---|"]  # fmt: skip
    for run in newest.itertuples(index=False):
        lifts = _structs(getattr(run, "lifts", None))
        vs = {(v.get("model"), v.get("mode")): v for v in _structs(getattr(run, "versus", None))}
        keys = list(dict.fromkeys([*((x.get("model"), x.get("mode")) for x in lifts), *vs]))[
            :MAX_MODELS_PER_VERSION
        ]
        keys = keys or [(None, None)]
        against = (
            str(getattr(run, "against_version", None) or "")[:12]
            if _present(getattr(run, "against_version", None))
            else "–"
        )
        for model, mode in keys:
            lift = next((x for x in lifts if (x.get("model"), x.get("mode")) == (model, mode)), None)
            who = "–" if model is None else f"{model}" + ("" if mode in (None, "inject") else f" ({mode})")
            lines.append(
                f"| `{_code_cell(str(run.skill_version)[:12])}` | `{_code_cell(str(run.run_id))}` | {_cell_text(who)} | "
                f"{_lift_cell(lift) if lift else '–'} | {_cell_text(against)} | "
                f"{_lift_cell(vs[(model, mode)]) if (model, mode) in vs else '–'} |"
            )
    return lines


def benchmark_markdown(runs: pd.DataFrame | None, name: str) -> list[str]:
    """The skill page's spread over runs (``benchmark.json``'s figures) of the skill's newest run that has them."""
    from dataclasses import fields

    from upskill_hub.lift.figures.benchmark import METRICS, delta_cell, figure_cell, label
    from upskill_hub.rundir.schema import BenchmarkStats

    run = newest_run_with(runs, name, "benchmark")
    if run is None or not len(run.benchmark):
        return []
    known = {f.name for f in fields(BenchmarkStats)}
    stats = [BenchmarkStats(**{k: v for k, v in dict(b).items() if k in known}) for b in run.benchmark]
    if all((st.runs or 0) <= 1 for st in stats):
        return []  # one repeat has no spread: "± 0" would read as a measured, perfectly steady figure
    lines = [
        "",
        f"### Spread over runs (run `{_code_cell(str(run.run_id))}`"
        + (f", {count(int(run.runs_per_case), 'run')} per case)" if _present(run.runs_per_case) else ")"),
        "Each run is one repeat of every case: mean ± sample stddev (min–max) over runs. Pass rate: share of "
        "cases passed; time and tokens: mean per answer; delta: with skill minus without.",
        "",
        "| model | condition | pass rate | assertions passed | time / answer | tokens / answer |",
        "|---|---|---|---|---|---|",
    ]
    for st in stats[:MAX_BENCHMARK_ROWS]:
        who = _cell_text(str(label((str(st.model), st.mode or "inject", st.agent))))
        cells = " | ".join(figure_cell(st, m) for m, _, _ in METRICS)
        lines.append(f"| {who} | {_cell_text(str(st.condition).replace('_', ' '))} | {cells} |")
        if st.condition == "with_skill" and st.delta_pass_rate is not None:
            lines.append(f"| {who} | delta | {' | '.join(delta_cell(st, m) for m, _, _ in METRICS)} |")
    return lines


def flagged_assertions_markdown(runs: pd.DataFrame | None, name: str) -> list[str]:
    """The skill page's assertion analysis of the skill's newest analysed run: which assertions
    measure nothing (pass in both conditions, fail in both, or flip between repeats) or fail only
    with the skill, with counts."""
    from upskill_hub.lift.figures.assertion_audit import KINDS, MEANING, NAME
    from upskill_hub.lift.figures.benchmark import label

    run = newest_run_with(runs, name, "assertion_flags")
    if run is None:
        return []
    flags = [dict(f) for f in run.assertion_flags]
    checked = int(run.assertions_checked) if _present(run.assertions_checked) else 0
    head = f"### Assertions to check (run `{_code_cell(str(run.run_id))}`)"
    if not flags:
        return [
            "",
            head,
            f"None of {count(checked, 'assertion')} fails only with the skill, passes in both conditions, "
            "fails in both, or flips between repeats.",
        ]
    kinds = [k for k in KINDS if any(f["kind"] == k for f in flags)]
    lines = ["", head, f"{count(len(flags), 'flag')} on {count(checked, 'assertion')} checked:", ""]
    for k in kinds:
        mine = [f for f in flags if f["kind"] == k]
        cases = ", ".join(dict.fromkeys(str(f["case_id"]) for f in mine))
        lines.append(f"- **{NAME[k]}** ({MEANING[k]}): {len(mine)}, cases {_cell_text(cases)}")
    lines += [
        "",
        "| kind | model | case | # | assertion | baseline passed | with skill passed |",
        "|---|---|---|---|---|---|---|",
    ]
    for f in flags[:MAX_FLAGS_SHOWN]:
        who = label((str(f["model"]), f.get("mode") or "inject", f.get("agent")))
        lines.append(
            f"| {_cell_text(NAME.get(f['kind'], str(f['kind'])))} | {_cell_text(who)} | {_cell_text(str(f['case_id']))} | {_whole(f['index'], 1)} | "
            f"{_cell_text(str(f['assertion']))} | {_whole(f['baseline_passed'])}/{_whole(f['baseline_calls'])} | "
            f"{_whole(f['with_skill_passed'])}/{_whole(f['with_skill_calls'])} |"
        )
    if len(flags) > MAX_FLAGS_SHOWN:
        lines.append(f"\n_… and {len(flags) - MAX_FLAGS_SHOWN} more in the run's summary (assertion_flags)._")
    return lines


def trigger_markdown(agg: Aggregates, name: str) -> list[str]:
    """The skill page's trigger table: per model, how often the description made it load the skill."""
    from upskill_hub.space.render import escape, markdown_text

    trig = agg.triggers
    if trig is None or not len(trig):
        return []
    mine = trig[trig["skill_name"] == name]
    if not len(mine):
        return []

    def cell(rate, lo, hi, k, n) -> str:
        if _isnan(rate) or not n or _isnan(n):
            return "–"
        return f"{fmt_rate(float(rate), lo, hi)} ({int(k)}/{int(n)})"

    lines = [
        "",
        f"### Triggering (run `{escape(str(mine['run_id'].iloc[0]))}`)",
        "Does the description make the model load the skill? Recall on queries that should trigger it, "
        "false triggers on queries that should not (95% Wilson intervals).",
        "",
        "| model | trigger recall | false triggers | F1 |",
        "|---|---|---|---|",
    ]
    for t in mine.sort_values("model", kind="stable").itertuples(index=False):
        f1 = "–" if _isnan(t.f1) else f"{float(t.f1):.2f}"
        lines.append(
            f"| {markdown_text(str(t.model))} | "
            f"{cell(t.recall, t.recall_ci_low, t.recall_ci_high, t.triggered_should, t.n_should)} | "
            f"{cell(t.false_trigger_rate, t.fpr_ci_low, t.fpr_ci_high, t.triggered_should_not, t.n_should_not)} | {f1} |"
        )
    return lines


def assertion_lines(asserts: list[dict[str, Any]]) -> str:
    """A case's assertions for a table cell: one ``type: value`` line each, as the reports name
    them (a regex keeps its backslashes: no JSON escaping, no Markdown)."""
    from upskill_hub.lift.figures.assertion_audit import assertion_text

    return "\n".join(assertion_text(a) for a in asserts if isinstance(a, dict))


def case_rows(cases: list[dict[str, Any]], *, split: bool = True) -> list[list[Any]]:
    """The Test cases tables (skill page with ``split``; Evaluate without): id, [split,] input, assertions."""
    return [
        [str(c.get("id", "")), *([c.get("split", "train")] if split else []), str(c.get("input", "")),
         assertion_lines(list(c.get("assert") or []))]
        for c in cases
    ]  # fmt: skip
