"""Options and ordering in catalog mode and scenarios (issue 33, class 10).

* ``--distractors ''`` used to mean the current folder; it is refused in one line.
* Two distractors of one name were both put in the catalog (the model could load only the
  first); refused, naming both folders.
* A scenarios file whose last scenario names a broken skill failed only after the earlier
  scenarios had spent their calls; every scenario skill is now validated first.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import run_cli

from upskill_hub.cases import parse_meta
from upskill_hub.errors import OptionError, PathError, UpskillError
from upskill_hub.lift.scenarios import load_scenarios
from upskill_hub.session.clients import load_distractors
from upskill_hub.skill import Skill
from upskill_hub.testing.llm_server import running_llm_server

KEY = "sk-" + "test-0123456789abcdefghijklmnop"
CASES = [{"id": "q1", "input": "Please greet me", "assert": [{"type": "contains", "value": "hello"}]}]


def _skill(folder: Path, name: str, description: str = "Greet people warmly. Use when greeting.") -> Path:
    meta = parse_meta({"schema_version": 1, "cases": CASES})
    return Skill.create(name, description, f"# {name}\n\nSay hello.\n", meta=meta).write(folder)


@pytest.mark.parametrize("value", ["", "   "])
def test_empty_distractors_are_refused_not_the_current_folder(
    value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _skill(tmp_path / "here", "bystander")  # what the current folder would have put in the catalog
    monkeypatch.chdir(tmp_path)
    with pytest.raises(OptionError) as info:
        load_distractors(value, "greeter")
    assert str(info.value) == "distractors must name a folder of skills or 'none', not an empty value"


def test_two_distractors_of_one_name_are_refused(tmp_path: Path) -> None:
    root = tmp_path / "others"
    _skill(root / "team-a" / "helper", "helper")
    _skill(root / "team-b" / "helper", "helper")
    _skill(root / "greeter", "greeter")  # the skill under test's name: dropped, as before
    with pytest.raises(PathError) as info:
        load_distractors(root, "greeter")
    text = str(info.value)
    assert "two skills named 'helper' (team-a/helper and team-b/helper)" in text and "\n" not in text


def test_distinct_distractors_still_load(tmp_path: Path) -> None:
    root = tmp_path / "others"
    _skill(root / "alpha", "alpha")
    _skill(root / "beta", "beta")
    _skill(root / "greeter", "greeter")
    assert sorted(s.name for s in load_distractors(root, "greeter")) == ["alpha", "beta"]


def test_cli_refuses_empty_and_duplicate_distractors_before_any_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("UPSKILL_HUB_CACHE", str(tmp_path / "cache"))
    skill = _skill(tmp_path / "greeter", "greeter")
    dupes = tmp_path / "dupes"
    _skill(dupes / "x" / "helper", "helper")
    _skill(dupes / "y" / "helper", "helper")
    with running_llm_server() as srv:
        common = ["eval", str(skill), "-m", "openai:gpt-4.1-mini", "--base-url", srv.openai_base_url,
                  "--mode", "catalog", "-o", str(tmp_path / "out"), "--no-plots"]  # fmt: skip
        for value, expected in (("", "not an empty value"), (str(dupes), "two skills named 'helper'")):
            code, _out, err = run_cli([*common, "--distractors", value], capsys, monkeypatch)
            assert code != 0 and expected in err and "Traceback" not in err, err
            assert len(err.strip().splitlines()) == 1, err
        assert srv.calls == 0


def _scenarios_repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    _skill(root / "skills" / "good", "good")
    bad = root / "skills" / "bad"
    bad.mkdir(parents=True)
    (bad / "SKILL.md").write_text("---\nname: Not A Name\ndescription: broken\n---\nbody\n")
    (root / ".upskill").mkdir()
    scenarios = {
        "scenarios": [
            {"id": "first", "skills": ["skills/good"], "tests": CASES},
            {"id": "second", "skills": ["skills/bad"], "tests": CASES},
        ]
    }
    (root / ".upskill" / "evals.json").write_text(json.dumps(scenarios))
    return root


def test_scenario_skills_are_validated_when_the_file_is_read(tmp_path: Path) -> None:
    root = _scenarios_repo(tmp_path)
    with pytest.raises(UpskillError) as info:
        load_scenarios(root / ".upskill" / "evals.json")
    text = str(info.value)
    assert "scenario 'second' skills[0]" in text and "name" in text and "\n" not in text


def test_a_broken_later_scenario_spends_no_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("UPSKILL_HUB_CACHE", str(tmp_path / "cache"))
    root = _scenarios_repo(tmp_path)
    with running_llm_server() as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        code, _out, err = run_cli(
            ["eval", "--scenarios", str(root / ".upskill" / "evals.json"), "-m", "openai:gpt-4.1-mini",
             "-o", str(tmp_path / "out"), "--no-plots"], capsys, monkeypatch,
        )  # fmt: skip
        calls = srv.calls
    assert code != 0 and "scenario 'second'" in err and "Traceback" not in err, err
    assert calls == 0
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
