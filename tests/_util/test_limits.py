"""Limits read from the environment: a typo or a negative value never lifts a limit."""

from __future__ import annotations

import pytest

from upskill_hub._util.limits import env_int, env_number


@pytest.mark.parametrize(("raw", "expected"), [("2.5", 2.5), ("", 1.0), ("abc", 1.0), ("-3", 1.0), ("0", 1.0)])
def test_env_number(monkeypatch, raw: str, expected: float) -> None:
    monkeypatch.setenv("UPSKILL_TEST_LIMIT", raw)
    assert env_number("UPSKILL_TEST_LIMIT", 1.0) == expected


def test_env_int_unset_gives_the_default(monkeypatch) -> None:
    monkeypatch.delenv("UPSKILL_TEST_LIMIT", raising=False)
    assert env_int("UPSKILL_TEST_LIMIT", 7) == 7
