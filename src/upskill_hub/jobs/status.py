"""The Hugging Face Jobs of a sharded eval run: find them, read their status and logs, cancel them.

A sharded run (``upskill-hub eval --jobs N``) launches one Job per shard, relaunching a
shard that failed; every Job carries the labels below, so a run's Jobs are found with one
``HfApi.list_jobs(labels=...)`` call on the Hub, and nothing has to be remembered locally.
The newest attempt of a shard is the shard's status. Everything here goes through
``huggingface_hub``'s Jobs API, so it works the same on Hugging Face and on the local Hub
(``upskill-hub hub serve``).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from upskill_hub._util.redact import redact
from upskill_hub.errors import UpskillError
from upskill_hub.hub.client import http_status
from upskill_hub.hub.dataset_repo import check_run_id

#: The labels every shard Job carries (values are strings; shard 0-based, attempt 1-based).
LABEL_RUN = "upskill-hub-run"
LABEL_SHARD = "upskill-hub-shard"
LABEL_ATTEMPT = "upskill-hub-attempt"
TERMINAL_STAGES = frozenset({"COMPLETED", "CANCELED", "ERROR", "DELETED"})
#: Shards whose logs are followed at once (one connection each).
MAX_FOLLOWED_SHARDS = 64


def shard_labels(run_id: str, shard: int, attempt: int) -> dict[str, str]:
    """The labels of attempt ``attempt`` (1-based) of shard ``shard`` (0-based) of ``run_id``."""
    return {LABEL_RUN: check_run_id(run_id), LABEL_SHARD: str(shard), LABEL_ATTEMPT: str(attempt)}


@dataclass(frozen=True)
class ShardStatus:
    """Where one shard stands: its newest Job (``attempt``) and how many Jobs it had."""

    shard: int
    attempt: int
    attempts: int
    job_id: str
    stage: str
    message: str | None
    flavor: str | None
    created_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    url: str

    @property
    def duration_s(self) -> float | None:
        """Seconds the newest attempt ran (so far, while it runs); None before it starts."""
        if self.started_at is None:
            return None
        end = self.finished_at or datetime.now(self.started_at.tzinfo)
        return max(0.0, (end - self.started_at).total_seconds())

    @property
    def done(self) -> bool:
        return self.stage in TERMINAL_STAGES

    def to_json(self) -> dict[str, Any]:
        return {
            "shard": self.shard,
            "attempt": self.attempt,
            "attempts": self.attempts,
            "job_id": self.job_id,
            "stage": self.stage,
            "message": self.message,
            "flavor": self.flavor,
            "created_at": _iso(self.created_at),
            "started_at": _iso(self.started_at),
            "finished_at": _iso(self.finished_at),
            "duration_s": None if self.duration_s is None else round(self.duration_s, 1),
            "url": self.url,
        }


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


@contextmanager
def jobs_errors(run_id: str, action: str) -> Iterator[None]:
    """Hub client failures inside the block become one line: ``cannot ACTION of run RUN_ID: ...``."""
    from huggingface_hub.errors import HfHubHTTPError

    def fail(problem: str) -> UpskillError:
        return UpskillError(f"cannot {action} of run {run_id}: {problem}")

    try:
        yield
    except UpskillError:
        raise
    except HfHubHTTPError as exc:
        status = http_status(exc)
        if status in (401, 403):
            raise fail(
                f"the Hub refused your token (HTTP {status}); it needs access to the Jobs of this namespace"
            ) from None
        lines = str(exc).strip().splitlines()
        raise fail(redact(lines[0] if lines else f"HTTP {status}")) from None
    except (ConnectionError, TimeoutError) as exc:
        raise fail(
            f"cannot reach the Hub ({redact(str(exc).splitlines()[0] if str(exc) else 'no answer')})"
        ) from None
    except Exception as exc:
        if type(exc).__module__.split(".")[0] in ("httpx2", "httpx", "httpcore", "httpcore2"):
            raise fail(f"cannot reach the Hub ({type(exc).__name__})") from None
        raise


def resolve_namespace(api: Any, namespace: str | None) -> str:
    """``namespace``, or the token's user (``whoami``): the Jobs API needs it spelled out."""
    return namespace or api.whoami()["name"]


def _int_label(labels: dict[str, str], key: str, default: int | None) -> int | None:
    value = labels.get(key)
    if value is None:
        return default
    return int(value) if value.isdigit() else None


def list_run_jobs(api: Any, run_id: str, namespace: str | None = None) -> list[Any]:
    """Every Job (``JobInfo``) of ``run_id``, all attempts; an error when there is none."""
    check_run_id(run_id)
    with jobs_errors(run_id, "list the Jobs"):
        ns = resolve_namespace(api, namespace)
        jobs = list(api.list_jobs(labels={LABEL_RUN: run_id}, namespace=ns))
    jobs = [j for j in jobs if _int_label(j.labels or {}, LABEL_SHARD, None) is not None]
    if not jobs:
        raise UpskillError(f"no Jobs found for run {run_id} in namespace {ns}")
    return jobs


