"""skill_meta.json: the three accepted shapes and the checks done before any model call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from upskill_hub.cases import CasesError, load_cases_file, load_meta_text, parse_meta


def test_upskill_format_becomes_contains_assertions() -> None:
    meta = parse_meta({"cases": [{"input": "build.toml for H100", "expected": {"contains": "9.0"}}]})
    (case,) = meta.cases
    assert case.id == "case-1"
    assert [(a.type, a.value) for a in case.asserts] == [("contains", "9.0")]


def test_plain_list_and_rich_format() -> None:
    meta = parse_meta(
        [
            {
                "id": "json-out",
                "input": "give json",
                "split": "holdout",
                "assert": [
                    {"type": "is-json"},
                    {"type": "json-schema", "value": {"type": "object", "required": ["a"]}},
                    {"type": "contains-any", "value": ["a", "b"]},
                    {"type": "llm-rubric", "value": "is polite", "judge": "openai:gpt-4.1-mini"},
                ],
            }
        ]
    )
    case = meta.cases[0]
    assert case.split == "holdout"
    assert [a.type for a in case.asserts] == ["is-json", "json-schema", "contains-any", "llm-rubric"]


def test_round_trip_through_json() -> None:
    raw = {"schema_version": 1, "teacher": "sonnet", "cases": [{"id": "a", "input": "q", "assert": [
        {"type": "regex", "value": "^x"}]}]}
    meta = parse_meta(raw)
    again = load_meta_text(meta.to_json())
    assert again.to_dict() == meta.to_dict()
    assert again.extra == {"teacher": "sonnet"}


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"cases": [{"input": "q", "assert": [{"type": "regex", "value": "("}]}]}, "does not compile"),
        ({"cases": [{"input": "q", "assert": [{"type": "nope"}]}]}, "unknown assertion type"),
        ({"cases": [{"input": "q"}]}, "no assertions"),
        ({"cases": [{"input": "", "expected": {"contains": "x"}}]}, "input"),
        ({"cases": [{"input": "q", "assert": [{"type": "json-schema", "value": {"type": 5}}]}]}, "JSON Schema"),
        ({"cases": [{"input": "q", "assert": [{"type": "contains", "value": []}]}]}, "contains"),
        ({"cases": [{"id": "a", "input": "q", "expected": "x"}, {"id": "a", "input": "r", "expected": "y"}]},
         "duplicate"),
        ({"schema_version": 7, "cases": []}, "unsupported version"),
        ("just a string", "must be a JSON object"),
    ],
)
def test_bad_cases_fail_with_a_field(data: object, needle: str) -> None:
    with pytest.raises(CasesError) as info:
        parse_meta(data)
    assert needle in str(info.value)
    assert "\n" not in str(info.value)


def test_tests_file_needs_cases(tmp_path: Path) -> None:
    empty = tmp_path / "t.json"
    empty.write_text(json.dumps({"cases": []}))
    with pytest.raises(CasesError, match="no test cases"):
        load_cases_file(empty)
    with pytest.raises(CasesError, match="not found"):
        load_cases_file(tmp_path / "missing.json")
