"""A scripted, deterministic LLM server speaking the OpenAI and Anthropic wire formats.

Tests and benchmarks point the real, unmodified ``openai`` / ``anthropic`` SDKs at it:

* ``POST /v1/chat/completions`` and ``GET /v1/models`` (OpenAI; SDK ``base_url=<url>/v1``)
* ``POST /v1/messages`` (Anthropic; SDK ``base_url=<url>``)

A *script* decides each answer from ``(system, messages, params)``, so a test can answer
differently when the system prompt carries a skill. Usage is counted deterministically
(whitespace-separated words), so token sums in results can be checked exactly. The two wire
formats are in :mod:`.wire`, the model's own tool use in :mod:`.scripted_model`.

*Faults* are queued and consumed by the next matching requests: 429 with ``Retry-After``,
5xx, a malformed JSON body, a hang longer than the client's timeout, or a dropped
connection (the socket is closed with no response at all). That last one is why this is
plain asyncio + ``h11`` rather than an ASGI app: ASGI servers always answer something.

It runs its own event loop in a background thread, so it serves many concurrent requests
with a fixed latency cheaply (the eval throughput benchmark runs 400 calls at
concurrency 32) and works the same from sync tests, async tests and benchmarks.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import h11

# The server calls these by this module's names: tests patch tool_step, _tool_answer, _error here.
from upskill_hub.testing.scripted_model import Script, _script_view, echo_script, tool_step
from upskill_hub.testing.wire import Reply, _answer, _error, _json, _normalize, _tool_answer
from upskill_hub.testing.wire import count_tokens as count_tokens  # importers take it from here

#: Headers whose values are secrets; recorded requests keep only their shape.
_SECRET_HEADERS = {"authorization", "x-api-key", "api-key", "proxy-authorization", "cookie"}


@dataclass
class Fault:
    """A failure to serve instead of an answer, for the next ``times`` matching requests.

    ``match`` limits the fault to requests whose system prompt or messages contain that
    substring (or for which the callable returns True); ``api`` to ``"openai"`` or
    ``"anthropic"`` requests.
    """

    kind: str  # "rate_limit" | "error" | "malformed" | "hang" | "drop"
    status: int = 500
    #: seconds, an HTTP date string sent verbatim, or a callable making that string when the
    #: fault is served (a date relative to the moment of the answer, whatever the load)
    retry_after: float | str | Callable[[], str] | None = None
    hang_s: float = 30.0
    times: int = 1
    match: str | Callable[[str, list[dict[str, str]]], bool] | None = None
    api: str | None = None

    KINDS = ("rate_limit", "error", "malformed", "hang", "drop")

    def __post_init__(self) -> None:
        if self.kind not in self.KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; one of {', '.join(self.KINDS)}")

    @classmethod
    def rate_limit(cls, retry_after: float | str | Callable[[], str] | None = 1.0, **kw: Any) -> Fault:
        return cls("rate_limit", status=429, retry_after=retry_after, **kw)

    @classmethod
    def server_error(cls, status: int = 500, **kw: Any) -> Fault:
        return cls("error", status=status, **kw)

    @classmethod
    def malformed_json(cls, **kw: Any) -> Fault:
        return cls("malformed", status=200, **kw)

    @classmethod
    def hang(cls, seconds: float = 30.0, **kw: Any) -> Fault:
        return cls("hang", hang_s=seconds, **kw)

    @classmethod
    def drop(cls, **kw: Any) -> Fault:
        return cls("drop", **kw)

    def matches(self, api: str, system: str, messages: list[dict[str, str]]) -> bool:
        if self.api is not None and self.api != api:
            return False
        if self.match is None:
            return True
        if callable(self.match):
            return bool(self.match(system, messages))
        return self.match in system or any(self.match in m["content"] for m in messages)


@dataclass
class RecordedRequest:
    """One request as the server saw it (secret headers masked)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON, or the raw text when it was not JSON
    api: str | None  # "openai" | "anthropic" | None (other endpoints)
    fault: str | None = None  # the fault served, if any
    started: float = 0.0
    finished: float = 0.0
    system: str = ""
    messages: list[dict[str, str]] = field(default_factory=list)