def run_jobs(api: Any, run_id: str, namespace: str | None = None) -> list[ShardStatus]:
    """The status of every shard of ``run_id`` (its newest attempt), by shard index."""
    by_shard: dict[int, list[Any]] = {}
    for job in list_run_jobs(api, run_id, namespace):
        shard = _int_label(job.labels, LABEL_SHARD, None)
        assert shard is not None  # list_run_jobs keeps only Jobs with a shard label
        by_shard.setdefault(shard, []).append(job)
    out = []
    for shard, jobs in sorted(by_shard.items()):
        newest = max(jobs, key=lambda j: (_int_label(j.labels, LABEL_ATTEMPT, 1) or 0, j.created_at or 0))
        out.append(
            ShardStatus(
                shard=shard,
                attempt=_int_label(newest.labels, LABEL_ATTEMPT, 1) or 0,
                attempts=len(jobs),
                job_id=newest.id,
                stage=str(getattr(newest.status.stage, "value", newest.status.stage)),
                message=newest.status.message,
                flavor=str(getattr(newest.flavor, "value", newest.flavor)) if newest.flavor else None,
                created_at=newest.created_at,
                started_at=newest.started_at,
                finished_at=newest.finished_at,
                url=newest.url,
            )
        )
    return out


def stream_logs(
    api: Any,
    run_id: str,
    shard: int | None = None,
    follow: bool = False,
    namespace: str | None = None,
) -> Iterator[tuple[int, str]]:
    """``(shard, line)`` for the newest attempt of each shard (or of ``shard`` only).

    Without ``follow``: the logs written so far, shard after shard. With ``follow``: lines
    as the Jobs write them, shards interleaved, until every followed Job has ended.
    """
    with jobs_errors(run_id, "read the logs"):
        ns = resolve_namespace(api, namespace)
    shards = run_jobs(api, run_id, ns)
    if shard is not None:
        shards = [s for s in shards if s.shard == shard]
        if not shards:
            raise UpskillError(
                f"run {run_id} has no shard {shard} (shards: {_shard_range(run_jobs(api, run_id, ns))})"
            )
    if not follow or len(shards) == 1:
        for status in shards:
            with jobs_errors(run_id, f"read the logs of shard {status.shard}"):
                for line in api.fetch_job_logs(job_id=status.job_id, namespace=ns, follow=follow):
                    yield status.shard, line
        return
    if len(shards) > MAX_FOLLOWED_SHARDS:
        raise UpskillError(
            f"run {run_id} has {len(shards)} shards: follow at most {MAX_FOLLOWED_SHARDS} at once (use --shard)"
        )
    yield from _follow_all(api, run_id, ns, shards)


def _shard_range(shards: list[ShardStatus]) -> str:
    return ", ".join(str(s.shard) for s in shards)


_DONE = object()


def _follow_all(api: Any, run_id: str, ns: str, shards: list[ShardStatus]) -> Iterator[tuple[int, str]]:
    """Follow several Jobs at once: one reader thread per shard, lines merged as they come."""
    lines: queue.Queue[Any] = queue.Queue(maxsize=10_000)
    stop = threading.Event()

    def reader(status: ShardStatus) -> None:
        try:
            with jobs_errors(run_id, f"read the logs of shard {status.shard}"):
                for line in api.fetch_job_logs(job_id=status.job_id, namespace=ns, follow=True):
                    if stop.is_set():
                        return
                    lines.put((status.shard, line))
        except UpskillError as exc:
            lines.put(exc)
        finally:
            lines.put(_DONE)

    threads = [threading.Thread(target=reader, args=(s,), daemon=True) for s in shards]
    for t in threads:
        t.start()
    left = len(threads)
    try:
        while left:
            item = lines.get()
            if item is _DONE:
                left -= 1
            elif isinstance(item, UpskillError):
                raise item
            else:
                yield item
    finally:
        stop.set()


def cancel_run(
    api: Any, run_id: str, namespace: str | None = None, on_cancel: Callable[[Any], None] | None = None
) -> list[str]:
    """Cancel every Job of ``run_id`` that has not ended (all attempts); the ids canceled.

    Idempotent: Jobs that already ended are left as they are, so a second call cancels nothing.
    """
    with jobs_errors(run_id, "cancel the Jobs"):
        ns = resolve_namespace(api, namespace)
    canceled = []
    for job in list_run_jobs(api, run_id, ns):
        if str(getattr(job.status.stage, "value", job.status.stage)) in TERMINAL_STAGES:
            continue
        with jobs_errors(run_id, "cancel the Jobs"):
            api.cancel_job(job_id=job.id, namespace=ns)
        canceled.append(job.id)
        if on_cancel is not None:
            on_cancel(job)
    return canceled
