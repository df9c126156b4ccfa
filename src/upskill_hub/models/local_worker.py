"""The local model runs in a worker process, so a native crash is an error row, not a dead eval.

Native runtimes can die in ways Python cannot catch (a SIGSEGV inside llama.cpp on some
CPUs, the OOM killer, an abort in a BLAS library). The eval process therefore never loads
the model itself: it starts ``python -m upskill_hub.models.local_worker`` and talks to it
over pipes, one JSON line per request and per answer.

Calls are batched: callers queue their requests, and one dispatcher thread sends what is
waiting with the same system prompt as the oldest request (up to the batch size, shortest
first, so that the shared prompt start is computed once and padding stays small) to the
worker as one ``generate_batch``; a backend that batches (transformers) answers them in
one batched generation, any other answers them one by one. A model at batch size 1 is bound
by memory bandwidth, so a batch of 8 costs little more than one answer. Each answer comes
back the moment it is ready, so a short answer never waits for the batch's longest.

If the worker dies or stops answering, every call of the batch still in flight fails with a
one-line :class:`WorkerCrashed` that names the backend and the signal; the next batch starts
a new worker, once. A worker that dies a second time is not restarted: every later call
fails at once with the same reason, the run ends with error rows, and ``eval --resume``
finishes it.

Protocol (stdin → worker, worker → a private copy of its stdout; the worker points its own
fd 1 at stderr so that anything a native library prints cannot corrupt the answers):
``{"op": "generate", ...request}`` → ``{"ok": {...}}`` or ``{"error": "..."}``;
``{"op": "generate_batch", "requests": [...]}`` → one ``{"part": [index, {"ok": {...}} | {"error": "..."}]}``
per request, the moment its answer is ready (a short answer leaves the batch then), and last
``{"ok": [...the same answers, in request order]}``; at start the worker sends
``{"ready": {...facts}}`` or ``{"load_error": "..."}``.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import asdict, dataclass
from typing import Any

from upskill_hub.models.local_backends import BackendError, LoadOptions, backend_version, make_backend

#: How many times a dead worker is replaced before the backend is given up on.
MAX_RESTARTS = 1
#: Seconds to wait for the model to load (a cold disk and a de-quantising load take a while).
LOAD_TIMEOUT_S = 600.0
#: How long the dispatcher waits for more requests to join a batch that is not full yet.
#: Concurrent callers arrive within microseconds of each other; a lone caller loses this much.
GATHER_S = 0.01


class WorkerCrashed(Exception):
    """The worker died or stopped answering; the message is one line naming the backend."""


class WorkerRefused(Exception):
    """The worker is alive but could not serve the request (load failure, bad request)."""


@dataclass(frozen=True)
class WorkerConfig:
    backend: str
    options: LoadOptions
    call_timeout_s: float = 600.0
    batch: int = 1  # the most requests sent to the worker as one batch


def _prompt_size(request: dict[str, Any]) -> int:
    """A prompt's length in characters: batches group prompts of similar length."""
    return len(request.get("system") or "") + sum(len(str(m.get("content") or "")) for m in request.get("messages") or [])


def _next_batch(queue: list[tuple[dict[str, Any], Any]], size: int) -> list[tuple[dict[str, Any], Any]]:
    """Up to ``size`` waiting requests with the oldest one's system prompt, shortest first.

    One system prompt per batch: every row then starts with the same tokens (the skill
    text, or the catalog), which the backend computes once; and prompts of one kind have
    similar lengths, so little is padded. The oldest request always goes out next: no
    kind of request waits behind another for long.
    """
    oldest = queue[0]
    system = oldest[0].get("system") or ""
    same = [item for item in queue[1:] if (item[0].get("system") or "") == system]
    picked = [oldest, *sorted(same, key=lambda item: _prompt_size(item[0]))[: size - 1]]
    return sorted(picked, key=lambda item: _prompt_size(item[0]))