def _mask_headers(headers: list[tuple[bytes, bytes]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for raw_name, raw_value in headers:
        name = raw_name.decode("latin-1").lower()
        value = raw_value.decode("latin-1")
        if name in _SECRET_HEADERS:
            scheme, _, rest = value.partition(" ")
            value = f"{scheme} ***" if rest else "***"
        out[name] = value
    return out


class ScriptedLLMServer:
    """The server and its handle. Use :func:`running_llm_server` to start and stop it."""

    def __init__(
        self,
        script: Script | None = None,
        *,
        latency_s: float = 0.0,
        faults: list[Fault] | tuple[Fault, ...] = (),
        models: tuple[str, ...] = ("scripted-model",),
        api_key: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        hold_after: int | None = None,
    ) -> None:
        self.script: Script = script or echo_script
        # Answer this many completion calls, then hold every later one until release():
        # a test that must act "mid-run" (send a signal, cancel) then has a run that
        # cannot finish first, however fast or slow the machine is.
        self.hold_after = hold_after
        self._admitted = 0
        self._released: asyncio.Event | None = None
        self.latency_s = latency_s
        self.models = models
        self.api_key = api_key  # when set, requests without it get 401
        self.host = host
        self.port = port
        self._faults: list[Fault] = list(faults)
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._in_flight = 0
        self.max_in_flight = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.base_events.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._ready = threading.Event()
        self._startup_error: BaseException | None = None

    # ----- the handle tests use -------------------------------------------------------
    @property
    def url(self) -> str:
        """Root URL; the Anthropic SDK's ``base_url``."""
        return f"http://{self.host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """The OpenAI SDK's ``base_url`` (``<url>/v1``)."""
        return self.url + "/v1"

    anthropic_base_url = url

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far (a copy), in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def completion_requests(self) -> list[RecordedRequest]:
        """Only the chat/messages requests (not ``/v1/models`` etc.)."""
        return [r for r in self.requests if r.api is not None]

    @property
    def calls(self) -> int:
        """How many completion requests arrived (faulted ones included)."""
        return len(self.completion_requests)

    def _count_calls(self) -> int:
        return sum(1 for r in self._requests if r.api is not None)

    def clear(self) -> None:
        """Forget recorded requests and pending faults (between phases of a test)."""
        with self._lock:
            self._requests.clear()
            self._faults.clear()
            self.max_in_flight = 0

    def release(self) -> None:
        """Answer the calls held since ``hold_after`` was reached, and every later one."""
        loop, released = self._loop, self._released
        if loop is not None and released is not None:
            loop.call_soon_threadsafe(released.set)

    @property
    def pending_faults(self) -> int:
        with self._lock:
            return sum(f.times for f in self._faults)

    # ----- lifecycle ------------------------------------------------------------------
    def start(self) -> ScriptedLLMServer:
        self._thread = threading.Thread(target=self._run_loop, name="scripted-llm-server", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        if self._startup_error is not None:
            raise self._startup_error
        if not self._ready.is_set():
            raise RuntimeError("scripted LLM server did not start")
        return self

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        with contextlib.suppress(RuntimeError):  # loop already closed
            asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(10)
        thread.join(10)
        self._loop = self._thread = None

    def _run_loop(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        self._released = asyncio.Event()
        try:
            self._server = loop.run_until_complete(
                asyncio.start_server(self._on_connect, self.host, self.port, backlog=512)
            )
            self.port = self._server.sockets[0].getsockname()[1]
        except BaseException as exc:  # e.g. port in use: report to start()
            self._startup_error = exc
            self._ready.set()
            loop.close()
            return
        self._ready.set()
        try:
            loop.run_forever()
            # Connections accepted while shutting down: cancel them before the loop closes.
            pending = asyncio.all_tasks(loop)
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        finally:
            loop.close()

    async def _shutdown(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()
        asyncio.get_running_loop().call_soon(asyncio.get_running_loop().stop)

    # ----- HTTP -----------------------------------------------------------------------
    async def _on_connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)  # type: ignore[arg-type]
        try:
            await self._serve_connection(reader, writer)
        except (asyncio.CancelledError, ConnectionError, h11.ProtocolError):
            pass
        finally:
            self._tasks.discard(task)  # type: ignore[arg-type]
            with contextlib.suppress(RuntimeError):
                writer.transport.abort()

    async def _serve_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = h11.Connection(h11.SERVER)

        async def next_event() -> Any:
            while True:
                event = conn.next_event()
                if event is not h11.NEED_DATA:
                    return event
                data = await reader.read(65536)
                conn.receive_data(data)

        while True:
            event = await next_event()
            if not isinstance(event, h11.Request):
                return  # ConnectionClosed or garbage: end quietly
            chunks: list[bytes] = []
            while True:
                ev = await next_event()
                if isinstance(ev, h11.Data):
                    chunks.append(ev.data)
                elif isinstance(ev, h11.EndOfMessage):
                    break
                else:
                    return
            action = await self._dispatch(
                event.method.decode(), event.target.decode("latin-1"), event.headers, b"".join(chunks)
            )
            if action is None:  # drop: close the socket with no response
                return
            status, headers, payload = action
            headers = [*headers, ("content-length", str(len(payload)))]
            writer.write(conn.send(h11.Response(status_code=status, headers=headers)))
            writer.write(conn.send(h11.Data(data=payload)))
            writer.write(conn.send(h11.EndOfMessage()))
            await writer.drain()
            if conn.our_state is h11.MUST_CLOSE or conn.their_state is h11.MUST_CLOSE:
                return
            conn.start_next_cycle()

    async def _dispatch(
        self, method: str, target: str, raw_headers: list[tuple[bytes, bytes]], raw_body: bytes
    ) -> tuple[int, list[tuple[str, str]], bytes] | None:
        path = target.split("?", 1)[0].rstrip("/")
        if path.startswith("/v1/"):
            path = path[3:]
        api = {"/chat/completions": "openai", "/messages": "anthropic"}.get(path)
        headers = _mask_headers(raw_headers)
        text = raw_body.decode("utf-8", "replace")
        try:
            body: Any = json.loads(text) if text else None
        except json.JSONDecodeError:
            body = text
        if method == "GET" and path == "/_stats":  # for out-of-process handles; not recorded
            with self._lock:
                stats = {"calls": self._count_calls(), "max_in_flight": self.max_in_flight}
            return _json(200, stats)
        record = RecordedRequest(method, target, headers, body, api, started=time.monotonic())
        with self._lock:
            self._requests.append(record)
        try:
            if method == "GET" and path == "/models":
                data = [
                    {"id": m, "object": "model", "created": 0, "owned_by": "scripted"} for m in self.models
                ]
                return _json(200, {"object": "list", "data": data})
            if api is None or method != "POST":
                return _json(404, {"error": {"message": f"no route {method} {path}", "type": "not_found"}})
            return await self._complete(api, raw_headers, body, record)
        finally:
            record.finished = time.monotonic()

    async def _complete(
        self, api: str, raw_headers: list[tuple[bytes, bytes]], body: Any, record: RecordedRequest
    ) -> tuple[int, list[tuple[str, str]], bytes] | None:
        if self.api_key is not None:
            sent = {k.decode().lower(): v.decode() for k, v in raw_headers}
            given = sent.get("x-api-key") or sent.get("authorization", "").removeprefix("Bearer ").strip()
            if given != self.api_key:
                return _error(api, 401, "authentication_error", "invalid api key")
        if not isinstance(body, dict):
            return _error(api, 400, "invalid_request_error", "body must be a JSON object")
        try:
            system, messages, params = _normalize(api, body)
        except ValueError as exc:
            return _error(api, 400, "invalid_request_error", str(exc))
        record.system, record.messages = system, messages

        with self._lock:
            fault = next((f for f in self._faults if f.times > 0 and f.matches(api, system, messages)), None)
            if fault is not None:
                fault.times -= 1
                if fault.times <= 0:
                    self._faults.remove(fault)
                record.fault = fault.kind
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            held = self.hold_after is not None and self._admitted >= self.hold_after
            self._admitted += 1
        try:
            if held:
                assert self._released is not None
                await self._released.wait()
            if self.latency_s > 0:
                await asyncio.sleep(self.latency_s)
            if fault is not None:
                return await self._serve_fault(api, fault)
            step = tool_step(system, messages, params["tools"])
            if step is not None:
                n = sum(len(m.get("tool_calls") or ()) for m in messages) + 1
                return _json(200, _tool_answer(api, step, n, system, messages, params))
            try:
                view_system, view_messages = _script_view(system, messages)
                reply = self.script(view_system, view_messages, params)
            except Exception as exc:  # a broken script is a 500, visible to the test
                return _error(api, 500, "api_error", f"script raised {type(exc).__name__}: {exc}")
            if isinstance(reply, str):
                reply = Reply(reply)
            return _json(200, _answer(api, reply, system, messages, params))
        finally:
            with self._lock:
                self._in_flight -= 1

    async def _serve_fault(self, api: str, fault: Fault) -> tuple[int, list[tuple[str, str]], bytes] | None:
        if fault.kind == "drop":
            return None
        if fault.kind == "hang":
            await asyncio.sleep(fault.hang_s)
            return None
        if fault.kind == "malformed":
            return 200, [("content-type", "application/json")], b'{"id": "broken", "choices": [{"mess'
        if fault.kind == "rate_limit":
            status, headers, payload = _error(api, 429, "rate_limit_error", "rate limited (scripted)")
            if fault.retry_after is not None:
                ra = fault.retry_after() if callable(fault.retry_after) else fault.retry_after
                headers.append(("retry-after", ra if isinstance(ra, str) else f"{ra:g}"))
            return status, headers, payload
        return _error(api, fault.status, "api_error", f"server error {fault.status} (scripted)")


@contextlib.contextmanager
def running_llm_server(
    script: Script | None = None,
    *,
    latency_s: float = 0.0,
    faults: list[Fault] | tuple[Fault, ...] = (),
    models: tuple[str, ...] = ("scripted-model",),
    api_key: str | None = None,
    port: int = 0,
    hold_after: int | None = None,
) -> Iterator[ScriptedLLMServer]:
    """Start a :class:`ScriptedLLMServer` on 127.0.0.1 (a free port) and stop it afterwards."""
    server = ScriptedLLMServer(
        script,
        latency_s=latency_s,
        faults=faults,
        models=models,
        api_key=api_key,
        port=port,
        hold_after=hold_after,
    ).start()
    try:
        yield server
    finally:
        server.stop()


class LLMServerProcess:
    """Handle on a scripted server running in a child process (the default echo script).

    Benchmarks use it so the server's CPU time is not taken from the client's GIL:
    in-process, the server costs about 1 ms of CPU per call on the caller's interpreter.
    """

    def __init__(self, proc: subprocess.Popen[str], url: str) -> None:
        self.proc = proc
        self.url = url
        self.openai_base_url = url + "/v1"
        self.anthropic_base_url = url

    def stats(self) -> dict[str, int]:
        with urllib.request.urlopen(self.url + "/v1/_stats", timeout=5) as resp:
            return json.loads(resp.read())

    @property
    def calls(self) -> int:
        return self.stats()["calls"]

    @property
    def max_in_flight(self) -> int:
        return self.stats()["max_in_flight"]


@contextlib.contextmanager
def llm_server_process(*, latency_s: float = 0.0, port: int = 0) -> Iterator[LLMServerProcess]:
    """Run ``python -m upskill_hub.testing.llm_server`` in a child process; stop it afterwards."""
    cmd = [sys.executable, "-m", "upskill_hub.testing.llm_server", "--port", str(port)]
    cmd += ["--latency", str(latency_s)]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"}
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        match = re.search(r"(http://[\w.]+:\d+)", line)
        if not match:
            raise RuntimeError(f"scripted LLM server process did not start: {line!r}")
        yield LLMServerProcess(proc, match.group(1))
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()


def main(argv: list[str] | None = None) -> None:
    """``python -m upskill_hub.testing.llm_server --port 8765 --latency 0.1`` for demos/benchmarks."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to every completion")
    args = parser.parse_args(argv)
    from upskill_hub.testing.scripted_teacher import demo_script

    server = ScriptedLLMServer(demo_script, latency_s=args.latency, host=args.host, port=args.port).start()
    print(f"scripted LLM server on {server.url}  (OpenAI base_url {server.openai_base_url})", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
