"""``upskill-hub triggers``: does a skill's description make a model load it when it should?

Thin: :mod:`upskill_hub.triggering.triggers` runs the queries against a skill catalog and
computes the figures; this module renders them.
"""

from __future__ import annotations

import contextlib
import re
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.progress import MofNCompleteColumn, Progress
from rich.text import Text

from upskill_hub.cli._agent_options import (
    agent_env_option,
    agent_real_home_option,
    agent_timeout_option,
    keep_workspaces_option,
)
from upskill_hub.cli._formats import OutputFormat, format_option, json_option, printer
from upskill_hub.cli._output import make_console
from upskill_hub.errors import OptionError, UpskillError

if TYPE_CHECKING:
    from upskill_hub.lift.harness.spec import HarnessOptions
    from upskill_hub.rundir.schema import TriggerStats
    from upskill_hub.triggering.triggers import TriggerResult

err_console = make_console(stderr=True, highlight=True)


def triggers_command(
    skill: list[Path] = typer.Argument(
        ...,
        help="Skill folder(s) whose descriptions to test; with --library, one folder of skills or a Hub repo OWNER/NAME.",
    ),
    library: bool = typer.Option(
        False,
        "--library",
        help="Route every skill's queries against a catalog of the whole library: confusion "
        "matrix, per-skill recall and routing accuracy, and the pairs that steal each other's queries.",
    ),  # fmt: skip
    model: list[str] = typer.Option(None, "--model", "-m", help="Model spec, repeatable (as for eval)."),
    runs: int = typer.Option(1, "--runs", "-n", help="Repeats of each query per model."),
    threshold: float = typer.Option(
        0.5,
        "--threshold",
        help="Per-query verdict (as skill-creator's run_eval): a should-trigger query passes when it loads the "
        "skill in at least this share of its runs, a should-not query when it loads it in less.",
    ),  # fmt: skip
    description: str | None = typer.Option(
        None,
        "--description",
        metavar="TEXT|@FILE",
        help="Score this candidate description (or the text of FILE) in place of SKILL.md's; SKILL.md is not "
        "changed, the run folder records the candidate. One skill only.",
    ),  # fmt: skip
    triggers: Path | None = typer.Option(
        None,
        "--triggers",
        help="Trigger eval-set file: a JSON list of {query, should_trigger} (skill-creator's "
        "format). Default: 'triggers' in skill_meta.json, else the cases (should) and the distractors' cases (should not).",
    ),  # fmt: skip
    distractors: str | None = typer.Option(
        None,
        "--distractors",
        help="Folder of other skills in the catalog, or 'none' (default: the shipped skills).",
    ),
    base_url: str | None = typer.Option(
        None, "--base-url", help="OpenAI-compatible endpoint for the model specs."
    ),
    output: Path = typer.Option(
        Path("upskill-runs"), "--output", "-o", help="Folder that receives run folders."
    ),
    resume: bool = typer.Option(False, "--resume", help="Finish the latest matching trigger run instead."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Call the models (or run the agent CLIs) even if answers are cached."),
    concurrency: int | None = typer.Option(
        None, "--concurrency", "-c", help="Concurrent calls per model (per agent CLI with --agent; default 2 there)."
    ),
    agent: list[str] = typer.Option(
        None,
        "--agent",
        "-a",
        help="Measure triggering inside this agent CLI, repeatable: claude-code, codex, gemini, opencode "
        "(optionally :MODEL). Each query runs in a throwaway workspace with the skill installed beside the "
        "distractors; it triggered iff the CLI's transcript shows the skill loaded or its files read.",
        rich_help_panel="Agent harnesses",
    ),  # fmt: skip
    agent_env: list[str] = agent_env_option(),
    agent_timeout: float | None = agent_timeout_option(None),
    keep_workspaces: bool = keep_workspaces_option(),
    agent_real_home: bool = agent_real_home_option(),
    fmt: OutputFormat | None = format_option(),
    as_json: bool = json_option(),
    generate_queries: int | None = typer.Option(
        None, "--generate-queries", metavar="N", rich_help_panel="Generated queries",
        help="A skill without trigger queries (with --library: each one): a --teacher writes N, half should trigger, "
        "half near misses that should not; leaking ones dropped. Kept in the run folder (generated-queries.json), "
        "in skill_meta.json only with --write.",
    ),  # fmt: skip
    teacher: str | None = typer.Option(None, "--teacher", help="Model writing the queries (default: sonnet).", rich_help_panel="Generated queries"),
    write: bool = typer.Option(False, "--write", help="Also save them in skill_meta.json (atomically, its other keys kept).", rich_help_panel="Generated queries"),
) -> None:
    """Does the description make the model load the skill when it should, and only then?

    Each query is one model turn with the skill catalog and a load_skill tool; it triggered
    iff the model loads the skill. Reports recall and false-trigger rate with 95% Wilson
    intervals, precision and F1; then per query its trigger rate over --runs (with its
    interval) and a pass or fail at --threshold, listing each failing query once with its
    rate (2/3). The run folder keeps every row (triggers.jsonl) and every query's verdict
    (trigger-queries.json).

    With --library, every skill's queries go to a catalog of all the library's skills and the
    report is who loads what: a confusion matrix (and its heat map), per-skill recall and
    routing accuracy with intervals, and the stealing pairs with example queries.

    Example: [cyan]upskill-hub triggers skills/hf-dataset-card -m haiku --runs 3[/]

    A candidate description: [cyan]upskill-hub triggers skills/hf-dataset-card -m haiku --runs 3 --description @new.txt[/]

    A library: [cyan]upskill-hub triggers ./my-skills --library -m haiku[/]

    Inside an agent CLI (as skill-creator's run_eval): [cyan]upskill-hub triggers skills/hf-dataset-card --agent claude-code --runs 3[/]
    """
    check_options(runs=runs, concurrency=concurrency, distractors=distractors, threshold=threshold)
    harness = check_agent_options(
        agent, agent_env=agent_env, agent_timeout=agent_timeout, keep_workspaces=keep_workspaces,
        agent_real_home=agent_real_home, library=library, model=model, base_url=base_url,
    )  # fmt: skip
    if library:
        _library_command(skill, model or ["local"], runs=runs, base_url=base_url, output=output, resume=resume,
                         no_cache=no_cache, concurrency=concurrency, fmt=fmt, as_json=as_json,
                         generate=(generate_queries, teacher, write),
                         ignored={"--triggers": triggers, "--distractors": distractors, "--description": description})  # fmt: skip
        return
    from upskill_hub.generate.queries import queries_for_triggers
    from upskill_hub.lift.report import trigger_table
    from upskill_hub.triggering.candidates import read_description_arg
    from upskill_hub.triggering.description_report import print_query_verdicts
    from upskill_hub.triggering.triggers import run_triggers

    candidate, candidate_source = None, None
    if description is not None:
        if len(skill) != 1:
            raise UpskillError(f"--description scores one skill's candidate description, got {len(skill)} skills")
        candidate, candidate_source = read_description_arg(description)
    out = printer(fmt, as_json)
    results = []
    for s in skill:
        gen = queries_for_triggers(s, generate_queries, teacher=teacher, write=write, base_url=base_url,
                                   triggers_file=triggers, resume=resume, say=_say(out))  # fmt: skip
        common = {
            "use_cache": not no_cache, "runs": runs, "triggers_file": triggers, "distractors": distractors,
            "output_dir": output, "resume": resume, "concurrency": concurrency, "threshold": threshold,
            "description": candidate, "description_source": candidate_source,
        }  # fmt: skip
        with Ticker("agent trigger calls" if agent else "trigger calls", enabled=out.human) as tick:
            if agent:
                from upskill_hub.triggering.agent_triggers import run_agent_triggers

                res = run_agent_triggers(gen.skill if gen else s, agent, harness=harness, on_plan=tick.plan, on_row=tick.row, **common)
            else:
                res = run_triggers(gen.skill if gen else s, model or ["local"], base_url=base_url, on_plan=tick.plan, on_row=tick.row,
                                   **common)  # fmt: skip
        results.append(res)
        if gen:
            gen.save(res.run_dir, _say(out))
        if out.human:
            err_console.print(res.source, markup=False, highlight=False)
            console = make_console()
            if res.description is not None:
                console.print(Text.assemble(("candidate description", "bold"), f" (from {res.description_source}; "
                                            "SKILL.md unchanged): ", res.description))  # fmt: skip
            console.print(trigger_table(res.stats, title=f"{res.skill_name or s.name}: does the description trigger?"))
            print_query_verdicts(res, console)
            console.print(f"Results: {res.run_dir}", highlight=False, markup=False)
    if not out.human:
        pairs = [(r, _model_row(r, st)) for r in results for st in r.stats]
        rows = [row for _, row in pairs]
        headers = ["run_id", "model", "recall", "recall_ci_low", "recall_ci_high", "false_trigger_rate",
                   "fpr_ci_low", "fpr_ci_high", "precision", "f1", "threshold", "queries_passed", "queries_failed"]  # fmt: skip
        data = [_model_json(r, row) for r, row in pairs]
        out.table(rows, headers, id_key="run_id", json_data=data)
    failed = sum(res.failed for res in results)
    if failed:
        first = next(res.first_error for res in results if res.first_error)
        raise UpskillError(f"{failed} trigger calls failed (first: {first}); rerun with --resume")


def _model_row(res: TriggerResult, st: TriggerStats) -> dict[str, object]:
    """One model's pooled figures of a trigger run, with its per-query verdict counts."""
    mine = [q for q in res.queries if q.model == st.model]
    return {
        "run_id": res.run_dir.name, **st.__dict__, "threshold": res.threshold,
        "candidate_description": res.description,
        "queries_passed": sum(q.passed is True for q in mine), "queries_failed": sum(q.passed is False for q in mine),
    }  # fmt: skip


def _model_json(res: TriggerResult, row: dict[str, object]) -> dict[str, object]:
    """One model's JSON: our figures and per-query rows, plus skill-creator run_eval's fields
    (``results``, ``summary``, ``description``) so its improve_description.py reads the object."""
    from upskill_hub.triggering.query_verdicts import run_eval_fields

    mine = [q for q in res.queries if q.model == row["model"]]
    return {**row, "queries": [q.to_dict() for q in mine],
            **run_eval_fields(res.skill_name, res.tested_description, mine)}  # fmt: skip


def check_options(
    *, runs: int, concurrency: int | None, distractors: str | None, threshold: float = 0.5
) -> None:
    """The options' values, refused in one line before anything is read or sent."""
    from upskill_hub.triggering.query_verdicts import check_threshold
    from upskill_hub.triggering.triggers import check_run_options

    check_run_options(runs=runs, concurrency=concurrency)
    check_threshold(threshold)
    if distractors is not None and not distractors.strip():
        raise OptionError(
            "distractors", distractors, "is empty: name a folder of skills, or 'none' for no distractors"
        )


def check_agent_options(
    agents: list[str] | None, *, agent_env: list[str] | None, agent_timeout: float | None, keep_workspaces: bool,
    agent_real_home: bool, library: bool, model: list[str] | None, base_url: str | None,
) -> HarnessOptions | None:  # fmt: skip
    """``--agent`` and its options as :class:`HarnessOptions` (``None`` without ``--agent``); what
    cannot go with it, or what means nothing without it, is refused in one line before anything runs."""
    from upskill_hub.lift.harness.spec import DEFAULT_TIMEOUT_S, HarnessOptions, check_timeout

    if not agents:
        given = [name for name, v in (("--agent-env", agent_env), ("--agent-timeout", agent_timeout),
                                      ("--keep-workspaces", keep_workspaces or None),
                                      ("--agent-real-home", agent_real_home or None)) if v]  # fmt: skip
        if given:
            raise UpskillError(f"{', '.join(given)} only applies to --agent runs; add --agent claude-code (or codex, ...)")
        return None
    if library:
        raise UpskillError("--agent cannot be used with --library (a library routing run asks models, not agent CLIs)")
    if model:
        raise UpskillError(
            "--agent cannot be used with --model: the agent CLI chooses its own model (pick one with "
            "--agent claude-code:MODEL); run the model trigger eval separately"
        )
    if base_url is not None:
        raise UpskillError(
            "--base-url applies to --model calls; an agent CLI reads its endpoint from its own variables "
            "(e.g. --agent-env ANTHROPIC_BASE_URL=URL)"
        )
    from upskill_hub.triggering.agent_triggers import check_agent_specs

    check_agent_specs(agents)
    timeout = DEFAULT_TIMEOUT_S if agent_timeout is None else agent_timeout
    check_timeout(timeout)
    return HarnessOptions(timeout=timeout, agent_env=agent_env or [], keep_workspaces=keep_workspaces,
                          real_home=agent_real_home)  # fmt: skip


class Ticker:
    """Progress of a run's calls on stderr, from the first moment: a bar on a terminal, else a
    line when the plan is known and one every :data:`EVERY_S` seconds (a log or a pipe sees
    the run is alive and how far it is, instead of nothing until the end)."""

    EVERY_S = 5.0

    def __init__(self, what: str, *, enabled: bool) -> None:
        self.what = what
        self.enabled = enabled
        self.bar: Progress | None = None
        self.total: int | None = None
        self.done = 0
        self.last = 0.0

    def __enter__(self) -> Ticker:
        if self.enabled and err_console.is_terminal:
            self.bar = Progress(
                *Progress.get_default_columns(), MofNCompleteColumn(), console=err_console, transient=True
            )
            self.bar.start()
            self.task = self.bar.add_task(self.what, total=None)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()

    def plan(self, to_send: int, already: int = 0) -> None:
        self.total, self.done, self.last = to_send, 0, time.monotonic()
        if self.bar is not None:
            self.bar.update(self.task, total=to_send, completed=0)
        elif self.enabled:
            kept = f" ({already:,} already answered in the run folder)" if already else ""
            err_console.print(f"Sending {to_send:,} {self.what}{kept}...", markup=False, highlight=False)

    def row(self, _row: object) -> None:
        self.done += 1
        if self.bar is not None:
            self.bar.advance(self.task)
        elif self.enabled and (time.monotonic() - self.last >= self.EVERY_S or self.done == self.total):
            self.last = time.monotonic()
            err_console.print(
                f"  {self.done:,}/{self.total or 0:,} {self.what}", markup=False, highlight=False
            )


#: A Hub repo id as ``triggers --library`` takes one (a local folder of that name wins).
_REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")


def _library_command(
    sources: list[Path], models: list[str], *, runs: int, base_url: str | None, output: Path, resume: bool,
    no_cache: bool, concurrency: int | None, fmt: OutputFormat | None, as_json: bool, ignored: dict[str, object],
    generate: tuple[int | None, str | None, bool] = (None, None, False),
) -> None:  # fmt: skip
    """``triggers --library``: the routing run of one library (a folder, or pulled from the Hub)."""
    from upskill_hub.generate.queries import route_library
    from upskill_hub.triggering.description_report import print_routing_report
    from upskill_hub.triggering.routing_run import SkippedSkill

    if len(sources) != 1:
        raise UpskillError(f"--library takes one folder of skills or one Hub repo, got {len(sources)}")
    given = [k for k, v in ignored.items() if v is not None]
    if given:
        raise UpskillError(f"{', '.join(given)} cannot be used with --library (the library is the catalog)")
    out = printer(fmt, as_json)
    source = sources[0]
    with contextlib.ExitStack() as stack:
        label = None
        if not source.exists() and _REPO_ID.match(str(source)):
            from upskill_hub.hub.pull import pull

            label = str(source)
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="upskill-library-")))
            with err_console.status(f"Pulling the skills of {label}..."):
                pulled = pull(label, None, out_dir=folder)
            if not out.machine:
                err_console.print(
                    f"{len(pulled.skills)} skill(s) from {label}", markup=False, highlight=False
                )
            source = folder
        elif not source.is_dir():
            raise UpskillError(f"{source}: not a folder of skills (nor a Hub repo OWNER/NAME)")
        def warn(skipped: SkippedSkill) -> None:
            err_console.print(f"Warning: {skipped.line()}", markup=False, highlight=False, soft_wrap=True)

        with Ticker("routing calls", enabled=out.human) as tick:
            run = route_library(
                source, models, generate=generate[0], teacher=generate[1], write=generate[2], from_hub=label is not None,
                say=_say(out), label=label, base_url=base_url, runs=runs, output_dir=output, resume=resume,
                use_cache=not no_cache, concurrency=concurrency, on_plan=tick.plan, on_row=tick.row, on_skip=warn,
            )  # fmt: skip
    if out.human:
        print_routing_report(run, make_console())
    else:
        rows = [{"model": r.model, **p.__dict__} for r in run.reports for p in r.per_skill]
        data = {
            "run_dir": str(run.run_dir),
            "reports": [r.to_dict() for r in run.reports],
            "no_queries": run.no_queries,
            "skipped": [s.__dict__ for s in run.skipped],
        }
        out.table(rows, ["model", "skill", "n", "recall", "accuracy", "errors"], json_data=data)
    errors = sum(r.errors for r in run.reports)
    if errors:
        raise UpskillError(f"{errors} routing calls failed; rerun with --resume to ask them again")


def _say(out):  # noqa: ANN001, ANN202 - Printer; a line on stderr unless the output is for an agent
    chatty = out.mode in (OutputFormat.human, OutputFormat.json)
    return lambda line: err_console.print(line, markup=False, highlight=False, soft_wrap=True) if chatty else None


def register(app: typer.Typer) -> None:
    """Add ``triggers`` to the root app."""
    app.command("triggers", no_args_is_help=True)(triggers_command)
