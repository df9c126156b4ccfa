"""``upskill-hub generate``: a teacher model writes a skill, its tests, and refines it.

Thin: :mod:`upskill_hub.generate` does the work and reports progress as lines, which go
to stderr; the final report (bars like upskill's) goes to stderr too, so ``--json`` can
put the machine-readable result alone on stdout.
"""

from __future__ import annotations

from pathlib import Path

import typer

from upskill_hub._util.percent import pct, points
from upskill_hub.cli._formats import OutputFormat, format_option, json_option, printer
from upskill_hub.cli._output import make_console

err_console = make_console(stderr=True)

_BAR = 24


def _bar(x: float | None) -> str:
    if x is None:
        return "░" * _BAR
    n = round(x * _BAR)
    return "█" * n + "░" * (_BAR - n)


class _EvalBar:
    """A transient progress bar for each eval inside ``generate`` (closed before any line prints)."""

    def __init__(self) -> None:
        self.progress = None
        self.task = None

    def start(self, total: int, done: int) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.stop()
        if not err_console.is_terminal:  # logs and pipes get the progress lines only
            return
        self.progress = Progress(
            TextColumn("  [bold]eval[/]"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=err_console,
            transient=True,
        )
        self.progress.start()
        self.task = self.progress.add_task("eval", total=total, completed=done)

    def row(self, _row) -> None:  # noqa: ANN001 - ResultRow
        if self.progress is not None:
            self.progress.advance(self.task)

    def stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None


def _render(result) -> None:  # noqa: ANN001 - GenerateResult
    """upskill-style summary: name, description, size, baseline vs with-skill bars, holdout."""
    skill = result.skill
    best = result.attempts[result.best_attempt - 1]
    err_console.print()
    err_console.print(f"  [bold]{skill.name}[/]")
    err_console.print(f"  {skill.description}", markup=False)
    err_console.print()
    n_refs = len(skill.resources()["references"])
    refs = f", {n_refs} reference file(s)" if n_refs else ""
    err_console.print(f"  SKILL.md  ~{skill.token_estimate} tokens{refs}")
    for s in best.scores:
        err_console.print()
        err_console.print(f"  [bold]{s.model}[/] — train cases ({result.n_train}), attempt {best.number}")
        err_console.print(f"  baseline   {_bar(s.baseline)}  {pct(s.baseline)}")
        lift = f"  ({points(s.lift, unit='%')})" if s.lift is not None else ""
        err_console.print(f"  with skill {_bar(s.with_skill)}  {pct(s.with_skill)}{lift}")
    if result.holdout is not None:
        for s in result.holdout:
            lift = f" ({points(s.lift, unit='%')})" if s.lift is not None else ""
            err_console.print(
                f"  held-out ({result.n_holdout} case(s), never shown to the teacher): "
                f"{pct(s.baseline)} -> {pct(s.with_skill)}{lift}"
            )
    else:
        err_console.print("  held-out: none (too few test cases to hold any out)")
    for note in result.notes:
        err_console.print(f"  note: {note}", markup=False)
    err_console.print()
    err_console.print(f"Saved to {result.path}", markup=False)
    if result.report_path is not None:
        err_console.print(f"Report: {result.report_path}", markup=False, style="dim")


def generate_command(
    task: str = typer.Argument(
        ..., help="What the skill should teach, e.g. 'build CUDA kernels with kernel-builder'."
    ),
    source: Path | None = typer.Option(
        None,
        "--from",
        "-f",
        help="An exported agent trace (JSON, Claude Code JSONL, Markdown) to learn from, "
        "or an existing skill folder to improve.",
    ),
    model: str = typer.Option(
        "sonnet",
        "--model",
        "-m",
        help="Teacher model spec that writes and refines the skill (e.g. sonnet, opus).",
    ),
    test_model: str | None = typer.Option(
        None, "--test-model", help="Model that writes the test cases (default: the teacher)."
    ),
    eval_model: list[str] = typer.Option(
        None, "--eval-model", "-e", help="Model to evaluate the skill on, repeatable (default: the teacher)."
    ),
    attempts: int = typer.Option(3, "--attempts", "-a", help="Evaluate/refine rounds at most."),
    num_cases: int = typer.Option(8, "--num-cases", help="Test cases to generate (~25% are held out)."),
    output: Path = typer.Option(Path("skills"), "--output", "-o", help="Folder that receives <name>/."),
    name: str | None = typer.Option(None, "--name", help="Skill name (default: the teacher's choice)."),
    force: bool = typer.Option(False, "--force", help="Replace an existing skill folder of the same name."),
    runs: int = typer.Option(1, "--runs", "-n", help="Repeats of each case per model and condition."),
    runs_dir: Path = typer.Option(
        Path("upskill-runs"), "--runs-dir", help="Folder that receives the eval runs."
    ),
    base_url: str | None = typer.Option(
        None, "--base-url", help="OpenAI-compatible endpoint for the teacher and test models."
    ),
    eval_base_url: str | None = typer.Option(
        None, "--eval-base-url", help="OpenAI-compatible endpoint for the eval models (llama.cpp, vLLM, ...)."
    ),
    concurrency: int | None = typer.Option(
        None, "--concurrency", "-c", help="Concurrent eval calls per model."
    ),
    no_cache: bool = typer.Option(
        False, "--no-cache", help="Call the eval models even if answers are cached."
    ),
    trace_budget: int | None = typer.Option(
        None, "--trace-budget", help="Tokens of the trace sent to the teacher (long traces are condensed)."
    ),
    fmt: OutputFormat = format_option(),
    as_json: bool = json_option(),
) -> None:
    """Generate a skill with a teacher model, write test cases, evaluate and refine it.

    Example: [bold]upskill-hub generate "parse YAML safely in Python" --model sonnet --eval-model haiku[/]
    """
    from upskill_hub.generate import GenerateOptions, generate_skill

    out = printer(fmt, as_json)  # a bad --format fails before any call
    bar = _EvalBar()
    opts = GenerateOptions(
        source=source,
        teacher=model,
        test_model=test_model,
        eval_models=list(eval_model or []),
        attempts=attempts,
        num_cases=num_cases,
        output_dir=output,
        name=name,
        force=force,
        runs=runs,
        runs_dir=runs_dir,
        base_url=base_url,
        eval_base_url=eval_base_url,
        use_cache=not no_cache,
        concurrency=concurrency,
        trace_budget_tokens=trace_budget,
        on_eval_start=bar.start,
        on_eval_row=bar.row,
    )

    def say(line: str) -> None:
        bar.stop()
        err_console.print(line, markup=False, soft_wrap=True)

    try:
        result = generate_skill(task, opts, progress=say)
    finally:
        bar.stop()
    if out.mode in (OutputFormat.human, OutputFormat.json):
        _render(result)  # stderr, as before
    if not out.human:
        data = result.to_dict()
        best = result.attempts[result.best_attempt - 1]
        lifts = ",".join(f"{s.model}:{s.lift:+.3f}" for s in best.scores if s.lift is not None)
        out.result(
            data["path"],
            json_data=data,
            name=data["name"],
            version=data["version"],
            path=data["path"],
            best_attempt=data["best_attempt"],
            train_lift=lifts or None,
        )


def register(app: typer.Typer) -> None:
    """Add ``generate`` to the root app."""
    app.command("generate", no_args_is_help=True)(generate_command)
