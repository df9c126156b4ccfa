"""The Routing tab: which skill a model loads for each skill's queries, among the whole library.

Reads the ``routing`` table ``triggers --library`` pushes (one row per model x query skill x
skill loaded first). For the chosen model it shows the newest routing run as a matrix
(rows: the skill a query was written for; columns: the skill loaded first, ``none``
included; shade: the row's share), each skill's recall and routing accuracy with their
intervals, and the pairs of skills whose queries go to each other. Everything in the table
is a visitor's data: names are escaped and the matrix is capped at ``MAX_SKILLS`` skills.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from upskill_hub._util.percent import rate
from upskill_hub.space.charts import empty

if TYPE_CHECKING:  # pragma: no cover
    from upskill_hub.space.data import Library

#: Skills shown in one matrix (a library of 1,000 has a matrix no page can show).
MAX_SKILLS = 40
NO_ROUTING = (
    "No routing runs in this dataset yet: run `upskill-hub triggers DIR --library -m MODEL`, "
    "then push its run folder."
)


def routing_models(lib: Library) -> list[str]:
    """The models with a routing run, in name order."""
    df = lib.routing
    if df is None or not len(df):
        return []
    return sorted(str(m) for m in df["model"].dropna().unique())


def _latest(lib: Library, model: str):
    df = lib.routing
    mine = df[df["model"] == model]
    if not len(mine):
        return None
    newest = mine.sort_values(["timestamp", "run_id"], kind="stable").iloc[-1]
    return mine[mine["run_id"] == newest["run_id"]]


def _num(x: Any) -> float | None:
    return None if x is None or x != x else float(x)


def routing_html(lib: Library, model: str | None) -> str:
    """The matrix, the per-skill figures and the stealing pairs of ``model``'s newest routing run."""
    if not model:
        return empty(NO_ROUTING if not routing_models(lib) else "Pick a model to see how it routes.")
    run = _latest(lib, model)
    if run is None:
        return empty(f"No routing run of {model}.")
    skills = list(dict.fromkeys(str(s) for s in run["skill"]))
    cut = len(skills) > MAX_SKILLS
    skills = skills[:MAX_SKILLS]
    columns = [*skills, "none"]
    counts = {(str(r.skill), str(r.loaded)): int(r.count) for r in run.itertuples(index=False)}
    figures = {str(r.skill): r for r in run.itertuples(index=False)}
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = []
    for s in skills:
        total = sum(v for (a, _), v in counts.items() if a == s)
        cells = []
        for c in columns:
            n = counts.get((s, c), 0)
            share = n / total if total else 0.0
            style = f"background: rgba(255,157,0,{share:.2f})" if n else ""
            cells.append(f'<td style="{style}">{n or ""}</td>')
        f = figures[s]
        recall = rate(_num(f.recall), _num(f.recall_ci_low), _num(f.recall_ci_high))
        acc = rate(_num(f.accuracy), _num(f.accuracy_ci_low), _num(f.accuracy_ci_high))
        body.append(
            f"<tr><th>{html.escape(s)}</th>{''.join(cells)}<td>{html.escape(recall)}</td><td>{html.escape(acc)}</td></tr>"
        )
    pairs = []
    for i, a in enumerate(skills):
        for b in skills[i + 1 :]:
            ab, ba = counts.get((a, b), 0), counts.get((b, a), 0)
            if ab + ba >= 2:
                pairs.append((ab + ba, a, b, ab, ba))
    pairs.sort(key=lambda p: (-p[0], p[1], p[2]))
    steal = "".join(
        f"<li><b>{html.escape(a)}</b> ↔ <b>{html.escape(b)}</b>: {ab} of {html.escape(a)}'s queries loaded "
        f"{html.escape(b)}, {ba} the other way</li>"
        for _, a, b, ab, ba in pairs
    )
    run_id = html.escape(str(run["run_id"].iloc[0]))
    note = f"<p>Showing the first {MAX_SKILLS} skills.</p>" if cut else ""
    return (
        f"<p>Run <code>{run_id}</code> · rows: the skill a query was written for · columns: the skill "
        f"{html.escape(model)} loaded first · recall: its skill loaded at all · accuracy: loaded first (95% CI)</p>"
        f'<table class="uh-routing"><thead><tr><th></th>{head}<th>recall</th><th>accuracy</th></tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>{note}"
        + (f"<h4>Skills that take each other's queries</h4><ul>{steal}</ul>" if steal else "<p>No skill takes another's queries.</p>")
    )
