"""One shard of a run on Hugging Face Jobs: run its calls, land its rows, touch nothing else.

``upskill-hub jobs run-shard --repo R --run-id ID --shard I --shards N`` runs this inside
a Job. It downloads the run's bundle (:mod:`.job_bundle`), rebuilds the launcher's plan
(same fingerprint, or it refuses), runs only the calls shard ``I`` owns with the normal
runner (its own run folder and response cache in the Job's working folder), and commits
``data/results/<run_id>/shard-<I>.parquet`` in one commit built by the same code as push
(masked identically). Why each rule:

* **Exactly once.** The shard file is the unit of landing: written whole in one commit or
  not at all. A shard whose file already holds exactly its rows exits 0 without a call
  (a relaunch after a commit that landed but whose Job died); a file holding other rows
  is never overwritten.
* **Only answered rows land.** If some calls still fail after the client's own retries,
  nothing is uploaded and the Job fails: the launcher relaunches it, and ``--resume``
  finds the shard missing. A results file never holds a row a later attempt would have
  to replace (the files are append-only).
* **Conflicts.** Shards commit concurrently; each commit names the head it saw
  (``parent_commit``) and is re-planned and retried on 409/412 (and 429/5xx) through
  :mod:`upskill_hub._util.retry`.
* **Code.** The first line names the upskill-hub version and the sha256 of the wheel it was
  installed from (:func:`code_line`); the launcher checks it against the bundled wheel.
* **Logs.** Progress lines go to stdout, which is the Job's log: counts only, never a
  secret (keys are Job secrets; error text passes through :func:`redact`).
"""

from __future__ import annotations

import asyncio
import io
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from upskill_hub import rundir
from upskill_hub._util import limits
from upskill_hub._util.fsutil import read_capped
from upskill_hub._util.redact import redact
from upskill_hub._util.retry import RetryPolicy, Verdict, parse_retry_after, run_with_retries
from upskill_hub.errors import UpskillError
from upskill_hub.hub import dataset_repo as dr
from upskill_hub.hub.client import REPO_TYPE, check_repo_id, http_status, hub_errors, make_api
from upskill_hub.jobs.assign import plan_keys
from upskill_hub.jobs.bundle import download_bundle, read_bundle, rebuild
from upskill_hub.lift.api import run_eval_async
from upskill_hub.rundir.schema import ResultRow

#: Answers after which a shard's commit is retried (re-reading the head first).
RETRY_STATUSES = {409, 412, 429, 500, 502, 503, 504}
COMMIT_ATTEMPTS = 16


@dataclass
class ShardOutcome:
    """What one shard did."""

    path: str  # data/results/<run_id>/shard-<i>.parquet
    rows: int
    uploaded: bool  # False: the file already held exactly these rows
    commit_oid: str | None = None


def _default_say(line: str) -> None:
    print(redact(line), flush=True)


def code_line() -> str:
    """``upskill-hub <version> installed from <wheel> sha256=<hex>``: what this process runs."""
    from upskill_hub.selfwheel import installed_from

    version, name, sha = installed_from()
    if name is None:
        return f"upskill-hub {version} (not installed from a wheel file)"
    return f"upskill-hub {version} installed from {name} sha256={sha}"


def run_shard(
    repo_id: str,
    run_id: str,
    index: int,
    count: int,
    *,
    workdir: str | Path = ".",
    token: str | None = None,
    say: Callable[[str], None] = _default_say,
) -> ShardOutcome:
    """Run shard ``index`` (0-based) of ``count`` of run ``run_id`` and commit its rows to ``repo_id``."""
    from upskill_hub.hub.credentials import require_token

    check_repo_id(repo_id)
    dr.check_run_id(run_id)
    if count < 1 or not 0 <= index < count:
        raise UpskillError(f"--shard must be between 0 and {count - 1} (--shards {count}), got {index}")
    token = token or require_token("write a shard's rows to the Hub")
    api = make_api(token)
    work = Path(workdir).resolve()
    path = dr.results_shard_path(run_id, index)
    tag = f"shard {index} (of {count}) of {run_id}"
    say(f"{tag}: {code_line()}")

    with hub_errors(repo_id, action="read the run's Job bundle from"):
        folder = download_bundle(api, repo_id, run_id, work / "bundle")
    bundle = read_bundle(folder)
    if bundle.run.run_id != run_id:
        raise UpskillError(f"the Job bundle of {run_id} names run {bundle.run.run_id!r}")
    if bundle.shards != count:
        raise UpskillError(f"run {run_id} was split into {bundle.shards} shards, not {count}")
    target = bundle.shard(index)

    owned = target.owns(plan_keys(bundle.run))
    done = _existing_rows(api, repo_id, path)
    if done is not None:
        return _check_existing(done, owned, target.run_id, path, say, tag)

    state = {"n": 0, "total": 0, "last": 0.0}

    def on_start(total: int, already: int) -> None:
        state["total"], state["n"] = total, already
        say(f"{tag}: {total} calls")

    def on_row(row: ResultRow) -> None:
        state["n"] += 1
        now = time.monotonic()
        if now - state["last"] >= 2.0 or state["n"] == state["total"]:
            state["last"] = now
            say(f"{tag}: {state['n']}/{state['total']} calls done")

    skill, specs, options = rebuild(
        folder, bundle, output_dir=work / "upskill-runs", shard=target, on_start=on_start, on_row=on_row
    )
    result = asyncio.run(run_eval_async(skill, specs, options))
    rows = result.rows
    failed = [r for r in rows if r.error is not None]
    if failed:
        raise UpskillError(
            f"{tag}: {len(failed)} of {len(rows)} calls failed (first: {failed[0].error}); nothing uploaded"
        )
    if {r.key for r in rows} != owned or len(rows) != len(owned):
        raise UpskillError(f"{tag}: ran {len(rows)} calls but owns {len(owned)}; nothing uploaded")
    # The runner wrote the rows as the ``results`` shard (masked) when it ended: the bytes push uploads.
    data = read_capped(result.run_dir / rundir.RESULTS_PARQUET, limits.MAX_RESULTS_BYTES)
    say(f"{tag}: committing {len(rows)} rows to {path}")
    outcome = _commit(api, repo_id, path, data, len(rows), target, say, tag)
    say(f"{tag}: done ({'uploaded' if outcome.uploaded else 'already in the repo'})")
    return outcome


