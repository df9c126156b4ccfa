"""Run one agent CLI (or a ``command`` check) as a process group that never outlives its call.

An agent CLI starts helpers of its own (shells, language servers, MCP servers). Killing
only the CLI would leave them running, holding the workspace and burning a subscription.
So every process starts in a new session (its own process group), and when the call ends
(the CLI exited, the timeout struck, the eval was cancelled, or anything failed) the whole
group gets SIGTERM, then SIGKILL after a short grace period, and the CLI itself is reaped
before the call returns.

A helper that left the group (``setsid``, a daemon's double fork) is found too: every
process started for the call carries :data:`CALL_MARKER` in its environment, and on Linux
any process of this user that still holds the marker, or still holds one of the call's
output pipes, is killed with the group. (One that both clears its environment and closes
its inherited pipes is beyond reach; it holds nothing of the call either.)

The end of a call is the exit of the process we started, never the end of its output: a
helper holding stdout open must not turn a call that finished in 0.1 s into a "timeout".
Once the CLI exited, the pipes are drained for at most :data:`PIPE_DRAIN_S` after the
group is gone.

Output is kept bounded: only the last :data:`TAIL_BYTES` of stderr and at most
:data:`MAX_STDOUT_BYTES` of stdout are held (a CLI printing without end cannot exhaust memory).
:func:`run_probe` is the synchronous form for short probes (``CLI --version``), with a
small output cap.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import select
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from upskill_hub._util import limits

#: stdout beyond this is dropped (and the run marked ``truncated``): answers are parsed from it.
MAX_STDOUT_BYTES = int(limits.env_number("UPSKILL_AGENT_MAX_STDOUT_MB", 32) * 1024 * 1024)
#: How much of the end of stdout / stderr the run folder keeps per call.
TAIL_BYTES = 16 * 1024
#: Seconds between SIGTERM and SIGKILL of a process group.
KILL_GRACE_S = 2.0
#: Seconds to finish reading the pipes once the group is dead: a helper that left the group
#: may hold them open, and must not hold the call with them.
PIPE_DRAIN_S = 2.0
#: Environment variable naming the call (a random token) in every process started for it.
CALL_MARKER = "UPSKILL_AGENT_CALL"
#: Rounds of "find what is left of the call, kill it" (each round catches what the last forked).
_REAP_ROUNDS = 20


@dataclass
class ProcessResult:
    """What a finished (or killed) process left."""

    returncode: int | None  # None when it was killed at the timeout
    stdout: bytes
    stderr_tail: bytes
    timed_out: bool
    elapsed_s: float
    truncated: bool = False
    #: Why the call was ended before its process exited: its output showed it can never finish
    #: (``watch`` of :func:`run_process`); ``returncode`` is then ``None``.
    stopped: str | None = None

    @property
    def stdout_tail(self) -> bytes:
        return self.stdout[-TAIL_BYTES:]


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> None:
    """Signal every process of group ``pgid``; a group already gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _pipe_inode(fd: int) -> int:
    return os.fstat(fd).st_ino


