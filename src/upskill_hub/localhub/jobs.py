"""Hugging Face Jobs on the local Hub: each Job's command runs as a local subprocess.

Why: a sharded evaluation must be testable end to end without Hugging Face's machines. The
unmodified ``huggingface_hub`` (``run_job``, ``inspect_job``, ``list_jobs``,
``fetch_job_logs``, ``cancel_job``) talks to this module through :mod:`.routes.jobs`, and sees
Jobs go ``SCHEDULING`` → ``RUNNING`` → ``COMPLETED`` / ``ERROR`` / ``CANCELED`` as on the Hub.

How a Job runs:

* The image is recorded, not pulled: the command runs directly, with cwd a fresh folder
  ``<root>/jobs/<namespace>/<id>/work`` (removed when the Job ends, as a container's disk)
  and a minimal environment (``PATH`` starting with the server's Python bin dir, so
  ``python`` / ``upskill-hub`` are this install; ``HOME`` = the work folder; ``LANG``;
  ``PYTHONUNBUFFERED``; the server's ``PYTHONPATH`` if it has one; ``UV_CACHE_DIR`` and
  ``PIP_CACHE_DIR`` pointing at this machine's package caches, as an image's layers
  would, so a Job that installs upskill-hub with ``uvx`` or ``pip`` does not download every
  package again; ``UV_SYSTEM_CERTS=1`` and the server's ``SSL_CERT_FILE``/``SSL_CERT_DIR``,
  so uv trusts what this machine trusts), then the Job's ``environment``, then its ``secrets``. Nothing else of the
  server's environment (its tokens included) leaks in.
* The process leads its own process group (``start_new_session``): cancel, timeout and server
  stop signal the whole group, and leftovers are killed when the leader exits, as when a
  container stops.
* At most ``JobLimits.max_running`` Jobs run at once; the rest wait in ``SCHEDULING``.

Secrets are kept in memory only: never in ``job.json``, never in inspect/list answers (names
only, values ``"***"``), and any secret value a Job prints is masked in its stored log. Logs
are capped per Job; records survive a restart (Jobs that were running are marked ``ERROR``,
"server stopped").
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import secrets as _secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from upskill_hub.localhub import payloads
from upskill_hub.localhub.hardware import check_flavor
from upskill_hub.localhub.joblog import MASK, LogWriter, Masker, utc_iso
from upskill_hub.localhub.storage import StoreError

logger = logging.getLogger("upskill_hub.localhub.jobs")

TERMINAL_STAGES = frozenset({"COMPLETED", "ERROR", "CANCELED", "DELETED"})
#: Docker's default PATH, after the server's Python bin dir.
_DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_JOB_ID_CHARS = frozenset("0123456789abcdef")


@dataclass(frozen=True)
class JobLimits:
    """Bounds that keep one caller from exhausting the machine serving the local Hub."""

    #: Jobs running at once; more wait in SCHEDULING until a slot frees.
    max_running: int = 8
    #: Jobs waiting for a slot; past it, creating a Job is refused with 429.
    max_queued: int = 256
    #: Bytes of log kept per Job; output past it is read and dropped, with one notice line.
    max_log_bytes: int = 16 * 1024 * 1024
    #: A longer output line is split into lines of this many bytes.
    max_line_bytes: int = 64 * 1024
    #: Seconds between SIGTERM and SIGKILL when a Job is canceled, times out or the server stops.
    kill_grace_s: float = 5.0
    #: Log streams open at once (each holds a connection); past it, 429.
    max_log_streams: int = 64


def valid_job_id(job_id: str) -> bool:
    """Job ids are 24 lowercase hex characters (like the Hub's); anything else is unknown."""
    return len(job_id) == 24 and set(job_id) <= _JOB_ID_CHARS


@dataclass(eq=False)  # a Job is itself: identity, not field-by-field equality
class Job:
    """One Job: its public record (``to_json``) plus, in memory only, its secrets and process."""

    id: str
    namespace: str
    owner_type: str
    folder: Path
    command: list[str]
    arguments: list[str]
    environment: dict[str, str]
    secret_names: list[str]
    flavor: str
    timeout_s: int | None
    labels: dict[str, str]
    docker_image: str | None
    space_id: str | None
    created_at: float
    initiator: str
    stage: str = "SCHEDULING"
    message: str | None = None
    started_at: float | None = None
    finished_at: float | None = None
    exit_code: int | None = None
    # ---- memory only
    secrets: dict[str, str] = field(default_factory=dict, repr=False)
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    cancel_requested: bool = False
    timed_out: bool = False
    stopping: bool = False
    supervisor: threading.Thread | None = field(default=None, repr=False)

    @property
    def log_path(self) -> Path:
        return self.folder / "log"

    @property
    def terminal(self) -> bool:
        return self.stage in TERMINAL_STAGES

    def record(self) -> dict[str, Any]:
        """What ``job.json`` holds: everything public, secret names only, no secret value."""
        return {
            "id": self.id,
            "namespace": self.namespace,
            "ownerType": self.owner_type,
            "command": self.command,
            "arguments": self.arguments,
            "environment": self.environment,
            "secretNames": self.secret_names,
            "flavor": self.flavor,
            "timeoutSeconds": self.timeout_s,
            "labels": self.labels,
            "dockerImage": self.docker_image,
            "spaceId": self.space_id,
            "createdAt": self.created_at,
            "initiator": self.initiator,
            "stage": self.stage,
            "message": self.message,
            "startedAt": self.started_at,
            "finishedAt": self.finished_at,
            "exitCode": self.exit_code,
        }

    @classmethod
    def from_record(cls, folder: Path, rec: dict[str, Any]) -> Job:
        return cls(
            id=rec["id"],
            namespace=rec["namespace"],
            owner_type=rec.get("ownerType", "user"),
            folder=folder,
            command=list(rec.get("command") or []),
            arguments=list(rec.get("arguments") or []),
            environment=dict(rec.get("environment") or {}),
            secret_names=list(rec.get("secretNames") or []),
            flavor=rec.get("flavor", "cpu-basic"),
            timeout_s=rec.get("timeoutSeconds"),
            labels=dict(rec.get("labels") or {}),
            docker_image=rec.get("dockerImage"),
            space_id=rec.get("spaceId"),
            created_at=float(rec["createdAt"]),
            initiator=rec.get("initiator", rec["namespace"]),
            stage=rec.get("stage", "ERROR"),
            message=rec.get("message"),
            started_at=rec.get("startedAt"),
            finished_at=rec.get("finishedAt"),
            exit_code=rec.get("exitCode"),
        )

    def to_json(self, now: float | None = None) -> dict[str, Any]:
        """The Hub's JobInfo shape (camelCase), as ``huggingface_hub.JobInfo`` parses it."""
        now = time.time() if now is None else now
        end = self.finished_at or now
        started = self.started_at
        return {
            "id": self.id,
            "createdAt": utc_iso(self.created_at),
            "startedAt": utc_iso(started),
            "finishedAt": utc_iso(self.finished_at),
            "dockerImage": self.docker_image,
            "spaceId": self.space_id,
            "command": self.command,
            "arguments": self.arguments,
            "environment": self.environment,
            "secrets": dict.fromkeys(self.secret_names, MASK),
            "flavor": self.flavor,
            "timeoutSeconds": self.timeout_s,
            "labels": self.labels,
            "status": {"stage": self.stage, "message": self.message},
            "durations": {
                "schedulingSecs": int((started or end) - self.created_at)
                if started or self.terminal
                else None,
                "runningSecs": int(end - started) if started else None,
                "totalSecs": int(end - self.created_at),
            },
            "owner": {"id": _owner_id(self.namespace), "name": self.namespace, "type": self.owner_type},
            "initiator": {"type": "user", "id": _owner_id(self.initiator), "name": self.initiator},
            "retry": 0,
        }


def _owner_id(name: str) -> str:
    return hashlib.sha1(name.encode()).hexdigest()[:24]


def _write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
    os.replace(tmp, path)


def _describe_exit(returncode: int) -> str | None:
    if returncode == 0:
        return None
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit code {returncode}"


def _remove_work(job: Job) -> None:
    """Like a container's filesystem, a Job's work folder goes with it: disk stays bounded."""
    shutil.rmtree(job.folder / "work", ignore_errors=True)


def _machine_settings() -> dict[str, str]:
    """This machine's package caches and TLS trust, for installers a Job runs (no credential)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    env = {
        "UV_CACHE_DIR": os.environ.get("UV_CACHE_DIR") or str(cache / "uv"),
        "PIP_CACHE_DIR": os.environ.get("PIP_CACHE_DIR") or str(cache / "pip"),
        "UV_SYSTEM_CERTS": "1",  # the platform's trust store, as pip and curl use here
    }
    env.update({k: os.environ[k] for k in ("SSL_CERT_FILE", "SSL_CERT_DIR") if os.environ.get(k)})
    return env


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def _kill_group(pid: int, wait_s: float = 5.0) -> None:
    """SIGKILL the Job's whole group and wait (bounded) until none of it is left.

    A signal is delivered asynchronously and an orphaned child is reaped by init a moment
    later: without the wait, a Job could read CANCELED (or COMPLETED) while its children
    still exist. The bound keeps a process stuck in the kernel from holding up the server.
    """
    _signal_group(pid, signal.SIGKILL)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            os.killpg(pid, 0)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(0.01)


class JobManager:
    """Creates, runs, tracks and cancels the Jobs of one local Hub (thread-safe)."""

    def __init__(self, root: Path, user: str, limits: JobLimits | None = None) -> None:
        self.root = Path(root) / "jobs"
        self.root.mkdir(parents=True, exist_ok=True)
        self.user = user
        self.limits = limits or JobLimits()
        self._lock = threading.RLock()
        self._jobs: dict[str, Job] = {}
        self._queue: deque[Job] = deque()
        self._running = 0
        self._streams = 0
        self._stopped = False
        self._load()

    # ---------------------------------------------------------------- persistence
    def _load(self) -> None:
        """Read earlier records; a Job left running by a crashed server ends as ERROR."""
        for path in sorted(self.root.glob("*/*/job.json")):
            try:
                job = Job.from_record(path.parent, json.loads(path.read_text(encoding="utf-8")))
            except (OSError, ValueError, KeyError, TypeError):
                logger.warning("ignoring unreadable Job record %s", path)
                continue
            if not job.terminal:
                job.stage, job.message = "ERROR", "server stopped"
                job.finished_at = job.finished_at or time.time()
                self._save(job)
                _remove_work(job)
            self._jobs[job.id] = job

    def _save(self, job: Job) -> None:
        _write_json(job.folder / "job.json", job.record())

    # ---------------------------------------------------------------- create
    def create(self, namespace: str, owner_type: str, initiator: str, spec: payloads.CreateJob) -> Job:
        """Record a Job from a validated spec and start it (or queue it); 400/429 on refusal."""
        unsupported = [
            name
            for name, value in (
                ("volumes", spec.volumes),
                ("expose", spec.expose),
                ("ssh", spec.ssh),
                ("network", spec.network),
                ("resourceGroupId", spec.resourceGroupId),
            )
            if value
        ]
        if unsupported:
            raise StoreError(
                400, f"The local Hub does not support Job {', '.join(unsupported)}", "BadRequest"
            )
        if spec.attempts is not None and spec.attempts > 1:
            raise StoreError(400, "The local Hub runs each Job once: attempts must be 1", "BadRequest")
        if (reason := check_flavor(spec.flavor)) is not None:
            raise StoreError(400, reason, "BadRequest")
        if not spec.dockerImage and not spec.spaceId:
            raise StoreError(400, "A Job needs a dockerImage or a spaceId", "BadRequest")
        total = sum(len(a) for a in (*spec.command, *spec.arguments))
        total += sum(len(k) + len(v) for d in (spec.environment, spec.secrets) for k, v in d.items())
        if total > 256 * 1024:
            raise StoreError(400, "Job command and environment exceed 256 KiB", "BadRequest")
        if clash := sorted(set(spec.environment) & set(spec.secrets)):
            raise StoreError(400, f"{clash[0]} is both an environment variable and a secret", "BadRequest")
        job_id = _secrets.token_hex(12)
        folder = self.root / namespace / job_id
        job = Job(
            id=job_id,
            namespace=namespace,
            owner_type=owner_type,
            folder=folder,
            command=list(spec.command),
            arguments=list(spec.arguments),
            environment=dict(spec.environment),
            secret_names=sorted(spec.secrets),
            flavor=spec.flavor,
            timeout_s=spec.timeoutSeconds,
            labels=dict(spec.labels),
            docker_image=spec.dockerImage,
            space_id=spec.spaceId,
            created_at=time.time(),
            initiator=initiator,
            secrets=dict(spec.secrets),
        )
        with self._lock:
            if self._stopped:
                raise StoreError(503, "The local Hub is stopping", "ServiceUnavailable")
            if len(self._queue) >= self.limits.max_queued:
                raise StoreError(
                    429, f"Too many Jobs waiting (max {self.limits.max_queued})", "TooManyRequests"
                )
            folder.mkdir(parents=True)
            job.log_path.touch()
            self._save(job)
            self._jobs[job_id] = job
            self._queue.append(job)
            self._schedule()
        return job

    def _schedule(self) -> None:
        """Start queued Jobs while slots are free (caller holds the lock)."""
        while self._queue and self._running < self.limits.max_running and not self._stopped:
            job = self._queue.popleft()
            self._running += 1
            job.supervisor = threading.Thread(
                target=self._supervise, args=(job,), name=f"job-{job.id}", daemon=True
            )
            job.supervisor.start()

    # ---------------------------------------------------------------- running
    def _environment(self, job: Job) -> dict[str, str]:
        env = {
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{_DEFAULT_PATH}",
            "HOME": str(job.folder / "work"),
            "LANG": "C.UTF-8",
            "PYTHONUNBUFFERED": "1",
        }
        if os.environ.get("PYTHONPATH"):
            env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        env.update(_machine_settings())
        env.update(job.environment)
        env.update(job.secrets)
        return env

    def _supervise(self, job: Job) -> None:
        """Run one Job to its end: start, capture logs, enforce the timeout, record the outcome."""
        mask = Masker(list(job.secrets.values()))
        try:
            log = open(job.log_path, "ab")  # noqa: SIM115 - closed below, written by two threads
        except OSError as exc:
            log = open(os.devnull, "wb")  # noqa: SIM115 - the Job still ends, with a reason
            job.message = f"cannot write the Job's log: {exc.strerror}"
        writer = LogWriter(log, mask, self.limits.max_log_bytes)
        try:
            with self._lock:
                if job.cancel_requested or self._stopped or job.message:
                    self._finish(job, None, writer)
                    return
                try:
                    (job.folder / "work").mkdir(exist_ok=True)
                    job.proc = subprocess.Popen(
                        [*job.command, *job.arguments],
                        cwd=job.folder / "work",
                        env=self._environment(job),
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                except OSError as exc:
                    reason = exc.strerror or type(exc).__name__
                    writer.line(f"cannot start {job.command[0]!r}: {reason}")
                    job.message = f"cannot start {job.command[0]!r}: {reason}"
                    self._finish(job, None, writer)
                    return
                job.stage, job.started_at = "RUNNING", time.time()
                writer.line(f"===== Job started at {utc_iso(job.started_at)} =====")
                self._save(job)
            proc = job.proc
            assert proc.stdout is not None
            reader = threading.Thread(
                target=writer.copy, args=(proc.stdout, self.limits.max_line_bytes), daemon=True
            )
            reader.start()
            try:
                proc.wait(timeout=job.timeout_s)
            except subprocess.TimeoutExpired:
                job.timed_out = True
                self._terminate(proc)
            # The leader is gone: whatever it left behind in its group goes with it.
            _kill_group(proc.pid)
            reader.join(timeout=10)
            _remove_work(job)  # before the lock: a big folder must not hold up other requests
            with self._lock:
                self._finish(job, proc.returncode, writer)
        except Exception:  # never leave a Job RUNNING forever because of a bug here
            logger.exception("Job %s supervisor failed", job.id)
            with self._lock:
                if job.proc is not None:
                    _signal_group(job.proc.pid, signal.SIGKILL)
                job.message = job.message or "local Hub error while running the Job"
                self._finish(job, None, writer)
        finally:
            log.close()
            job.secrets.clear()

    def _terminate(self, proc: subprocess.Popen[bytes]) -> None:
        """SIGTERM the Job's group, then SIGKILL it after the grace period."""
        _signal_group(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=self.limits.kill_grace_s)
        except subprocess.TimeoutExpired:
            _signal_group(proc.pid, signal.SIGKILL)
            proc.wait()

    def _finish(self, job: Job, returncode: int | None, writer: LogWriter) -> None:
        """Set the terminal stage (caller holds the lock); logs are complete before this."""
        _remove_work(job)  # gone before anyone can see the Job ended
        job.exit_code = returncode
        if job.cancel_requested:
            job.stage, job.message = "CANCELED", "canceled"
        elif job.timed_out:
            job.stage, job.message = "ERROR", f"timed out after {job.timeout_s}s"
        elif job.stopping or self._stopped:
            job.stage, job.message = "ERROR", "server stopped"
        elif returncode == 0:
            job.stage, job.message = "COMPLETED", None
        else:
            job.stage = "ERROR"
            job.message = (
                _describe_exit(returncode) if returncode is not None else job.message or "did not start"
            )
        job.finished_at = time.time()
        job.proc = None
        self._running -= 1  # every supervisor holds one slot, taken in _schedule
        writer.flush()
        self._save(job)
        self._schedule()

    # ---------------------------------------------------------------- queries
    def get(self, namespace: str, job_id: str) -> Job:
        """The Job, or 404 (also for a Job of another namespace: ids do not leak across)."""
        job = self._jobs.get(job_id) if valid_job_id(job_id) else None
        if job is None or job.namespace != namespace:
            raise StoreError(404, f"Job {job_id[:64]} not found", "JobNotFound")
        return job

    def find(self, namespace: str, stages: set[str], labels: dict[str, str]) -> list[Job]:
        """The namespace's Jobs, newest first, filtered by stage and by every ``key=value`` label."""
        with self._lock:
            jobs = [j for j in self._jobs.values() if j.namespace == namespace]
        return sorted(
            (
                j
                for j in jobs
                if (not stages or j.stage in stages) and all(j.labels.get(k) == v for k, v in labels.items())
            ),
            key=lambda j: j.created_at,
            reverse=True,
        )

    def cancel(self, namespace: str, job_id: str) -> Job:
        """Ask a Job to stop; idempotent. A queued Job ends at once, a running one once its group dies."""
        job = self.get(namespace, job_id)
        with self._lock:
            if job.terminal or job.cancel_requested:
                return job
            job.cancel_requested = True
            if job in self._queue:
                self._queue.remove(job)
                job.stage, job.message, job.finished_at = "CANCELED", "canceled", time.time()
                job.secrets.clear()
                self._save(job)
                return job
            proc = job.proc
        if proc is not None:
            threading.Thread(target=self._terminate, args=(proc,), daemon=True).start()
        return job

    def pid(self, job_id: str) -> int | None:
        """The pid (= process group) of a running Job, for tests that kill it; None otherwise."""
        job = self._jobs.get(job_id)
        proc = job.proc if job is not None else None
        return proc.pid if proc is not None and proc.poll() is None else None

    # ---------------------------------------------------------------- log streams
    def take_stream_slot(self) -> None:
        """Count one open log stream; 429 past ``max_log_streams`` (release with ``release_stream_slot``)."""
        with self._lock:
            if self._streams >= self.limits.max_log_streams:
                raise StoreError(429, "Too many open log streams", "TooManyRequests")
            self._streams += 1

    def release_stream_slot(self) -> None:
        with self._lock:
            self._streams = max(0, self._streams - 1)

    # ---------------------------------------------------------------- shutdown
    def shutdown(self) -> None:
        """Stop every Job (marked ERROR "server stopped"); called when the server stops. Idempotent."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            for job in self._queue:
                job.stage, job.message, job.finished_at = "ERROR", "server stopped", time.time()
                job.secrets.clear()
                self._save(job)
            self._queue.clear()
            running = [j for j in self._jobs.values() if j.proc is not None]
            for job in running:
                job.stopping = True
                _signal_group(job.proc.pid, signal.SIGKILL)  # type: ignore[union-attr]
        for job in running:
            if job.supervisor is not None:
                job.supervisor.join(timeout=15)
