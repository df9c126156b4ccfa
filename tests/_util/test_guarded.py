"""Budgets for strangers' patterns and schemas: each limit really stops the work it bounds."""

from __future__ import annotations

import time

import pytest

from upskill_hub._util import guarded


def test_regex_search_keeps_re_semantics_and_multiline() -> None:
    m = guarded.search(r"^b\d+$", "a\nb12\nc")
    assert m is not None and m.group(0) == "b12"
    with pytest.raises(ValueError):
        guarded.compile_pattern("(unclosed")


def test_regex_timeout_raises_budget_exceeded() -> None:
    started = time.monotonic()
    with pytest.raises(guarded.BudgetExceeded, match="gave up after 0.2s"):
        guarded.search("(x+x+)+y", "x" * 5000, timeout_s=0.2)
    assert time.monotonic() - started < 10  # the budget, not the minutes unbounded work takes


def test_schema_step_budget_stops_an_exponential_schema() -> None:
    # anyOf of two identical branches, nested, on data that fails both: each level doubles the work.
    schema: dict = {"type": "integer"}
    for _ in range(20):
        schema = {"anyOf": [{"items": schema}, {"items": schema}]}
    data: list | str = "x"
    for _ in range(20):
        data = [data]
    started = time.monotonic()
    with pytest.raises(guarded.BudgetExceeded, match="passed 10000 steps"):
        guarded.schema_errors(schema, data, max_steps=10_000)
    assert time.monotonic() - started < 10  # the budget, not the minutes unbounded work takes


def test_schema_depth_budget_stops_a_self_reference() -> None:
    with pytest.raises(guarded.BudgetExceeded, match="deeper than 20"):
        guarded.schema_errors({"$ref": "#"}, {}, max_depth=20)


def test_schema_refs_never_leave_the_schema() -> None:
    local = {"$defs": {"n": {"type": "integer"}}, "properties": {"a": {"$ref": "#/$defs/n"}}}
    assert guarded.schema_errors(local, {"a": 1}) == []
    assert guarded.schema_errors(local, {"a": "x"})[0].message == "'x' is not of type 'integer'"
    for ref in ("https://example.org/s.json", "file:///etc/passwd", "other.json#/x"):
        with pytest.raises(guarded.SchemaRefError, match="not inside the schema"):
            guarded.schema_errors({"$ref": ref}, {})


_EVIL = "(x+x+)+y"
_LONG = "x" * 5000


@pytest.mark.parametrize(
    ("schema", "instance"),
    [
        ({"type": "string", "pattern": _EVIL}, _LONG),
        ({"patternProperties": {_EVIL: {}}}, {_LONG: 1}),
        ({"patternProperties": {_EVIL: {}}, "additionalProperties": False}, {_LONG: 1}),
        ({"patternProperties": {_EVIL: {}}, "unevaluatedProperties": False}, {_LONG: 1}),
        ({"propertyNames": {"pattern": _EVIL}}, {_LONG: 1}),
        ({"items": {"pattern": _EVIL}}, [_LONG]),
        (
            {"$schema": "http://json-schema.org/draft-07/schema#", "dependencies": {"a": {"patternProperties": {_EVIL: {}}}}},
            {"a": 1, _LONG: 1},
        ),
        ({"$schema": "http://json-schema.org/draft-04/schema#", "patternProperties": {_EVIL: {}}}, {_LONG: 1}),
    ],
    ids=["pattern", "patternProperties", "additionalProperties", "unevaluatedProperties", "propertyNames",
         "items-pattern", "draft7-dependencies", "draft4-patternProperties"],  # fmt: skip
)
def test_every_schema_regex_runs_under_the_schema_clock(schema, instance) -> None:
    """Issue 29 class 1: each keyword that matches a pattern stops at the schema's time budget."""
    started = time.monotonic()
    with pytest.raises(guarded.BudgetExceeded, match="catastrophic backtracking"):
        guarded.schema_errors(schema, instance, timeout_s=0.3)
    assert time.monotonic() - started < 10  # the budget, not the minutes unbounded work takes


def test_schema_patterns_keep_their_meaning() -> None:
    schema = {"type": "object", "patternProperties": {"^x-": {"type": "integer"}}, "additionalProperties": False,
              "properties": {"id": {"type": "string", "pattern": "^[a-z]+$"}}}  # fmt: skip
    assert guarded.schema_errors(schema, {"id": "abc", "x-n": 1}) == []
    msgs = [e.message for e in guarded.schema_errors(schema, {"id": "ab1", "x-n": "s", "zz": 1})]
    assert any("does not match" in m for m in msgs) and any("not of type 'integer'" in m for m in msgs)
    assert any("'zz' does not match any of the regexes" in m for m in msgs)
    with pytest.raises(guarded.BudgetExceeded, match="not a usable regex"):
        guarded.schema_errors({"pattern": "(["}, "x")
    import re

    assert re.search("a", "a")  # the real module is untouched outside jsonschema
