"""``upskill-hub tune``: rewrite a skill's description until it triggers, judged on held-out queries.

Thin: :mod:`upskill_hub.triggering.tune_run` runs the loop; this module shows its progress and
renders the result.
"""

from __future__ import annotations

from pathlib import Path

import typer

from upskill_hub.cli._agent_options import (
    agent_env_option,
    agent_real_home_option,
    agent_timeout_option,
    keep_workspaces_option,
)
from upskill_hub.cli._formats import OutputFormat, format_option, json_option, printer
from upskill_hub.cli._output import make_console
from upskill_hub.errors import UpskillError

err_console = make_console(stderr=True, highlight=False)


def tune_command(
    skill: Path = typer.Argument(..., help="Skill folder whose description to tune."),
    model: str | None = typer.Option(
        None, "--model", "-m", help="The model the description must work for (as for eval); or use --agent."
    ),
    teacher: str | None = typer.Option(
        None,
        "--teacher",
        "-t",
        help="Model that proposes descriptions (default: generate's teacher, sonnet).",
    ),
    iterations: int = typer.Option(
        5, "--iterations", "-i", help="Proposals to ask the teacher for, at most."
    ),
    runs: int = typer.Option(3, "--runs", "-n", help="Repeats of each query per candidate."),
    write: bool = typer.Option(
        False, "--write", help="Put the winner into SKILL.md (only its description changes)."
    ),
    triggers: Path | None = typer.Option(
        None,
        "--triggers",
        help="Trigger eval-set file, a JSON list of {query, should_trigger} (default: as for triggers).",
    ),
    distractors: str | None = typer.Option(
        None,
        "--distractors",
        help="Folder of other skills in the catalog, or 'none' (default: the shipped skills).",
    ),
    held_out: float = typer.Option(
        0.4,
        "--held-out",
        help="Share of each kind of query kept from the teacher; 0 tunes on all (no held-out score).",
    ),
    description: str | None = typer.Option(
        None,
        "--description",
        help="Start from this description (TEXT, or @FILE) instead of SKILL.md's; SKILL.md is unchanged.",
    ),
    threshold: float = typer.Option(
        0.5,
        "--threshold",
        help="Per-query verdict (skill-creator's run_eval rule): a should-trigger query passes when it loads the skill "
        "in at least this share of its runs, a should-not one when in less. Decides the failures the teacher sees "
        "and the queries passed that pick the winner.",
    ),  # fmt: skip
    seed: int = typer.Option(0, "--seed", help="Seed of the train / held-out split."),
    base_url: str | None = typer.Option(
        None, "--base-url", help="OpenAI-compatible endpoint for the model (and the teacher)."
    ),
    teacher_base_url: str | None = typer.Option(
        None, "--teacher-base-url", help="Endpoint for the teacher only."
    ),
    output: Path = typer.Option(
        Path("upskill-runs"), "--output", "-o", help="Folder that receives run folders."
    ),
    resume: bool = typer.Option(False, "--resume", help="Finish the latest matching tune run instead."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Call the models even if answers are cached."),
    concurrency: int | None = typer.Option(
        None, "--concurrency", "-c", help="Concurrent calls to the model."
    ),
    agent: str | None = typer.Option(
        None,
        "--agent",
        "-a",
        rich_help_panel="Agent harnesses",
        help="Score each candidate inside this agent CLI instead of a model (as triggers --agent): claude-code, "
        "codex, gemini or opencode (optionally :MODEL). The teacher is still a model (--teacher, --base-url).",
    ),  # fmt: skip
    agent_env: list[str] = agent_env_option(),
    agent_timeout: float | None = agent_timeout_option(None),
    keep_workspaces: bool = keep_workspaces_option(),
    agent_real_home: bool = agent_real_home_option(),
    fmt: OutputFormat | None = format_option(),
    as_json: bool = json_option(),
) -> None:
    """Tune a skill's description so MODEL loads the skill when it should, and only then.

    As skill-creator's run_loop: the trigger queries are split into train and held-out
    (stratified, seeded). Each iteration the teacher rewrites the last description scored,
    seeing its train failures at --threshold, the whole SKILL.md (within a budget) and every
    earlier attempt with its train score, never a held-out query or score, and proposes a
    new one (spec-valid, at most 1,024 characters; others are rejected and counted). Every
    candidate is scored on both halves --runs times; the winner passes the most held-out
    queries at --threshold, pooled accuracy breaking ties, then the shorter. --held-out 0
    tunes on every query: the winner is then the best on train, which is not a held-out
    score, and the output says so. --description starts from another text than SKILL.md's.
    Prints every candidate with 95% intervals, the winner starred; tune_report.md in the
    run folder has each iteration. --resume continues a killed run.

    Example: [cyan]upskill-hub tune skills/hf-dataset-card -m haiku --teacher sonnet --write[/]

    Inside an agent CLI: [cyan]upskill-hub tune skills/hf-dataset-card --agent claude-code --teacher sonnet[/]
    """
    from upskill_hub.cli.triggers import check_agent_options
    from upskill_hub.triggering.query_verdicts import check_threshold
    from upskill_hub.triggering.tune_report import print_tune_report
    from upskill_hub.triggering.tune_run import description_option, run_tune

    out = printer(fmt, as_json)
    check_threshold(threshold)
    if model is None and not agent:
        raise UpskillError(
            "tune needs --model MODEL (the model the description must work for) or --agent CLI"
        )
    harness = check_agent_options(
        [agent] if agent else None, agent_env=agent_env, agent_timeout=agent_timeout, keep_workspaces=keep_workspaces,
        agent_real_home=agent_real_home, library=False, model=[model] if model else None, base_url=None,
    )  # fmt: skip
    if not 0 <= held_out < 1:
        raise UpskillError(f"--held-out must be 0 (tune on every query) or between 0 and 1, not {held_out}")
    start = description_option(description) if description is not None else None
    calls = 0
    with err_console.status("Scoring the original description...") as status:
        state = {"step": "scoring the original description"}

        def on_row(_row: object) -> None:
            nonlocal calls
            calls += 1
            status.update(f"{state['step']}: {calls} trigger calls so far")

        def on_step(message: str) -> None:
            if not out.machine:
                err_console.print(message, markup=False)
            state["step"] = "scoring the next candidate"

        run = run_tune(
            skill, model, teacher=teacher, base_url=base_url, teacher_base_url=teacher_base_url,
            iterations=iterations, runs=runs, seed=seed, held_out=held_out, triggers_file=triggers,
            distractors=distractors, output_dir=output, resume=resume, use_cache=not no_cache,
            concurrency=concurrency, write=write, description=start, threshold=threshold, agent=agent,
            harness=harness, on_step=on_step, on_row=on_row,
        )  # fmt: skip
    if out.human:
        err_console.print(run.source, markup=False)
        print_tune_report(run, make_console())
        return
    res = run.result
    rows = []
    for c in res.candidates:
        rows.append({
            "index": c.index, "iteration": c.iteration, "winner": c.index == res.winner.index,
            "train_recall": c.train.recall, "train_false_trigger_rate": c.train.false_trigger_rate,
            "train_accuracy": c.train.accuracy, "train_queries_passed": c.train.queries_passed,
            "held_out_queries_passed": c.held_out.queries_passed,
            "held_out_recall": c.held_out.recall, "held_out_recall_ci_low": c.held_out.recall_ci_low,
            "held_out_recall_ci_high": c.held_out.recall_ci_high,
            "held_out_false_trigger_rate": c.held_out.false_trigger_rate, "held_out_accuracy": c.held_out.accuracy,
            "description": c.description,
        })  # fmt: skip
    data = {"run_dir": str(run.run_dir), "model": run.model, "agent": agent is not None, "teacher": run.teacher, "written": run.written,
            "started_from": "--description" if run.seeded else "SKILL.md", "report": str(run.report),
            **res.to_dict()}  # fmt: skip
    cols = ["index", "iteration", "winner", "train_queries_passed", "train_accuracy"]
    if not res.all_queries:
        cols += [
            "held_out_recall",
            "held_out_false_trigger_rate",
            "held_out_queries_passed",
            "held_out_accuracy",
        ]
    out.table(rows, [*cols, "description"], id_key="index", json_data=data)


def register(app: typer.Typer) -> None:
    """Add ``tune`` to the root app."""
    app.command("tune", no_args_is_help=True)(tune_command)
