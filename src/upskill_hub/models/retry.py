"""Retries with exponential backoff, jitter and ``Retry-After``, done by us, not the SDKs.

The SDKs can retry on their own, but then how long a run waits and how many requests it
sends are hidden. Every provider client builds its SDK with ``max_retries=0`` and wraps
each call in :func:`call_with_retries`, so the policy is one place, explicit and tested.
Each attempt also gets a hard deadline (``asyncio.timeout``): an SDK's read timeout is per
socket read, so a server that trickles bytes could otherwise hold a call forever.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from upskill_hub.models.base import ModelCallError
from upskill_hub.redact import redact

T = TypeVar("T")

#: HTTP statuses worth another try: rate limits, timeouts, server errors, overload (529).
RETRYABLE_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})


class AttemptError(ModelCallError):
    """One failed attempt, classified: may it be retried, and after how long at least."""

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, retryable=retryable, status=status)
        self.retry_after = retry_after


@dataclass(frozen=True)
class RetryPolicy:
    """How many times to retry and how long to wait in between.

    ``max_retries`` counts retries, so a call makes at most ``max_retries + 1`` requests.
    Waits are full-jitter exponential (``uniform(0, min(cap, base * 2**n))``) unless the
    server said how long with ``Retry-After``; then we wait that long (capped by
    ``max_retry_after``, so a hostile header cannot park a run for an hour).
    """

    max_retries: int = 4
    timeout: float = 60.0
    backoff_base: float = 0.5
    backoff_cap: float = 20.0
    max_retry_after: float = 60.0

    def backoff(self, retry_index: int, retry_after: float | None, rng: random.Random) -> float:
        if retry_after is not None:
            return max(0.0, min(retry_after, self.max_retry_after))
        return rng.uniform(0.0, min(self.backoff_cap, self.backoff_base * (2**retry_index)))


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


async def call_with_retries(
    attempt: Callable[[], Awaitable[T]],
    *,
    policy: RetryPolicy,
    what: str,
    secrets: tuple[str, ...] = (),
    rng: random.Random | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> T:
    """Run ``attempt`` until it succeeds, retrying :class:`AttemptError`\\ s that allow it.

    ``attempt`` must raise :class:`AttemptError` for classified failures; anything else is
    a bug and propagates. The final error is a :class:`ModelCallError` whose one-line
    message starts with ``what`` (e.g. ``"openai gpt-4.1-mini"``), says how many attempts
    were made and has every secret masked.
    """
    rng = rng or random.Random()
    tries = policy.max_retries + 1
    last: AttemptError | None = None
    for index in range(tries):
        try:
            async with asyncio.timeout(policy.timeout + 1.0):
                return await attempt()
        except TimeoutError:
            last = AttemptError(f"timed out after {policy.timeout:g}s", retryable=True)
        except AttemptError as exc:
            last = exc
        if not last.retryable or index == tries - 1:
            break
        await sleep(policy.backoff(index, last.retry_after, rng))
    assert last is not None
    n = index + 1
    detail = " ".join(str(last).split())
    message = f"{what}: {detail} (after {n} attempt{'s' if n != 1 else ''})"
    raise ModelCallError(redact(message, list(secrets)), retryable=last.retryable, status=last.status)
