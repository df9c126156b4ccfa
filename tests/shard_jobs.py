"""Launching labelled shard Jobs on the test Hub, for the tests of ``hub.jobs`` and ``jobs`` CLI."""

from __future__ import annotations

from huggingface_hub import HfApi

from upskill_hub.jobs.status import shard_labels

NS = "user"


def launch(api: HfApi, run_id: str, shard: int, code: str, attempt: int = 1):
    """A Job running ``python -c code``, labelled as shard ``shard`` (attempt ``attempt``) of ``run_id``."""
    return api.run_job(
        image="python:3.12",
        command=["python", "-c", code],
        labels=shard_labels(run_id, shard, attempt),
        namespace=NS,
    )


def wait(api: HfApi, *jobs) -> None:
    api.wait_for_job([j.id for j in jobs], namespace=NS, poll_interval=0.05, timeout=60)
