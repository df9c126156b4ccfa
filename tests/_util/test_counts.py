"""Counts in words agree with their nouns (issue 37: "1 skills · 1 models")."""

from __future__ import annotations

import pytest

from upskill_hub._util.percent import count


@pytest.mark.parametrize(
    ("n", "singular", "plural", "shown"),
    [
        (0, "skill", None, "0 skills"),
        (1, "skill", None, "1 skill"),
        (2, "result row", None, "2 result rows"),
        (1, "model", None, "1 model"),
        (1_000, "test case", None, "1,000 test cases"),
        (1, "match", "matches", "1 match"),
        (3, "match", "matches", "3 matches"),
    ],
)
def test_count_agrees_with_its_noun(n: int, singular: str, plural: str | None, shown: str) -> None:
    assert count(n, singular, plural) == shown
