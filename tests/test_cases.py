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


def test_skill_meta_nested_100000_deep_is_a_one_line_error() -> None:
    deep = '{"cases": ' + "[" * 100_000 + "]" * 100_000 + "}"
    with pytest.raises(CasesError, match="deeper than 64 levels"):
        load_meta_text(deep)
    with pytest.raises(CasesError, match="deeper than"):
        load_meta_text(deep.encode())


def test_deep_schema_inside_limits_is_a_one_line_error_not_recursion() -> None:
    schema: dict = {}
    for _ in range(30):
        schema = {"not": {"not": schema}}
    meta = json.dumps({"cases": [{"input": "q", "assert": [{"type": "json-schema", "value": schema}]}]})
    try:
        load_meta_text(meta)
    except CasesError as exc:  # rejected or accepted: either is fine, a traceback is not
        assert "\n" not in str(exc)


def test_regex_too_long_is_refused_when_loading() -> None:
    from upskill_hub.cases import parse_assertion

    with pytest.raises(CasesError, match="longer than"):
        parse_assertion({"type": "regex", "value": "a" * 5000}, "t")


# --------------------------------------------------------------------------- fuzz
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20)
_values = st.recursive(_scalars, lambda k: st.lists(k, max_size=4) | st.dictionaries(st.text(max_size=8), k, max_size=4), max_leaves=15)  # fmt: skip
_assertions = st.fixed_dictionaries(
    {"type": st.sampled_from(["contains", "regex", "json-schema", "is-json", "equals", "llm-rubric", "nope"])},
    optional={"value": _values | st.sampled_from(["(a+)+$", "[", "x" * 3000]) | st.just({"$ref": "#"})
              | st.just({"$ref": "http://127.0.0.1:9/s.json"}), "judge": _values},  # fmt: skip
)
_cases = st.fixed_dictionaries(
    {"input": st.text(max_size=10) | _values},
    optional={"id": st.text(max_size=12) | _values, "assert": st.lists(_assertions, max_size=3) | _values,
              "expected": _values, "split": st.sampled_from(["train", "holdout", "x"])},  # fmt: skip
)
_metas = st.fixed_dictionaries({}, optional={"schema_version": st.sampled_from([1, 2, "1"]),
                                             "cases": st.lists(_cases, max_size=3) | _values}) | _values  # fmt: skip


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(meta=_metas, wrap=st.integers(0, 3))
def test_fuzzed_skill_meta_is_a_meta_or_one_line_error(meta, wrap) -> None:
    text = json.dumps(meta)
    text = "[" * (wrap * 40) + text + "]" * (wrap * 40)  # sometimes past the depth limit
    try:
        load_meta_text(text)
    except CasesError as exc:
        assert "\n" not in str(exc)


@settings(max_examples=200, deadline=None)
@given(raw=st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_fuzzed_skill_meta_bytes_are_a_meta_or_one_line_error(raw) -> None:
    try:
        load_meta_text(raw)
    except CasesError as exc:
        assert "\n" not in str(exc)
