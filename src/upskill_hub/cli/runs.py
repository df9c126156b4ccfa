"""``upskill-hub runs``: list past eval runs and compare their pass rates and lifts; export one.

Thin: :mod:`upskill_hub.lift.history` and :mod:`upskill_hub.rundir.upskill_runs` read the
run folders (upskill's batch folders too); this module renders them. ``runs export RUN
--skill-creator DIR`` writes a run as skill-creator's workspace
(:mod:`upskill_hub.rundir.skill_creator`), so its eval viewer opens it. ``runs DIR`` stays
the listing it always was (``runs list DIR`` is the same).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from typer import _click as click  # the click Typer runs on (it vendors its own copy)
from typer.core import TyperGroup

from upskill_hub.cli._formats import OutputFormat, format_option, json_option, printer
from upskill_hub.cli._output import make_console
from upskill_hub.errors import UpskillError

if TYPE_CHECKING:
    from rich.table import Table

err_console = make_console(stderr=True, highlight=True)


def runs_command(
    directory: Path = typer.Argument(
        Path("upskill-runs"), help="Output folder of past runs (or one run folder)."
    ),
    as_csv: bool = typer.Option(False, "--csv", help="Print one CSV row per run x model x condition."),
    fmt: OutputFormat = format_option(),
    as_json: bool = json_option(),
) -> None:
    """List past eval runs and compare their pass rates and lifts (upskill's batch folders too).

    Example: upskill-hub runs list upskill-runs (`upskill-hub runs upskill-runs` is the same)
    """
    from rich.table import Table

    from upskill_hub.cli._eval_rows import RUNS_HEADERS
    from upskill_hub.lift.history import batch_rows, comparison_rows, scan_runs, to_csv
    from upskill_hub.rundir.upskill_runs import find_batches

    if not directory.is_dir():
        raise UpskillError(f"{directory} is not a folder of eval runs")
    infos, damaged = scan_runs(directory)
    if damaged and _is_one_run(directory):
        # One run folder asked for, and it cannot be read (a summary.json out of range, say):
        # that is the answer, in one line, not a warning followed by "no readable runs".
        raise UpskillError(damaged[0])
    for line in damaged:
        err_console.print(
            f"Warning: skipped a damaged run: {line}", markup=False, highlight=False, soft_wrap=True
        )
    batches = find_batches(directory)
    upskill_rows = [row for b in batches for row in batch_rows(b)]
    rows = comparison_rows(infos) + upskill_rows
    if as_csv:
        typer.echo(to_csv(rows), nl=False)
        return
    out = printer(fmt, as_json)
    if not out.human:
        out.table(
            rows,
            RUNS_HEADERS,
            json_data=_with_figures(rows, infos) if out.mode is OutputFormat.json else None,
        )
        return
    if upskill_rows:
        err_console.print(
            f"read {len(batches)} upskill batch folder(s) (batch_summary.json / run_*/run_result.json) from {directory}",
            highlight=False,
            soft_wrap=True,
        )
        _print_upskill_batches(upskill_rows)
    from upskill_hub.triggering.description_runs import description_runs

    others = description_runs(directory)
    if others:
        _print_description_runs(others)
    if not infos:
        if damaged and not upskill_rows and not others:
            raise UpskillError(f"no readable runs in {directory}: {len(damaged)} damaged (see above)")
        if not upskill_rows and not others:
            err_console.print(f"No runs in {directory}.", highlight=False)
        return

    from upskill_hub._util.percent import pct, points

    t = Table(
        title=f"Eval runs in {directory}",
        caption="pass rates; lift in points [95% CI]; status: done or calls done/planned (--resume)",
    )
    t.add_column("run (time-skill-id)", overflow="fold", min_width=17)
    t.add_column("model", overflow="fold")
    t.add_column("mode")
    t.add_column("base", justify="right", no_wrap=True)
    t.add_column("skill", justify="right", no_wrap=True)
    t.add_column("lift", justify="right", no_wrap=True)
    t.add_column("p", justify="right", no_wrap=True)
    t.add_column("status")
    for info in infos:
        s = info.summary
        by = {(c.model, c.mode, c.condition): c for c in s.conditions}
        lifts = {(x.model, x.mode): x for x in s.lifts}
        modes = list(dict.fromkeys(c.mode for c in s.conditions)) or ["inject"]
        lines = [
            (m, mode)
            for m in s.models
            for mode in modes
            if (m, mode, "baseline") in by or (m, mode, "with_skill") in by
        ]
        if not lines and not s.triggers:
            lines = [(m, modes[0]) for m in s.models]
        for i, (m, mode) in enumerate(lines):
            b, w, x = by.get((m, mode, "baseline")), by.get((m, mode, "with_skill")), lifts.get((m, mode))
            lift = (
                "–"
                if x is None or x.lift is None
                else points(x.lift, x.ci_low, x.ci_high, unit="", compact=True)
            )
            t.add_row(
                s.run_id if i == 0 else "",
                m,
                mode,
                pct(b.pass_rate) if b else "–",
                pct(w.pass_rate) if w else "–",
                lift,
                "–" if x is None or x.p_value is None else f"{x.p_value:.2g}",
                ("done" if info.complete else f"{info.done}/{info.planned}") if i == 0 else "",
            )
        t.add_section()
    make_console().print(t)
    triggered = [(info.summary, tr) for info in infos for tr in info.summary.triggers]
    if triggered:
        make_console().print(_triggers_table(triggered))


def _is_one_run(directory: Path) -> bool:
    """Whether ``directory`` is itself a run folder (it holds ``run.json`` or ``summary.json``)."""
    import os

    from upskill_hub.rundir import RUN_FILE, SUMMARY_FILE

    return any(os.path.lexists(directory / name) for name in (RUN_FILE, SUMMARY_FILE))


def _triggers_table(items: list) -> Table:
    """Trigger figures per run and model: recall and false-trigger rate with Wilson intervals."""
    from rich.table import Table

    from upskill_hub._util.percent import pct

    t = Table(
        title="Triggering (catalog mode, or inside an agent CLI: triggers --agent)",
        caption="recall: loaded on should-trigger queries; false: loaded on should-not queries; [95% Wilson CI]; "
        "an agent CLI's rows are named after it (claude-code, codex, ...)",
    )
    for col in ("run", "model", "recall", "false triggers", "F1", "errors"):
        t.add_column(col, justify="left" if col in ("run", "model") else "right", overflow="fold")
    last = None
    for s, tr in items:
        recall = (
            "–"
            if tr.recall is None
            else f"{pct(tr.recall)} [{pct(tr.recall_ci_low)}–{pct(tr.recall_ci_high)}] {tr.triggered_should}/{tr.n_should}"
        )
        false = (
            "–"
            if tr.false_trigger_rate is None
            else f"{pct(tr.false_trigger_rate)} [{pct(tr.fpr_ci_low)}–{pct(tr.fpr_ci_high)}] {tr.triggered_should_not}/{tr.n_should_not}"
        )
        t.add_row(
            s.run_id if s.run_id != last else "",
            tr.model,
            recall,
            false,
            "–" if tr.f1 is None else f"{tr.f1:.2f}",
            str(tr.errors),
        )
        last = s.run_id
    return t


def _print_upskill_batches(rows: list[dict]) -> None:
    """upskill's batches: pass rates with Wilson intervals; no lift (upskill keeps no case pairing)."""
    from rich.table import Table

    t = Table(
        title="upskill batches",
        caption="assertions passed/total (upskill's per-test score); runs passed (every assertion) "
        "[95% Wilson CI]; mean total tokens per run",
    )
    for col in ("batch", "skill", "model", "condition", "assertions", "runs passed", "tokens", "status"):
        t.add_column(col, justify="right" if col in ("assertions", "runs passed", "tokens") else "left")
    for r in rows:
        if r["status"] == "incomplete":
            t.add_row(
                r["run_id"], r["skill_name"], r["model"], "–", "–", "–", "–", f"incomplete: {r['reason']}"
            )
            continue
        rate = r["pass_rate"]
        shown = (
            "–"
            if rate is None
            else f"{r['passed']}/{r['n']} {rate * 100:.0f}% [{(r['ci_low'] or 0) * 100:.0f}–{(r['ci_high'] or 0) * 100:.0f}%]"
        )
        tokens = "–" if r["mean_total_tokens"] is None else f"{r['mean_total_tokens']:.0f}"
        a_total = r.get("assertions_total") or 0
        asserted = f"{r['assertions_passed']}/{a_total}" if a_total else "–"
        t.add_row(r["run_id"], r["skill_name"], r["model"], r["condition"], asserted, shown, tokens, "done")
    make_console().print(t)


def _print_description_runs(items: list) -> None:
    """``tune`` and ``triggers --library`` runs: one line each."""
    from rich.table import Table
    from rich.text import Text

    t = Table(title="Description runs (tune, triggers --library)")
    for col in ("run", "kind", "skill / library", "model(s)", "result"):
        t.add_column(col, overflow="fold")
    for d in items:
        t.add_row(Text(d.run_id), d.kind, Text(d.subject), Text(d.models), Text(d.result))
    make_console().print(t)


def _with_figures(rows: list[dict], infos: list) -> list[dict]:
    """``--format json``'s rows, each with its run's benchmark figures for that model x mode x
    condition, and the assertions flagged for that model x mode (see ``benchmark.json``).

    ``null`` where a run holds none: runs written before these figures existed, upskill's
    batches, trigger rows.
    """
    from dataclasses import asdict

    summaries = {info.summary.run_id: info.summary for info in infos}
    out = []
    for r in rows:
        s = summaries.get(r.get("run_id"))
        key = (r.get("model"), r.get("mode"), r.get("condition"))
        mine = (
            [b for b in (s.benchmark or []) if (b.model, b.mode, b.condition) == key] if s is not None else []
        )
        bench = asdict(mine[0]) if mine else None
        flags = None
        if s is not None and s.assertion_flags is not None and key[2] != "triggers":
            flags = [asdict(f) for f in s.assertion_flags if (f.model, f.mode) == key[:2]]
        out.append({**r, "benchmark": bench, "assertion_flags": flags})
    return out


def export_command(
    run: Path = typer.Argument(..., help="One eval run folder (it holds summary.json)."),
    skill_creator: Path | None = typer.Option(
        None,
        "--skill-creator",
        help="Write the run as skill-creator's workspace in this folder: eval-N/with_skill|without_skill/run-K/ "
        "with outputs/, grading.json, timing.json, and benchmark.json. The folder must be new, empty or an "
        "earlier export (which is replaced).",
    ),
) -> None:
    """Export a run for another tool: skill-creator's eval viewer opens the folder as it is.

    Example: upskill-hub runs export upskill-runs/RUN --skill-creator review/
    Then: python eval-viewer/generate_review.py review/ --benchmark review/benchmark.json
    (add --previous-workspace OLD/ with an earlier export, e.g. of the --against run).
    """
    from upskill_hub import rundir
    from upskill_hub.lift.figures.assertion_audit import audit_rows
    from upskill_hub.lift.figures.benchmark import benchmark_document, workspace_answers
    from upskill_hub.rundir.skill_creator import write_workspace

    if skill_creator is None:
        raise UpskillError("say where to export: --skill-creator DIR (skill-creator's workspace layout)")
    if not run.is_dir():
        raise UpskillError(f"{run} is not a run folder")
    summary = rundir.read_summary(run)
    if summary is None:
        raise UpskillError(
            f"{run} has no summary.json: not a finished eval run (finish it with eval --resume)"
        )
    rows = rundir.read_results(run)
    if not rows:
        raise UpskillError(f"{run} has no result rows to export")
    plan = rundir.read_plan(run)
    case_ids = list(plan.case_ids) if plan is not None else []
    doc = benchmark_document(summary, rows, case_ids, audit_rows(rows))
    written = write_workspace(skill_creator, doc, workspace_answers(rows, case_ids), {}, summary.run_id)
    err_console.print(
        f"wrote {len(written)} answer folder(s) of run {summary.run_id} to {skill_creator} "
        f"(skill-creator's workspace; benchmark.json beside them)",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )


class _RunsGroup(TyperGroup):
    """``runs DIR`` (and bare ``runs``) still lists runs: anything but a subcommand or ``--help``
    goes to ``runs list``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands and args[0] not in ("--help", "-h")):
            args = ["list", *args]
        return super().parse_args(ctx, args)


def register(app: typer.Typer) -> None:
    """Add ``runs`` (``runs DIR`` / ``runs list DIR``, ``runs export RUN``) to the root app."""
    group = typer.Typer(
        cls=_RunsGroup,
        help="List past eval runs and compare their pass rates and lifts; export one for skill-creator's viewer.",
        rich_markup_mode="rich",
    )
    group.command("list")(runs_command)
    group.command("export")(export_command)
    app.add_typer(group, name="runs")
