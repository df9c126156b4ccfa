"""CLI command group ``jobs``: the Hugging Face Jobs of a sharded eval run.

``jobs ls`` shows each shard's newest Job, ``jobs logs`` prints (or follows) their logs and
``jobs cancel`` stops them all. Thin: the work is in :mod:`upskill_hub.jobs.status`. The shard
worker that a Job runs (``jobs run-shard``) registers itself here from its own module.
"""

from __future__ import annotations

from typing import Any

import typer
from rich.table import Table

from upskill_hub.cli import _jobs_shard as jobs_shard
from upskill_hub.cli._formats import OutputFormat, format_option, json_option, printer
from upskill_hub.cli._output import make_console

app = typer.Typer(
    help=(
        "The Hugging Face Jobs of a sharded eval run (`upskill-hub eval --jobs N`): status, logs, cancel. "
        "Uses HF_TOKEN or your `hf auth login` token and HF_ENDPOINT (the local Hub too)."
    ),
    no_args_is_help=True,
)

jobs_shard.register(app)  # `jobs run-shard`: what each shard's Job runs

console = make_console()
err_console = make_console(stderr=True)

_STAGE_STYLE = {
    "COMPLETED": "green",
    "RUNNING": "cyan",
    "SCHEDULING": "yellow",
    "ERROR": "red",
    "CANCELED": "magenta",
    "DELETED": "dim",
}
_RUN_ID_HELP = "The run id printed by `upskill-hub eval --jobs` (also in `upskill-hub runs`)."
_NAMESPACE_HELP = "User or organization the Jobs run under (default: your token's user)."


def _api() -> Any:
    from upskill_hub.hub.client import make_api
    from upskill_hub.hub.credentials import require_token

    return make_api(require_token("see the Jobs of a run"))


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return (
        f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"
    )


@app.command("ls")
def ls_cmd(
    run_id: str = typer.Argument(..., metavar="RUN_ID", help=_RUN_ID_HELP),
    namespace: str | None = typer.Option(None, "--namespace", help=_NAMESPACE_HELP),
    fmt: OutputFormat = format_option(),
    as_json: bool = json_option(),
) -> None:
    """Status of every shard of a run: its newest Job (attempt), stage, message and duration.

    Example: upskill-hub jobs ls RUN_ID
    """
    from upskill_hub.jobs.status import run_jobs

    out = printer(fmt, as_json)
    shards = run_jobs(_api(), run_id, namespace)
    rows = [s.to_json() for s in shards]
    if not out.human:
        headers = ["shard", "attempt", "stage", "message", "duration_s", "job_id", "flavor"]
        out.table(rows, headers, id_key="job_id", json_data={"run_id": run_id, "shards": rows})
        return
    table = Table(show_header=True, header_style="bold", title=f"Jobs of run {run_id}")
    for name, justify in (("Shard", "right"), ("Attempt", "right"), ("Stage", "left"), ("Message", "left")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    table.add_column("Duration", justify="right")
    table.add_column("Flavor")
    table.add_column("Job id", overflow="fold")
    for s in shards:
        style = _STAGE_STYLE.get(s.stage, "")
        table.add_row(
            str(s.shard),
            f"{s.attempt}" if s.attempts == 1 else f"{s.attempt} ({s.attempts} Jobs)",
            f"[{style}]{s.stage}[/]" if style else s.stage,
            _escape(s.message or ""),
            _duration(s.duration_s),
            s.flavor or "",
            s.job_id,
        )
    console.print(table)
    counts: dict[str, int] = {}
    for s in shards:
        counts[s.stage] = counts.get(s.stage, 0) + 1
    summary = ", ".join(f"{n} {stage}" for stage, n in sorted(counts.items()))
    console.print(f"{len(shards)} shard(s): {summary}")


@app.command("logs")
def logs_cmd(
    run_id: str = typer.Argument(..., metavar="RUN_ID", help=_RUN_ID_HELP),
    shard: int | None = typer.Option(None, "--shard", min=0, help="Only this shard (0-based)."),
    follow: bool = typer.Option(
        False, "--follow", "-f", help="Keep streaming until the Jobs end (several shards interleave)."
    ),
    namespace: str | None = typer.Option(None, "--namespace", help=_NAMESPACE_HELP),
) -> None:
    """Logs of the newest Job of each shard; lines are prefixed with their shard when several are shown.

    Example: upskill-hub jobs logs RUN_ID --shard 0 --follow
    """
    from upskill_hub._util.redact import redact
    from upskill_hub.jobs.status import run_jobs, stream_logs

    api = _api()
    several = shard is None and len(run_jobs(api, run_id, namespace)) > 1
    for index, line in stream_logs(api, run_id, shard=shard, follow=follow, namespace=namespace):
        text = redact(line)  # the Hub masks Job secrets; tokens in our own format are masked here too
        typer.echo(f"[shard {index}] {text}" if several else text)


@app.command("cancel")
def cancel_cmd(
    run_id: str = typer.Argument(..., metavar="RUN_ID", help=_RUN_ID_HELP),
    namespace: str | None = typer.Option(None, "--namespace", help=_NAMESPACE_HELP),
    fmt: OutputFormat = format_option(),
    as_json: bool = json_option(),
) -> None:
    """Cancel every Job of a run that has not ended (all shards, all attempts). Safe to repeat.

    Example: upskill-hub jobs cancel RUN_ID
    """
    from upskill_hub.jobs.status import LABEL_SHARD, cancel_run

    out = printer(fmt, as_json)

    def said(job: Any) -> None:
        if out.human:
            console.print(f"[magenta]✗[/] canceled shard {job.labels.get(LABEL_SHARD, '?')}: Job {job.id}")

    canceled = cancel_run(_api(), run_id, namespace, on_cancel=said)
    if out.mode is OutputFormat.quiet:
        for job_id in canceled:
            typer.echo(job_id)
        return
    if not out.human:
        out.result(
            run_id, json_data={"run_id": run_id, "canceled": canceled}, run_id=run_id, canceled=canceled
        )
        return
    if canceled:
        console.print(f"Canceled {len(canceled)} Job(s) of run {run_id}.")
    else:
        console.print(f"Nothing to cancel: every Job of run {run_id} has already ended.")


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def register(root: typer.Typer) -> None:
    """Add the ``jobs`` command group to the root app."""
    root.add_typer(app, name="jobs")
