"""Fault injection for tests: make the next N matching requests fail with a chosen status.

Clients must survive a Hub that answers 500/429 for a while (retries) or that dies in the
middle of a push (nothing half-written). Tests arm a rule with
``handle.inject_faults(method="POST", path_regex=r"/commit/", status=500, count=1)``;
the ASGI middleware in ``app.py`` consults :class:`FaultInjector` before routing.
The injector also keeps a log of requests (method, path, status, bytes received) so tests
can count commits or uploaded bytes.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field


@dataclass
class FaultRule:
    method: str | None
    path_regex: re.Pattern[str]
    status: int
    remaining: int
    retry_after: int | None = None
    message: str = "Injected fault"
    hits: int = 0


@dataclass(frozen=True)
class RequestRecord:
    """One request the server answered (the path carries no query string: no secrets)."""

    method: str
    path: str
    status: int
    bytes_in: int
    injected: bool = False


@dataclass
class FaultInjector:
    """Thread-safe set of armed fault rules plus a log of answered requests."""

    rules: list[FaultRule] = field(default_factory=list)
    records: list[RequestRecord] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(
        self,
        *,
        method: str | None = None,
        path_regex: str = ".*",
        status: int = 500,
        count: int = 1,
        retry_after: int | None = None,
        message: str = "Injected fault",
    ) -> FaultRule:
        """Make the next ``count`` requests matching ``method`` and ``path_regex`` answer ``status``.

        ``path_regex`` is searched in the decoded URL path (no query), e.g. ``r"/commit/"`` for
        commits, ``r"/info/lfs/objects/batch$"`` for the LFS batch call and
        ``r"/info/lfs/objects/upload/"`` for LFS uploads. The returned rule's ``hits`` counts
        how many requests it answered.
        """
        rule = FaultRule(
            method.upper() if method else None, re.compile(path_regex), status, count, retry_after, message
        )
        with self._lock:
            self.rules.append(rule)
        return rule

    def match(self, method: str, path: str) -> FaultRule | None:
        """Consume one use of the first armed rule matching this request, if any."""
        with self._lock:
            for rule in self.rules:
                if rule.remaining <= 0:
                    continue
                if rule.method and rule.method != method.upper():
                    continue
                if rule.path_regex.search(path):
                    rule.remaining -= 1
                    rule.hits += 1
                    return rule
        return None

    def clear(self) -> None:
        with self._lock:
            self.rules.clear()

    def record(self, rec: RequestRecord) -> None:
        with self._lock:
            self.records.append(rec)
            if len(self.records) > 100_000:
                del self.records[: len(self.records) // 2]

    def snapshot(self) -> list[RequestRecord]:
        with self._lock:
            return list(self.records)
