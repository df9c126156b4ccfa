"""Run one agent CLI (or a ``command`` check) as a process group that never outlives its call.

An agent CLI starts helpers of its own (shells, language servers, MCP servers). Killing
only the CLI would leave them running, holding the workspace and burning a subscription.
So every process starts in a new session (its own process group), and on a timeout, on
cancellation (Ctrl-C cancels the eval's tasks) or on any error the whole group gets
SIGTERM, then SIGKILL after a short grace period, and the CLI itself is reaped before the
call returns.

Output is kept bounded: only the last :data:`TAIL_BYTES` of stderr and at most
:data:`MAX_STDOUT_BYTES` of stdout are held (a CLI printing without end cannot exhaust memory).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

#: stdout beyond this is dropped (and the run marked ``truncated``): answers are parsed from it.
MAX_STDOUT_BYTES = 32 * 1024 * 1024
#: How much of the end of stdout / stderr the run folder keeps per call.
TAIL_BYTES = 16 * 1024
#: Seconds between SIGTERM and SIGKILL of a process group.
KILL_GRACE_S = 2.0
#: Seconds to finish reading the pipes once the group is dead: a helper that left the group
#: (``setsid``) may hold them open forever, and must not hold the call with them.
PIPE_DRAIN_S = 5.0


@dataclass
class ProcessResult:
    """What a finished (or killed) process left."""

    returncode: int | None  # None when it was killed at the timeout
    stdout: bytes
    stderr_tail: bytes
    timed_out: bool
    elapsed_s: float
    truncated: bool = False

    @property
    def stdout_tail(self) -> bytes:
        return self.stdout[-TAIL_BYTES:]


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> None:
    """Signal every process of group ``pgid``; a group already gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


class _Sink:
    """Bytes read from a pipe so far: kept when the reader has to be abandoned."""

    def __init__(self, limit: int, tail: bool) -> None:
        self.limit, self.tail = limit, tail
        self.data = b""
        self.truncated = False

    async def drain(self, stream: asyncio.StreamReader) -> None:
        while True:
            block = await stream.read(65536)
            if not block:
                return
            if self.tail:
                self.data = (self.data + block)[-self.limit :]
            elif len(self.data) < self.limit:
                keep = block[: self.limit - len(self.data)]
                self.data += keep
                self.truncated = self.truncated or len(keep) < len(block)
            else:
                self.truncated = True


async def _stop_group(proc: asyncio.subprocess.Process) -> None:
    """SIGTERM the group, SIGKILL what is left after the grace period, reap the leader."""
    kill_group(proc.pid, signal.SIGTERM)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(proc.wait()), KILL_GRACE_S)
    # The leader may have exited on SIGTERM while its children ignored it: kill the group anyway.
    kill_group(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        await proc.wait()


async def run_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    stdin: bytes | None = None,
) -> ProcessResult:
    """Run ``argv`` in ``cwd`` with exactly ``env``; kill its whole process group at ``timeout``.

    Raises ``FileNotFoundError`` / ``PermissionError`` when ``argv[0]`` cannot be started.
    Cancellation kills the group too, then propagates.
    """
    t0 = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=str(cwd),
        env=dict(env),
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,  # its own process group: killable as a whole
    )
    assert proc.stdout is not None and proc.stderr is not None
    out, err = _Sink(MAX_STDOUT_BYTES, tail=False), _Sink(TAIL_BYTES, tail=True)
    readers = [asyncio.ensure_future(out.drain(proc.stdout)), asyncio.ensure_future(err.drain(proc.stderr))]
    timed_out = False
    try:
        if stdin is not None and proc.stdin is not None:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                proc.stdin.write(stdin)
                await proc.stdin.drain()
            proc.stdin.close()
        try:
            await asyncio.wait_for(asyncio.shield(proc.wait()), timeout)
        except TimeoutError:
            timed_out = True
        # The leader is done (or out of time); helpers it left behind die with the group.
        await _stop_group(proc)
        # Pipes close once every writer of the group is gone.
        await asyncio.wait(readers, timeout=PIPE_DRAIN_S)
    except BaseException:
        await asyncio.shield(_stop_group(proc))
        raise
    finally:
        for r in readers:
            r.cancel()
    return ProcessResult(
        returncode=None if timed_out else proc.returncode,
        stdout=out.data,
        stderr_tail=err.data,
        timed_out=timed_out,
        elapsed_s=time.perf_counter() - t0,
        truncated=out.truncated,
    )
