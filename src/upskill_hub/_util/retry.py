"""One retry loop for every remote call we make: model providers and Hub pushes alike.

A caller supplies a single attempt and says which failures may be retried (and whether
the server asked for a wait); :class:`RetryLoop` decides how long to wait and when to give
up. Model calls drive it from asyncio (:func:`upskill_hub.models.retry.call_with_retries`),
a push from a thread (:func:`run_with_retries`); the policy, the jitter, the
``Retry-After`` handling and its cap are the same code for both.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


#: Seconds one attempt of a model call may take, and retries after a failed attempt: the
#: defaults of every model call (CLI, library, Space, Jobs). Change them here only.
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MAX_RETRIES = 4


@dataclass(frozen=True)
class RetryPolicy:
    """How many times to retry and how long to wait in between.

    ``max_retries`` counts retries, so a call makes at most ``max_retries + 1`` attempts.
    Waits are full-jitter exponential (``uniform(0, min(cap, base * 2**n))``) unless the
    server said how long with ``Retry-After``; then we wait that long (capped by
    ``max_retry_after``, so a hostile header cannot park a run for an hour).
    """

    max_retries: int = DEFAULT_MAX_RETRIES
    timeout: float = DEFAULT_TIMEOUT_S
    backoff_base: float = 0.5
    backoff_cap: float = 20.0
    max_retry_after: float = 60.0

    def backoff(self, retry_index: int, retry_after: float | None, rng: random.Random) -> float:
        if retry_after is not None:
            return max(0.0, min(retry_after, self.max_retry_after))
        return rng.uniform(0.0, min(self.backoff_cap, self.backoff_base * (2**retry_index)))


@dataclass(frozen=True)
class Verdict:
    """What a failed attempt allows: another try, and the server's requested wait if any."""

    retryable: bool
    retry_after: float | None = None


class RetryLoop:
    """Counts attempts and turns each failure into a wait or a stop."""

    def __init__(self, policy: RetryPolicy, rng: random.Random | None = None) -> None:
        self.policy = policy
        self.rng = rng or random.Random()
        self.attempts = 0

    def wait_after(self, verdict: Verdict) -> float | None:
        """Seconds to wait before the next attempt, or ``None``: give up now."""
        self.attempts += 1
        if not verdict.retryable or self.attempts > self.policy.max_retries:
            return None
        return self.policy.backoff(self.attempts - 1, verdict.retry_after, self.rng)


def run_with_retries(
    attempt: Callable[[int], T],
    *,
    policy: RetryPolicy,
    judge: Callable[[Exception], Verdict | None],
    on_retry: Callable[[Exception, int], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
) -> T:
    """Call ``attempt(n)`` (``n`` = 1, 2, ...) until it returns; re-raise the failure that ends it.

    ``judge`` classifies an exception (``None``: not ours to retry, it propagates at
    once); ``on_retry(exc, next_n)`` is told before each wait.
    """
    loop = RetryLoop(policy, rng)
    while True:
        try:
            return attempt(loop.attempts + 1)
        except Exception as exc:
            verdict = judge(exc)
            wait = None if verdict is None else loop.wait_after(verdict)
            if wait is None:
                raise
            if on_retry is not None:
                on_retry(exc, loop.attempts + 1)
            sleep(wait)


def parse_retry_after(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``Retry-After`` (seconds or an HTTP date)."""
    if not headers:
        return None
    lower = {k.lower(): v for k, v in headers.items()}
    ms = lower.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = lower.get("retry-after")
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))
