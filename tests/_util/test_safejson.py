"""JSON nesting is measured without recursion; brackets inside strings do not count."""

from __future__ import annotations

import json

import pytest

from upskill_hub._util import safejson


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ("1", 0),
        ("[]", 1),
        ('{"a": [1, {"b": []}]}', 4),
        ('["[[[[", "\\"]]]", "\\\\"]', 1),
        ('{"k[": "{"}', 1),
    ],
)
def test_nesting_depth(text: str, depth: int) -> None:
    assert safejson.nesting_depth(text) == depth


def test_deep_json_is_refused_before_parsing_and_shallow_json_loads() -> None:
    with pytest.raises(safejson.JSONTooDeep, match="deeper than 10"):
        safejson.loads("[" * 11 + "]" * 11, max_depth=10)
    assert safejson.loads(b'{"a": [1]}') == {"a": [1]}
    with pytest.raises(json.JSONDecodeError):
        safejson.loads("[1,")


def test_unmatched_quotes_do_not_make_the_scan_quadratic() -> None:
    import time

    text = '"' + '\\"' * 200_000  # one string that never ends
    started = time.monotonic()
    safejson.nesting_depth(text)
    assert time.monotonic() - started < 10  # linear; quadratic would take hours
