"""``eval --jobs N``: the CLI side of a run sharded over Hugging Face Jobs.

Thin: :mod:`upskill_hub.jobs.run` does the work; this module builds its options from
the flags, shows the shards' progress on stderr and returns the same :class:`RunResult`
as a local run, so ``eval`` prints the very same report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from upskill_hub.errors import UpskillError


def jobs_options(
    *,
    repo: str | None,
    jobs: int,
    flavor: str,
    job_timeout: str | None,
    attempts: int,
    image: str | None,
    namespace: str | None,
    device: str | None,
) -> Any:  # -> JobsOptions
    """The launcher's options from the flags; one-line errors for flags that cannot work."""
    from upskill_hub.jobs.launch import JobsOptions, check_options

    if not repo:
        raise UpskillError("--jobs needs --repo OWNER/NAME: the shards write their rows to that dataset repo")
    opts = JobsOptions(
        repo_id=repo,
        shards=jobs,
        flavor=flavor,
        timeout=job_timeout,
        attempts=attempts,
        image=image,
        namespace=namespace,
        device=device,
    )
    check_options(opts)
    return opts


def run(
    skill: Path,
    models: list[str],
    options: Any,  # EvalOptions
    jobs: Any,  # JobsOptions
    *,
    resume: bool,
    console: Any,
    chatty: bool,
) -> Any:  # -> RunResult
    """Launch (or with ``resume``, finish) a sharded run; show progress; return its :class:`RunResult`."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from upskill_hub.jobs import run as job_runs

    bar = Progress(
        TextColumn("[bold]jobs[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("shards {task.fields[info]}"),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )
    task: list[Any] = []

    def say(line: str) -> None:
        if chatty:
            console.print(line, markup=False, highlight=False, soft_wrap=True)

    def progress(done: int, total: int, info: str) -> None:
        if not chatty:
            return
        if not task:
            bar.start()
            task.append(bar.add_task("jobs", total=total, completed=done, info=info))
        bar.update(task[0], completed=done, total=total, info=info)

    try:
        if resume:
            run_id = str(skill)
            if Path(run_id).is_dir():
                raise UpskillError(
                    "with --jobs, --resume takes the run id instead of the skill: "
                    "upskill-hub eval --resume RUN_ID --jobs N --repo OWNER/NAME"
                )
            out = job_runs.resume_on_jobs(
                run_id, jobs, output_dir=options.output_dir, plots=options.plots, say=say, progress=progress
            )
        else:
            out = job_runs.run_on_jobs(skill, models, options, jobs, say=say, progress=progress)
    finally:
        if task:
            bar.stop()
    relaunched = f", {out.relaunched} relaunched" if out.relaunched else ""
    say(f"{len(out.shards)} shard(s) landed in {jobs.repo_id} ({out.launched} Job(s) launched{relaunched})")
    return out.result
