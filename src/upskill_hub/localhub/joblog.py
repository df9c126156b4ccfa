"""A Job's log as it is written: secret values masked, size capped, one JSON event per line.

The one place that decides what a Job's output may put on disk (:mod:`.jobs` runs the Job).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from datetime import UTC, datetime
from typing import IO

from upskill_hub._util.redact import MASK

#: Secret values shorter than this are not masked in logs (masking "1" would shred every line).
MIN_MASKED_LEN = 4
#: Bytes kept free at the end of a capped log for the "log truncated" notice.
_NOTICE_ROOM = 256


def utc_iso(ts: float | None) -> str | None:
    """``ts`` (epoch seconds) as the Hub writes dates: ISO 8601, milliseconds, ``Z``."""
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Masker:
    """Replaces secret values in text; longest first so a value containing another is whole."""

    def __init__(self, values: list[str]) -> None:
        parts: set[str] = set()
        for value in values:
            parts.add(value)
            parts.update(value.splitlines())  # a multi-line secret prints line by line
        self.values = sorted((p for p in parts if len(p) >= MIN_MASKED_LEN), key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for value in self.values:
            if value in text:
                text = text.replace(value, MASK)
        return text


class LogWriter:
    """Appends a Job's output to its log as JSON lines ``{"timestamp", "data"}``: masked, capped.

    One JSON object per line is exactly one SSE event's payload, so the log endpoint streams
    the file as it grows without re-encoding.
    """

    def __init__(self, fh: IO[bytes], mask: Masker, max_bytes: int) -> None:
        self.fh = fh
        self.mask = mask
        self.max_bytes = max_bytes
        self.written = fh.tell()
        self.truncated = False
        self._lock = threading.Lock()

    def line(self, text: str) -> None:
        event = json.dumps({"timestamp": utc_iso(time.time()), "data": self.mask(text)}, ensure_ascii=False)
        data = (event + "\n").encode("utf-8")
        with self._lock:
            if self.truncated:
                return
            if self.written + len(data) > self.max_bytes - _NOTICE_ROOM:
                self.truncated = True
                notice = json.dumps(
                    {
                        "timestamp": utc_iso(time.time()),
                        "data": f"[local Hub: log truncated at {self.max_bytes} bytes; further output dropped]",
                    }
                )
                data = (notice + "\n").encode()
            self.fh.write(data)
            self.fh.flush()
            self.written += len(data)

    def copy(self, stream: IO[bytes], max_line: int) -> None:
        """Copy ``stream`` line by line until EOF (a longer line is split at ``max_line`` bytes)."""
        with contextlib.suppress(OSError, ValueError):
            while True:
                raw = stream.readline(max_line)
                if not raw:
                    break
                self.line(raw.decode("utf-8", "replace").rstrip("\r\n"))

    def flush(self) -> None:
        with self._lock, contextlib.suppress(OSError, ValueError):
            self.fh.flush()
