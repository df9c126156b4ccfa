"""The shared retry loop: Retry-After parsing, backoff bounds, and the synchronous driver pushes use."""

from __future__ import annotations

import email.utils
import random

import pytest

from upskill_hub._util.retry import RetryPolicy, Verdict, parse_retry_after, run_with_retries


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


class Flaky(Exception):
    pass


def _sync_run(failures: int, policy: RetryPolicy, verdict: Verdict | None = Verdict(True, 0.5)):
    calls, waits, told = [], [], []

    def attempt(n: int) -> str:
        calls.append(n)
        if len(calls) <= failures:
            raise Flaky(f"fail {n}")
        return f"ok {n}"

    result = run_with_retries(
        attempt,
        policy=policy,
        judge=lambda exc: verdict if isinstance(exc, Flaky) else None,
        on_retry=lambda exc, n: told.append((str(exc), n)),
        sleep=waits.append,
    )
    return result, calls, waits, told


def test_sync_driver_retries_with_the_servers_wait_and_numbers_attempts() -> None:
    result, calls, waits, told = _sync_run(2, RetryPolicy(max_retries=3))
    assert result == "ok 3" and calls == [1, 2, 3]
    assert waits == [0.5, 0.5] and told == [("fail 1", 2), ("fail 2", 3)]


def test_sync_driver_gives_up_with_the_last_failure() -> None:
    with pytest.raises(Flaky, match="fail 3"):
        _sync_run(5, RetryPolicy(max_retries=2))


def test_sync_driver_does_not_retry_what_the_judge_refuses() -> None:
    with pytest.raises(Flaky, match="fail 1"):
        _sync_run(1, RetryPolicy(max_retries=5), verdict=Verdict(False))
    with pytest.raises(ZeroDivisionError):
        run_with_retries(lambda n: 1 / 0, policy=RetryPolicy(), judge=lambda exc: Verdict(True) if isinstance(exc, Flaky) else None)
