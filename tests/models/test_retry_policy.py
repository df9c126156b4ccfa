"""Model calls over the shared retry loop: what is retried, the final message, the deadline."""

from __future__ import annotations

import asyncio

import pytest

from upskill_hub.models.base import ModelCallError
from upskill_hub.models.retry import AttemptError, RetryPolicy, call_with_retries


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
