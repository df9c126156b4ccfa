"""The Jobs API of the local Hub: the routes ``huggingface_hub``'s Jobs methods call.

:func:`register` adds these routes (``/api/jobs/...``) to the app; each turns a request into a
:class:`..jobs.JobManager` call and shapes the answer as the Hub does:

* ``POST /api/jobs/{ns}`` (``run_job``): a write token, and ``ns`` the token's user or one of
  its organizations; the body is a :class:`..payloads.CreateJob`. Answers the JobInfo.
* ``GET /api/jobs/{ns}`` (``list_jobs``): ``?stage=RUNNING&label=key=value`` (repeatable,
  all must match), paginated with a ``Link: rel="next"`` header.
* ``GET /api/jobs/{ns}/{id}`` (``inspect_job``, ``wait_for_job``).
* ``GET /api/jobs/{ns}/{id}/logs`` (``fetch_job_logs``): server-sent events
  ``data: {"timestamp": ..., "data": line}``; the stream replays the log (``?tail=N``: its
  last N lines), follows it while the Job runs (``: keep-alive`` comments when quiet) and
  closes when the Job has ended and every line was sent.
* ``POST /api/jobs/{ns}/{id}/cancel`` (``cancel_job``): a write token; idempotent.
* ``GET /api/jobs/hardware`` (``list_jobs_hardware``): no token needed.

Jobs are private to their namespace: reading them needs a token (401 without), and a Job
of another namespace is 404 like an unknown one. A Job runs a command on the server's
machine, so creating one also needs the server to allow it (``ServerConfig.jobs_enabled``,
``hub serve --jobs``); otherwise 403.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.concurrency import run_in_threadpool

from upskill_hub.localhub import payloads
from upskill_hub.localhub.auth import Access
from upskill_hub.localhub.hardware import HARDWARE
from upskill_hub.localhub.jobs import TERMINAL_STAGES, Job, JobManager
from upskill_hub.localhub.routes.request import Ctx, HubBase, json_body, paged
from upskill_hub.localhub.storage import StoreError

_NAMESPACE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
_STAGES = frozenset({"SCHEDULING", "RUNNING", *TERMINAL_STAGES})
#: Why creating a Job is refused when the server was not started with ``--jobs``.
JOBS_DISABLED = (
    "Jobs are disabled on this local Hub: its operator can start it with `upskill-hub hub serve --jobs`"
)
#: Jobs per page of ``list_jobs`` (the client follows ``Link`` headers).
PAGE_SIZE = 500
#: Seconds between ``: keep-alive`` comments on a quiet log stream (the Hub sends one every 30s).
KEEP_ALIVE_S = 15.0
#: How often a followed log is polled for new lines.
POLL_S = 0.1


def _check_namespace(namespace: str) -> None:
    if not _NAMESPACE_RE.match(namespace):
        raise StoreError(400, "Invalid namespace", "BadRequest")


def require_reader(ctx: Ctx, namespace: str) -> None:
    """Jobs, their specs and logs are private to their namespace: a token is needed to read them."""
    _check_namespace(namespace)
    ctx.require_valid()
    if ctx.access is Access.ANONYMOUS:
        raise StoreError(401, "You must be authenticated to read Jobs: pass a token", "Unauthorized")


def require_runner(ctx: Ctx, namespace: str, user: str, orgs: tuple[str, ...]) -> str:
    """A write token acting in its own namespace; answers the owner type ("user" or "org")."""
    _check_namespace(namespace)
    ctx.require_write()
    if namespace == user:
        return "user"
    if namespace in orgs:
        return "org"
    raise StoreError(403, f"You cannot run Jobs in namespace {namespace!r}", "Forbidden")


def list_jobs(
    jobs: JobManager, ctx: Ctx, namespace: str, query: list[tuple[str, str]], url: str
) -> Response:
    require_reader(ctx, namespace)
    stages: set[str] = set()
    labels: dict[str, str] = {}
    for key, value in query:
        if key == "stage":
            if value.upper() not in _STAGES:
                raise StoreError(400, f"Unknown stage {value[:32]!r}", "BadRequest")
            stages.add(value.upper())
        elif key == "label":
            name, sep, wanted = value.partition("=")
            if not sep or not name:
                raise StoreError(400, "A label filter is key=value", "BadRequest")
            if name in labels and labels[name] != wanted:
                return JSONResponse([])  # two different values for one key: nothing matches both
            labels[name] = wanted
    page, headers = paged(jobs.find(namespace, stages, labels), PAGE_SIZE, url, query)
    now = time.time()
    return JSONResponse([j.to_json(now) for j in page], headers=headers)


def job_logs(jobs: JobManager, ctx: Ctx, namespace: str, job_id: str, tail: str | None) -> Response:
    """The Job's log as server-sent events; see the module docstring."""
    require_reader(ctx, namespace)
    job = jobs.get(namespace, job_id)
    tail_n: int | None = None
    if tail is not None:
        if not tail.isdigit() or len(tail) > 9:
            raise StoreError(400, "tail must be a non-negative integer", "BadRequest")
        tail_n = int(tail)
    jobs.take_stream_slot()
    return StreamingResponse(
        _sse(jobs, job, tail_n),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


async def _sse(jobs: JobManager, job: Job, tail: int | None) -> AsyncIterator[bytes]:
    """Stream the log file as it grows; end once the Job has ended and the file is drained.

    The stage is read *before* each read of the file: the supervisor writes the last line
    before it sets a terminal stage, so "ended, then nothing new" means the log is complete.
    """
    try:
        with open(job.log_path, "rb") as fh:
            pending = b""
            if tail is not None:
                lines = fh.read().split(b"\n")  # bounded: a log is capped (JobLimits.max_log_bytes)
                pending = lines.pop()  # a half-written last line: completed by the next read
                for line in lines[-tail:] if tail else []:
                    yield b"data: " + line + b"\n\n"
            quiet_since = time.monotonic()
            while True:
                ended = job.terminal
                chunk = fh.read(1 << 20)  # at the end of the file: b"" now, the new lines later
                if chunk:
                    *lines, pending = (pending + chunk).split(b"\n")
                    if lines:
                        yield b"".join(b"data: " + line + b"\n\n" for line in lines if line)
                        quiet_since = time.monotonic()
                    continue
                if ended:
                    return
                if time.monotonic() - quiet_since > KEEP_ALIVE_S:
                    yield b": keep-alive\n\n"
                    quiet_since = time.monotonic()
                await asyncio.sleep(POLL_S)
    except FileNotFoundError:  # a record whose log was removed by hand: nothing to stream
        return
    finally:
        jobs.release_stream_slot()


def register(app: FastAPI, hub: HubBase) -> None:
    """Add the Jobs API to ``app``; ``/hardware`` is declared before ``/{namespace}``."""
    jobs, config = hub.jobs, hub.config
    orgs = tuple(config.trusted_publishers)  # the organizations whoami reports for the token

    @app.get("/api/jobs/hardware")
    def get_hardware() -> Response:
        return JSONResponse(list(HARDWARE))

    @app.post("/api/jobs/{namespace}")
    async def post_job(request: Request, namespace: str) -> Response:
        # Checked before the body is read: a stranger's upload costs nothing.
        owner_type = require_runner(Ctx(request, hub.policy), namespace, config.user, orgs)
        if not config.jobs_enabled:
            raise StoreError(403, JOBS_DISABLED, "Forbidden")
        body = await json_body(request, payloads.CreateJob, 1024 * 1024)
        job = await run_in_threadpool(jobs.create, namespace, owner_type, config.user, body)
        return JSONResponse(job.to_json())

    @app.get("/api/jobs/{namespace}")
    def get_jobs(request: Request, namespace: str) -> Response:
        url = f"{str(request.base_url).rstrip('/')}{request.url.path}"
        return list_jobs(jobs, Ctx(request, hub.policy), namespace, request.query_params.multi_items(), url)

    @app.get("/api/jobs/{namespace}/{job_id}")
    def get_job(request: Request, namespace: str, job_id: str) -> Response:
        require_reader(Ctx(request, hub.policy), namespace)
        return JSONResponse(jobs.get(namespace, job_id).to_json())

    @app.get("/api/jobs/{namespace}/{job_id}/logs")
    def get_logs(request: Request, namespace: str, job_id: str) -> Response:
        return job_logs(jobs, Ctx(request, hub.policy), namespace, job_id, request.query_params.get("tail"))

    @app.post("/api/jobs/{namespace}/{job_id}/cancel")
    def post_cancel(request: Request, namespace: str, job_id: str) -> Response:
        require_runner(Ctx(request, hub.policy), namespace, config.user, orgs)
        return JSONResponse(jobs.cancel(namespace, job_id).to_json())
