"""Terminal rendering for the description commands: ``triggers`` per query and ``triggers --library``.

``tune``'s table and report are :mod:`upskill_hub.triggering.tune_report`.

Rendering only: every number comes from
:class:`~upskill_hub.rundir.trigger_rows.QueryRate` and
:class:`~upskill_hub.triggering.routing.RoutingReport`. Skill names, descriptions and queries
are user content, so they are printed as :class:`~rich.text.Text` (a ``[`` in them is
never read as markup).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

from upskill_hub._util.percent import interval, pct
from upskill_hub._util.printable import escape_controls
from upskill_hub.lift.report import _share  # the trigger table's cell: 62% (5/8) / [31%, 86%]
from upskill_hub.rundir.routing_rows import RoutingReport
from upskill_hub.rundir.trigger_rows import QUERIES_FILE, QueryRate

if TYPE_CHECKING:
    from upskill_hub.triggering.routing_run import RoutingRun
    from upskill_hub.triggering.triggers import TriggerResult

#: Failing queries listed in the terminal; the rest are in the run folder's trigger-queries.json.
MAX_FAILING_SHOWN = 200


def _rate_cell(r: QueryRate) -> str:
    """``2/3 (67%)`` over its Wilson interval; a query with no answered run says so."""
    if r.rate is None:
        return f"no answer ({r.errors} failed)"
    failed = f", {r.errors} failed" if r.errors else ""
    return f"{r.share} ({pct(r.rate)}{failed})\n{interval(r.ci_low, r.ci_high)}"


def failing_table(res: TriggerResult, failing: list[QueryRate]) -> Table:
    """The queries that fail at the threshold, each once per model: how often it loaded the skill."""
    t = Table(
        title=f"{res.skill_name}: queries that fail at threshold {res.threshold:g}", title_style="bold",
        caption=f"triggered: runs that loaded the skill, of the answered runs [95% Wilson CI]; a should-trigger "
        f"query passes at a rate >= {pct(res.threshold)}, a should-not one below it",
    )  # fmt: skip
    for col in ("model", "expected", "triggered", "query"):
        t.add_column(col, justify="right" if col == "triggered" else "left")
    for r in failing:
        t.add_row(Text(escape_controls(r.model, one_line=True)), "should trigger" if r.should_trigger else "should not",
                  _rate_cell(r), Text(escape_controls(r.query[:160], one_line=True)))  # fmt: skip
    return t


def print_query_verdicts(res: TriggerResult, console: Console) -> None:
    """Per model, how many queries pass at the threshold; then each failing query once, with its rate."""
    by_model: dict[str, list[QueryRate]] = {}
    for r in res.queries:
        by_model.setdefault(r.model, []).append(r)
    for model, rates in by_model.items():
        judged = [r for r in rates if r.passed is not None]
        passed = sum(bool(r.passed) for r in judged)
        unjudged = f" ({len(rates) - len(judged)} more had no answered run)" if len(judged) < len(rates) else ""
        console.print(Text(f"{model}: {passed} of {len(judged)} queries pass at threshold {res.threshold:g}{unjudged}"))
    failing = res.failing
    if failing:
        console.print(failing_table(res, failing[:MAX_FAILING_SHOWN]))
    if len(failing) > MAX_FAILING_SHOWN:
        console.print(Text(f"• ... and {len(failing) - MAX_FAILING_SHOWN} more failing queries in "
                           f"{res.run_dir / QUERIES_FILE}"))  # fmt: skip


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