def _signal_name(returncode: int | None) -> str:
    if returncode is None:
        return "no exit status"
    if returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            return f"signal {-returncode}"
    return f"exit code {returncode}"


class LocalWorker:
    """One worker process running one model; calls are queued and sent to it in batches."""

    def __init__(self, config: WorkerConfig) -> None:
        self.config = config
        self.facts: dict[str, Any] = {}
        self.crashes = 0
        self.batches: list[int] = []  # the size of each batch sent (for tests and benchmarks)
        self._proc: subprocess.Popen[bytes] | None = None
        self._buf = b""
        self._lock = threading.Lock()
        self._dead_reason: str | None = None
        self._queue: list[tuple[dict[str, Any], Future[dict[str, Any]]]] = []
        self._cond = threading.Condition()
        self._dispatcher: threading.Thread | None = None

    @property
    def label(self) -> str:
        name = self.config.backend
        return backend_version(name) if ":" not in name else name

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    # ------------------------------------------------------------------ lifecycle
    def _spawn(self) -> None:
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_VERBOSITY": "error",
               "TOKENIZERS_PARALLELISM": "false", "PYTHONUNBUFFERED": "1"}
        threads = str(self.config.options.threads)
        for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            env[var] = threads  # torch and BLAS read these at import: never more than we were given
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "upskill_hub.models.local_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            # Native libraries and transformers chatter on stderr; errors come back over the pipe.
            stderr=None if os.environ.get("UPSKILL_LOCAL_DEBUG") else subprocess.DEVNULL,
            env=env,
            start_new_session=True,  # a Ctrl-C in the terminal reaches the eval, which then stops us
        )
        self._buf = b""
        self._send({"op": "load", "backend": self.config.backend, "options": asdict(self.config.options)})
        reply = self._receive(LOAD_TIMEOUT_S, "while loading the model")
        if "load_error" in reply:
            self._stop()
            raise WorkerRefused(f"local model ({self.label}) failed to load: {reply['load_error']}")
        self.facts = reply.get("ready") or {}
        if self.facts.get("converted"):
            # Said once, the first time: later loads read this copy in about a second.
            sys.stderr.write(f"local model: converted the GGUF once into {self.facts['converted']} (later loads are fast)\n")

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            with contextlib.suppress(OSError):
                if proc.stdin:
                    proc.stdin.close()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout:
                proc.stdout.close()

    def close(self) -> None:
        with self._lock:
            self._stop()
        with self._cond:
            waiting, self._queue = self._queue, []
        for _, fut in waiting:
            if fut.set_running_or_notify_cancel():
                fut.set_exception(WorkerCrashed(f"local model worker ({self.label}) was stopped"))

    # ------------------------------------------------------------------ pipes
    def _send(self, msg: dict[str, Any]) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        try:
            self._proc.stdin.write(json.dumps(msg).encode() + b"\n")
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # the worker is gone; _receive reports how it died

    def _died(self, when: str) -> WorkerCrashed:
        proc = self._proc
        code = None
        if proc is not None:
            try:
                code = proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
        self._stop()
        self.crashes += 1
        return WorkerCrashed(f"local model worker ({self.label}) died {when} ({_signal_name(code)})")

    def _receive(self, timeout: float, when: str) -> dict[str, Any]:
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                self._proc.kill()
                self._stop()
                self.crashes += 1
                raise WorkerCrashed(f"local model worker ({self.label}) did not answer within {timeout:.0f} s {when}")
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:  # EOF: the worker is gone
                raise self._died(when)
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return json.loads(line)

    # ------------------------------------------------------------------ calls
    def ensure_started(self) -> None:
        """Start the worker if it is not running (at most :data:`MAX_RESTARTS` replacements)."""
        if self._proc is not None and self._proc.poll() is None:
            return
        if self._proc is not None:  # it died between calls
            self._died("between calls")
        if self._dead_reason is not None:
            raise WorkerRefused(self._dead_reason)
        if self.crashes > MAX_RESTARTS:
            raise WorkerCrashed(f"local model worker ({self.label}) crashed {self.crashes} times; not restarted")
        try:
            self._spawn()
        except WorkerRefused as exc:  # a model that cannot load will not load on the next call either
            self._dead_reason = str(exc)
            raise
        except WorkerCrashed as exc:
            if self.crashes > MAX_RESTARTS:
                self._dead_reason = f"{exc}; crashed {self.crashes} times, not restarted"
            raise

    def submit(self, request: dict[str, Any]) -> Future[dict[str, Any]]:
        """Queue one generation; the future holds its answer, or WorkerCrashed / WorkerRefused /
        BackendError."""
        return self.submit_many([request])[0]

    def submit_many(self, requests: list[dict[str, Any]]) -> list[Future[dict[str, Any]]]:
        """Queue several generations at once: up to the batch size, they go out together."""
        futures: list[Future[dict[str, Any]]] = [Future() for _ in requests]
        with self._cond:
            self._queue.extend(zip(requests, futures, strict=True))
            if self._dispatcher is None or not self._dispatcher.is_alive():
                self._dispatcher = threading.Thread(target=self._dispatch, name="local-model-dispatcher", daemon=True)
                self._dispatcher.start()
            self._cond.notify()
        return futures

    def call(self, request: dict[str, Any]) -> dict[str, Any]:
        """One generation, blocking; raises WorkerCrashed / WorkerRefused / BackendError."""
        return self.submit(request).result()

    def _dispatch(self) -> None:
        """Send what is waiting, batch after batch, until the queue stays empty."""
        while True:
            with self._cond:
                if not self._queue and not self._cond.wait_for(lambda: bool(self._queue), timeout=60.0):
                    self._dispatcher = None  # idle: a later submit starts a new dispatcher
                    return
                if len(self._queue) < self.config.batch:
                    deadline = time.monotonic() + GATHER_S
                    while len(self._queue) < self.config.batch and (left := deadline - time.monotonic()) > 0:
                        self._cond.wait(left)
                batch = _next_batch(self._queue, self.config.batch)
                taken = {id(fut) for _, fut in batch}
                self._queue = [item for item in self._queue if id(item[1]) not in taken]
            batch = [(r, f) for r, f in batch if f.set_running_or_notify_cancel()]
            if batch:
                self._serve(batch)

    def _serve(self, batch: list[tuple[dict[str, Any], Future[dict[str, Any]]]]) -> None:
        """One batch to the worker. Each future gets its answer as soon as the worker has it;
        the ones still waiting when the worker fails get the failure."""
        futures = [fut for _, fut in batch]

        def settle(index: int, answer: dict[str, Any]) -> None:
            fut = futures[index]
            if fut.done():
                return
            if "error" in answer:
                fut.set_exception(BackendError(answer["error"]))
            else:
                fut.set_result(answer["ok"])

        try:
            answers = self._exchange([r for r, _ in batch], settle)
        except Exception as exc:  # noqa: BLE001 - a crash or refusal fails what is still in the batch
            for fut in futures:
                if not fut.done():
                    fut.set_exception(exc)
            return
        for index, answer in enumerate(answers):
            settle(index, answer)

    def _exchange(
        self, requests: list[dict[str, Any]], on_part: Callable[[int, dict[str, Any]], None]
    ) -> list[dict[str, Any]]:
        with self._lock:
            self.ensure_started()
            self.batches.append(len(requests))
            if len(requests) == 1:
                self._send({"op": "generate", **requests[0]})
            else:
                self._send({"op": "generate_batch", "requests": requests})
            deadline = time.monotonic() + self.config.call_timeout_s * len(requests)
            try:
                while True:
                    reply = self._receive(max(deadline - time.monotonic(), 0.001), "during the call")
                    if "part" not in reply:
                        break
                    index, answer = reply["part"]
                    on_part(int(index), answer)
            except WorkerCrashed as exc:
                if self.crashes > MAX_RESTARTS:
                    self._dead_reason = f"{exc}; crashed {self.crashes} times, not restarted"
                raise
        if len(requests) == 1:
            return [reply]
        if "error" in reply:
            return [{"error": reply["error"]}] * len(requests)
        return list(reply["ok"])


