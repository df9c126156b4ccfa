"""Tests files written by upskill are read as they are, and we say what was read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from upskill_shapes import TestCase, TestCaseContext, TestCaseSuite, save_upskill_skill

from upskill_hub.cases import (
    FORMAT_OURS,
    FORMAT_UPSKILL_SKILL,
    FORMAT_UPSKILL_SUITE,
    CasesError,
    load_cases_file,
    load_meta_text,
)
from upskill_hub.skill import load_skill

SUITE = TestCaseSuite(
    cases=[
        TestCase(input="Write a build.toml for an H100 kernel.", expected={"contains": "9.0"}),
        TestCase(input="Which backends?", expected={"contains": ["cuda", "cpu"]}),
        TestCase(
            input="Fix the config below.",
            context=TestCaseContext(files={"build.toml": "[general]\nname = 'x'"}),
            expected={"contains": ["edition"]},
        ),
    ]
)


def test_testcasesuite_dump_with_nulls_is_read(tmp_path: Path) -> None:
    raw = SUITE.model_dump_json(indent=2)
    assert '"validator": null' in raw and '"context": null' in raw  # the shape the issue is about
    path = tmp_path / "tests.json"
    path.write_text(raw)
    meta = load_cases_file(path)
    assert meta.source_format == FORMAT_UPSKILL_SUITE
    assert meta.describe("tests.json") == f"3 test cases from tests.json ({FORMAT_UPSKILL_SUITE})"
    first, second, third = meta.cases
    assert [(a.type, a.value) for a in first.asserts] == [("contains", ["9.0"])]
    assert second.asserts[0].value == ["cuda", "cpu"]
    # context files are what the agent would have seen: they travel with the prompt
    assert third.input.startswith("Fix the config below.") and "File `build.toml`" in third.input
    assert "name = 'x'" in third.input


def test_round_trip_through_our_format_keeps_the_cases(tmp_path: Path) -> None:
    meta = load_meta_text(SUITE.model_dump_json())
    again = load_meta_text(meta.to_json())
    assert again.source_format == FORMAT_OURS
    assert [c.to_dict() for c in again.cases] == [c.to_dict() for c in meta.cases]
    # and what we read still is a valid upskill file (the fixture follows upskill's schema)
    TestCaseSuite.model_validate_json(SUITE.model_dump_json())


def test_skill_saved_by_upskill_shows_its_tests(tmp_path: Path) -> None:
    folder = save_upskill_skill(
        tmp_path / "kernel-build", "kernel-build", "Writes build.toml files.", "# Steps\n", list(SUITE.cases)
    )
    res = load_skill(folder)
    assert res.ok, res.problems
    meta = res.skill.meta
    assert meta.source_format == FORMAT_UPSKILL_SKILL
    assert len(meta.cases) == 3
    assert meta.extra["metadata"]["generated_by"] == "sonnet"  # upskill's metadata is kept
    assert "tests" not in meta.extra  # ... and the cases are not duplicated on write
    written = json.loads(meta.to_json())
    assert len(written["cases"]) == 3 and "tests" not in written


def test_empty_upskill_tests_list_is_reported_not_silent(tmp_path: Path) -> None:
    folder = save_upskill_skill(tmp_path / "write-good-pr", "write-good-pr", "Writes PRs.", "body\n", [])
    meta = load_skill(folder).skill.meta
    assert meta.describe() == f"0 test cases from skill_meta.json ({FORMAT_UPSKILL_SKILL})"


@pytest.mark.parametrize(
    ("case", "needle"),
    [
        ({"input": "q", "expected": {"contains": ["x"]}, "validator": "hf_eval_yaml"}, "custom validators"),
        ({"input": "q", "expected": {"contains": ["x"]}, "output_file": "out.yaml"}, "custom validators"),
        ({"input": "q", "expected": {"contains": ["x"]}, "context": {"env": {}}}, "context"),
        ({"input": "q", "expected": {"contains": ["x"]}, "context": {"files": {"a": 1}}}, "context.files"),
        ({"input": "q", "expected": {"contains": ["x"]}, "surprise": 1}, "unknown case keys: surprise"),
    ],
)
def test_what_cannot_be_honoured_is_refused(case: dict, needle: str) -> None:
    with pytest.raises(CasesError, match=needle):
        load_meta_text(json.dumps({"cases": [case]}))


def test_both_lists_is_ambiguous() -> None:
    with pytest.raises(CasesError, match="both 'cases' and upskill's 'tests'"):
        load_meta_text(json.dumps({"cases": [], "tests": []}))
