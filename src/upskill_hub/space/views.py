"""What each view shows, as plain tables and figures (no Gradio here).

Every function reads the precomputed :class:`~upskill_hub.space.aggregate.Aggregates`,
so a search or a sort is a filter over 1,000 rows, never a pass over the results.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from upskill_hub.errors import UpskillError
from upskill_hub.evals.stats import error_bars
from upskill_hub.space.aggregate import _isnan, fmt_lift, fmt_rate

__all__ = ["fmt_lift", "fmt_rate", "leaderboard", "search_skills"]

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from upskill_hub.space.aggregate import Aggregates
    from upskill_hub.space.data import Library

BROWSE_HEADERS = ["name", "description", "tokens", "tests", "best lift", "best model", "results"]
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
    cols = ["name", "short_description", "token_estimate", "n_cases", "best_lift_text", "best_model_text", "n_results"]
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
    "baseline tokens",
    "with skill tokens",
]


def results_rows(table: list[dict[str, Any]]) -> list[list[Any]]:
    return [
        [
            r["model"],
            r["baseline"],
            r["with_skill"],
            r["lift"],
            r["paired_cases"],
            "" if r["baseline_tokens"] is None else r["baseline_tokens"],
            "" if r["with_skill_tokens"] is None else r["with_skill_tokens"],
        ]
        for r in table
    ]


def warm_up_plots() -> None:
    """Import matplotlib and draw once, so a visitor's first plot is not the slow one."""
    from matplotlib.figure import Figure

    fig = Figure()
    fig.subplots().bar([0], [1])
    fig.canvas.draw()


def figure_png(fig, key: str) -> str:
    """Save ``fig`` once as a PNG in the temp folder and return its path.

    Gradio serves a file path as-is, while a figure object is re-encoded on every
    request (about 0.3 s each on a small CPU).
    """
    import hashlib
    import tempfile
    from pathlib import Path

    folder = Path(tempfile.gettempdir()) / "upskill-space-plots"
    folder.mkdir(exist_ok=True)
    path = folder / (hashlib.sha1(key.encode()).hexdigest()[:20] + ".png")
    if not path.exists():
        fd, tmp = tempfile.mkstemp(suffix=".png", dir=folder)  # unique: two visitors may race
        with open(fd, "wb") as fh:
            fig.savefig(fh, format="png")
        Path(tmp).replace(path)
    return str(path)


def pass_rate_figure(cond: pd.DataFrame, title: str = "Pass rate by model (95% interval)"):
    """Grouped bars: baseline vs with-skill pass rate per model, with Wilson error bars."""
    import numpy as np
    from matplotlib.figure import Figure

    # Figure objects, not pyplot: pyplot's global state is not safe across Gradio's worker threads.
    fig = Figure(figsize=(7, 3.2), dpi=100)
    ax = fig.subplots()
    models = sorted(set(cond["model"]))
    x = np.arange(len(models))
    width = 0.38
    for i, (c, colour) in enumerate((("baseline", "#9aa5b1"), ("with_skill", "#ff9d00"))):
        sub = cond[cond["condition"] == c].set_index("model").reindex(models)
        p = sub["pass_rate"].to_numpy(dtype=float)
        lo, hi = error_bars(p, sub["ci_low"].to_numpy(dtype=float), sub["ci_high"].to_numpy(dtype=float))
        ax.bar(x + (i - 0.5) * width, np.nan_to_num(p), width, yerr=[lo, hi], capsize=3, label=c, color=colour)
    ax.set_xticks(x, [m[-28:] for m in models], fontsize=8)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("pass rate")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig


def tokens_figure(cond: pd.DataFrame):
    """Mean tokens per call, baseline vs with-skill, per model."""
    import numpy as np
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 3.0), dpi=100)
    ax = fig.subplots()
    models = sorted(set(cond["model"]))
    x = np.arange(len(models))
    for i, (c, colour) in enumerate((("baseline", "#9aa5b1"), ("with_skill", "#ff9d00"))):
        sub = cond[cond["condition"] == c].set_index("model").reindex(models)
        ax.bar(x + (i - 0.5) * 0.38, np.nan_to_num(sub["mean_tokens"].to_numpy(dtype=float)), 0.38, label=c, color=colour)
    ax.set_xticks(x, [m[-28:] for m in models], fontsize=8)
    ax.set_ylabel("mean tokens / call")
    ax.set_title("Tokens per call", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def leaderboard(agg: Aggregates, *, sort_by: str = "best", query: str = "", limit: int = 500) -> tuple[list[str], list[list[Any]]]:
    """Skills x models matrix of lift with intervals, sorted by a model's lift or the best.

    Returns (headers, rows). Sorting is numeric on the lift (not on the formatted text),
    skills without a measurement for the sort column go last. Cell texts are formatted
    once per library (``lifts["text"]``), so this is two pivots and a sort.
    """
    lifts = agg.lifts
    if query:
        lifts = lifts[lifts["skill_name"].str.contains(query.strip().lower(), regex=False)]
    models = sorted(set(lifts["model"])) if len(lifts) else []
    if sort_by not in ("best", "name") and sort_by not in models:
        raise UpskillError(f"no results for model {sort_by!r}; pick one of: best, name, {', '.join(models)}")
    if not len(lifts):
        return ["skill", "best lift", *models], []
    value = lifts.pivot(index="skill_name", columns="model", values="lift").reindex(columns=models)
    text = lifts.pivot(index="skill_name", columns="model", values="text").reindex(columns=models).fillna("–")
    best = value.max(axis=1)
    if sort_by == "name":
        keys = value.index.sort_values()
    else:
        col = best if sort_by == "best" else value[sort_by]
        keys = col.sort_values(ascending=False, na_position="last", kind="stable").index
    keys = keys[:limit]
    best_text = [fmt_lift(x) for x in best.reindex(keys)]
    cells = text.reindex(keys).to_numpy().tolist()
    rows = [[k, b, *c] for k, b, c in zip(keys, best_text, cells, strict=True)]
    return ["skill", "best lift", *models], rows


def skill_summary_markdown(lib: Library, name: str) -> str:
    """A short header for a skill page: description, version, size, tests, results."""
    from upskill_hub.space.render import escape

    row = lib.skill_row(name)
    agg_row = lib.aggregates.skills.iloc[lib.aggregates.skill_index[name]]
    lines = [
        f"## {escape(name)}",
        escape(row.get("description") or ""),
        "",
        f"version `{escape(row.get('version') or '')}` · ~{int(row['token_estimate'])} tokens · "
        f"{int(row['n_cases'])} test cases · {int(agg_row['n_results'])} result rows"
        + (f" · licence {escape(str(row['license']))}" if isinstance(row.get("license"), str) and row["license"] else ""),
    ]
    return "\n".join(lines)