def _existing_rows(api: Any, repo_id: str, path: str) -> list[ResultRow] | None:
    """The rows of ``path`` in the repo now, or ``None`` when it is not there."""
    import pyarrow.parquet as pq
    from huggingface_hub.errors import EntryNotFoundError

    with hub_errors(repo_id, action="read a shard from"):
        if not api.file_exists(repo_id, path, repo_type=REPO_TYPE):
            return None
        try:
            local = api.hf_hub_download(repo_id, path, repo_type=REPO_TYPE)
        except EntryNotFoundError:
            return None
    try:
        return rundir.rows_from_table(pq.read_table(local))
    except (OSError, ValueError) as exc:
        raise UpskillError(
            f"{path} is in the repo but cannot be read ({type(exc).__name__}); not overwriting it"
        ) from None


def _check_existing(
    rows: list[ResultRow], owned: set, run_id: str, path: str, say: Callable[[str], None], tag: str
) -> ShardOutcome:
    """A shard file already in the repo: fine when it holds exactly this shard's rows, else refused."""
    keys = {r.key for r in rows}
    if keys != owned or len(rows) != len(owned) or any(r.run_id != run_id for r in rows):
        raise UpskillError(f"{path} is already in the repo and holds other rows; not overwriting it")
    say(f"{tag}: {path} is already in the repo ({len(rows)} rows); nothing to do")
    return ShardOutcome(path=path, rows=len(rows), uploaded=False)


def _commit(
    api: Any,
    repo_id: str,
    path: str,
    data: bytes,
    n_rows: int,
    target: Any,
    say: Callable[[str], None],
    tag: str,
) -> ShardOutcome:
    """Add ``path`` in one commit on top of the head read just before; retried on conflicts."""
    from huggingface_hub import CommitOperationAdd
    from huggingface_hub.errors import HfHubHTTPError

    def attempt(n: int) -> ShardOutcome:
        head = api.dataset_info(repo_id).sha
        if n > 1 and api.file_exists(repo_id, path, repo_type=REPO_TYPE, revision=head):
            # An earlier attempt's answer was lost, but its commit landed: do not add it twice.
            return ShardOutcome(path=path, rows=n_rows, uploaded=False)
        info = api.create_commit(
            repo_id,
            [CommitOperationAdd(path_in_repo=path, path_or_fileobj=io.BytesIO(data))],
            commit_message=f"Add shard {target.index} of run {target.run_id} ({n_rows} rows) from a Hugging Face Job",
            repo_type=REPO_TYPE,
            parent_commit=head,
        )
        return ShardOutcome(path=path, rows=n_rows, uploaded=True, commit_oid=info.oid)

    def judge(exc: Exception) -> Verdict | None:
        if isinstance(exc, HfHubHTTPError) and http_status(exc) in RETRY_STATUSES:
            return Verdict(True, parse_retry_after(getattr(getattr(exc, "response", None), "headers", None)))
        if type(exc).__module__.split(".")[0] in ("httpx", "httpcore", "httpx2"):
            return Verdict(True)
        return None

    def on_retry(exc: Exception, next_n: int) -> None:
        code = http_status(exc)
        say(
            f"{tag}: commit answered {code or type(exc).__name__}; retrying (attempt {next_n}/{COMMIT_ATTEMPTS})"
        )

    policy = RetryPolicy(
        max_retries=COMMIT_ATTEMPTS - 1, backoff_base=0.25, backoff_cap=8.0, max_retry_after=30.0
    )
    with hub_errors(repo_id, action="commit a shard to"):
        return run_with_retries(attempt, policy=policy, judge=judge, on_retry=on_retry)
