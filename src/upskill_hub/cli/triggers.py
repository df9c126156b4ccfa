"""``upskill-hub triggers``: does a skill's description make a model load it when it should?

Thin: :mod:`upskill_hub.evals.triggers` runs the queries against a skill catalog and
computes the figures; this module renders them.
"""

from __future__ import annotations

from pathlib import Path

import typer

from upskill_hub.cli._formats import OutputFormat, format_option, json_option, printer
from upskill_hub.cli._output import make_console
from upskill_hub.errors import UpskillError

err_console = make_console(stderr=True, highlight=True)


def triggers_command(
    skill: list[Path] = typer.Argument(..., help="Skill folder(s) whose descriptions to test."),
    model: list[str] = typer.Option(None, "--model", "-m", help="Model spec, repeatable (as for eval)."),
    runs: int = typer.Option(1, "--runs", "-n", help="Repeats of each query per model."),
    triggers: Path | None = typer.Option(
        None, "--triggers", help="Trigger eval-set file: a JSON list of {query, should_trigger} (skill-creator's "
        "format). Default: 'triggers' in skill_meta.json, else the cases (should) and the distractors' cases (should not).",
    ),  # fmt: skip
    distractors: str | None = typer.Option(
        None, "--distractors", help="Folder of other skills in the catalog, or 'none' (default: the shipped skills)."
    ),
    base_url: str | None = typer.Option(None, "--base-url", help="OpenAI-compatible endpoint for the model specs."),
    output: Path = typer.Option(Path("upskill-runs"), "--output", "-o", help="Folder that receives run folders."),
    resume: bool = typer.Option(False, "--resume", help="Finish the latest matching trigger run instead."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Call the models even if answers are cached."),
    concurrency: int | None = typer.Option(None, "--concurrency", "-c", help="Concurrent calls per model."),
    fmt: OutputFormat | None = format_option(),
    as_json: bool = json_option(),
) -> None:
    """Does the description make the model load the skill when it should, and only then?

    Each query is one model turn with the skill catalog and a load_skill tool; it triggered
    iff the model loads the skill. Reports recall and false-trigger rate with 95% Wilson
    intervals, precision, F1 and the queries that went wrong.

    Example: [cyan]upskill-hub triggers skills/hf-dataset-card -m haiku --runs 3[/]
    """
    from upskill_hub.evals.report import print_trigger_report
    from upskill_hub.evals.triggers import run_triggers, wrong_queries

    out = printer(fmt, as_json)
    results = []
    for s in skill:
        res = run_triggers(
            s, model or ["local"], base_url=base_url, use_cache=not no_cache, runs=runs, triggers_file=triggers,
            distractors=distractors, output_dir=output, resume=resume, concurrency=concurrency,
        )  # fmt: skip
        results.append(res)
        if out.human:
            err_console.print(res.source, markup=False, highlight=False)
            print_trigger_report(res.rows[0].skill_name if res.rows else s.name, res.stats, wrong_queries(res.rows),
                                 make_console(), str(res.run_dir))  # fmt: skip
    if not out.human:
        rows = [{"run_id": r.run_dir.name, **st.__dict__} for r in results for st in r.stats]
        headers = ["run_id", "model", "recall", "recall_ci_low", "recall_ci_high", "false_trigger_rate",
                   "fpr_ci_low", "fpr_ci_high", "precision", "f1"]  # fmt: skip
        out.table(rows, headers, id_key="run_id", json_data=rows)
    failed = [r for res in results for r in res.rows if r.error is not None]
    if failed:
        raise UpskillError(f"{len(failed)} trigger calls failed (first: {failed[0].error}); rerun with --resume")


def register(app: typer.Typer) -> None:
    """Add ``triggers`` to the root app."""
    app.command("triggers", no_args_is_help=True)(triggers_command)