def _parent(pid: str) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return int(fh.read(4096).rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _holds(pid: str, token: bytes, pipes: set[str]) -> bool:
    """Whether process ``pid`` carries the call's marker or holds one of its pipes."""
    if _parent(pid) == os.getpid():
        # A child of this process: another call's CLI (between fork and exec it still holds
        # every descriptor of ours); the call being ended has no living child of ours.
        return False
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            if token in fh.read(1 << 20):
                return True
    except OSError:
        return False
    if not pipes:
        return False
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{pid}/fd/{fd}") in pipes:
                    return True
    except OSError:
        pass
    return False


def kill_escaped(token: str, pipe_inodes: Sequence[int] = ()) -> int:
    """Kill this user's processes that carry ``CALL_MARKER=token`` or hold one of the pipes.

    Linux only (``/proc``); elsewhere the process group is all that is ended. Returns how
    many processes were signalled (this process is never one of them).
    """
    if not os.path.isdir("/proc/self/fd"):
        return 0
    needle = f"{CALL_MARKER}={token}".encode() + b"\0"
    pipes = {f"pipe:[{i}]" for i in pipe_inodes}
    me, uid = os.getpid(), os.getuid()
    signalled: set[int] = set()
    for _ in range(_REAP_ROUNDS):
        found = []
        try:
            pids = [p for p in os.listdir("/proc") if p.isdigit() and int(p) != me]
        except OSError:
            return len(signalled)
        for pid in pids:
            try:
                if os.stat(f"/proc/{pid}").st_uid != uid:
                    continue
            except OSError:
                continue
            if _holds(pid, needle, pipes):
                found.append(int(pid))
        fresh = [p for p in found if p not in signalled]
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        signalled.update(found)
        if not found:
            break
        if not fresh:
            time.sleep(0.05)  # SIGKILL lands asynchronously: look again once it had time to
    return len(signalled)


class _Sink:
    """Bytes read from a pipe so far, bounded: the head (stdout) or the tail (stderr)."""

    def __init__(self, limit: int, tail: bool) -> None:
        self.limit, self.tail = limit, tail
        self.data = bytearray()
        self.truncated = False

    def feed(self, block: bytes) -> None:
        if self.tail:
            self.data += block
            if len(self.data) > self.limit:
                del self.data[: len(self.data) - self.limit]
        elif len(self.data) < self.limit:
            keep = block[: self.limit - len(self.data)]
            self.data += keep
            self.truncated = self.truncated or len(keep) < len(block)
        else:
            self.truncated = True


#: The end of stdout a ``watch`` callback sees after each read.
WATCH_BYTES = 64 * 1024


class _PipeReader:
    """Reads one non-blocking pipe into a sink from the event loop, until EOF or :meth:`close`;
    ``on_data`` is called after each burst of reads."""

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int, sink: _Sink,
                 on_data: Callable[[], None] | None = None) -> None:  # fmt: skip
        self.loop, self.fd, self.sink, self.on_data = loop, fd, sink, on_data
        self.done: asyncio.Future[None] = loop.create_future()
        os.set_blocking(fd, False)
        loop.add_reader(fd, self._ready)

    def _ready(self) -> None:
        try:
            for _ in range(16):  # a bounded burst, then let other calls run
                try:
                    block = os.read(self.fd, 65536)
                except BlockingIOError:
                    return
                except OSError:
                    block = b""
                if not block:
                    self.close()
                    return
                self.sink.feed(block)
        finally:
            if self.on_data is not None:
                self.on_data()

    def close(self) -> None:
        if self.fd < 0:
            return
        self.loop.remove_reader(self.fd)
        os.close(self.fd)
        self.fd = -1
        if not self.done.done():
            self.done.set_result(None)


