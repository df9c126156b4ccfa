"""The local Hub-compatible HTTP API (FastAPI), as the unmodified HF clients call it: the wiring.

The handlers live in :mod:`.routes`, one module per resource; this module binds them to one
store (``HubApp``), routes URLs to them, maps errors to responses and adds the middleware
that injects faults and logs requests.

Why the catch-all router: the clients percent-encode revisions (``refs%2Fpr%2F1``) and tree
paths (``a%2Fb``) into single URL segments, and Starlette decodes the path before routing,
which would make ``refs/pr/1`` look like three segments. So repo routes are parsed from the
raw path, segment by segment. Fixed routes (``/api/whoami-v2``...) use FastAPI as usual.

Every handler that touches the disk runs in the thread pool; the store serializes commits.
A download by branch, tag or PR name redirects to the commit it names (``resolve_file``), and
``TmpSweeper`` removes abandoned partial uploads while the server runs.

Hostile callers: the token is checked before a body is read, bodies are read up to a cap
(``ServerConfig.max_json_bytes`` / ``max_commit_bytes``, 413 past it), every body is
validated into a typed model (:mod:`.payloads`: 400, never 500), YAML (cards,
``validate-yaml``) is parsed with size/depth/alias limits in the thread pool, and error
text never puts control characters into a response header (:mod:`.routes.request`).
"""

from __future__ import annotations

import errno
import logging
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from email.utils import formatdate
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_from_bytes, unquote

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from upskill_hub._util import safeyaml
from upskill_hub._util.limits import env_number
from upskill_hub.localhub import payloads
from upskill_hub.localhub.auth import AuthPolicy
from upskill_hub.localhub.faults import FaultInjector, RequestRecord
from upskill_hub.localhub.jobs import JobLimits, JobManager
from upskill_hub.localhub.routes import jobs as job_routes
from upskill_hub.localhub.routes.commits import CommitRoutes
from upskill_hub.localhub.routes.lfs import LfsRoutes, load_secret
from upskill_hub.localhub.routes.repos import RepoRoutes, parse_paths_info
from upskill_hub.localhub.routes.request import Ctx, EntryMissing, error, json_body, read_body, split_revision
from upskill_hub.localhub.storage import REPO_TYPES, HubStore, StoreError, check_repo_id

logger = logging.getLogger("upskill_hub.localhub")

_TYPE_BY_PLURAL = {f"{t}s": t for t in REPO_TYPES}


@dataclass(frozen=True)
class ServerConfig:
    """Everything that shapes one server instance."""

    root: Path
    write_tokens: tuple[str, ...] = ()
    read_tokens: tuple[str, ...] = ()
    trusted_publishers: tuple[str, ...] = ()
    user: str = "user"
    tree_page_size: int = 1000
    commits_page_size: int = 50
    #: Largest JSON body (create, settings, preupload, LFS batch, paths-info, validate-yaml).
    max_json_bytes: int = 16 * 1024 * 1024
    #: Largest NDJSON commit body (regular files travel inside it, base64-encoded).
    max_commit_bytes: int = 256 * 1024 * 1024
    #: Whether write tokens may run Jobs: commands on this machine, so off unless asked for.
    jobs_enabled: bool = False
    #: Bounds on Jobs (running at once, queue, log size, kill grace): see :class:`.jobs.JobLimits`.
    job_limits: JobLimits = field(default_factory=JobLimits)
    #: Seconds between sweeps of abandoned partial uploads; None: ``$UPSKILL_HUB_SWEEP_S``, else 60.
    sweep_interval_s: float | None = None


class TmpSweeper:
    """Sweeps the store's ``tmp/`` (:meth:`HubStore.sweep_tmp`) every ``interval_s`` on a daemon thread.

    Why while running and not only at start: a client cut off mid-upload leaves its partial
    file behind, and a server that restarts sooner than the grace period after each crash
    never reaches an age at which the start-up sweep removes it. Started and stopped with the
    server (the app's lifespan, or :func:`.testing.running_server`).
    """

    def __init__(self, store: HubStore, interval_s: float) -> None:
        self.store = store
        self.interval_s = min(max(interval_s, 0.01), 86_400.0)  # no busy loop; Event.wait takes no inf
        #: Sweeps done so far (for tests and logs).
        self.runs = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="local-hub-sweep", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)

    def sweep(self) -> list[str]:
        """One sweep now; the names removed. A disk error is logged, never ends the thread."""
        try:
            removed = self.store.sweep_tmp()
        except OSError as exc:
            logger.warning("sweeping %s failed: %s", self.store.tmp, exc.strerror or exc)
            removed = []
        if removed:
            logger.info("swept %d abandoned partial upload(s) from %s", len(removed), self.store.tmp)
        self.runs += 1
        return removed

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sweep()


