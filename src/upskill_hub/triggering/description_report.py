"""Terminal rendering for the description commands: ``tune`` and ``triggers --library``.

Rendering only: every number comes from :class:`~upskill_hub.triggering.tune.Figures` and
:class:`~upskill_hub.triggering.routing.RoutingReport`. Skill names, descriptions and queries
are user content, so they are printed as :class:`~rich.text.Text` (a ``[`` in them is
never read as markup).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

from upskill_hub._util.percent import pct
from upskill_hub.lift.report import _share  # the trigger table's cell: 62% (5/8) / [31%, 86%]
from upskill_hub.rundir.routing_rows import RoutingReport
from upskill_hub.triggering.tune import Candidate, Figures

if TYPE_CHECKING:
    from upskill_hub.triggering.routing_run import RoutingRun
    from upskill_hub.triggering.tune_run import TuneRun


def _figures_cells(f: Figures) -> list[str]:
    return [
        _share(f.triggered_should, f.n_should, f.recall, f.recall_ci_low, f.recall_ci_high),
        _share(f.triggered_should_not, f.n_should_not, f.false_trigger_rate, f.fpr_ci_low, f.fpr_ci_high),
    ]


def _label(c: Candidate) -> str:
    return "original" if c.index == 0 else f"candidate {c.index} (iteration {c.iteration})"


def tune_table(run: TuneRun) -> Table:
    """Before and after: recall and false triggers on train and held-out, with 95% Wilson intervals."""
    res = run.result
    t = Table(title=f"{run.model}: does the description trigger? (teacher {run.teacher})", title_style="bold")
    t.caption = (
        f"train: the {len(res.train_ids)} queries whose failures the teacher saw; held-out: the "
        f"{len(res.held_ids)} it never saw. Repeats pooled, [95% Wilson CI]. Winner: best held-out "
        "accuracy, ties to the shorter."
    )
    for col in ("description", "train recall", "train false triggers", "held-out recall",
                "held-out false triggers", "held-out accuracy", "chars"):  # fmt: skip
        t.add_column(col, justify="left" if col == "description" else "right")
    shown = [res.original] if res.winner.index == 0 else [res.original, res.winner]
    for c in shown:
        t.add_row(
            _label(c) + (" ★" if c.index == res.winner.index else ""),
            *_figures_cells(c.train),
            *_figures_cells(c.held_out),
            pct(c.held_out.accuracy),
            str(len(c.description)),
        )
    return t


def print_tune_report(run: TuneRun, console: Console) -> None:
    """The table, both descriptions in full, what was rejected, and what happened to SKILL.md."""
    res = run.result
    console.print(tune_table(run))
    console.print(Text.assemble(("before: ", "bold"), res.original.description))
    if res.winner.index != 0:
        console.print(Text.assemble(("after:  ", "bold"), res.winner.description))
    scored = len(res.candidates) - 1
    line = f"{scored} candidate(s) scored, {len(res.rejected)} proposal(s) rejected"
    if res.rejected:
        reasons = sorted({r["reason"] for r in res.rejected})
        line += " (" + "; ".join(reasons)[:300] + ")"
    console.print(Text(line))
    if res.winner.index == 0:
        console.print(Text("The original description stays best on held-out queries; SKILL.md is unchanged."))
    elif run.written:
        console.print(Text(f"Wrote the new description into {run.skill_md} (only its frontmatter description changed)."))
    else:
        console.print(Text("Run again with --write to put the new description into SKILL.md."))
    console.print(Text(f"Run folder: {run.run_dir}"))


def matrix_table(report: RoutingReport) -> Table:
    """The confusion matrix: the query's skill (rows) against the skill loaded first (columns)."""
    t = Table(title=f"{report.model}: which skill loads first?", title_style="bold",
              caption="rows: the skill a query was written for; columns: the skill the model loaded first")  # fmt: skip
    t.add_column("query for \\ loaded", justify="left")
    for c in report.columns:
        t.add_column(Text(c), justify="right")
    for i, name in enumerate(report.skills):
        cells = [Text(str(v), style="bold green" if j == i and v else "bold red" if v and j != i else "dim")
                 for j, v in enumerate(report.matrix[i])]  # fmt: skip
        t.add_row(Text(name), *cells)
    return t


def per_skill_table(report: RoutingReport) -> Table:
    """Per skill: recall (loaded at all) and routing accuracy (loaded first), 95% Wilson intervals."""
    acc = _share(report.routed, report.n, report.accuracy, report.accuracy_ci_low, report.accuracy_ci_high)
    t = Table(title=f"per skill (library routing accuracy {acc.replace(chr(10), ' ')})", title_style="bold",
              caption="recall: its skill loaded at all; routing accuracy: its skill loaded first [95% Wilson CI]")  # fmt: skip
    for col in ("skill", "queries", "recall", "routing accuracy", "errors"):
        t.add_column(col, justify="left" if col == "skill" else "right")
    for p in report.per_skill:
        t.add_row(
            Text(p.skill), str(p.n), _share(p.loaded, p.n, p.recall, p.recall_ci_low, p.recall_ci_high),
            _share(p.routed, p.n, p.accuracy, p.accuracy_ci_low, p.accuracy_ci_high), str(p.errors),
        )  # fmt: skip
    return t


def print_routing_report(run: RoutingRun, console: Console) -> None:
    """Matrix, per-skill figures and stealing pairs per model, then where the files are."""
    for report, plot in zip(run.reports, run.plots, strict=True):
        console.print(matrix_table(report))
        console.print(per_skill_table(report))
        if not report.stealing:
            console.print(Text("No pair of skills steals the other's queries."))
        for p in report.stealing:
            console.print(Text.assemble(
                ("Stealing pair: ", "bold yellow"), f"{p.a} <-> {p.b}: {p.a_to_b} of {p.a}'s queries loaded "
                f"{p.b} first, {p.b_to_a} of {p.b}'s loaded {p.a}",
            ))  # fmt: skip
            for src, dst, examples in ((p.a, p.b, p.examples_a_to_b), (p.b, p.a, p.examples_b_to_a)):
                for q in examples:
                    console.print(Text(f"  • for {src}, loaded {dst}: {q[:160]!r}"))
        console.print(Text(f"Heat map: {plot}"))
    if run.no_queries:
        console.print(Text(f"In the catalog without queries of their own: {', '.join(run.no_queries)}"))
    console.print(Text(f"Run folder: {run.run_dir}  (publish: upskill-hub push --repo OWNER/NAME --results {run.run_dir})"))