class _PipeWriter:
    """Writes ``data`` to a non-blocking pipe from the event loop; a reader that never reads only
    leaves it unwritten (it is closed when the call ends)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int, data: bytes) -> None:
        self.loop, self.fd, self.data = loop, fd, memoryview(data)
        os.set_blocking(fd, False)
        if self.data:
            loop.add_writer(fd, self._ready)
        else:
            self.close()

    def _ready(self) -> None:
        try:
            n = os.write(self.fd, self.data[: 1 << 16])
        except BlockingIOError:
            return
        except OSError:  # EPIPE: the CLI closed its stdin
            self.close()
            return
        self.data = self.data[n:]
        if not self.data:
            self.close()

    def close(self) -> None:
        if self.fd < 0:
            return
        self.loop.remove_writer(self.fd)
        os.close(self.fd)
        self.fd = -1


async def _stop_group(proc: asyncio.subprocess.Process, token: str, pipes: Sequence[int]) -> None:
    """SIGTERM the group, SIGKILL what is left after the grace period, reap the leader, then
    kill whatever left the group but still belongs to the call."""
    kill_group(proc.pid, signal.SIGTERM)
    if proc.returncode is None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(proc.wait()), KILL_GRACE_S)
    # The leader may have exited (or exited on SIGTERM) while its children ignored it: kill the group anyway.
    kill_group(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        await proc.wait()
    await asyncio.to_thread(kill_escaped, token, pipes)


async def run_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    stdin: bytes | None = None,
    watch: Callable[[bytes], str | None] | None = None,
) -> ProcessResult:
    """Run ``argv`` in ``cwd`` with exactly ``env``; kill its whole process group when it ends.

    The call ends when the process exits, at ``timeout``, or as soon as ``watch`` (given the
    last :data:`WATCH_BYTES` of stdout after each read) names a reason: a CLI whose output says
    it can never finish (waiting without end for a network that is not there) is ended then,
    not at the timeout. Either way everything it started is killed. Raises
    ``FileNotFoundError`` / ``PermissionError`` when ``argv[0]`` cannot be started.
    Cancellation kills the group too, then propagates.
    """
    loop = asyncio.get_running_loop()
    token = secrets.token_hex(12)
    t0 = time.perf_counter()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    in_r, in_w = os.pipe() if stdin is not None else (subprocess.DEVNULL, -1)
    pipes = [_pipe_inode(out_r), _pipe_inode(err_r)]
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=str(cwd),
            env={**env, CALL_MARKER: token},
            stdin=in_r,
            stdout=out_w,
            stderr=err_w,
            start_new_session=True,  # its own process group: killable as a whole
        )
    except BaseException:
        for fd in (out_r, err_r, in_w):
            if fd >= 0:
                os.close(fd)
        raise
    finally:
        # Only the child holds the other ends now: EOF comes when the call's processes are gone.
        for fd in (out_w, err_w, in_r):
            if fd >= 0:
                os.close(fd)
    out, err = _Sink(MAX_STDOUT_BYTES, tail=False), _Sink(TAIL_BYTES, tail=True)
    stall: asyncio.Future[str] = loop.create_future()

    def look() -> None:
        if watch is not None and not stall.done():
            reason = watch(bytes(out.data[-WATCH_BYTES:]))
            if reason:
                stall.set_result(reason)

    readers = [
        _PipeReader(loop, out_r, out, look if watch is not None else None),
        _PipeReader(loop, err_r, err),
    ]
    writer = _PipeWriter(loop, in_w, stdin) if stdin is not None else None
    timed_out = False
    stopped: str | None = None
    exited = asyncio.ensure_future(proc.wait())
    try:
        done, _ = await asyncio.wait({exited, stall}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        if not done:
            timed_out = True
        elif exited not in done:
            stopped = stall.result()
        # The leader is done (or out of time); helpers it left behind die with the group.
        await _stop_group(proc, token, pipes)
        # What the group wrote before it died is still in the pipes: read it, for a bounded time.
        await asyncio.wait([r.done for r in readers], timeout=PIPE_DRAIN_S)
    except BaseException:
        await asyncio.shield(_stop_group(proc, token, pipes))
        raise
    finally:
        for r in readers:
            r.close()
        if writer is not None:
            writer.close()
        if not exited.done():
            exited.cancel()
    return ProcessResult(
        returncode=None if timed_out or stopped else proc.returncode,
        stdout=bytes(out.data),
        stderr_tail=bytes(err.data),
        timed_out=timed_out,
        elapsed_s=time.perf_counter() - t0,
        truncated=out.truncated,
        stopped=stopped,
    )


def run_probe(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], timeout: float,
              max_bytes: int) -> ProcessResult:  # fmt: skip
    """A short synchronous run (``CLI --version``) in its own session, stdout capped at ``max_bytes``.

    Reading stops at the cap (the run is then ``truncated``), at the process's exit plus a
    short drain, or at ``timeout``; then the whole group, and whatever left it, is killed.
    stderr is discarded. Raises ``OSError`` when ``argv[0]`` cannot be started.
    """
    token = secrets.token_hex(12)
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        list(argv), cwd=str(cwd), env={**env, CALL_MARKER: token}, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    pipes = [_pipe_inode(fd)]
    os.set_blocking(fd, False)
    sink = _Sink(max_bytes, tail=False)
    deadline = t0 + timeout
    exited_at: float | None = None
    timed_out = False
    try:
        while True:
            now = time.perf_counter()
            if proc.poll() is not None and exited_at is None:
                exited_at = now
            if exited_at is not None and now - exited_at > PIPE_DRAIN_S:
                break  # exited; a helper holds the pipe
            if now >= deadline:
                timed_out = exited_at is None
                break
            ready, _, _ = select.select([fd], [], [], min(0.05, deadline - now))
            if not ready:
                continue
            try:
                block = os.read(fd, 65536)
            except BlockingIOError:
                continue
            if not block:
                break
            sink.feed(block)
            if sink.truncated:
                break
    finally:
        kill_group(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=KILL_GRACE_S)
        kill_escaped(token, pipes)
        proc.stdout.close()
    return ProcessResult(
        returncode=None if timed_out or proc.returncode is None else proc.returncode,
        stdout=bytes(sink.data),
        stderr_tail=b"",
        timed_out=timed_out,
        elapsed_s=time.perf_counter() - t0,
        truncated=sink.truncated,
    )
