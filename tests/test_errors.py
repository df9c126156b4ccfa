"""Typed user errors: callers read fields, the words come from one place, always one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from upskill_hub.errors import HubError, OptionError, PathError, UpskillError
from upskill_hub.hub.client import hub_errors
from upskill_hub.lift.prepare import resolve_cases
from upskill_hub.skill import Skill


def test_fields_and_the_one_line_they_make() -> None:
    err = PathError("t.json", "must be a non-empty\nstring", kind="tests file", field="cases[0].input")
    assert (err.path, err.kind, err.field) == ("t.json", "tests file", "cases[0].input")
    assert str(err) == "tests file t.json: cases[0].input: must be a non-empty string"
    hub = HubError("me/repo", "revision not found", action="read skills from", status=404)
    assert isinstance(hub, UpskillError) and hub.status == 404 and hub.repo_id == "me/repo"
    assert str(hub) == "cannot read skills from me/repo: revision not found"
    assert str(UpskillError("plain\n  message")) == "plain message"


def test_a_bad_tests_file_is_located_by_fields_not_by_message_text(tmp_path: Path) -> None:
    skill = Skill.create("s", "A skill. Use when testing.", "Body.\n")
    bad = tmp_path / "t.json"
    bad.write_text(json.dumps({"cases": [{"input": "", "assert": [{"type": "contains", "value": "x"}]}]}))
    with pytest.raises(PathError) as exc:
        resolve_cases(skill, bad)
    assert (exc.value.kind, exc.value.path, exc.value.field) == ("tests file", str(bad), "cases[0].input")
    with pytest.raises(PathError) as missing:
        resolve_cases(skill, tmp_path / "nope.json")
    assert missing.value.field is None and str(missing.value) == f"tests file {tmp_path / 'nope.json'}: not found"


def test_hub_client_failures_become_hub_errors_with_status(hub_server, hub_repo_id) -> None:
    from huggingface_hub import HfApi

    with pytest.raises(HubError) as exc, hub_errors(hub_repo_id, action="read skills from"):
        HfApi().dataset_info(hub_repo_id)
    assert exc.value.repo_id == hub_repo_id and exc.value.status == 404
    assert str(exc.value).startswith(f"cannot read skills from {hub_repo_id}: dataset repo not found")


def test_an_option_error_names_the_field_and_each_front_end_says_it_its_way() -> None:
    """The library names the option by its field; the CLI alone turns it into its flag."""
    from upskill_hub.cli.app import flag, message
    from upskill_hub.lift.api import run_eval
    from upskill_hub.lift.prepare import EvalOptions

    exc = OptionError("max_tokens", 0, "must be at least 1, got 0")
    assert isinstance(exc, UpskillError)
    assert (exc.name, exc.value, str(exc)) == ("max_tokens", 0, "max_tokens must be at least 1, got 0")
    assert exc.describe("Max tokens") == "Max tokens must be at least 1, got 0"  # e.g. a Space label
    assert message(exc) == "--max-tokens must be at least 1, got 0"
    assert flag("shards") == "--jobs" and flag("job_timeout") == "--job-timeout"
    assert message(UpskillError("plain")) == "plain"
    with pytest.raises(OptionError) as raised:
        run_eval(Path(__file__).resolve().parents[1] / "skills" / "hub-kernels", ["local"], EvalOptions(runs=0))
    assert (raised.value.name, raised.value.value) == ("runs", 0)