class HubApp(RepoRoutes, CommitRoutes, LfsRoutes):
    """The handlers of :mod:`.routes` (a mixin per resource), bound to one store and one configuration."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.store = HubStore(config.root)
        self.policy = AuthPolicy(tuple(config.write_tokens), tuple(config.read_tokens))
        self.secret = load_secret(self.store.root)
        self.jobs = JobManager(self.store.root, config.user, config.job_limits)
        self.cards = {}
        interval = config.sweep_interval_s
        self.sweeper = TmpSweeper(self.store, interval or env_number("UPSKILL_HUB_SWEEP_S", 60.0))


class _FaultAndLogMiddleware:
    """Answers armed faults before routing; logs each request without query string or headers.

    It also sets each response's ``Date`` to the moment the response starts (run uvicorn with
    ``date_header=False``): uvicorn's own is refreshed once a second, and ``fetch_job_logs``
    stops replaying a log at the first line stamped after ``Date`` + 1s, so a stale ``Date``
    would hide a finished Job's last lines.
    """

    def __init__(self, app: Any, injector: FaultInjector) -> None:
        self.app = app
        self.injector = injector

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method, path = scope["method"], scope["path"]
        rule = self.injector.match(method, path)
        if rule is not None:
            headers = {"X-Error-Message": rule.message}
            if rule.retry_after is not None:
                headers["Retry-After"] = str(max(0, int(rule.retry_after)))  # clients parse whole seconds
            # Drain the request body so the client is not cut off mid-upload.
            more = True
            received = 0
            while more:
                msg = await receive()
                received += len(msg.get("body", b""))
                more = msg.get("more_body", False) and msg["type"] == "http.request"
            self.injector.record(RequestRecord(method, path, rule.status, received, injected=True))
            logger.info("%s %s %s (injected fault)", method, path, rule.status)
            response = JSONResponse({"error": rule.message}, status_code=rule.status, headers=headers)
            await response(scope, receive, send)
            return
        state = {"status": 0, "bytes_in": 0, "recorded": False}

        def record(status: int) -> None:
            # Recorded when the response starts, so a test that saw the response sees the record.
            if not state["recorded"]:
                state["recorded"] = True
                self.injector.record(RequestRecord(method, path, status, state["bytes_in"]))
                logger.info("%s %s %s", method, path, status)

        async def counting_receive() -> dict:
            msg = await receive()
            if msg["type"] == "http.request":
                state["bytes_in"] += len(msg.get("body", b""))
            return msg

        async def recording_send(msg: dict) -> None:
            if msg["type"] == "http.response.start":
                record(msg["status"])
                date = formatdate(usegmt=True).encode()
                msg = {**msg, "headers": [*msg.get("headers", []), (b"date", date)]}
            await send(msg)

        try:
            await self.app(scope, counting_receive, recording_send)
        finally:
            record(500)


def create_app(config: ServerConfig) -> FastAPI:
    """Build the FastAPI application serving ``config.root``."""
    hub = HubApp(config)
    injector = FaultInjector()

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        hub.sweeper.start()
        yield
        await run_in_threadpool(hub.sweeper.stop)
        await run_in_threadpool(hub.jobs.shutdown)  # no Job outlives the server

    app = FastAPI(
        title="upskill-hub local Hub",
        description="Hugging Face Hub-compatible API for offline work, air-gapped teams and tests.",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        lifespan=lifespan,
    )
    app.state.hub = hub
    app.state.faults = injector

    @app.exception_handler(StoreError)
    async def _store_error(request: Request, exc: StoreError) -> Response:
        headers = {"X-Repo-Commit": exc.commit_id} if isinstance(exc, EntryMissing) else None
        return error(exc.status, exc.message, exc.code, headers)

    @app.exception_handler(OSError)
    async def _disk_error(request: Request, exc: OSError) -> Response:
        """A full disk is 507 and a read-only one 503, with a message: never a 500 traceback.

        Every write is atomic (temporary file, then rename), so a failed request stored nothing.
        """
        if exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", -1), errno.EFBIG):
            logger.warning("%s %s: disk full (%s)", request.method, request.url.path, exc.strerror)
            return error(507, "Insufficient storage: the server's disk is full; nothing was stored. "
                         "Retry once the operator has freed space.", "InsufficientStorage")  # fmt: skip
        if exc.errno == errno.EROFS:
            logger.warning("%s %s: read-only storage", request.method, request.url.path)
            return error(503, "The server's storage is read-only; nothing was stored. Retry later.",
                         "StorageReadOnly", {"Retry-After": "60"})  # fmt: skip
        raise exc

    @app.get("/api/whoami-v2")
    def whoami(request: Request) -> Response:
        return hub.whoami(Ctx(request, hub.policy))

    @app.post("/api/repos/create")
    async def create_repo(request: Request) -> Response:
        c = Ctx(request, hub.policy)
        c.require_write()  # before the body is read: a stranger's upload costs nothing
        body = await json_body(request, payloads.CreateRepo, config.max_json_bytes)
        return await run_in_threadpool(hub.create_repo, c, body)

    @app.delete("/api/repos/delete")
    async def delete_repo(request: Request) -> Response:
        c = Ctx(request, hub.policy)
        c.require_write()
        body = await json_body(request, payloads.DeleteRepo, config.max_json_bytes)
        return await run_in_threadpool(hub.delete_repo, c, body)

    @app.post("/api/validate-yaml")
    async def validate_yaml(request: Request) -> Response:
        c = Ctx(request, hub.policy)
        c.require_valid()
        raw = await read_body(request, min(config.max_json_bytes, 4 * safeyaml.MAX_CHARS))
        body = payloads.parse_body(payloads.ValidateYaml, raw)
        # Parsing a large document takes a while: never on the event loop other requests share.
        return await run_in_threadpool(hub.validate_yaml, c, body)

    @app.get("/api/organizations/{org}/overview")
    def org_overview(request: Request, org: str) -> Response:
        return hub.org_overview(Ctx(request, hub.policy), org)

    job_routes.register(app, hub)

    @app.get("/api/{plural}")
    def list_repos(request: Request, plural: str) -> Response:
        if plural not in _TYPE_BY_PLURAL:
            raise StoreError(404, f"Unknown endpoint /api/{plural}", "NotFound")
        return hub.list_repos(Ctx(request, hub.policy), _TYPE_BY_PLURAL[plural])

    @app.api_route("/{full_path:path}", methods=["GET", "HEAD", "POST", "PUT", "DELETE"])
    async def dispatch(request: Request, full_path: str) -> Response:
        raw = request.scope.get("raw_path") or request.url.path.encode()
        raw_path = raw.decode("latin-1").split("?", 1)[0]
        segs = [unquote(s) for s in raw_path.strip("/").split("/")]
        return await _dispatch(hub, request, segs, raw_path)

    app.add_middleware(_FaultAndLogMiddleware, injector=injector)
    return app


async def _dispatch(hub: HubApp, request: Request, segs: list[str], raw_path: str) -> Response:
    """Route repo URLs by hand (see the module docstring for why)."""
    method = request.method
    c = Ctx(request, hub.policy)
    url = f"{c.base}{raw_path}"
    limit = hub.config.max_json_bytes
    if method in ("POST", "PUT", "DELETE"):
        c.require_valid()  # a bad token is refused before any body is read
    # /api/{type}s/{ns}/{name}/...
    if len(segs) >= 4 and segs[0] == "api" and segs[1] in _TYPE_BY_PLURAL:
        repo_type, repo_id, rest = _TYPE_BY_PLURAL[segs[1]], f"{segs[2]}/{segs[3]}", segs[4:]
        check_repo_id(repo_id)
        action = rest[0] if rest else ""
        if method == "GET" and (not rest or action == "revision"):
            revision = split_revision(rest[1:])[0] if rest else None
            return await run_in_threadpool(hub.repo_info, c, repo_type, repo_id, revision)
        if method == "PUT" and action == "settings":
            c.require_write()
            body = await json_body(request, payloads.Settings, limit)
            return await run_in_threadpool(hub.update_settings, c, repo_type, repo_id, body)
        if method == "POST" and action == "preupload":
            rev, _ = split_revision(rest[1:])
            c.require_write()
            body = await json_body(request, payloads.Preupload, limit)
            return await run_in_threadpool(hub.preupload, c, repo_type, repo_id, rev, body)
        if method == "POST" and action == "commit":
            rev, _ = split_revision(rest[1:])
            c.require_write()
            body_bytes = await read_body(request, hub.config.max_commit_bytes)
            return await run_in_threadpool(hub.commit, c, repo_type, repo_id, rev, body_bytes)
        if method == "GET" and action == "tree":
            rev, path = split_revision(rest[1:])
            return await run_in_threadpool(hub.tree, c, repo_type, repo_id, rev, "/".join(path), url)
        if method == "POST" and action == "paths-info":
            rev, _ = split_revision(rest[1:])
            paths, expand = parse_paths_info(
                request.headers.get("content-type", ""), await read_body(request, limit)
            )
            return await run_in_threadpool(hub.paths_info, c, repo_type, repo_id, rev, paths, expand)
        if method == "GET" and action == "refs":
            return await run_in_threadpool(hub.refs, c, repo_type, repo_id)
        if method == "GET" and action == "commits":
            rev, _ = split_revision(rest[1:])
            return await run_in_threadpool(hub.commits, c, repo_type, repo_id, rev, url)
        if method in ("POST", "DELETE") and action == "branch" and len(rest) >= 2:
            c.require_write()
            body = await json_body(request, payloads.Branch, limit) if method == "POST" else payloads.Branch()
            return await run_in_threadpool(
                hub.branch, c, method, repo_type, repo_id, "/".join(rest[1:]), body
            )
        if method in ("POST", "DELETE") and action == "tag" and len(rest) >= 2:
            c.require_write()
            body = await json_body(request, payloads.Tag, limit) if method == "POST" else None
            target = split_revision(rest[1:])[0] if method == "POST" else "/".join(rest[1:])
            return await run_in_threadpool(hub.tag, c, method, repo_type, repo_id, target, body)
        raise StoreError(404, f"Unknown endpoint {method} {raw_path}", "NotFound")

    repo_type, segs2 = "model", segs
    if segs and segs[0] in _TYPE_BY_PLURAL and segs[0] != "models":
        repo_type, segs2 = _TYPE_BY_PLURAL[segs[0]], segs[1:]
    # /{prefix}{ns}/{name}.git/info/lfs/objects/...
    if len(segs2) >= 6 and segs2[1].endswith(".git") and segs2[2:5] == ["info", "lfs", "objects"]:
        repo_id = f"{segs2[0]}/{segs2[1][: -len('.git')]}"
        check_repo_id(repo_id)
        if method == "POST" and segs2[5:] == ["batch"]:
            c.require_write()
            body = await json_body(request, payloads.LfsBatch, limit)
            return await run_in_threadpool(hub.lfs_batch, c, repo_type, repo_id, body)
        if method == "PUT" and len(segs2) == 8 and segs2[5] == "upload":
            return await hub.lfs_put(request, repo_type, repo_id, segs2[6], segs2[7])
    # /{prefix}{ns}/{name}/resolve/{rev}/{path}
    if len(segs2) >= 5 and segs2[2] == "resolve" and method in ("GET", "HEAD"):
        repo_id = f"{segs2[0]}/{segs2[1]}"
        check_repo_id(repo_id)
        rev, path = split_revision(segs2[3:])
        if not path:
            raise StoreError(404, "Missing file path", "EntryNotFound")
        before_rev = segs[: len(segs) - len(segs2) + 3]
        pinned = _pinned_url(before_rev, path, request.scope.get("query_string", b""))
        return await run_in_threadpool(
            hub.resolve_file,
            c,
            method,
            repo_type,
            repo_id,
            rev,
            "/".join(path),
            request.headers.get("range"),
            pinned,
        )
    raise StoreError(404, f"Unknown endpoint {method} {raw_path}", "NotFound")


#: Characters a query string may carry as they are (RFC 3986); anything else is percent-encoded.
_QUERY_SAFE = "!$&'()*+,;=:@/?%"


def _pinned_url(before_rev: list[str], path: list[str], query: bytes) -> Callable[[str], str]:
    """``commit -> /{prefix}{ns}/{name}/resolve/{commit}/{path}?{query}``: where a resolve by name redirects.

    Built from the decoded segments, each encoded anew (a ``/`` inside one stays ``%2F``), so
    the redirected request looks up exactly the path this one found, and no byte of the
    client's URL reaches the header unescaped. A path from the root, not a full URL: the
    Hub's own redirects look so, and older ``huggingface_hub`` releases keep only a
    relative redirect's path.
    """
    prefix = "/" + "/".join(quote(s, safe="") for s in before_rev)
    tail = "/".join(quote(s, safe="") for s in path)
    qs = f"?{quote_from_bytes(query, safe=_QUERY_SAFE)}" if query else ""
    return lambda commit_id: f"{prefix}/{commit_id}/{tail}{qs}"
