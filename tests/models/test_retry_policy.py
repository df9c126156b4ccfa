"""The retry loop's arithmetic: Retry-After parsing, backoff bounds, what is retried."""

from __future__ import annotations

import asyncio
import email.utils
import random

import pytest

from upskill_hub.models.base import ModelCallError
from upskill_hub.models.retry import AttemptError, RetryPolicy, call_with_retries, parse_retry_after


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after({"Retry-After": "3"}) == 3.0
    assert parse_retry_after({"retry-after": "1.5"}) == 1.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    now = 1_800_000_000.0
    date = email.utils.formatdate(now + 10, usegmt=True)
    assert parse_retry_after({"Retry-After": date}, now=now) == pytest.approx(10.0)
    past = email.utils.formatdate(now - 100, usegmt=True)
    assert parse_retry_after({"Retry-After": past}, now=now) == 0.0
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({}) is None and parse_retry_after(None) is None


def test_backoff_is_jittered_exponential_and_capped() -> None:
    policy = RetryPolicy(backoff_base=0.5, backoff_cap=4.0, max_retry_after=30.0)
    rng = random.Random(0)
    for n in range(8):
        ceiling = min(4.0, 0.5 * 2**n)
        waits = [policy.backoff(n, None, rng) for _ in range(200)]
        assert all(0 <= w <= ceiling for w in waits)
        assert max(waits) > ceiling * 0.8  # full jitter spans the range
    assert policy.backoff(0, 7.0, rng) == 7.0  # the server's word wins
    assert policy.backoff(0, 3600.0, rng) == 30.0  # but a hostile header is capped


def _run(attempts: list[BaseException | str], policy: RetryPolicy) -> tuple[object, list[float], int]:
    waits: list[float] = []
    calls = 0

    async def fake_sleep(s: float) -> None:
        waits.append(s)

    async def attempt() -> str:
        nonlocal calls
        item = attempts[calls]
        calls += 1
        if isinstance(item, BaseException):
            raise item
        return item

    async def go():
        try:
            return await call_with_retries(
                attempt, policy=policy, what="openai m", secrets=("sk-verysecret-123456",), sleep=fake_sleep
            )
        except ModelCallError as exc:
            return exc

    return asyncio.run(go()), waits, calls


def test_retries_until_success_with_server_waits() -> None:
    attempts = [
        AttemptError("HTTP 429", retryable=True, status=429, retry_after=2.0),
        AttemptError("HTTP 500", retryable=True, status=500),
        "done",
    ]
    out, waits, calls = _run(attempts, RetryPolicy(max_retries=4, backoff_base=0.5))
    assert out == "done" and calls == 3
    assert waits[0] == 2.0 and 0 <= waits[1] <= 1.0


def test_non_retryable_stops_at_once_and_message_is_redacted() -> None:
    attempts = [AttemptError("HTTP 400: bad key sk-verysecret-123456", retryable=False, status=400)]
    out, waits, calls = _run(attempts, RetryPolicy(max_retries=4))
    assert isinstance(out, ModelCallError) and calls == 1 and waits == []
    assert str(out) == "openai m: HTTP 400: bad key *** (after 1 attempt)"
    assert out.status == 400 and not out.retryable


def test_gives_up_after_max_retries() -> None:
    attempts = [AttemptError("HTTP 503", retryable=True, status=503)] * 3
    out, waits, calls = _run(attempts, RetryPolicy(max_retries=2))
    assert isinstance(out, ModelCallError) and calls == 3 and len(waits) == 2
    assert "after 3 attempts" in str(out) and out.retryable


def test_per_attempt_deadline() -> None:
    """An attempt that never returns is cut at the policy timeout (plus a 1 s grace)."""

    async def forever() -> str:
        await asyncio.sleep(60)
        return "never"

    async def go():
        loop = asyncio.get_running_loop()
        start = loop.time()
        with pytest.raises(ModelCallError, match="timed out after 0.2s"):
            await call_with_retries(forever, policy=RetryPolicy(max_retries=0, timeout=0.2), what="x")
        return loop.time() - start

    assert 1.0 <= asyncio.run(go()) < 2.0


def test_unexpected_exceptions_propagate() -> None:
    out = None
    with pytest.raises(RuntimeError):
        out, _, _ = _run([RuntimeError("bug")], RetryPolicy())
    assert out is None