# ---------------------------------------------------------------------- the worker side
def _failure(exc: Exception) -> dict[str, Any]:
    if isinstance(exc, BackendError):
        return {"error": str(exc)}
    return {"error": " ".join(f"{type(exc).__name__}: {exc}".split())[:500]}


def _answer_one(backend: Any, request: dict[str, Any]) -> dict[str, Any]:
    try:
        t0 = time.perf_counter()
        answer = backend.generate(request)
        return {"ok": {**answer, "seconds": time.perf_counter() - t0}}
    except Exception as exc:  # noqa: BLE001 - one bad request must not end the worker
        return _failure(exc)


def _answer_batch(
    backend: Any, requests: list[dict[str, Any]], emit: Callable[[int, dict[str, Any]], None]
) -> list[dict[str, Any]]:
    """Answers in request order, each also ``emit``-ted the moment it is ready.

    ``seconds`` is the time spent on that answer, not what its caller waited: a backend that
    batches reports each answer's share of its batch; answered one by one, each answer's own
    generation time; a backend that reports nothing, the time since the previous answer.
    Summed over a batch, the answers' seconds are the batch's time (a run's time per answer
    is then per answer, not a batch's latency).
    """
    last = [time.perf_counter()]

    def wrap(answer: dict[str, Any] | Exception) -> dict[str, Any]:
        if isinstance(answer, Exception):
            return _failure(answer)
        now = time.perf_counter()
        seconds, last[0] = answer.get("seconds", now - last[0]), now
        return {"ok": {**answer, "seconds": seconds}}

    if not hasattr(backend, "generate_batch"):
        answers = []
        for index, request in enumerate(requests):
            answer = _answer_one(backend, request)  # its own generation time
            emit(index, answer)
            answers.append(answer)
        return answers
    sent: dict[int, dict[str, Any]] = {}

    def on_answer(index: int, answer: dict[str, Any] | Exception) -> None:
        sent[index] = wrap(answer)
        emit(index, sent[index])

    try:
        answers = backend.generate_batch(requests, on_answer=on_answer)
    except Exception as exc:  # noqa: BLE001 - the batch failed: every request not yet answered says why
        return [_failure(exc)] * len(requests)
    return [sent[i] if i in sent else wrap(a) for i, a in enumerate(answers)]


def _serve() -> int:
    """Worker main loop: load on the first message, then answer one request per line."""
    proto = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)  # whatever a native library prints goes to stderr, never into the protocol
    sys.stdout = sys.stderr

    def reply(msg: dict[str, Any]) -> None:
        proto.write(json.dumps(msg).encode() + b"\n")

    backend = None
    for raw in sys.stdin.buffer:
        msg = json.loads(raw)
        if msg.get("op") == "load":
            try:
                backend = make_backend(msg["backend"])
                facts = backend.load(LoadOptions(**msg["options"]))
            except Exception as exc:  # noqa: BLE001 - reported to the parent as one line
                reply({"load_error": " ".join(f"{type(exc).__name__}: {exc}".split())[:500]})
                return 1
            reply({"ready": facts})
            continue
        if backend is None:
            reply({"error": "model not loaded"})
            continue
        if msg.get("op") == "generate_batch":
            answers = _answer_batch(backend, msg.get("requests") or [], lambda i, a: reply({"part": [i, a]}))
            reply({"ok": answers})
            continue
        reply(_answer_one(backend, msg))
    return 0


if __name__ == "__main__":
    sys.exit(_serve())
