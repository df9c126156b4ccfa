"""``upskill-hub jobs run-shard``: the command each shard Job runs (see :mod:`upskill_hub.jobs.shard`).

Users do not type it: ``eval --jobs N`` puts it in every Job's command. It prints progress
lines to stdout (the Job's log) and, on failure, one line on stderr and exit code 1.
"""

from __future__ import annotations

from pathlib import Path

import typer


def run_shard_command(
    repo: str = typer.Option(..., "--repo", help="Results dataset repo OWNER/NAME holding the run's bundle."),
    run_id: str = typer.Option(..., "--run-id", help="The run this shard belongs to."),
    shard: int = typer.Option(..., "--shard", help="This shard's index, from 0."),
    shards: int = typer.Option(..., "--shards", help="How many shards the run was split into."),
    workdir: Path = typer.Option(Path("."), "--workdir", help="Folder for the bundle, run folder and cache."),
) -> None:
    """Run one shard of a run planned by `eval --jobs` and commit its rows (inside a Hugging Face Job)."""
    from upskill_hub.jobs.shard import run_shard

    run_shard(repo, run_id, shard, shards, workdir=workdir)


def register(jobs_app: typer.Typer) -> None:
    """Add ``run-shard`` to the ``jobs`` command group."""
    jobs_app.command("run-shard", hidden=True)(run_shard_command)
